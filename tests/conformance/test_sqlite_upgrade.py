"""A SQLite file written by an older layout opens, is upgraded in place and loses nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from test_graph_store import T0, seed

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


def test_v3_file_upgrades_to_unique_entities_leases_and_revisions(tmp_path: Path) -> None:
    """A file of the previous layout: entity names keyed by casefold only (so "Zoë" and "Zoe" were two
    entities), no leases, marks, revisions or document kinds, a job left running by a process long gone."""
    from hindsight_core.models import Job, JobStatus

    path = tmp_path / "graph.sqlite"
    store = SQLiteGraphStore(path)
    seed(store, "b")
    store.close()
    con = sqlite3.connect(path)
    con.execute("DROP INDEX entities_bank_norm_unique")
    con.execute("CREATE INDEX entities_bank_norm ON entities (bank_id, norm)")
    for name, norm, eid, unit in (("Zoë", "zoë", "e_zoe1", "u0"), ("Zoe", "zoe", "e_zoe2", "u1"),
                                  ("ZOE", "zoe", "e_zoe3", "u2")):
        con.execute("INSERT INTO entities (id, bank_id, name, norm, type, aliases, mention_count) "
                    "VALUES (?, 'b', ?, ?, 'PERSON', '[]', 1)", (eid, name, norm))
        con.execute("INSERT INTO mentions (unit_id, entity_id) VALUES (?, ?)", (unit, eid))
    for col in ("kind", "options", "owner", "job_id", "revision"):
        con.execute(f"ALTER TABLE documents DROP COLUMN {col}")
    con.execute("ALTER TABLE jobs DROP COLUMN owner")
    con.execute("INSERT INTO jobs (id, bank_id, kind, payload, status, attempts, created_at, run_after) "
                "VALUES ('old-job', 'b', 'observations', '{}', 'running', 1, 0, 0)")
    for table in ("owners", "vector_marks", "opinion_evidence"):
        con.execute(f"DROP TABLE {table}")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    con.commit()
    con.close()

    upgraded = SQLiteGraphStore(path)
    zoe = [e for e in upgraded.list_entities("b") if e.name.casefold().startswith("zo")]
    assert len(zoe) == 1 and zoe[0].mention_count == 3  # one person, all three mentions
    assert upgraded.check_bank("b") == {}
    assert upgraded.get_document("b", "doc1").kind is None  # type: ignore[union-attr]  # recorded as unknown
    released = upgraded.release_owners([], "me", T0)
    assert released.jobs == 1  # held by nobody: a process from before leases, long gone
    assert {j.id: j.status for j in upgraded.list_jobs()}["old-job"] == JobStatus.QUEUED
    upgraded.enqueue_job(Job(id="new-job", bank_id="b", kind="k"))  # and the new columns work
    con = upgraded._con()
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION
    upgraded.close()


def test_v8_file_upgrades_to_job_finish_times(tmp_path: Path) -> None:
    """A file from before jobs recorded when they finished: its finished jobs read as finished at an unknown time
    (None; the overview counts them when they were queued), and the jobs that finish from now on record it."""
    from hindsight_core.models import Job, JobStatus

    path = tmp_path / "graph.sqlite"
    store = SQLiteGraphStore(path)
    seed(store, "b")
    store.close()
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE jobs DROP COLUMN finished_at")
    con.execute("INSERT INTO jobs (id, bank_id, kind, payload, status, attempts, created_at, run_after) "
                "VALUES ('old-done', 'b', 'observations', '{}', 'done', 1, 0, 0)")
    con.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    con.commit()
    con.close()

    upgraded = SQLiteGraphStore(path)
    old = {j.id: j for j in upgraded.list_jobs()}["old-done"]
    assert old.status == JobStatus.DONE and old.finished_at is None
    upgraded.enqueue_job(Job(id="new-job", bank_id="b", kind="k", created_at=T0, run_after=T0))
    claimed = upgraded.claim_job(T0)
    assert claimed is not None and claimed.id == "new-job"
    upgraded.finish_job("new-job")
    assert {j.id: j for j in upgraded.list_jobs()}["new-job"].finished_at is not None
    con = upgraded._con()
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION == "9"
    upgraded.close()
