"""SQLite graph store: the embedded source of truth (WAL, FTS5 ``bm25()`` keyword search).

One file holds every bank. Each thread gets its own connection (SQLite connections are not shareable
across threads); writes run in ``BEGIN IMMEDIATE`` transactions so a retain commits all or nothing, and
several processes may share the file (SQLite serialises their writers). Entities are unique per (bank,
normalised name); leases (``owners``), vector marks and applied opinion evidence make crashes and retries
safe (see ``base.Leases``, ``base.VectorMarks``, ``apply_opinion_update``).
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConflictError, StoreError
from ..models import (
    BankProfile,
    Disposition,
    Document,
    DocumentKind,
    DocumentStatus,
    Entity,
    EntityType,
    Job,
    JobStatus,
    LinkType,
    Memory,
    Network,
    OpinionEvent,
    TimeRange,
    as_utc,
)
from ..names import normalise_name
from .base import Edge, OpinionUpdate, Owner, Released, UnitBatch, translate_errors
from .fts5_bm25 import (
    TOKENIZER,
    BankTermStats,
    Phrase,
    keyword_columns,
    query_terms,
    rank,
    shared_tokenizer,
    split_tokens,
)

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
CREATE TABLE IF NOT EXISTS mentions (
    unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (unit_id, entity_id)
);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity_id, unit_id);
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
    created_at REAL NOT NULL, run_after REAL NOT NULL, owner TEXT
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
"""

SCHEMA_VERSION = "4"
_ACTIVE_DOCS = (DocumentStatus.PENDING.value, DocumentStatus.EXTRACTING.value)



def _ts(value: datetime | None) -> float | None:
    return as_utc(value).timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def _at(value: float) -> datetime:
    """A timestamp column that is never null."""
    return datetime.fromtimestamp(value, UTC)


def fts_query(text: str) -> str | None:
    """Build a safe FTS5 OR-query from free text: words only, each quoted, stopwords dropped.

    Quoting every term means no user text can reach FTS5's query syntax (NEAR, column filters, ``*``).
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _migrate(con: sqlite3.Connection) -> None:
    """Bring a file written by an older version up to date (before the schema script runs).

    v1 -> v2: document metadata and updated_at. v2 -> v3: keyword tokens on units (filled by ``_backfill``).
    v3 -> v4: document kind, retain options, owner and job; job owner; entity names normalised with
    ``normalise_name`` and duplicates merged, so that (bank, norm) can become unique.
    """
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
        con.execute("INSERT OR IGNORE INTO mentions (unit_id, entity_id) SELECT unit_id, ? FROM mentions "
                    "WHERE entity_id = ?", (keep["id"], r["id"]))
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


def _adjust_keyword_stats(
    con: sqlite3.Connection, bank_id: str, rows: Iterable[Sequence[Any]], sign: int
) -> None:
    """Add (sign +1) or remove (-1) units, given as (kw_text, kw_context, kw_len), from the bank's keyword
    statistics: per term, how many units hold it; per bank, units and tokens (FTS5's bm25 inputs)."""
    counts: Counter[str] = Counter()
    units = tokens = 0
    for text, context, length in rows:
        if length is None:
            continue
        units += 1
        tokens += int(length)
        counts.update(set(split_tokens(text)) | set(split_tokens(context)))
    if not units:
        return
    con.executemany(
        "INSERT INTO keyword_terms (bank_id, term, units) VALUES (?, ?, ?) "
        "ON CONFLICT (bank_id, term) DO UPDATE SET units = units + excluded.units",
        [(bank_id, term, sign * n) for term, n in counts.items()],
    )
    if sign < 0:
        con.executemany("DELETE FROM keyword_terms WHERE bank_id = ? AND term = ? AND units <= 0",
                        [(bank_id, term) for term in counts])
    con.execute(
        "INSERT INTO keyword_totals (bank_id, units, tokens) VALUES (?, ?, ?) ON CONFLICT (bank_id) "
        "DO UPDATE SET units = units + excluded.units, tokens = tokens + excluded.tokens",
        (bank_id, sign * units, sign * tokens),
    )


def _now() -> float:
    return datetime.now(UTC).timestamp()


def _upsert_entity(con: sqlite3.Connection, bank_id: str, entity: Entity) -> tuple[str, str]:
    """Write the resolver's view of an entity inside the retain's transaction; returns (stored id, name).

    The entity is found by its id, else by (bank, normalised name); a concurrent writer's entity of the same
    name is reused rather than duplicated. Aliases are unioned, the time span widened and a specific type
    replaces OTHER; the mention count is not taken from the caller (``_recount`` does it).
    """
    norm = normalise_name(entity.name)
    row = con.execute("SELECT * FROM entities WHERE id = ? AND bank_id = ?", (entity.id, bank_id)).fetchone()
    if row is None:
        row = con.execute("SELECT * FROM entities WHERE bank_id = ? AND norm = ?", (bank_id, norm)).fetchone()
    if row is None:
        aliases = [a for a in dict.fromkeys(entity.aliases) if a != entity.name]
        con.execute(
            "INSERT INTO entities (id, bank_id, name, norm, type, aliases, mention_count, first_seen, last_seen) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (entity.id, bank_id, entity.name, norm, entity.type.value, json.dumps(aliases), _ts(entity.first_seen),
             _ts(entity.last_seen)),
        )
        return entity.id, entity.name
    # The name itself is not added: found by id it is the same name, found by key a spelling of the same key.
    aliases = list(json.loads(row["aliases"]))
    for name in entity.aliases:
        if name != row["name"] and name not in aliases:
            aliases.append(name)
    etype = entity.type.value if entity.type != EntityType.OTHER else row["type"]
    first = min((x for x in (row["first_seen"], _ts(entity.first_seen)) if x is not None), default=None)
    last = max((x for x in (row["last_seen"], _ts(entity.last_seen)) if x is not None), default=None)
    con.execute("UPDATE entities SET aliases = ?, type = ?, first_seen = ?, last_seen = ? WHERE id = ?",
                (json.dumps(aliases), etype, first, last, row["id"]))
    return row["id"], row["name"]


def _recount(con: sqlite3.Connection, entity_ids: Iterable[str]) -> None:
    """Set mention counts from the mentions table."""
    con.executemany(
        "UPDATE entities SET mention_count = (SELECT count(*) FROM mentions WHERE entity_id = ?) WHERE id = ?",
        [(e, e) for e in dict.fromkeys(entity_ids)],
    )


def _insert_job(con: sqlite3.Connection, job: Job) -> None:
    con.execute(
        "INSERT INTO jobs (id, bank_id, kind, payload, status, attempts, error, created_at, run_after, "
        "owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        (job.id, job.bank_id, job.kind, json.dumps(job.payload, default=str), job.status.value,
         job.attempts, job.error, _ts(job.created_at), _ts(job.run_after)),
    )


def _insert_event(con: sqlite3.Connection, bank_id: str, event: OpinionEvent) -> None:
    """Append an opinion event, unless the opinion is not a unit of the bank (the Bolt store's MATCH skips too)."""
    con.execute(
        "INSERT INTO opinion_events (bank_id, opinion_id, at, label, old_confidence, new_confidence, "
        "evidence, old_text, new_text, rationale) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
        "WHERE EXISTS (SELECT 1 FROM units WHERE id = ? AND bank_id = ?)",
        (bank_id, event.opinion_id, _ts(event.at), event.label, event.old_confidence, event.new_confidence,
         json.dumps(event.evidence), event.old_text, event.new_text, event.rationale, event.opinion_id, bank_id),
    )


def _set_text(con: sqlite3.Connection, bank_id: str, unit_id: str, text: str, owner: str | None) -> bool:
    """Rewrite a unit's text with its keyword tokens and statistics, and mark its vector; False if absent."""
    row = con.execute(
        "SELECT context, kw_text, kw_context, kw_len FROM units WHERE bank_id = ? AND id = ?", (bank_id, unit_id)
    ).fetchone()
    if row is None:
        return False
    kw = keyword_columns([(text, row[0])])[0]
    _adjust_keyword_stats(con, bank_id, [row[1:]], -1)
    _adjust_keyword_stats(con, bank_id, [kw], +1)
    con.execute("UPDATE units SET text = ?, kw_text = ?, kw_context = ?, kw_len = ? WHERE bank_id = ? AND id = ?",
                (text, *kw, bank_id, unit_id))
    con.execute(
        "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
        (bank_id, unit_id, owner, _now()),
    )
    return True


# UnicodeError: a string the caller did not clean (a lone surrogate) cannot be bound as UTF-8.
@translate_errors((sqlite3.Error, UnicodeError), lambda self: f"SQLite graph store at {self.path}")
class SQLiteGraphStore:
    """Graph store on one SQLite file (or ``":memory:"`` for throwaway use)."""

    keyword_candidates: int = 200
    """Most FTS5 hits rescored per keyword search (in FTS5's own order; see ``keyword_search``)."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        self.path = str(path)
        self._synchronous = synchronous
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._memory_anchor: sqlite3.Connection | None = None
        if self.path == ":memory:":
            # A shared-cache in-memory database lets every thread's connection see the same data.
            self.path = f"file:hindsight-{id(self)}?mode=memory&cache=shared"
            self._memory_anchor = self._connect()
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        con = self._con()
        stored = _stored_version(con)
        if stored != SCHEMA_VERSION:
            _migrate(con)
        con.executescript(_SCHEMA)
        if stored != SCHEMA_VERSION:  # a file from before v3 (or a new one): skips the scans on every open
            _backfill(con)
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        con.commit()

    # connection handling -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(
                self.path, uri=self.path.startswith("file:"), timeout=30.0, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite graph store at {self.path}: {exc}") from exc
        con.row_factory = sqlite3.Row
        if not self.path.startswith("file:"):
            con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"PRAGMA synchronous={self._synchronous}")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA busy_timeout=30000")
        with self._lock:
            self._connections.append(con)
        return con

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._connect()
            self._local.con = con
        return con

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Pin this thread's reads to one committed state of the file (a WAL read transaction) for the block;
        writers on other connections, threads and processes go on meanwhile. An in-memory store reads live: its
        shared cache takes table locks, so a held read would make every writer fail instead of wait."""
        con = self._con()
        if self.path.startswith("file:") or con.in_transaction:
            yield
            return
        try:
            con.execute("BEGIN")
            con.execute("SELECT count(*) FROM meta").fetchone()  # the snapshot is taken at the first read
        except sqlite3.Error as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise StoreError(f"SQLite graph store at {self.path}: snapshot failed: {exc}") from exc
        try:
            yield
        finally:
            try:
                con.execute("COMMIT")  # ends the read transaction (nothing was written)
            except sqlite3.Error:
                with suppress(sqlite3.Error):
                    con.execute("ROLLBACK")

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for con in self._connections:
                with suppress(sqlite3.Error):
                    con.close()
            self._connections.clear()
        self._local = threading.local()

    # banks ---------------------------------------------------------------------------------------
    @staticmethod
    def _bank(row: sqlite3.Row) -> BankProfile:
        return BankProfile(
            id=row["id"], name=row["name"], background=row["background"],
            disposition=Disposition.model_validate_json(row["disposition"]),
            created_at=_dt(row["created_at"]),
        )

    def create_bank(self, profile: BankProfile) -> BankProfile:
        """Create a bank; return the existing profile unchanged if it already exists."""
        with self._tx() as con:
            con.execute(
                "INSERT OR IGNORE INTO banks (id, name, background, disposition, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (profile.id, profile.name, profile.background, profile.disposition.model_dump_json(),
                 _ts(profile.created_at)),
            )
        existing = self.get_bank(profile.id)
        assert existing is not None
        return existing

    def get_bank(self, bank_id: str) -> BankProfile | None:
        """The bank's profile, or None."""
        row = self._con().execute("SELECT * FROM banks WHERE id = ?", (bank_id,)).fetchone()
        return self._bank(row) if row else None

    def update_bank(self, profile: BankProfile) -> None:
        """Replace the bank's name, background and disposition."""
        with self._tx() as con:
            con.execute(
                "UPDATE banks SET name = ?, background = ?, disposition = ? WHERE id = ?",
                (profile.name, profile.background, profile.disposition.model_dump_json(), profile.id),
            )

    def list_banks(self) -> list[BankProfile]:
        """All banks, oldest first."""
        rows = self._con().execute("SELECT * FROM banks ORDER BY created_at, id").fetchall()
        return [self._bank(r) for r in rows]

    def delete_bank(self, bank_id: str, owner: str | None = None) -> None:
        """Delete a bank and everything in it; its vector collection is marked for dropping (unit id "")."""
        with self._tx() as con:
            con.execute("DELETE FROM vector_marks WHERE bank_id = ?", (bank_id,))
            con.execute("INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, '', ?, ?)",
                        (bank_id, owner, _now()))
            con.execute("DELETE FROM jobs WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM opinion_events WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM units WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM entities WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM documents WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM keyword_terms WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM keyword_totals WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM banks WHERE id = ?", (bank_id,))

    # documents -----------------------------------------------------------------------------------
    @staticmethod
    def _document(row: sqlite3.Row) -> Document:
        return Document(
            id=row["id"], bank_id=row["bank_id"], content=row["content"], context=row["context"],
            timestamp=_dt(row["timestamp"]), status=DocumentStatus(row["status"]), error=row["error"],
            metadata=json.loads(row["metadata"]), created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]),
            kind=DocumentKind(row["kind"]) if row["kind"] else None, options=json.loads(row["options"] or "{}"),
            owner=row["owner"], job_id=row["job_id"], revision=row["revision"],
        )

    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document; committed before extraction starts."""
        with self._tx() as con:
            con.execute(
                "INSERT INTO documents (bank_id, id, content, context, timestamp, status, error, metadata, "
                "created_at, updated_at, kind, options, owner, job_id, revision) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bank_id, id) DO UPDATE SET "
                "content = excluded.content, context = excluded.context, timestamp = excluded.timestamp, "
                "status = excluded.status, error = excluded.error, metadata = excluded.metadata, "
                "updated_at = excluded.updated_at, kind = excluded.kind, options = excluded.options, "
                "owner = excluded.owner, job_id = excluded.job_id, revision = excluded.revision",
                (document.bank_id, document.id, document.content, document.context, _ts(document.timestamp),
                 document.status.value, document.error, json.dumps(document.metadata, default=str),
                 _ts(document.created_at), _ts(document.updated_at),
                 document.kind.value if document.kind else None, json.dumps(document.options, default=str),
                 document.owner, document.job_id, document.revision),
            )

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        row = self._con().execute(
            "SELECT * FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id)
        ).fetchone()
        return self._document(row) if row else None

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None, *,
        revision: str | None = None, owner: str | None = None,
    ) -> bool:
        """Set a document's status (see ``GraphStore.set_document_status``); whether it was updated."""
        active = status in (DocumentStatus.PENDING, DocumentStatus.EXTRACTING)
        with self._tx() as con:
            return con.execute(
                "UPDATE documents SET status = ?, error = ?, owner = CASE WHEN ? THEN coalesce(?, owner) END "
                "WHERE bank_id = ? AND id = ? AND (? IS NULL OR revision IS ?)",
                (status.value, error, active, owner, bank_id, document_id, revision, revision),
            ).rowcount == 1

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and id prefix, oldest first."""
        sql = "SELECT * FROM documents WHERE bank_id = ?"
        args: list[Any] = [bank_id]
        if status is not None:
            sql += " AND status = ?"
            args.append(status.value)
        if prefix:
            # substr comparison, not LIKE: a prefix is matched literally (no wildcards, case-sensitive).
            sql += " AND substr(id, 1, ?) = ?"
            args += [len(prefix), prefix]
        rows = self._con().execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [self._document(r) for r in rows]

    def page_documents(
        self, bank_id: str, status: DocumentStatus | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Document]:
        """One page of a bank's documents, newest first."""
        sql = "SELECT * FROM documents WHERE bank_id = ?"
        args: list[Any] = [bank_id]
        if status is not None:
            sql += " AND status = ?"
            args.append(DocumentStatus(status).value)
        rows = self._con().execute(sql + " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._document(r) for r in rows]

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        with self._tx() as con:
            con.execute("DELETE FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id))

    def forget_document(self, bank_id: str, document_id: str, owner: str | None = None) -> list[str]:
        """Delete a document and its units in one transaction (vectors marked); returns the deleted unit ids."""
        with self._tx() as con:
            ids = [r[0] for r in con.execute("SELECT id FROM units WHERE bank_id = ? AND document_id = ?",
                                             (bank_id, document_id))]
            self._delete_units(con, bank_id, ids, owner)
            con.execute("DELETE FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id))
        return ids

    # units ---------------------------------------------------------------------------------------
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
                self._delete_units(con, bank_id, batch.replaces, owner)
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
                "INSERT OR IGNORE INTO mentions (unit_id, entity_id) VALUES (?, ?)",
                [(m.unit_id, remap.get(m.entity_id, m.entity_id)) for m in batch.mentions],
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

    def delete_units(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> int:
        """Delete units with their links, mentions and history; entity counts follow; their vectors are marked
        for removal under ``owner`` in the same transaction. Returns how many existed."""
        with self._tx() as con:
            return self._delete_units(con, bank_id, ids, owner)

    @staticmethod
    def _delete_units(con: sqlite3.Connection, bank_id: str, ids: Sequence[str], owner: str | None) -> int:
        deleted = 0
        now = _now()
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            marks = ",".join("?" * len(chunk))
            ents = [
                r[0]
                for r in con.execute(
                    f"SELECT DISTINCT m.entity_id FROM mentions m JOIN units u ON u.id = m.unit_id "
                    f"WHERE +u.bank_id = ? AND m.unit_id IN ({marks})",
                    [bank_id, *chunk],
                )
            ]
            gone = con.execute(
                f"SELECT id, kw_text, kw_context, kw_len FROM units WHERE +bank_id = ? AND id IN ({marks})",
                [bank_id, *chunk],
            ).fetchall()
            _adjust_keyword_stats(con, bank_id, [r[1:] for r in gone], -1)
            cur = con.execute(f"DELETE FROM units WHERE +bank_id = ? AND id IN ({marks})", [bank_id, *chunk])
            deleted += cur.rowcount
            con.executemany(
                "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
                [(bank_id, r[0], owner, now) for r in gone],
            )
            _recount(con, ents)
            if ents:
                con.execute(f"DELETE FROM entities WHERE id IN ({','.join('?' * len(ents))}) AND mention_count = 0",
                            ents)
        return deleted

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

    def apply_opinion_update(
        self, bank_id: str, update: OpinionUpdate, owner: str | None = None
    ) -> OpinionEvent | None:
        """Move an opinion once per (opinion, evidence): see ``GraphStore.apply_opinion_update``."""
        with self._tx() as con:
            row = con.execute(
                "SELECT confidence, text FROM units WHERE bank_id = ? AND id = ?", (bank_id, update.opinion_id)
            ).fetchone()
            if row is None:
                return None
            wanted = list(dict.fromkeys(update.evidence))
            applied = {r[0] for r in con.execute(
                f"SELECT evidence_id FROM opinion_evidence WHERE opinion_id = ? "
                f"AND evidence_id IN ({','.join('?' * len(wanted))})", [update.opinion_id, *wanted],
            )} if wanted else set()
            fresh = [e for e in wanted if e not in applied]
            if not fresh:
                return None
            old = float(row[0]) if row[0] is not None else 0.5
            new = min(1.0, max(0.0, old + float(update.delta)))
            new_text = update.new_text if update.new_text and update.new_text != row[1] else None
            if new_text is not None:
                _set_text(con, bank_id, update.opinion_id, new_text, owner)
            con.execute("UPDATE units SET confidence = ? WHERE bank_id = ? AND id = ?",
                        (new, bank_id, update.opinion_id))
            event = OpinionEvent(
                opinion_id=update.opinion_id, at=update.at or datetime.now(UTC), label=update.label,
                old_confidence=old, new_confidence=new, evidence=fresh, old_text=row[1] if new_text else None,
                new_text=new_text, rationale=update.rationale,
            )
            _insert_event(con, bank_id, event)
            con.executemany("INSERT INTO opinion_evidence (opinion_id, evidence_id) VALUES (?, ?)",
                            [(update.opinion_id, e) for e in fresh])
            return event

    def applied_evidence(self, bank_id: str, opinion_id: str) -> set[str]:
        """Ids of the evidence already applied to an opinion of this bank."""
        return {r[0] for r in self._con().execute(
            "SELECT e.evidence_id FROM opinion_evidence e JOIN units u ON u.id = e.opinion_id "
            "WHERE e.opinion_id = ? AND u.bank_id = ?", (opinion_id, bank_id),
        )}

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

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history (ignored when the opinion is not a unit of this bank)."""
        with self._tx() as con:
            _insert_event(con, bank_id, event)

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        rows = self._con().execute(
            "SELECT * FROM opinion_events WHERE bank_id = ? AND opinion_id = ? ORDER BY seq", (bank_id, opinion_id)
        ).fetchall()
        return [
            OpinionEvent(
                opinion_id=r["opinion_id"], at=_dt(r["at"]), label=r["label"], old_confidence=r["old_confidence"],
                new_confidence=r["new_confidence"], evidence=json.loads(r["evidence"]), old_text=r["old_text"],
                new_text=r["new_text"], rationale=r["rationale"],
            )
            for r in rows
        ]

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        sql = "SELECT count(*) FROM jobs WHERE status IN (?, ?)"
        args: list[Any] = [JobStatus.QUEUED.value, JobStatus.RUNNING.value]
        if bank_id is not None:
            sql += " AND bank_id = ?"
            args.append(bank_id)
        return int(self._con().execute(sql, args).fetchone()[0])

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
        out = [(r[0], _dt(r[1])) for r in rows if r[0] not in skip]
        return [(i, d) for i, d in out[:limit] if d is not None]

    # entities ------------------------------------------------------------------------------------
    @staticmethod
    def _entity(row: sqlite3.Row) -> Entity:
        return Entity(
            id=row["id"], bank_id=row["bank_id"], name=row["name"], type=EntityType(row["type"]),
            aliases=json.loads(row["aliases"]), mention_count=row["mention_count"],
            first_seen=_dt(row["first_seen"]), last_seen=_dt(row["last_seen"]),
        )

    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank, most mentioned first."""
        rows = self._con().execute(
            "SELECT * FROM entities WHERE bank_id = ? ORDER BY mention_count DESC, name", (bank_id,)
        ).fetchall()
        return [self._entity(r) for r in rows]

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, compared by ``normalise_name`` (case, diacritics, spacing)."""
        norm = normalise_name(name)
        row = self._con().execute(
            "SELECT * FROM entities WHERE bank_id = ? AND norm = ? ORDER BY mention_count DESC LIMIT 1",
            (bank_id, norm),
        ).fetchone()
        if row:
            return self._entity(row)
        for entity in self.list_entities(bank_id):
            if norm in (normalise_name(a) for a in entity.aliases):
                return entity
        return None

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ids = list(dict.fromkeys(entity_ids))
        if len(ids) < 2:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._con().execute(
            f"SELECT a.entity_id, b.entity_id, count(*) FROM mentions a JOIN mentions b "
            f"ON a.unit_id = b.unit_id AND a.entity_id < b.entity_id JOIN entities e ON e.id = a.entity_id "
            f"WHERE e.bank_id = ? AND a.entity_id IN ({marks}) AND b.entity_id IN ({marks}) "
            f"GROUP BY a.entity_id, b.entity_id",
            [bank_id, *ids, *ids],
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def get_entities(self, bank_id: str, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids (or other banks' entities) are skipped."""
        found: dict[str, Entity] = {}
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            for r in self._con().execute(
                f"SELECT * FROM entities WHERE bank_id = ? AND id IN ({','.join('?' * len(chunk))})",
                [bank_id, *chunk],
            ):
                found[r["id"]] = self._entity(r)
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def page_entities(
        self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Entity]:
        """One page of the bank's entities, most mentioned first; ``query`` filters on the normalised name."""
        sql, args = "SELECT * FROM entities WHERE bank_id = ?", list[Any]([bank_id])
        if query is not None and normalise_name(query):
            sql += " AND instr(norm, ?) > 0"  # instr, not LIKE: the query is matched literally
            args.append(normalise_name(query))
        rows = self._con().execute(sql + " ORDER BY mention_count DESC, name, id LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._entity(r) for r in rows]

    def related_entities(self, bank_id: str, entity_id: str, limit: int = 20) -> list[tuple[str, int]]:
        """Entities most often mentioned by the same units as ``entity_id``, with the number of shared units."""
        rows = self._con().execute(
            "SELECT b.entity_id, count(*) AS n FROM mentions a JOIN mentions b ON b.unit_id = a.unit_id "
            "AND b.entity_id != a.entity_id JOIN entities e ON e.id = a.entity_id AND e.bank_id = ? "
            "WHERE a.entity_id = ? GROUP BY b.entity_id ORDER BY n DESC, b.entity_id LIMIT ?",
            (bank_id, entity_id, _page(limit, 0)[0]),
        )
        return [(r[0], int(r[1])) for r in rows]

    # retrieval -----------------------------------------------------------------------------------
    @staticmethod
    def _filters(networks: Sequence[Network] | None, time_range: TimeRange | None) -> tuple[str, list[Any]]:
        sql, args = "", list[Any]()
        if networks:
            sql += f" AND u.network IN ({','.join('?' * len(networks))})"
            args.extend(Network(n).value for n in networks)
        if time_range is not None:
            if time_range.end is not None:
                sql += " AND coalesce(u.occurred_start, u.mentioned_at) <= ?"
                args.append(_ts(time_range.end))
            if time_range.start is not None:
                sql += " AND coalesce(u.occurred_end, u.occurred_start, u.mentioned_at) >= ?"
                args.append(_ts(time_range.start))
        return sql, args

    def keyword_search(
        self,
        bank_id: str,
        query: str,
        limit: int,
        networks: Sequence[Network] | None = None,
        time_range: TimeRange | None = None,
        context_weight: float = 0.5,
    ) -> list[tuple[str, float]]:
        """FTS5's bm25 over unit text and, down-weighted, its search context, with the bank's own statistics.

        FTS5's ``bm25()`` takes its unit count, mean length and term frequencies from the whole file, so one
        bank's ranking would shift with every other bank's content. Its order picks the candidates (the top
        ``keyword_candidates`` of the bank); they are rescored with the same formula (``fts5_bm25``) on the
        bank's statistics, which ``keyword_terms`` / ``keyword_totals`` keep exact in the same transactions
        as the units. The server store ranks the same way. (id, score) best first.
        """
        match = fts_query(query)
        if match is None or limit <= 0:
            return []
        extra, args = self._filters(networks, time_range)
        con = self._con()
        totals = con.execute(
            "SELECT units, (SELECT sum(units) FROM keyword_totals) FROM keyword_totals WHERE bank_id = ?", (bank_id,)
        ).fetchone()
        if totals is not None and totals[0] == totals[1]:
            # Only this bank has units: FTS5's file-wide statistics are the bank's, so bm25() is already exact.
            if extra:
                sql = ("SELECT u.id, bm25(units_fts, 1.0, ?) AS score FROM units_fts JOIN units u "
                       f"ON u.seq = units_fts.rowid WHERE units_fts MATCH ? AND u.bank_id = ?{extra} "
                       "ORDER BY score, u.seq LIMIT ?")
                params = [float(context_weight), match, bank_id, *args, limit]
            else:
                # Without filters the full-text table alone picks the top, and the join reads `limit` units instead
                # of every match (4.8 -> 3.2 ms per query at 10k units, the same rows in the same order). The bank
                # test stays: never another bank's unit, even if the totals were ever off.
                sql = ("SELECT u.id, f.score FROM (SELECT rowid, bm25(units_fts, 1.0, ?) AS score FROM units_fts "
                       "WHERE units_fts MATCH ? ORDER BY score, rowid LIMIT ?) f JOIN units u ON u.seq = f.rowid "
                       "WHERE u.bank_id = ? ORDER BY f.score, f.rowid")
                params = [float(context_weight), match, limit, bank_id]
            return [(r[0], -float(r[1])) for r in con.execute(sql, params).fetchall()]
        # Tokenised only here: the one-bank path above lets FTS5 tokenise the query itself.
        phrases = shared_tokenizer().phrases(query_terms(query))
        if not phrases:
            return []
        cap = max(self.keyword_candidates, limit)
        rows = con.execute(
            "SELECT u.id, u.kw_text, u.kw_context, u.seq FROM units_fts JOIN units u ON u.seq = units_fts.rowid "
            f"WHERE units_fts MATCH ? AND u.bank_id = ?{extra} ORDER BY bm25(units_fts, 1.0, ?) LIMIT ?",
            [match, bank_id, *args, float(context_weight), cap],
        ).fetchall()
        docs = [(r[0], (r[1] or "", r[2] or ""), r[3]) for r in rows]
        return rank(docs, phrases, self._keyword_stats(con, bank_id, phrases), (1.0, float(context_weight)), limit)

    @staticmethod
    def _keyword_stats(con: sqlite3.Connection, bank_id: str, phrases: Sequence[Phrase]) -> BankTermStats:
        """The bank's unit count, token total and per-phrase unit counts, from the maintained tables."""
        row = con.execute("SELECT units, tokens FROM keyword_totals WHERE bank_id = ?", (bank_id,)).fetchone()
        stats = BankTermStats(at=0.0, rows=int(row[0]) if row else 0, tokens=int(row[1]) if row else 0)
        terms = list(dict.fromkeys(p[0] for p in phrases if len(p) == 1))
        if terms:
            found = dict(con.execute(
                f"SELECT term, units FROM keyword_terms WHERE bank_id = ? AND term IN ({','.join('?' * len(terms))})",
                [bank_id, *terms],
            ).fetchall())
            stats.hits.update({(t,): int(found.get(t, 0)) for t in terms})
        for phrase in phrases:
            if len(phrase) > 1 and phrase not in stats.hits:  # a phrase query word: counted by FTS5 itself
                quoted = '"' + " ".join(phrase).replace('"', '""') + '"'
                stats.hits[phrase] = int(con.execute(
                    "SELECT count(*) FROM units_fts JOIN units u ON u.seq = units_fts.rowid "
                    "WHERE units_fts MATCH ? AND u.bank_id = ?", (quoted, bank_id),
                ).fetchone()[0])
        return stats

    def temporal_search(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """Units whose occurrence interval overlaps ``time_range``, most recent first."""
        extra, args = self._filters(networks, time_range)
        rows = self._con().execute(
            f"SELECT u.id, coalesce(u.occurred_start, u.mentioned_at) AS t FROM units u WHERE u.bank_id = ?{extra} "
            "ORDER BY t DESC LIMIT ?",
            [bank_id, *args, limit],
        ).fetchall()
        return [(r[0], _dt(r[1])) for r in rows]

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

    # background jobs -----------------------------------------------------------------------------
    @staticmethod
    def _job(row: sqlite3.Row) -> Job:
        return Job(
            id=row["id"], bank_id=row["bank_id"], kind=row["kind"], payload=json.loads(row["payload"]),
            status=JobStatus(row["status"]), attempts=row["attempts"], error=row["error"],
            created_at=_dt(row["created_at"]), run_after=_dt(row["run_after"]), owner=row["owner"],
        )

    def enqueue_job(self, job: Job, *, document_id: str | None = None) -> None:
        """Durably queue a job; with ``document_id`` the document becomes pending on it in the same transaction."""
        with self._tx() as con:
            _insert_job(con, job)
            if document_id is not None:
                con.execute(
                    "UPDATE documents SET status = 'pending', owner = NULL, job_id = ? WHERE bank_id = ? AND id = ?",
                    (job.id, job.bank_id, document_id),
                )

    def claim_job(self, now: datetime, owner: str | None = None) -> Job | None:
        """Atomically take the oldest runnable job and mark it running under ``owner`` (attempts + 1)."""
        with self._tx() as con:
            row = con.execute(
                "SELECT * FROM jobs WHERE status = ? AND run_after <= ? ORDER BY run_after, created_at, id LIMIT 1",
                (JobStatus.QUEUED.value, _ts(now)),
            ).fetchone()
            if row is None:
                return None
            con.execute(
                "UPDATE jobs SET status = ?, attempts = attempts + 1, owner = ? WHERE id = ?",
                (JobStatus.RUNNING.value, owner, row["id"]),
            )
        job = self._job(row)
        return job.model_copy(update={"status": JobStatus.RUNNING, "attempts": job.attempts + 1, "owner": owner})

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None) -> None:
        """Mark a job done (no error), re-queued for ``retry_at``, or failed for good; its lease is released."""
        if error is None:
            status, run_after = JobStatus.DONE, None
        elif retry_at is not None:
            status, run_after = JobStatus.QUEUED, _ts(retry_at)
        else:
            status, run_after = JobStatus.FAILED, None
        with self._tx() as con:
            con.execute(
                "UPDATE jobs SET status = ?, error = ?, run_after = coalesce(?, run_after), owner = NULL WHERE id = ?",
                (status.value, error, run_after, job_id),
            )

    # leases --------------------------------------------------------------------------------------
    def register_owner(self, owner: Owner) -> None:
        """Record a live process."""
        with self._tx() as con:
            con.execute(
                "INSERT OR REPLACE INTO owners (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                (owner.id, owner.host, owner.pid, _ts(owner.started_at), _ts(owner.heartbeat_at)),
            )

    def heartbeat(self, owner_id: str, at: datetime) -> bool:
        """Renew a lease; False when the owner row is gone."""
        with self._tx() as con:
            return con.execute("UPDATE owners SET heartbeat_at = ? WHERE id = ?", (_ts(at), owner_id)).rowcount == 1

    def remove_owner(self, owner_id: str) -> None:
        """Forget an owner that closed cleanly: what it still held goes back to nobody (then to the next reaper)."""
        with self._tx() as con:
            con.execute("UPDATE jobs SET status = 'queued', owner = NULL WHERE status = 'running' AND owner = ?",
                        (owner_id,))
            con.execute("UPDATE documents SET owner = NULL WHERE owner = ?", (owner_id,))
            con.execute("UPDATE vector_marks SET owner = NULL WHERE owner = ?", (owner_id,))
            con.execute("DELETE FROM owners WHERE id = ?", (owner_id,))

    def list_owners(self) -> list[Owner]:
        """Every registered owner."""
        rows = self._con().execute("SELECT * FROM owners ORDER BY started_at, id").fetchall()
        return [Owner(id=r["id"], host=r["host"], pid=r["pid"], started_at=_at(r["started_at"]),
                      heartbeat_at=_at(r["heartbeat_at"])) for r in rows]

    def release_owners(self, dead: Sequence[str], reaper: str, now: datetime) -> Released:
        """Take back what dead owners held (see ``Leases.release_owners``)."""
        dead_ids = [d for d in dict.fromkeys(dead) if d != reaper]
        marks = ",".join("?" * len(dead_ids)) or "NULL"
        # Held by nobody, by a dead owner, or by an owner whose row is gone (removed, or never registered).
        gone = f"(owner IS NULL OR owner IN ({marks}) OR owner NOT IN (SELECT id FROM owners))"
        out = Released()
        with self._tx() as con:
            out.jobs = con.execute(
                f"UPDATE jobs SET status = 'queued', owner = NULL WHERE status = 'running' AND {gone}", dead_ids
            ).rowcount
            # Documents waiting for a job that is still queued or running are in hand (the job will extract
            # them); the rest pass to the reaper, which resumes them.
            doc_gone = f"(d.owner IS NULL OR d.owner IN ({marks}) OR d.owner NOT IN (SELECT id FROM owners))"
            has_job = "EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('queued', 'running'))"
            con.execute(
                f"UPDATE documents AS d SET status = 'pending', owner = NULL WHERE d.status IN (?, ?) AND {doc_gone} "
                f"AND {has_job}", [*_ACTIVE_DOCS, *dead_ids],
            )
            rows = con.execute(
                f"SELECT d.bank_id, d.id FROM documents d WHERE d.status IN (?, ?) AND {doc_gone} AND NOT {has_job}",
                [*_ACTIVE_DOCS, *dead_ids],
            ).fetchall()
            con.executemany("UPDATE documents SET owner = ? WHERE bank_id = ? AND id = ?",
                            [(reaper, r[0], r[1]) for r in rows])
            out.documents = [(r[0], r[1]) for r in rows]
            out.vector_marks = con.execute(f"UPDATE vector_marks SET owner = ? WHERE {gone}",
                                           [reaper, *dead_ids]).rowcount
            if dead_ids:
                out.owners = con.execute(f"DELETE FROM owners WHERE id IN ({marks})", dead_ids).rowcount
        return out

    # vector marks --------------------------------------------------------------------------------
    def mark_vectors(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> None:
        """Record that these units' vectors are about to change."""
        now = _now()
        with self._tx() as con:
            con.executemany(
                "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
                [(bank_id, i, owner, now) for i in dict.fromkeys(ids)],
            )

    def clear_vector_marks(self, bank_id: str, ids: Sequence[str]) -> None:
        """The index matches the graph for these ids now."""
        with self._tx() as con:
            con.executemany("DELETE FROM vector_marks WHERE bank_id = ? AND unit_id = ?",
                            [(bank_id, i) for i in dict.fromkeys(ids)])

    def vector_marks(self, owner: str | None, limit: int = 10_000) -> list[tuple[str, str]]:
        """(bank, unit id) marks held by ``owner`` (None: held by nobody)."""
        sql = "SELECT bank_id, unit_id FROM vector_marks WHERE " + ("owner IS NULL" if owner is None else "owner = ?")
        rows = self._con().execute(sql + " ORDER BY marked_at LIMIT ?", ([] if owner is None else [owner]) + [limit])
        return [(r[0], r[1]) for r in rows]

    # integrity -----------------------------------------------------------------------------------
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

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        if bank_id is None:
            rows = self._con().execute("SELECT * FROM jobs ORDER BY created_at DESC").fetchall()
        else:
            rows = self._con().execute(
                "SELECT * FROM jobs WHERE bank_id = ? ORDER BY created_at DESC", (bank_id,)
            ).fetchall()
        return [self._job(r) for r in rows]

    def page_jobs(self, bank_id: str, status: JobStatus | None = None, *, limit: int = 50,
                  offset: int = 0) -> list[Job]:
        """One page of a bank's jobs, newest first."""
        sql, args = "SELECT * FROM jobs WHERE bank_id = ?", list[Any]([bank_id])
        if status is not None:
            sql += " AND status = ?"
            args.append(JobStatus(status).value)
        rows = self._con().execute(sql + " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._job(r) for r in rows]

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


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _page(limit: int, offset: int) -> tuple[int, int]:
    """LIMIT and OFFSET values: never negative (SQLite reads a negative LIMIT as "no limit")."""
    return max(0, int(limit)), max(0, int(offset))
