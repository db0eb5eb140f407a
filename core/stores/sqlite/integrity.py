"""``IntegrityChecks`` on SQLite: the file's graph invariants per bank (links, mentions, counts, entity keys,
keyword statistics, the FTS5 index), checked and repaired."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ...text.names import normalise_name
from ..fts5_bm25 import keyword_columns, split_tokens
from .connection import SQLiteConnection
from .schema import _renormalise_entities
from .sql import _adjust_keyword_stats


class SQLiteIntegrity(SQLiteConnection):
    """The graph store's own invariants (``base.IntegrityChecks``)."""

    def check_bank(self, bank_id: str) -> dict[str, list[str]]:
        """The bank's graph invariants that do not hold, by kind, with the offending ids."""
        con = self._con()
        problems: dict[str, list[str]] = {}

        def add(kind: str, rows: Iterable[Sequence[Any]]) -> None:
            found = [str(r[0]) for r in rows]
            if found:
                problems[kind] = found

        add("dangling_link", con.execute(
            "SELECT l.source_id || '->' || l.target_id FROM links l WHERE l.bank_id = ? AND ("
            "NOT EXISTS (SELECT 1 FROM units u WHERE u.id = l.source_id AND u.bank_id = l.bank_id) OR "
            "NOT EXISTS (SELECT 1 FROM units u WHERE u.id = l.target_id AND u.bank_id = l.bank_id))", (bank_id,)))
        add("dangling_mention", con.execute(
            "SELECT m.unit_id || '->' || m.entity_id FROM mentions m JOIN units u ON u.id = m.unit_id "
            "WHERE u.bank_id = ? AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = m.entity_id "
            "AND e.bank_id = u.bank_id)", (bank_id,)))
        add("mention_count", con.execute(
            "SELECT e.id FROM entities e WHERE e.bank_id = ? AND e.mention_count != "
            "(SELECT count(*) FROM mentions m WHERE m.entity_id = e.id)", (bank_id,)))
        add("orphan_entity", con.execute(
            "SELECT e.id FROM entities e WHERE e.bank_id = ? AND NOT EXISTS "
            "(SELECT 1 FROM mentions m WHERE m.entity_id = e.id)", (bank_id,)))
        entities = con.execute("SELECT id, name, norm FROM entities WHERE bank_id = ?", (bank_id,)).fetchall()
        by_norm: dict[str, list[str]] = {}
        for r in entities:
            by_norm.setdefault(normalise_name(r[1]), []).append(r[0])
        add("duplicate_entity", [(i,) for ids in by_norm.values() if len(ids) > 1 for i in ids])
        stale = [(r[0],) for r in entities if normalise_name(r[1]) != r[2]]
        if stale:
            problems.setdefault("duplicate_entity", []).extend(i for (i,) in stale)
        add("dangling_opinion_event", con.execute(
            "SELECT o.seq FROM opinion_events o WHERE o.bank_id = ? AND NOT EXISTS "
            "(SELECT 1 FROM units u WHERE u.id = o.opinion_id AND u.bank_id = o.bank_id)", (bank_id,)))
        if self._keyword_stats_differ(con, bank_id):
            problems["keyword_stats"] = [bank_id]
        try:
            con.execute("INSERT INTO units_fts (units_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            problems["fts_index"] = [f"units_fts: {exc}"]
        return problems

    @staticmethod
    def _keyword_stats_differ(con: sqlite3.Connection, bank_id: str) -> bool:
        """Whether the kept keyword statistics differ from a recount of the bank's units."""
        if con.execute("SELECT 1 FROM units WHERE bank_id = ? AND kw_len IS NULL LIMIT 1", (bank_id,)).fetchone():
            return True
        counts: Counter[str] = Counter()
        units = tokens = 0
        for text, context, length in con.execute(
            "SELECT kw_text, kw_context, kw_len FROM units WHERE bank_id = ?", (bank_id,)
        ):
            units += 1
            tokens += int(length)
            counts.update(set(split_tokens(text)) | set(split_tokens(context)))
        kept = dict(con.execute("SELECT term, units FROM keyword_terms WHERE bank_id = ?", (bank_id,)).fetchall())
        totals = con.execute("SELECT units, tokens FROM keyword_totals WHERE bank_id = ?", (bank_id,)).fetchone()
        kept_totals = (int(totals[0]), int(totals[1])) if totals else (0, 0)
        return kept != dict(counts) or kept_totals != (units, tokens)

    def repair_bank(self, bank_id: str) -> dict[str, int]:
        """Fix what ``check_bank`` finds; how many rows of each kind were repaired."""
        fixed: dict[str, int] = {}
        with self._tx() as con:
            fixed["dangling_link"] = con.execute(
                "DELETE FROM links WHERE bank_id = ? AND ("
                "NOT EXISTS (SELECT 1 FROM units u WHERE u.id = links.source_id AND u.bank_id = links.bank_id) OR "
                "NOT EXISTS (SELECT 1 FROM units u WHERE u.id = links.target_id AND u.bank_id = links.bank_id))",
                (bank_id,)).rowcount
            fixed["dangling_mention"] = con.execute(
                "DELETE FROM mentions WHERE unit_id IN (SELECT id FROM units WHERE bank_id = ?) AND NOT EXISTS "
                "(SELECT 1 FROM entities e WHERE e.id = mentions.entity_id AND e.bank_id = ?)",
                (bank_id, bank_id)).rowcount
            fixed["dangling_opinion_event"] = con.execute(
                "DELETE FROM opinion_events WHERE bank_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM units u WHERE u.id = opinion_events.opinion_id AND u.bank_id = opinion_events.bank_id)",
                (bank_id,)).rowcount
            fixed["duplicate_entity"] = _renormalise_entities(con, bank_id)
            fixed["mention_count"] = con.execute(
                "UPDATE entities SET mention_count = (SELECT count(*) FROM mentions m WHERE m.entity_id = entities.id) "
                "WHERE bank_id = ? AND mention_count != (SELECT count(*) FROM mentions m "
                "WHERE m.entity_id = entities.id)", (bank_id,)).rowcount
            fixed["orphan_entity"] = con.execute(
                "DELETE FROM entities WHERE bank_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM mentions m WHERE m.entity_id = entities.id)", (bank_id,)).rowcount
            if self._keyword_stats_differ(con, bank_id):
                rows = con.execute("SELECT seq, text, context FROM units WHERE bank_id = ? AND kw_len IS NULL",
                                   (bank_id,)).fetchall()
                kw = keyword_columns([(r[1], r[2]) for r in rows])
                con.executemany("UPDATE units SET kw_text = ?, kw_context = ?, kw_len = ? WHERE seq = ?",
                                [(*k, r[0]) for k, r in zip(kw, rows, strict=True)])
                con.execute("DELETE FROM keyword_terms WHERE bank_id = ?", (bank_id,))
                con.execute("DELETE FROM keyword_totals WHERE bank_id = ?", (bank_id,))
                _adjust_keyword_stats(
                    con, bank_id, con.execute("SELECT kw_text, kw_context, kw_len FROM units WHERE bank_id = ?",
                                              (bank_id,)).fetchall(), +1)
                fixed["keyword_stats"] = 1
            try:
                con.execute("INSERT INTO units_fts (units_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError:
                con.execute("INSERT INTO units_fts (units_fts) VALUES ('rebuild')")
                fixed["fts_index"] = 1
        return {k: v for k, v in fixed.items() if v}
