"""The SQLite file's layout (tables, indexes, FTS5 triggers) and the upgrades that bring an older file up to date."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ...models import EntityType
from ...text.names import normalise_name
from ..fts5_bm25 import TOKENIZER, keyword_columns
from .sql import _adjust_keyword_stats

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS banks (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, background TEXT NOT NULL DEFAULT '',
    disposition TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    bank_id TEXT NOT NULL REFERENCES banks(id) ON DELETE CASCADE, id TEXT NOT NULL,
    content TEXT NOT NULL, context TEXT, timestamp REAL, status TEXT NOT NULL, error TEXT,
    metadata TEXT NOT NULL DEFAULT '{}', created_at REAL NOT NULL, updated_at REAL NOT NULL,
    kind TEXT, options TEXT NOT NULL DEFAULT '{}', owner TEXT, job_id TEXT, revision TEXT,
    PRIMARY KEY (bank_id, id)
);
CREATE INDEX IF NOT EXISTS documents_status ON documents (status);
CREATE TABLE IF NOT EXISTS units (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    bank_id TEXT NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    text TEXT NOT NULL, network TEXT NOT NULL, occurred_start REAL, occurred_end REAL, mentioned_at REAL,
    confidence REAL, sources TEXT NOT NULL, document_id TEXT, position INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL, created_at REAL NOT NULL, context TEXT NOT NULL DEFAULT '',
    kw_text TEXT, kw_context TEXT, kw_len INTEGER
);
CREATE INDEX IF NOT EXISTS units_bank_time ON units (bank_id, occurred_start);
CREATE INDEX IF NOT EXISTS units_bank_doc ON units (bank_id, document_id, position);
-- A bank's units in insertion order (the rowid rides along in every index): page_units reads a page of the newest
-- without sorting the whole bank (0.2 ms instead of 38 ms at 40k units).
CREATE INDEX IF NOT EXISTS units_bank_seq ON units (bank_id);
-- Memories superseded by a given one (forgetting it makes them current again).
CREATE INDEX IF NOT EXISTS units_superseded ON units (bank_id, json_extract(metadata, '$.superseded_by'))
    WHERE json_extract(metadata, '$.superseded_by') IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5 (
    text, context, content='units', content_rowid='seq', tokenize='""" + TOKENIZER + """'
);
CREATE TRIGGER IF NOT EXISTS units_ai AFTER INSERT ON units BEGIN
    INSERT INTO units_fts (rowid, text, context) VALUES (new.seq, new.text, new.context);
END;
CREATE TRIGGER IF NOT EXISTS units_ad AFTER DELETE ON units BEGIN
    INSERT INTO units_fts (units_fts, rowid, text, context) VALUES ('delete', old.seq, old.text, old.context);
END;
CREATE TRIGGER IF NOT EXISTS units_au AFTER UPDATE OF text, context ON units BEGIN
    INSERT INTO units_fts (units_fts, rowid, text, context) VALUES ('delete', old.seq, old.text, old.context);
    INSERT INTO units_fts (rowid, text, context) VALUES (new.seq, new.text, new.context);
END;
CREATE TABLE IF NOT EXISTS keyword_terms (
    bank_id TEXT NOT NULL, term TEXT NOT NULL, units INTEGER NOT NULL, PRIMARY KEY (bank_id, term)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS keyword_totals (bank_id TEXT PRIMARY KEY, units INTEGER NOT NULL, tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    name TEXT NOT NULL, norm TEXT NOT NULL, type TEXT NOT NULL, aliases TEXT NOT NULL,
    mention_count INTEGER NOT NULL DEFAULT 0, first_seen REAL, last_seen REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS entities_bank_norm_unique ON entities (bank_id, norm);
-- type, weight: the type this mention is evidence for and how strong (the entity's type is their vote).
CREATE TABLE IF NOT EXISTS mentions (
    unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type TEXT, weight REAL,
    PRIMARY KEY (unit_id, entity_id)
);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity_id, unit_id);
CREATE INDEX IF NOT EXISTS mentions_entity_type ON mentions (entity_id, type, weight);
CREATE TABLE IF NOT EXISTS links (
    bank_id TEXT NOT NULL,
    source_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
    target_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
    type TEXT NOT NULL, weight REAL NOT NULL, PRIMARY KEY (source_id, target_id, type)
);
CREATE INDEX IF NOT EXISTS links_target ON links (target_id);
CREATE TABLE IF NOT EXISTS opinion_events (
    seq INTEGER PRIMARY KEY, bank_id TEXT NOT NULL,
    opinion_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
    at REAL NOT NULL, label TEXT NOT NULL, old_confidence REAL, new_confidence REAL NOT NULL,
    evidence TEXT NOT NULL, old_text TEXT, new_text TEXT, rationale TEXT
);
CREATE INDEX IF NOT EXISTS opinion_events_opinion ON opinion_events (opinion_id, seq);
CREATE TABLE IF NOT EXISTS opinion_evidence (
    opinion_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE, evidence_id TEXT NOT NULL,
    PRIMARY KEY (opinion_id, evidence_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, error TEXT,
    created_at REAL NOT NULL, run_after REAL NOT NULL, owner TEXT, result TEXT, finished_at REAL
);
CREATE INDEX IF NOT EXISTS jobs_runnable ON jobs (status, run_after);
CREATE TABLE IF NOT EXISTS owners (
    id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, started_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS vector_marks (
    bank_id TEXT NOT NULL, unit_id TEXT NOT NULL, owner TEXT, marked_at REAL NOT NULL,
    PRIMARY KEY (bank_id, unit_id)
) WITHOUT ROWID;
-- The audit trail (``audit.SQLiteAudit``): no foreign key to banks, so that deleting a bank keeps its entries.
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY, bank_id TEXT NOT NULL, id TEXT NOT NULL, at REAL NOT NULL, surface TEXT NOT NULL,
    token_id TEXT, operation TEXT NOT NULL, document_id TEXT, memory_ids TEXT NOT NULL, counts TEXT NOT NULL,
    summary TEXT NOT NULL, UNIQUE (bank_id, id)
);
CREATE INDEX IF NOT EXISTS audit_bank_at ON audit (bank_id, at, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at, id);
"""

SCHEMA_VERSION = "9"


def _migrate(con: sqlite3.Connection) -> None:
    """Bring a file written by an older version up to date (before the schema script runs).

    v1 -> v2: document metadata and updated_at. v2 -> v3: keyword tokens on units (filled by ``_backfill``).
    v3 -> v4: document kind, retain options, owner and job; job owner; entity names normalised with
    ``normalise_name`` and duplicates merged, so that (bank, norm) can become unique. v4 -> v5: the ``audit`` table,
    which the schema script creates (nothing to change here). v5 -> v6: a job's ``result``. v6 -> v7: each
    mention's type evidence (``type``, ``weight``; empty on older mentions, which count for their entity's type as
    stored: see ``sql._freeze_types``). v7 -> v8: the ``units_superseded`` index
    (the schema script makes it; a supersession lives in the unit's metadata). v8 -> v9: when a job finished
    (``finished_at``; empty on jobs that finished before, which the overview places by when they were queued).
    """
    mention_cols = {r[1] for r in con.execute("PRAGMA table_info(mentions)")}
    if mention_cols and "type" not in mention_cols:
        con.execute("ALTER TABLE mentions ADD COLUMN type TEXT")
        con.execute("ALTER TABLE mentions ADD COLUMN weight REAL")
    cols = {r[1] for r in con.execute("PRAGMA table_info(documents)")}
    if cols and "metadata" not in cols:
        con.execute("ALTER TABLE documents ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")
        con.execute("ALTER TABLE documents ADD COLUMN updated_at REAL NOT NULL DEFAULT 0")
        con.execute("UPDATE documents SET updated_at = created_at")
    if cols and "kind" not in cols:
        for col in ("kind TEXT", "options TEXT NOT NULL DEFAULT '{}'", "owner TEXT", "job_id TEXT", "revision TEXT"):
            con.execute(f"ALTER TABLE documents ADD COLUMN {col}")
    job_cols = {r[1] for r in con.execute("PRAGMA table_info(jobs)")}
    if job_cols and "owner" not in job_cols:
        con.execute("ALTER TABLE jobs ADD COLUMN owner TEXT")
    if job_cols and "result" not in job_cols:
        con.execute("ALTER TABLE jobs ADD COLUMN result TEXT")
    if job_cols and "finished_at" not in job_cols:
        con.execute("ALTER TABLE jobs ADD COLUMN finished_at REAL")
    unit_cols = {r[1] for r in con.execute("PRAGMA table_info(units)")}
    if unit_cols and "kw_len" not in unit_cols:
        for col in ("kw_text TEXT", "kw_context TEXT", "kw_len INTEGER"):
            con.execute(f"ALTER TABLE units ADD COLUMN {col}")
    if con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entities'").fetchone():
        con.execute("DROP INDEX IF EXISTS entities_bank_norm")
        con.execute("BEGIN IMMEDIATE")
        try:
            _renormalise_entities(con)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


def _renormalise_entities(con: sqlite3.Connection, bank_id: str | None = None) -> int:
    """Recompute every entity's ``norm`` and merge entities that share one; returns how many were merged.

    The entity with the most mentions survives (then the earliest seen, then the smallest id); the others'
    mentions move to it, their names and aliases become its aliases, and counts are recounted.
    """
    where, args = ("WHERE bank_id = ?", [bank_id]) if bank_id is not None else ("", [])
    rows = con.execute(f"SELECT id, bank_id, name, norm FROM entities {where}", args).fetchall()
    fixes = [(normalise_name(r[2]), r[0]) for r in rows if normalise_name(r[2]) != r[3]]
    groups: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        groups.setdefault((r[1], normalise_name(r[2])), []).append(r[0])
    merged = 0
    for ids in groups.values():
        if len(ids) > 1:
            merged += _merge_entities(con, ids)
    # Norms are written after the merge: the losers are gone, so the unique index cannot be violated.
    con.executemany("UPDATE entities SET norm = ? WHERE id = ?", fixes)
    return merged


def _merge_entities(con: sqlite3.Connection, ids: Sequence[str]) -> int:
    """Fold entities ``ids`` (one bank, one normalised name) into the best one; returns how many were removed."""
    marks = ",".join("?" * len(ids))
    rows = con.execute(
        f"SELECT e.*, (SELECT count(*) FROM mentions m WHERE m.entity_id = e.id) AS n FROM entities e "
        f"WHERE e.id IN ({marks}) ORDER BY n DESC, coalesce(e.first_seen, 1e300), e.id",
        list(ids),
    ).fetchall()
    if len(rows) < 2:
        return 0
    keep, losers = rows[0], rows[1:]
    aliases = list(json.loads(keep["aliases"]))
    etype = keep["type"]
    first, last = keep["first_seen"], keep["last_seen"]
    for r in losers:
        for name in json.loads(r["aliases"]):  # their names are spellings of the same key
            if name != keep["name"] and name not in aliases:
                aliases.append(name)
        if etype == EntityType.OTHER.value and r["type"] != EntityType.OTHER.value:
            etype = r["type"]
        first = min((x for x in (first, r["first_seen"]) if x is not None), default=None)
        last = max((x for x in (last, r["last_seen"]) if x is not None), default=None)
        con.execute("INSERT OR IGNORE INTO mentions (unit_id, entity_id, type, weight) SELECT unit_id, ?, "
                    "coalesce(type, ?), weight FROM mentions WHERE entity_id = ?", (keep["id"], r["type"], r["id"]))
        con.execute("DELETE FROM entities WHERE id = ?", (r["id"],))
    con.execute(
        "UPDATE entities SET aliases = ?, type = ?, first_seen = ?, last_seen = ?, "
        "mention_count = (SELECT count(*) FROM mentions WHERE entity_id = ?) WHERE id = ?",
        (json.dumps(aliases), etype, first, last, keep["id"], keep["id"]),
    )
    return len(losers)


def _stored_version(con: sqlite3.Connection) -> str | None:
    """The schema version a file was written with (None for a new file)."""
    if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        return None
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return str(row[0]) if row else None


def _backfill(con: sqlite3.Connection) -> None:
    """Store keyword tokens for units written before v3 (idempotent: only rows still without them), then
    count the keyword statistics of every bank if the file has units but none counted yet."""
    while True:
        rows = con.execute("SELECT seq, text, context FROM units WHERE kw_len IS NULL LIMIT 1000").fetchall()
        if not rows:
            break
        kw = keyword_columns([(r[1], r[2]) for r in rows])
        con.execute("BEGIN IMMEDIATE")
        con.executemany("UPDATE units SET kw_text = ?, kw_context = ?, kw_len = ? WHERE seq = ? AND kw_len IS NULL",
                        [(*k, r[0]) for k, r in zip(kw, rows, strict=True)])
        con.execute("COMMIT")
    if con.execute("SELECT 1 FROM keyword_totals LIMIT 1").fetchone() or not con.execute(
        "SELECT 1 FROM units LIMIT 1"
    ).fetchone():
        return
    con.execute("BEGIN IMMEDIATE")
    for (bank_id,) in con.execute("SELECT DISTINCT bank_id FROM units").fetchall():
        counted = con.execute("SELECT kw_text, kw_context, kw_len FROM units WHERE bank_id = ?", (bank_id,))
        _adjust_keyword_stats(con, bank_id, counted, +1)
    con.execute("COMMIT")
