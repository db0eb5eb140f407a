"""A SQLite file written by an older layout opens, is upgraded in place and loses nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from test_graph_store import seed

from hindsight_core.stores.sqlite import SCHEMA_VERSION, SQLiteGraphStore


def test_v1_file_upgrades_to_keyword_tokens_and_document_metadata(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    store = SQLiteGraphStore(path)
    seed(store, "b")
    want = store.keyword_search("b", "Where did Oscar go running?", 10)
    store.close()
    # Rewrite the file as version 1 wrote it: no keyword tokens on units, no document metadata.
    con = sqlite3.connect(path)
    for table, col in (("units", "kw_text"), ("units", "kw_context"), ("units", "kw_len"),
                       ("documents", "metadata"), ("documents", "updated_at")):
        con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    con.execute("DROP TABLE keyword_terms")
    con.execute("DROP TABLE keyword_totals")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.commit()
    con.close()

    upgraded = SQLiteGraphStore(path)
    con = upgraded._con()
    assert con.execute("SELECT count(*) FROM units WHERE kw_len IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("SELECT kw_text FROM units WHERE id = 'u0'").fetchone()[0] == "melani paint a sunris by the lake"
    assert con.execute("SELECT units FROM keyword_totals WHERE bank_id = 'b'").fetchone()[0] == 5
    assert con.execute("SELECT units FROM keyword_terms WHERE bank_id = 'b' AND term = 'oscar'").fetchone()[0] == 3
    got = upgraded.keyword_search("b", "Where did Oscar go running?", 10)
    assert [i for i, _ in got] == [i for i, _ in want] and [s for _, s in got] == [s for _, s in want]
    doc = upgraded.get_document("b", "doc1")
    assert doc is not None and doc.metadata == {} and doc.updated_at == doc.created_at
    upgraded.close()


def test_keyword_statistics_follow_every_write(tmp_path: Path) -> None:
    """The per-bank term counts equal a recount from the units after adds, an edit, deletes and a bank drop."""
    store = SQLiteGraphStore(tmp_path / "graph.sqlite")
    seed(store, "b")
    seed(store, "c", prefix="x")
    store.update_unit("b", "u0", text="Oscar painted a volcano at sunrise")
    store.delete_units("b", ["u1"])
    store.delete_bank("c")
    con = store._con()
    units = con.execute("SELECT kw_text, kw_context, kw_len FROM units WHERE bank_id = 'b'").fetchall()
    terms: dict[str, int] = {}
    for text, context, _ in units:
        for term in set(text.split()) | set(context.split()):
            terms[term] = terms.get(term, 0) + 1
    assert dict(con.execute("SELECT term, units FROM keyword_terms WHERE bank_id = 'b'").fetchall()) == terms
    assert tuple(con.execute("SELECT units, tokens FROM keyword_totals WHERE bank_id = 'b'").fetchone()) == (
        len(units), sum(n for *_, n in units))
    assert con.execute("SELECT count(*) FROM keyword_terms WHERE bank_id = 'c'").fetchone()[0] == 0
    assert [i for i, _ in store.keyword_search("b", "volcano", 5)] == ["u0"]
    store.close()
