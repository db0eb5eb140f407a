"""``UnitStore`` on SQLite: committing a retain's batch, reading units back, paging, time neighbours, graph
edges and per-bank counts."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ...errors import ConflictError
from ...models import REFERENCE_KEYS, Job, LinkType, Memory, Network
from ..common import from_epoch as _dt
from ..common import nearest
from ..common import to_epoch as _ts
from ..fts5_bm25 import keyword_columns
from ..records import DocumentRewrite, Edge, Supersession, UnitBatch
from .connection import SQLiteConnection
from .sql import (
    SUPERSEDED_EXPR,
    _add_citations,
    _adjust_keyword_stats,
    _chunks,
    _delete_units,
    _drop_citations,
    _insert_event,
    _insert_job,
    _page,
    _recount,
    _set_text,
    _strip_citations,
    _supersede,
    _upsert_entity,
)


class SQLiteUnits(SQLiteConnection):
    """Memory units with their links, mentions and stats (``base.UnitStore``)."""

    def add_units(self, bank_id: str, batch: UnitBatch, owner: str | None = None) -> dict[str, str]:
        """Commit one retain atomically (see ``GraphStore.add_units``); returns entity id -> stored name."""
        # Tokenised before the transaction: the write lock is held no longer than the writes.
        keywords = keyword_columns([(u.text, batch.contexts.get(u.id, "")) for u in batch.units])
        new_ids = [u.id for u in batch.units]
        with self._tx() as con:
            if batch.document_id is not None and batch.revision is not None:
                row = con.execute("SELECT revision FROM documents WHERE bank_id = ? AND id = ?",
                                  (bank_id, batch.document_id)).fetchone()
                if row is None or row[0] != batch.revision:
                    raise ConflictError(
                        f"document {batch.document_id!r} was stored again (or forgotten) while this retain ran; "
                        "the newer retain's memories are kept and nothing of this one was stored"
                    )
                con.execute("UPDATE documents SET status = 'done', error = NULL, owner = NULL "
                            "WHERE bank_id = ? AND id = ?", (bank_id, batch.document_id))
            if batch.replaces:
                _drop_citations(con, bank_id, batch.replaces)  # before the delete: it tells raw units by their row
                _delete_units(con, bank_id, batch.replaces, owner)
            remap: dict[str, str] = {}
            names: dict[str, str] = {}
            for entity in [*batch.new_entities, *batch.updated_entities]:
                remap[entity.id], names[entity.id] = _upsert_entity(con, bank_id, entity)
            _adjust_keyword_stats(con, bank_id, keywords, +1)
            con.executemany(
                "INSERT INTO units (id, bank_id, text, network, occurred_start, occurred_end, mentioned_at, "
                "confidence, sources, document_id, position, metadata, created_at, context, kw_text, kw_context, "
                "kw_len) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (u.id, bank_id, u.text, u.network.value, _ts(u.occurred_start), _ts(u.occurred_end),
                     _ts(u.mentioned_at), u.confidence, json.dumps(u.sources), u.document_id,
                     batch.positions.get(u.id, 0), json.dumps(u.metadata, default=str), _ts(u.created_at),
                     batch.contexts.get(u.id, ""), *kw)
                    for u, kw in zip(batch.units, keywords, strict=True)
                ],
            )
            con.executemany(
                "INSERT OR IGNORE INTO mentions (unit_id, entity_id, type, weight) "
                "VALUES (?, ?, coalesce(?, (SELECT type FROM entities WHERE id = ?)), ?)",
                [(m.unit_id, remap.get(m.entity_id, m.entity_id), m.type, remap.get(m.entity_id, m.entity_id),
                  m.weight) for m in batch.mentions],
            )
            # Counted from the mentions inside the transaction: a concurrent writer's mentions count too.
            _recount(con, set(remap.values()))
            # A link whose other end is gone (forgotten meanwhile, or an orphan vector's id) is not stored;
            # the Bolt store does the same.
            con.executemany(
                "INSERT INTO links (bank_id, source_id, target_id, type, weight) SELECT ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM units WHERE id = ? AND bank_id = ?) "
                "AND EXISTS (SELECT 1 FROM units WHERE id = ? AND bank_id = ?) "
                "ON CONFLICT (source_id, target_id, type) DO UPDATE SET weight = max(weight, excluded.weight)",
                [(bank_id, link.source_id, link.target_id, link.type.value, link.weight, link.source_id, bank_id,
                  link.target_id, bank_id) for link in batch.links],
            )
            _supersede(con, bank_id, batch.supersedes)
            _add_citations(con, bank_id, batch.citations)
            for event in batch.opinion_events:
                _insert_event(con, bank_id, event)
            for job in batch.jobs:
                _insert_job(con, job)
            for chunk in _chunks(new_ids, 500):
                con.execute(f"DELETE FROM vector_marks WHERE bank_id = ? AND unit_id IN ({','.join('?' * len(chunk))})",
                            [bank_id, *chunk])
        return names

    def _memories(self, rows: list[sqlite3.Row]) -> list[Memory]:
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        names: dict[str, list[str]] = {i: [] for i in ids}
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for r in self._con().execute(
                f"SELECT m.unit_id, e.name FROM mentions m JOIN entities e ON e.id = m.entity_id "
                f"WHERE m.unit_id IN ({marks}) ORDER BY e.name",
                chunk,
            ):
                names[r[0]].append(r[1])
        out = []
        for r in rows:
            out.append(
                Memory(
                    id=r["id"], bank_id=r["bank_id"], text=r["text"], network=Network(r["network"]),
                    occurred_start=_dt(r["occurred_start"]), occurred_end=_dt(r["occurred_end"]),
                    mentioned_at=_dt(r["mentioned_at"]), confidence=r["confidence"],
                    entities=names[r["id"]], sources=json.loads(r["sources"]), document_id=r["document_id"],
                    metadata=json.loads(r["metadata"]), created_at=_dt(r["created_at"]),
                )
            )
        return out

    def get_units(self, bank_id: str, ids: Sequence[str]) -> list[Memory]:
        """Units by id, in the order asked; unknown ids (or ids of other banks) are skipped."""
        found: dict[str, sqlite3.Row] = {}
        # "+bank_id" keeps SQLite off the (bank_id, occurred_start) index, which it otherwise prefers and then
        # scans the whole bank for a few ids (21 ms per recall at 10k units); the unique id index is exact.
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            marks = ",".join("?" * len(chunk))
            for r in self._con().execute(
                f"SELECT * FROM units WHERE +bank_id = ? AND id IN ({marks})", [bank_id, *chunk]
            ):
                found[r["id"]] = r
        return self._memories([found[i] for i in dict.fromkeys(ids) if i in found])

    def unit_ids(self, bank_id: str) -> set[str]:
        """Every unit id of the bank."""
        return {r[0] for r in self._con().execute("SELECT id FROM units WHERE bank_id = ?", (bank_id,))}

    def units_exist(self, bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are units of the bank."""
        found: set[str] = set()
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            found.update(r[0] for r in self._con().execute(
                f"SELECT id FROM units WHERE +bank_id = ? AND id IN ({','.join('?' * len(chunk))})", [bank_id, *chunk]
            ))
        return found

    def units_of_document(self, bank_id: str, document_id: str) -> list[str]:
        """Ids of the units extracted from a document, in document order."""
        rows = self._con().execute(
            "SELECT id FROM units WHERE bank_id = ? AND document_id = ? ORDER BY position, seq",
            (bank_id, document_id),
        )
        return [r[0] for r in rows]

    def adjacent_units(self, bank_id: str, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """The units just before and just after each of ``ids`` in its document (index ``units_bank_doc``)."""
        out: dict[str, tuple[str | None, str | None]] = {}
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            out.update((r[0], (r[1], r[2])) for r in self._con().execute(
                "SELECT u.id, "
                "(SELECT p.id FROM units p WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id "
                " AND p.position < u.position ORDER BY p.position DESC, p.seq DESC LIMIT 1), "
                "(SELECT n.id FROM units n WHERE n.bank_id = u.bank_id AND n.document_id = u.document_id "
                " AND n.position > u.position ORDER BY n.position, n.seq LIMIT 1) "
                "FROM units u WHERE +u.bank_id = ? AND u.document_id IS NOT NULL "
                f"AND u.id IN ({','.join('?' * len(chunk))})",
                [bank_id, *chunk],
            ))
        return out

    def units_of_entity(self, bank_id: str, entity_id: str) -> list[str]:
        """Ids of the units that mention an entity."""
        rows = self._con().execute(
            "SELECT m.unit_id FROM mentions m JOIN units u ON u.id = m.unit_id "
            "WHERE m.entity_id = ? AND u.bank_id = ?",
            (entity_id, bank_id),
        )
        return [r[0] for r in rows]

    def delete_units(self, bank_id: str, ids: Sequence[str], owner: str | None = None, *,
                     jobs: Sequence[Job] = (), documents: Mapping[str, DocumentRewrite] | None = None) -> int:
        """Delete units with their links, mentions and history; entity counts follow; their vectors are marked
        for removal under ``owner``, ``jobs`` are queued and the ``documents`` rewritten in the same transaction
        (``ConflictError``, nothing written, when one no longer holds what its rewrite expected). Returns how many
        existed."""
        with self._tx() as con:
            deleted = _delete_units(con, bank_id, ids, owner)
            for job in jobs:
                _insert_job(con, job)
            now = _ts(datetime.now(UTC))
            for document_id, rewrite in (documents or {}).items():
                changed = con.execute("UPDATE documents SET content = ?, updated_at = ? WHERE bank_id = ? AND id = ? "
                                      "AND content = ?", (rewrite.content, now, bank_id, document_id, rewrite.expected))
                if changed.rowcount == 0 and con.execute("SELECT 1 FROM documents WHERE bank_id = ? AND id = ?",
                                                         (bank_id, document_id)).fetchone():
                    raise ConflictError(f"document {document_id!r} changed while a forget cut a message out of it")
                # A finished facts job's result samples the facts the checks rejected, which may quote the
                # forgotten messages: the sample goes, the counts stay.
                con.execute("UPDATE jobs SET result = json_set(result, '$.rejections', json('[]')) WHERE bank_id = ? "
                            "AND json_extract(payload, '$.document_id') = ? AND json_type(result, '$.rejections') "
                            "IS NOT NULL", (bank_id, document_id))
            return deleted

    def strip_citations(self, bank_id: str, ids: Sequence[str]) -> int:
        """Remove ``ids`` from every fact's citations in one transaction; returns how many facts changed."""
        with self._tx() as con:
            return _strip_citations(con, bank_id, ids)

    def units_with_references(self, bank_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(id, metadata) of the bank's units whose metadata refers to other memories: facts' citations,
        observations' basis, opinions' evidence, corrections (what forgetting must follow)."""
        rows = self._con().execute(
            "SELECT id, metadata FROM units WHERE bank_id = ? AND ("
            + " OR ".join(f"instr(metadata, '\"{key}\"') > 0" for key in REFERENCE_KEYS) + ")",
            (bank_id,),
        )
        return [(r[0], json.loads(r[1])) for r in rows]

    def supersede_units(self, bank_id: str, items: Sequence[Supersession]) -> int:
        """Record supersessions between stored memories in one transaction; returns how many were recorded (see
        ``records.Supersession``)."""
        with self._tx() as con:
            return _supersede(con, bank_id, items)

    def superseded_by_ids(self, bank_id: str, ids: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``ids`` that superseded earlier memories, their ids (index ``units_superseded``)."""
        out: dict[str, list[str]] = {}
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            for r in self._con().execute(
                f"SELECT {SUPERSEDED_EXPR}, id FROM units WHERE bank_id = ? AND {SUPERSEDED_EXPR} IN "
                f"({','.join('?' * len(chunk))})", [bank_id, *chunk],
            ):
                out.setdefault(r[0], []).append(r[1])
        return out

    def update_unit(
        self, bank_id: str, unit_id: str, *, text: str | None = None, confidence: float | None = None
    ) -> None:
        """Change a unit's text and/or confidence in place (opinions evolve; FTS follows by trigger). A new
        text marks the unit's vector (owner None) in the same transaction: it must be embedded again."""
        with self._tx() as con:
            if text is not None and not _set_text(con, bank_id, unit_id, text, None):
                return
            if confidence is not None:
                con.execute(
                    "UPDATE units SET confidence = ? WHERE bank_id = ? AND id = ?", (confidence, bank_id, unit_id)
                )

    def units_in_network(
        self, bank_id: str, network: Network, entity_ids: Sequence[str] | None = None, limit: int = 1000
    ) -> list[str]:
        """Ids of a network's units, optionally only those mentioning one of ``entity_ids``; newest first."""
        if entity_ids is None:
            rows = self._con().execute(
                "SELECT id FROM units WHERE bank_id = ? AND network = ? ORDER BY seq DESC LIMIT ?",
                (bank_id, Network(network).value, limit),
            )
        else:
            ids = list(dict.fromkeys(entity_ids))
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            rows = self._con().execute(
                f"SELECT DISTINCT u.id, u.seq FROM units u JOIN mentions m ON m.unit_id = u.id "
                f"WHERE u.bank_id = ? AND u.network = ? AND m.entity_id IN ({marks}) ORDER BY u.seq DESC LIMIT ?",
                [bank_id, Network(network).value, *ids, limit],
            )
        return [r[0] for r in rows]

    @staticmethod
    def _unit_filter(bank_id: str, network: Network | None, entity_id: str | None) -> tuple[str, list[Any]]:
        """FROM/WHERE of ``page_units`` and ``count_units``."""
        sql, args = " FROM units u", list[Any]()
        if entity_id is not None:
            sql += " JOIN mentions m ON m.unit_id = u.id AND m.entity_id = ?"
            args.append(entity_id)
        sql += " WHERE u.bank_id = ?"
        args.append(bank_id)
        if network is not None:
            sql += " AND u.network = ?"
            args.append(Network(network).value)
        return sql, args

    def page_units(
        self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None, limit: int = 50,
        offset: int = 0,
    ) -> list[str]:
        """Ids of one page of the bank's units (optionally one network, one entity's), newest stored first."""
        sql, args = self._unit_filter(bank_id, network, entity_id)
        rows = self._con().execute(f"SELECT u.id{sql} ORDER BY u.seq DESC LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)])
        return [r[0] for r in rows]

    def count_units(self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None) -> int:
        """How many units ``page_units`` pages through with the same filters."""
        sql, args = self._unit_filter(bank_id, network, entity_id)
        return int(self._con().execute(f"SELECT count(*){sql}", args).fetchone()[0])

    def units_near_time(
        self, bank_id: str, when: datetime, window_s: float, limit: int, exclude: Iterable[str] = ()
    ) -> list[tuple[str, datetime]]:
        """Units whose occurrence starts within ``window_s`` of ``when``, nearest first."""
        t = _ts(when)
        assert t is not None
        skip = set(exclude)
        rows = self._con().execute(
            "SELECT id, occurred_start FROM units WHERE bank_id = ? AND occurred_start BETWEEN ? AND ? "
            "ORDER BY abs(occurred_start - ?) LIMIT ?",
            (bank_id, t - window_s, t + window_s, t, limit + len(skip)),
        ).fetchall()
        return nearest(((r[0], r[1]) for r in rows), skip, limit)

    def neighbors(
        self,
        bank_id: str,
        unit_ids: Sequence[str],
        link_types: Sequence[LinkType] | None = None,
        entity_fanout: int = 50,
    ) -> list[Edge]:
        """Outgoing edges of the given units: stored links plus entity hops (unit -> entity -> unit)."""
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return []
        con = self._con()
        edges: list[Edge] = []
        for chunk in _chunks(ids, 400):
            marks = ",".join("?" * len(chunk))
            type_sql, type_args = "", []
            if link_types is not None:
                type_sql = f" AND l.type IN ({','.join('?' * len(link_types))})"
                type_args = [LinkType(t).value for t in link_types]
            for r in con.execute(
                f"SELECT l.source_id, l.target_id, l.type, l.weight FROM links l "
                f"WHERE l.source_id IN ({marks}) AND l.bank_id = ?{type_sql}",
                [*chunk, bank_id, *type_args],
            ):
                edges.append(Edge(r[0], r[1], r[2], float(r[3])))
            if entity_fanout > 0:
                for r in con.execute(
                    f"SELECT m1.unit_id, m2.unit_id, e.mention_count FROM mentions m1 "
                    f"JOIN entities e ON e.id = m1.entity_id AND +e.bank_id = ? AND e.mention_count <= ? "
                    f"JOIN mentions m2 ON m2.entity_id = m1.entity_id AND m2.unit_id != m1.unit_id "
                    f"WHERE m1.unit_id IN ({marks})",
                    [bank_id, entity_fanout, *chunk],
                ):
                    # Rarer entities are stronger evidence of relatedness.
                    edges.append(Edge(r[0], r[1], "entity", 1.0 / (1.0 + math.log1p(max(r[2] - 1, 0)))))
        return edges

    def stats(self, bank_id: str) -> dict[str, Any]:
        """Counts of documents, units per network, entities, links and jobs."""
        con = self._con()
        networks = {
            r[0]: r[1]
            for r in con.execute("SELECT network, count(*) FROM units WHERE bank_id = ? GROUP BY network", (bank_id,))
        }
        links = {
            r[0]: r[1]
            for r in con.execute(
                "SELECT type, count(*) FROM links WHERE bank_id = ? GROUP BY type",
                (bank_id,),
            )
        }
        docs = {
            r[0]: r[1]
            for r in con.execute("SELECT status, count(*) FROM documents WHERE bank_id = ? GROUP BY status", (bank_id,))
        }
        jobs = {
            r[0]: r[1]
            for r in con.execute("SELECT status, count(*) FROM jobs WHERE bank_id = ? GROUP BY status", (bank_id,))
        }
        entities = con.execute("SELECT count(*) FROM entities WHERE bank_id = ?", (bank_id,)).fetchone()[0]
        return {
            "units": sum(networks.values()),
            "networks": networks,
            "documents": docs,
            "entities": entities,
            "links": links,
            "jobs": jobs,
        }
