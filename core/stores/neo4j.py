"""Neo4j graph store over Bolt (the ``neo4j`` driver): the server-mode source of truth.

Graph model (labels and relationship types are this fixed set, never user input; every value is a query
parameter):

- ``(:Bank {id, name, background, disposition, created_at})``
- ``(:Document {key, bank_id, id, content, context, timestamp, status, error, metadata, created_at, updated_at})``
- ``(:Unit {id, bank_id, bank_key, text, context, kw_text, kw_context, kw_len, network, occurred_start,
  occurred_end, mentioned_at, t_start, t_end, confidence, sources, document_id, position, metadata, created_at,
  seq})``: ``kw_*`` are the tokens SQLite's FTS5 would index (see ``fts5_bm25``), space-joined
- ``(:Schema {id: 'hindsight', version})``: which layout the database holds
- ``(:Entity {id, bank_id, name, norm, type, aliases, mention_count, first_seen, last_seen})``
- ``(:Unit)-[:MENTIONS]->(:Entity)``, ``(:Unit)-[:LINK {bank_id, type, weight}]->(:Unit)``
- ``(:OpinionEvent {bank_id, opinion_id, seq, ...})``, ``(:Job {id, bank_id, kind, payload, status, owner, ...})``;
  an opinion unit lists the evidence applied to it in ``applied_evidence`` (each piece moves it once)
- ``(:Owner {id, host, pid, started_at, heartbeat_at})``: live processes (leases);
  ``(:VectorMark {key, bank_id, unit_id, owner, marked_at})``: the vector outbox (see ``base.VectorMarks``)

Times are epoch seconds (floats): range indexes serve them and no server-side temporal type is needed.
``t_start``/``t_end`` hold the occurrence interval with the fallbacks the SQLite store computes per query,
so temporal filters are plain indexed ranges. Lists and dicts are stored as JSON strings.
Server differences (full-text index creation) live in ``cypher_dialect``. The keyword channel uses the
full-text index (whitespace-analysed ``kw_*`` tokens) only to find candidates and ranks them with FTS5's
bm25 over per-bank statistics, so both stores rank keyword hits alike.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

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
from .cypher_dialect import ArcadeDBDialect, CypherDialect, detect_dialect
from .fts5_bm25 import Phrase, TermStatsCache, keyword_columns, query_terms, rank, shared_tokenizer

T = TypeVar("T")

SCHEMA_VERSION = 3
_ACTIVE_DOCS = [DocumentStatus.PENDING.value, DocumentStatus.EXTRACTING.value]
KEYWORD_CANDIDATES = 1000  # most full-text hits read per search; past it, phrase counts are queried

# Lucene's query syntax characters; terms are \w+ words, but escaping keeps that guarantee local.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def _ts(value: datetime | None) -> float | None:
    return as_utc(value).timestamp() if value is not None else None


def _dt(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def _at(value: float) -> datetime:
    """A timestamp column that is never null."""
    return datetime.fromtimestamp(value, UTC)


def bank_key(bank_id: str) -> str:
    """A token the full-text analyzer keeps intact, standing for the bank id inside the full-text index."""
    return "b" + hashlib.sha256(bank_id.encode("utf-8")).hexdigest()[:32]


def lucene_query(key: str, phrases: Sequence[Phrase]) -> str:
    """A Lucene query: the bank's token is required, each phrase is quoted and searched in both token fields.

    Quoting and escaping every token means no user text reaches Lucene's syntax (fields, wildcards, boosts).
    """
    clauses = []
    for phrase in phrases:
        quoted = '"' + _LUCENE_SPECIAL.sub(r"\\\1", " ".join(phrase)) + '"'
        clauses.append(f"kw_text:{quoted}")
        clauses.append(f"kw_context:{quoted}")
    # ^0: the bank clause filters without adding to the score (its own share would lift every hit).
    return f'+bank_key:"{key}"^0 +(' + " OR ".join(clauses) + ")"


def keyword_tokens(texts: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The ``kw_text``/``kw_context``/``kw_len`` properties of units with these (text, context) pairs."""
    return [{"kw_text": t, "kw_context": c, "kw_len": n} for t, c, n in keyword_columns(texts)]


def _is_conflict(exc: Exception) -> bool:
    # ArcadeDB's optimistic MVCC reports concurrent writes as a generic error naming the Java exception.
    text = str(exc).lower()
    return "concurrent" in text or "conflict" in text or "deadlock" in text or ("lock" in text and "timeout" in text)


def _driver_errors() -> tuple[type[BaseException], ...]:
    from neo4j.exceptions import DriverError, Neo4jError

    return (Neo4jError, DriverError, UnicodeError)


@translate_errors(_driver_errors, lambda self: f"Neo4j graph store at {self.uri}")
class Neo4jGraphStore:
    """Graph store on a Neo4j 5 server (or ArcadeDB's Neo4j-compatible Bolt endpoint)."""

    def __init__(
        self,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        *,
        database: str | None = None,
        dialect: CypherDialect | str | None = None,
        arcadedb_http: str | None = None,
        connect_timeout: float = 10.0,
        **driver_kwargs: Any,
    ) -> None:
        """Connect and set up the schema idempotently.

        Missing arguments come from ``NEO4J_URI``, ``NEO4J_USER``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE`` and,
        for ArcadeDB, ``ARCADEDB_HTTP_URL`` (its HTTP API creates the full-text index). ``dialect`` is
        ``"neo4j5"``, ``"arcadedb"``, a dialect object, or None to detect it from the server's agent string.
        """
        import neo4j
        from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable

        self.uri = uri or os.environ.get("NEO4J_URI") or "bolt://127.0.0.1:7687"
        user = user or os.environ.get("NEO4J_USER") or "neo4j"
        password = password if password is not None else os.environ.get("NEO4J_PASSWORD", "")
        self.database = database or os.environ.get("NEO4J_DATABASE") or None
        tried = f"{self.uri} as user {user!r}" + (f", database {self.database!r}" if self.database else "")
        try:
            self.driver = neo4j.GraphDatabase.driver(
                self.uri, auth=(user, password), connection_timeout=connect_timeout, **driver_kwargs
            )
            self.driver.verify_connectivity()
            agent = self.driver.get_server_info().agent
        except AuthError as exc:
            raise StoreError(f"Neo4j server at {tried} rejected the credentials: {exc}") from exc
        except (ServiceUnavailable, OSError, ValueError) as exc:
            raise StoreError(f"cannot reach a Neo4j (Bolt) server at {tried}: {exc}") from exc
        except Neo4jError as exc:
            raise StoreError(f"Neo4j server at {tried} failed: {exc}") from exc
        if isinstance(dialect, CypherDialect):
            self.dialect = dialect
        else:
            http = arcadedb_http or os.environ.get("ARCADEDB_HTTP_URL") or _default_arcadedb_http(self.uri)
            arcade = {"http_url": http, "database": self.database or "hindsight", "user": user,
                      "password": password}
            if dialect == "arcadedb":
                self.dialect = ArcadeDBDialect(**arcade)
            elif dialect == "neo4j5":
                self.dialect = CypherDialect()
            elif dialect is None:
                self.dialect = detect_dialect(agent, **arcade)
            else:
                self.driver.close()
                raise StoreError(f"unknown Cypher dialect {dialect!r}; use 'neo4j5' or 'arcadedb'")
        self._term_stats = TermStatsCache()  # per-bank keyword statistics (see ``keyword_search``)
        try:
            self._setup_schema(tried)
        except BaseException:
            self.driver.close()
            raise

    # plumbing ------------------------------------------------------------------------------------
    def _setup_schema(self, tried: str) -> None:
        from neo4j.exceptions import Neo4jError

        try:
            for statement in self.dialect.schema_statements():
                self._run(statement)
            self.dialect.after_schema(self._run)
            self._upgrade()
        except Neo4jError as exc:
            raise StoreError(f"cannot set up the graph schema on {tried}: {exc}") from exc

    def _upgrade(self) -> None:
        """Bring a database written by an older layout up to date (v1 -> v2: keyword tokens on every unit;
        v2 -> v3: entity keys from ``normalise_name``, duplicates merged)."""
        rows = self._run("MATCH (s:Schema {id: 'hindsight'}) RETURN s.version AS v")
        if rows and int(rows[0]["v"] or 0) >= SCHEMA_VERSION:
            return
        self._renormalise_entities(None)
        while True:  # idempotent: two processes upgrading at once write the same values
            todo = self._run(
                "MATCH (u:Unit) WHERE u.kw_len IS NULL RETURN u.id AS id, u.text AS text, u.context AS context "
                "LIMIT 500"
            )
            if not todo:
                break
            props = keyword_tokens([(r["text"] or "", r["context"] or "") for r in todo])
            rows_ = [{"id": r["id"], "props": p} for r, p in zip(todo, props, strict=True)]
            self._write(functools.partial(_set_unit_props, rows=rows_))
        self._write(lambda tx: tx.run(
            "MERGE (s:Schema {id: 'hindsight'}) SET s.version = $v", v=SCHEMA_VERSION
        ).consume(), retry_duplicates=True)

    def _stale(self, bank_id: str) -> None:
        # This process changed the bank's units: its keyword statistics are recomputed on the next search.
        self._term_stats.invalidate(bank_id)

    def _session(self) -> Any:
        return self.driver.session(database=self.database) if self.database else self.driver.session()

    def _run(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        """One auto-commit read or write query; records as dicts."""
        with self._session() as session:
            return [r.data() for r in session.run(cypher, params)]

    def _write(self, work: Callable[[Any], T], *, retry_duplicates: bool = False) -> T:
        """Run ``work(tx)`` in one transaction, retrying write conflicts (transient errors, ArcadeDB MVCC).

        ``retry_duplicates`` also retries a few unique-key violations: a concurrent MERGE on a server without
        MERGE locks (ArcadeDB) fails at commit, and the retry finds the node the other writer created.
        """
        from neo4j.exceptions import ConstraintError, Neo4jError, ServiceUnavailable, SessionExpired, TransientError

        delay = 0.02
        duplicates = 0
        for attempt in range(12):
            try:
                with self._session() as session:
                    return session.execute_write(work)
            except (ServiceUnavailable, SessionExpired) as exc:  # the driver already retried for a while
                raise StoreError(f"Neo4j server at {self.uri} is unreachable: {exc}") from exc
            except TransientError:
                if attempt == 11:
                    raise
            except ConstraintError:
                duplicates += 1
                if not retry_duplicates or duplicates > 3:
                    raise
            except Neo4jError as exc:
                if attempt == 11 or not _is_conflict(exc):
                    raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 1.0)
        raise StoreError("write kept conflicting")  # pragma: no cover - the loop returns or raises

    def _read(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        from neo4j.exceptions import ServiceUnavailable, SessionExpired

        try:
            with self._session() as session:
                return session.execute_read(lambda tx: [r.data() for r in tx.run(cypher, params)])
        except (ServiceUnavailable, SessionExpired) as exc:
            raise StoreError(f"Neo4j server at {self.uri} is unreachable: {exc}") from exc

    def close(self) -> None:
        """Close the driver's connection pool."""
        self.driver.close()

    # banks ---------------------------------------------------------------------------------------
    @staticmethod
    def _bank(row: dict[str, Any]) -> BankProfile:
        return BankProfile(
            id=row["id"], name=row["name"], background=row["background"],
            disposition=Disposition.model_validate_json(row["disposition"]), created_at=_dt(row["created_at"]),
        )

    def create_bank(self, profile: BankProfile) -> BankProfile:
        """Create a bank; return the existing profile unchanged if it already exists."""
        self._write(lambda tx: tx.run(
            "MERGE (b:Bank {id: $id}) ON CREATE SET b.name = $name, b.background = $background, "
            "b.disposition = $disposition, b.created_at = $created_at",
            id=profile.id, name=profile.name, background=profile.background,
            disposition=profile.disposition.model_dump_json(), created_at=_ts(profile.created_at),
        ).consume(), retry_duplicates=True)  # two processes opening a new bank at once both MERGE it
        existing = self.get_bank(profile.id)
        assert existing is not None
        return existing

    def get_bank(self, bank_id: str) -> BankProfile | None:
        """The bank's profile, or None."""
        rows = self._read("MATCH (b:Bank {id: $id}) RETURN properties(b) AS b", id=bank_id)
        return self._bank(rows[0]["b"]) if rows else None

    def update_bank(self, profile: BankProfile) -> None:
        """Replace the bank's name, background and disposition."""
        self._write(lambda tx: tx.run(
            "MATCH (b:Bank {id: $id}) SET b.name = $name, b.background = $background, b.disposition = $disposition",
            id=profile.id, name=profile.name, background=profile.background,
            disposition=profile.disposition.model_dump_json(),
        ).consume())

    def list_banks(self) -> list[BankProfile]:
        """All banks, oldest first."""
        rows = self._read("MATCH (b:Bank) RETURN properties(b) AS b ORDER BY b.created_at, b.id")
        return [self._bank(r["b"]) for r in rows]

    def delete_bank(self, bank_id: str, owner: str | None = None) -> None:
        """Delete a bank and everything in it; its vector collection is marked for dropping (unit id "")."""
        def work(tx: Any) -> None:
            for label in ("Job", "OpinionEvent", "Unit", "Entity", "Document", "VectorMark"):
                # Label from the fixed tuple above, never from input.
                tx.run(f"MATCH (n:{label}) WHERE n.bank_id = $bank DETACH DELETE n", bank=bank_id).consume()
            tx.run("MATCH (b:Bank {id: $bank}) DETACH DELETE b", bank=bank_id).consume()
            _mark(tx, bank_id, [""], owner)
        self._write(work, retry_duplicates=True)
        self._stale(bank_id)

    # documents -----------------------------------------------------------------------------------
    @staticmethod
    def _document(row: dict[str, Any]) -> Document:
        return Document(
            id=row["id"], bank_id=row["bank_id"], content=row["content"], context=row.get("context"),
            timestamp=_dt(row.get("timestamp")), status=DocumentStatus(row["status"]), error=row.get("error"),
            metadata=json.loads(row.get("metadata") or "{}"), created_at=_dt(row["created_at"]),
            updated_at=_dt(row["updated_at"]), kind=DocumentKind(row["kind"]) if row.get("kind") else None,
            options=json.loads(row.get("options") or "{}"), owner=row.get("owner"), job_id=row.get("job_id"),
            revision=row.get("revision"),
        )

    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document; the first ``created_at`` of an id is kept."""
        self._write(lambda tx: tx.run(
            "MERGE (d:Document {key: $key}) ON CREATE SET d.created_at = $created_at "
            "SET d.bank_id = $bank_id, d.id = $id, d.content = $content, d.context = $context, "
            "d.timestamp = $timestamp, d.status = $status, d.error = $error, d.metadata = $metadata, "
            "d.updated_at = $updated_at, d.kind = $kind, d.options = $options, d.owner = $owner, d.job_id = $job_id, "
            "d.revision = $revision",
            key=_doc_key(document.bank_id, document.id), bank_id=document.bank_id, id=document.id,
            content=document.content, context=document.context, timestamp=_ts(document.timestamp),
            status=document.status.value, error=document.error,
            metadata=json.dumps(document.metadata, default=str), created_at=_ts(document.created_at),
            updated_at=_ts(document.updated_at), kind=document.kind.value if document.kind else None,
            options=json.dumps(document.options, default=str), owner=document.owner, job_id=document.job_id,
            revision=document.revision,
        ).consume(), retry_duplicates=True)

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        rows = self._read(
            "MATCH (d:Document {key: $key}) RETURN properties(d) AS d", key=_doc_key(bank_id, document_id)
        )
        return self._document(rows[0]["d"]) if rows else None

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None, *,
        revision: str | None = None, owner: str | None = None,
    ) -> bool:
        """Set a document's status (see ``GraphStore.set_document_status``); whether it was updated."""
        rows = self._write(lambda tx: [r.data() for r in tx.run(
            "MATCH (d:Document {key: $key}) WHERE $revision IS NULL OR d.revision = $revision "
            "SET d.status = $status, d.error = $error, "
            "d.owner = CASE WHEN $status IN $active THEN coalesce($owner, d.owner) ELSE null END RETURN d.id AS id",
            key=_doc_key(bank_id, document_id), status=status.value, error=error, active=_ACTIVE_DOCS,
            revision=revision, owner=owner,
        )])
        return bool(rows)

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and id prefix (``STARTS WITH``: literal), oldest first."""
        rows = self._read(
            "MATCH (d:Document) WHERE d.bank_id = $bank AND ($status IS NULL OR d.status = $status) "
            "AND ($prefix IS NULL OR d.id STARTS WITH $prefix) "
            "RETURN properties(d) AS d ORDER BY d.created_at, d.id",
            bank=bank_id, status=status.value if status is not None else None, prefix=prefix or None,
        )
        return [self._document(r["d"]) for r in rows]

    def page_documents(
        self, bank_id: str, status: DocumentStatus | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Document]:
        """One page of a bank's documents, newest first."""
        rows = self._read(
            "MATCH (d:Document) WHERE d.bank_id = $bank AND ($status IS NULL OR d.status = $status) "
            "RETURN properties(d) AS d ORDER BY d.created_at DESC, d.id DESC SKIP $offset LIMIT $limit",
            bank=bank_id, status=DocumentStatus(status).value if status is not None else None,
            **_page(limit, offset),
        )
        return [self._document(r["d"]) for r in rows]

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        self._write(lambda tx: tx.run(
            "MATCH (d:Document {key: $key}) DETACH DELETE d", key=_doc_key(bank_id, document_id)
        ).consume())

    def forget_document(self, bank_id: str, document_id: str, owner: str | None = None) -> list[str]:
        """Delete a document and its units in one transaction (vectors marked); returns the deleted unit ids."""
        def work(tx: Any) -> list[str]:
            ids = [r["id"] for r in tx.run(
                "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.document_id = $doc RETURN u.id AS id",
                bank=bank_id, doc=document_id,
            )]
            if ids:
                _delete_units_tx(tx, bank_id, ids, owner)
            tx.run("MATCH (d:Document {key: $key}) DETACH DELETE d", key=_doc_key(bank_id, document_id)).consume()
            return ids

        try:
            return self._write(work, retry_duplicates=True)
        finally:
            self._stale(bank_id)

    # units ---------------------------------------------------------------------------------------
    def add_units(self, bank_id: str, batch: UnitBatch, owner: str | None = None) -> dict[str, str]:
        """Commit one retain in one transaction (UNWIND batches); see ``GraphStore.add_units``."""
        key = bank_key(bank_id)
        seq0 = time.time_ns() // 1000 * 1000  # insertion order across processes, for "newest first"
        entities = [_entity_props(bank_id, e) for e in [*batch.new_entities, *batch.updated_entities]]
        units: list[dict[str, Any]] = []
        keywords = keyword_tokens([(u.text, batch.contexts.get(u.id, "")) for u in batch.units])
        for i, u in enumerate(batch.units):
            start, end, mentioned = _ts(u.occurred_start), _ts(u.occurred_end), _ts(u.mentioned_at)
            units.append({
                "id": u.id, "props": {
                    "bank_id": bank_id, "bank_key": key, "text": u.text, "context": batch.contexts.get(u.id, ""),
                    "network": u.network.value, "occurred_start": start, "occurred_end": end,
                    "mentioned_at": mentioned, "t_start": _first(start, mentioned),
                    "t_end": _first(end, start, mentioned), "confidence": u.confidence,
                    "sources": json.dumps(u.sources), "document_id": u.document_id,
                    "position": batch.positions.get(u.id, 0), "metadata": json.dumps(u.metadata, default=str),
                    "created_at": _ts(u.created_at), "seq": seq0 + i, **keywords[i],
                },
            })
        mentions = [{"u": m.unit_id, "e": m.entity_id} for m in dict.fromkeys(batch.mentions)]
        links = [
            {"s": link.source_id, "t": link.target_id, "type": link.type.value, "w": float(link.weight)}
            for link in batch.links
        ]
        events = [_event_props(bank_id, e, i) for i, e in enumerate(batch.opinion_events)]

        def work(tx: Any) -> dict[str, str]:
            if batch.document_id is not None and batch.revision is not None:
                # Writing first locks the document (Neo4j) or conflicts (ArcadeDB): a concurrent re-put waits.
                rec = tx.run(
                    "MATCH (d:Document {key: $key}) SET d.write_token = $token RETURN d.revision AS revision",
                    key=_doc_key(bank_id, batch.document_id), token=uuid.uuid4().hex,
                ).single()
                if rec is None or rec["revision"] != batch.revision:
                    raise ConflictError(
                        f"document {batch.document_id!r} was stored again (or forgotten) while this retain ran; "
                        "the newer retain's memories are kept and nothing of this one was stored"
                    )
                tx.run("MATCH (d:Document {key: $key}) SET d.status = 'done', d.error = null, d.owner = null",
                       key=_doc_key(bank_id, batch.document_id)).consume()
            if batch.replaces:
                _delete_units_tx(tx, bank_id, list(dict.fromkeys(batch.replaces)), owner)
            remap: dict[str, str] = {}
            names: dict[str, str] = {}
            if entities:
                # MERGE on the (bank, normalised name) key: another process may have created the same entity
                # since this retain resolved its names (or deleted the one it found); the stored node is used
                # and the mentions follow it.
                for rec in tx.run(
                    "UNWIND $rows AS r MERGE (e:Entity {key: r.key}) ON CREATE SET e += r "
                    f"ON MATCH SET {_ENTITY_MERGE} RETURN r.id AS asked, e.id AS actual, e.name AS name",
                    rows=entities,
                ):
                    remap[rec["asked"]] = rec["actual"]
                    names[rec["asked"]] = rec["name"]
            if units:
                tx.run("UNWIND $rows AS r CREATE (u:Unit {id: r.id}) SET u += r.props", rows=units).consume()
            if mentions:
                rows = [{"u": m["u"], "e": remap.get(m["e"], m["e"])} for m in mentions]
                tx.run(
                    "UNWIND $rows AS r MATCH (u:Unit {id: r.u}) MATCH (e:Entity {id: r.e}) "
                    "WHERE u.bank_id = $bank AND e.bank_id = $bank MERGE (u)-[:MENTIONS]->(e)",
                    rows=rows, bank=bank_id,
                ).consume()
            touched = list(dict.fromkeys(remap.values()))
            if touched:
                # Counts come from the MENTIONS edges, not from the caller's snapshot: two processes adding
                # mentions of one entity at once both count.
                tx.run(
                    "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
                    "WITH e, count(m) AS n SET e.mention_count = n",
                    ids=touched,
                ).consume()
            if links:
                # Both ends must be units of the bank: a link to a forgotten unit is not stored (as in SQLite).
                tx.run(
                    "UNWIND $rows AS r MATCH (s:Unit {id: r.s}) MATCH (t:Unit {id: r.t}) "
                    "WHERE s.bank_id = $bank AND t.bank_id = $bank "
                    "MERGE (s)-[l:LINK {type: r.type}]->(t) ON CREATE SET l.weight = r.w, l.bank_id = $bank "
                    "ON MATCH SET l.weight = CASE WHEN l.weight >= r.w THEN l.weight ELSE r.w END",
                    rows=links, bank=bank_id,
                ).consume()
            if events:
                tx.run(
                    "UNWIND $rows AS r MATCH (u:Unit {id: r.opinion_id}) WHERE u.bank_id = $bank "
                    "CREATE (o:OpinionEvent) SET o = r", rows=events, bank=bank_id,
                ).consume()
            for job in batch.jobs:
                _create_job_tx(tx, job)
            if units:
                tx.run("UNWIND $keys AS k MATCH (m:VectorMark {key: k}) DELETE m",
                       keys=[_mark_key(bank_id, u["id"]) for u in units]).consume()
            return names

        try:
            return self._write(work, retry_duplicates=True)
        finally:
            self._stale(bank_id)

    def _memories(self, rows: list[dict[str, Any]]) -> list[Memory]:
        out = []
        for u in rows:
            out.append(Memory(
                id=u["id"], bank_id=u["bank_id"], text=u["text"], network=Network(u["network"]),
                occurred_start=_dt(u.get("occurred_start")), occurred_end=_dt(u.get("occurred_end")),
                mentioned_at=_dt(u.get("mentioned_at")), confidence=u.get("confidence"),
                entities=sorted(n for n in u["names"] if n is not None), sources=json.loads(u["sources"]),
                document_id=u.get("document_id"), metadata=json.loads(u.get("metadata") or "{}"),
                created_at=_dt(u.get("created_at")),
            ))
        return out

    def get_units(self, bank_id: str, ids: Sequence[str]) -> list[Memory]:
        """Units by id, in the order asked; unknown ids (or ids of other banks) are skipped."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        # Named columns and a pattern comprehension: measured ~2x faster on ArcadeDB than properties(u) with an
        # OPTIONAL MATCH + collect (and they skip the search-only properties).
        rows = self._read(
            f"UNWIND $ids AS id MATCH (u:Unit {{id: id}}) WHERE u.bank_id = $bank RETURN {_UNIT_COLUMNS}, "
            "[(u)-[:MENTIONS]->(e:Entity) | e.name] AS names",
            ids=wanted, bank=bank_id,
        )
        found = {m.id: m for m in self._memories(rows)}
        return [found[i] for i in wanted if i in found]

    def unit_ids(self, bank_id: str) -> set[str]:
        """Every unit id of the bank."""
        return {r["id"] for r in self._read("MATCH (u:Unit) WHERE u.bank_id = $bank RETURN u.id AS id", bank=bank_id)}

    def units_exist(self, bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are units of the bank."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        rows = self._read("UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank RETURN u.id AS id",
                          ids=wanted, bank=bank_id)
        return {r["id"] for r in rows}

    def units_of_document(self, bank_id: str, document_id: str) -> list[str]:
        """Ids of the units extracted from a document, in document order."""
        rows = self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.document_id = $doc RETURN u.id AS id "
            "ORDER BY u.position, u.seq",
            bank=bank_id, doc=document_id,
        )
        return [r["id"] for r in rows]

    def adjacent_units(self, bank_id: str, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """The units just before and just after each of ``ids`` in its document, in one round trip."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank AND u.document_id IS NOT NULL "
            "OPTIONAL MATCH (p:Unit) WHERE p.bank_id = $bank AND p.document_id = u.document_id "
            "AND p.position < u.position "
            "WITH u, max(p.position) AS before "
            "OPTIONAL MATCH (n:Unit) WHERE n.bank_id = $bank AND n.document_id = u.document_id "
            "AND n.position > u.position "
            "WITH u, before, min(n.position) AS after "
            "OPTIONAL MATCH (a:Unit) WHERE a.bank_id = $bank AND a.document_id = u.document_id "
            "AND (a.position = before OR a.position = after) "
            "RETURN u.id AS id, u.position AS position, a.id AS adjacent, a.position AS at, a.seq AS seq",
            ids=wanted, bank=bank_id,
        )
        out: dict[str, tuple[str | None, str | None]] = {}
        # In seq order, so that if two units ever shared a position the choice matches SQLite's (position, seq)
        # order: the last written before, the first written after.
        for r in sorted(rows, key=lambda r: (r["seq"] or 0, r["adjacent"] or "")):
            before, after = out.setdefault(r["id"], (None, None))
            if r["adjacent"] is None:
                continue
            if r["at"] < r["position"]:
                out[r["id"]] = (r["adjacent"], after)
            elif after is None:
                out[r["id"]] = (before, r["adjacent"])
        return out

    def units_of_entity(self, bank_id: str, entity_id: str) -> list[str]:
        """Ids of the units that mention an entity."""
        rows = self._read(
            "MATCH (u:Unit)-[:MENTIONS]->(e:Entity {id: $eid}) WHERE u.bank_id = $bank RETURN u.id AS id",
            eid=entity_id, bank=bank_id,
        )
        return [r["id"] for r in rows]

    def delete_units(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> int:
        """Delete units with their links, mentions and opinion history; entity counts follow; their vectors are
        marked for removal under ``owner`` in the same transaction."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0
        try:
            return self._write(lambda tx: _delete_units_tx(tx, bank_id, wanted, owner), retry_duplicates=True)
        finally:
            self._stale(bank_id)

    def update_unit(
        self, bank_id: str, unit_id: str, *, text: str | None = None, confidence: float | None = None
    ) -> None:
        """Change a unit's text and/or confidence in place (its keyword tokens follow the text, and a new text
        marks its vector, owner None, in the same transaction)."""
        def work(tx: Any) -> None:
            if text is not None and not _set_text(tx, bank_id, unit_id, text, None):
                return
            if confidence is not None:
                tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.confidence = $confidence",
                       id=unit_id, bank=bank_id, confidence=confidence).consume()

        self._write(work, retry_duplicates=True)
        self._stale(bank_id)

    def apply_opinion_update(
        self, bank_id: str, update: OpinionUpdate, owner: str | None = None
    ) -> OpinionEvent | None:
        """Move an opinion once per (opinion, evidence): see ``GraphStore.apply_opinion_update``."""
        token = uuid.uuid4().hex

        def work(tx: Any) -> OpinionEvent | None:
            # Writing first takes the node's write lock on Neo4j (ArcadeDB reports a conflict and we retry), so
            # two workers applying the same evidence are serialised and the second sees it applied.
            rec = tx.run(
                "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.write_token = $token "
                "RETURN u.confidence AS c, u.text AS text, coalesce(u.applied_evidence, []) AS applied",
                id=update.opinion_id, bank=bank_id, token=token,
            ).single()
            if rec is None:
                return None
            applied = set(rec["applied"])
            fresh = [e for e in dict.fromkeys(update.evidence) if e not in applied]
            if not fresh:
                return None
            old = float(rec["c"]) if rec["c"] is not None else 0.5
            new = min(1.0, max(0.0, old + float(update.delta)))
            new_text = update.new_text if update.new_text and update.new_text != rec["text"] else None
            if new_text is not None:
                _set_text(tx, bank_id, update.opinion_id, new_text, owner)
            event = OpinionEvent(
                opinion_id=update.opinion_id, at=update.at or datetime.now(UTC), label=update.label,
                old_confidence=old, new_confidence=new, evidence=fresh, old_text=rec["text"] if new_text else None,
                new_text=new_text, rationale=update.rationale,
            )
            tx.run(
                "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank "
                "SET u.confidence = $new, u.applied_evidence = coalesce(u.applied_evidence, []) + $fresh "
                "CREATE (o:OpinionEvent) SET o = $event",
                id=update.opinion_id, bank=bank_id, new=new, fresh=fresh, event=_event_props(bank_id, event, 0),
            ).consume()
            return event

        try:
            return self._write(work, retry_duplicates=True)
        finally:
            self._stale(bank_id)

    def applied_evidence(self, bank_id: str, opinion_id: str) -> set[str]:
        """Ids of the evidence already applied to an opinion of this bank."""
        rows = self._read("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank RETURN u.applied_evidence AS a",
                          id=opinion_id, bank=bank_id)
        return set(rows[0]["a"] or []) if rows else set()

    def units_in_network(
        self, bank_id: str, network: Network, entity_ids: Sequence[str] | None = None, limit: int = 1000
    ) -> list[str]:
        """Ids of a network's units, optionally only those mentioning one of ``entity_ids``; newest first."""
        if entity_ids is None:
            rows = self._read(
                "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.network = $network "
                "RETURN u.id AS id ORDER BY u.seq DESC LIMIT $limit",
                bank=bank_id, network=Network(network).value, limit=int(limit),
            )
        else:
            ids = list(dict.fromkeys(entity_ids))
            if not ids:
                return []
            rows = self._read(
                "UNWIND $eids AS eid MATCH (u:Unit)-[:MENTIONS]->(e:Entity {id: eid}) "
                "WHERE u.bank_id = $bank AND u.network = $network "
                "WITH DISTINCT u RETURN u.id AS id ORDER BY u.seq DESC LIMIT $limit",
                eids=ids, bank=bank_id, network=Network(network).value, limit=int(limit),
            )
        return [r["id"] for r in rows]

    @staticmethod
    def _unit_match(network: Network | None, entity_id: str | None) -> tuple[str, dict[str, Any]]:
        """MATCH/WHERE of ``page_units`` and ``count_units``."""
        match = ("MATCH (u:Unit)-[:MENTIONS]->(:Entity {id: $entity}) " if entity_id is not None
                 else "MATCH (u:Unit) ")
        return (match + "WHERE u.bank_id = $bank AND ($network IS NULL OR u.network = $network) ",
                {"entity": entity_id, "network": Network(network).value if network is not None else None})

    def page_units(
        self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None, limit: int = 50,
        offset: int = 0,
    ) -> list[str]:
        """Ids of one page of the bank's units (optionally one network, one entity's), newest stored first."""
        match, params = self._unit_match(network, entity_id)
        rows = self._read(match + "RETURN u.id AS id ORDER BY u.seq DESC, u.id DESC SKIP $offset LIMIT $limit",
                          bank=bank_id, **params, **_page(limit, offset))
        return [r["id"] for r in rows]

    def count_units(self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None) -> int:
        """How many units ``page_units`` pages through with the same filters."""
        match, params = self._unit_match(network, entity_id)
        rows = self._read(match + "RETURN count(u) AS n", bank=bank_id, **params)
        return int(rows[0]["n"]) if rows else 0

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history (ignored when the opinion is not a unit of this bank)."""
        self._write(lambda tx: tx.run(
            "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank CREATE (o:OpinionEvent) SET o = $props",
            id=event.opinion_id, bank=bank_id, props=_event_props(bank_id, event, 0),
        ).consume())

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        rows = self._read(
            "MATCH (o:OpinionEvent) WHERE o.opinion_id = $oid AND o.bank_id = $bank "
            "RETURN properties(o) AS o ORDER BY o.seq",
            oid=opinion_id, bank=bank_id,
        )
        return [
            OpinionEvent(
                opinion_id=o["opinion_id"], at=_dt(o["at"]), label=o["label"], old_confidence=o.get("old_confidence"),
                new_confidence=o["new_confidence"], evidence=json.loads(o["evidence"]), old_text=o.get("old_text"),
                new_text=o.get("new_text"), rationale=o.get("rationale"),
            )
            for o in (r["o"] for r in rows)
        ]

    def units_near_time(
        self, bank_id: str, when: datetime, window_s: float, limit: int, exclude: Iterable[str] = ()
    ) -> list[tuple[str, datetime]]:
        """Units whose occurrence starts within ``window_s`` of ``when``, nearest first (indexed range)."""
        t = _ts(when)
        assert t is not None
        skip = set(exclude)
        rows = self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.occurred_start >= $lo AND u.occurred_start <= $hi "
            "RETURN u.id AS id, u.occurred_start AS t ORDER BY abs(u.occurred_start - $t), u.seq LIMIT $limit",
            bank=bank_id, lo=t - window_s, hi=t + window_s, t=t, limit=int(limit) + len(skip),
        )
        out = [(r["id"], _dt(r["t"])) for r in rows if r["id"] not in skip]
        return [(i, d) for i, d in out[:limit] if d is not None]

    # entities ------------------------------------------------------------------------------------
    @staticmethod
    def _entity(row: dict[str, Any]) -> Entity:
        return Entity(
            id=row["id"], bank_id=row["bank_id"], name=row["name"], type=EntityType(row["type"]),
            aliases=list(row.get("aliases") or []), mention_count=row["mention_count"],
            first_seen=_dt(row.get("first_seen")), last_seen=_dt(row.get("last_seen")),
        )

    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank, most mentioned first."""
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank RETURN properties(e) AS e ORDER BY e.mention_count DESC, e.name",
            bank=bank_id,
        )
        return [self._entity(r["e"]) for r in rows]

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, compared by ``normalise_name`` (case, diacritics, spacing)."""
        norm = normalise_name(name)
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank AND e.norm = $norm "
            "RETURN properties(e) AS e ORDER BY e.mention_count DESC LIMIT 1",
            bank=bank_id, norm=norm,
        )
        if rows:
            return self._entity(rows[0]["e"])
        for entity in self.list_entities(bank_id):
            if norm in (normalise_name(a) for a in entity.aliases):
                return entity
        return None

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ids = list(dict.fromkeys(entity_ids))
        if len(ids) < 2:
            return {}
        rows = self._read(
            "UNWIND $ids AS aid MATCH (a:Entity {id: aid})<-[:MENTIONS]-(u:Unit)-[:MENTIONS]->(b:Entity) "
            "WHERE a.bank_id = $bank AND b.id IN $ids AND a.id < b.id "
            "RETURN a.id AS a, b.id AS b, count(u) AS n",
            ids=ids, bank=bank_id,
        )
        return {(r["a"], r["b"]): int(r["n"]) for r in rows}

    def get_entities(self, bank_id: str, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids (or other banks' entities) are skipped."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = self._read("MATCH (e:Entity) WHERE e.id IN $ids AND e.bank_id = $bank RETURN properties(e) AS e",
                          ids=wanted, bank=bank_id)
        found = {r["e"]["id"]: self._entity(r["e"]) for r in rows}
        return [found[i] for i in wanted if i in found]

    def page_entities(
        self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Entity]:
        """One page of the bank's entities, most mentioned first; ``query`` filters on the normalised name."""
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank AND ($query IS NULL OR e.norm CONTAINS $query) "
            "RETURN properties(e) AS e ORDER BY e.mention_count DESC, e.name, e.id SKIP $offset LIMIT $limit",
            bank=bank_id, query=normalise_name(query) if query is not None and normalise_name(query) else None,
            **_page(limit, offset),
        )
        return [self._entity(r["e"]) for r in rows]

    def related_entities(self, bank_id: str, entity_id: str, limit: int = 20) -> list[tuple[str, int]]:
        """Entities most often mentioned by the same units as ``entity_id``, with the number of shared units."""
        rows = self._read(
            "MATCH (a:Entity {id: $entity})<-[:MENTIONS]-(u:Unit)-[:MENTIONS]->(b:Entity) "
            "WHERE a.bank_id = $bank AND b.id <> a.id "
            "RETURN b.id AS id, count(u) AS n ORDER BY n DESC, id LIMIT $limit",
            entity=entity_id, bank=bank_id, limit=_page(limit, 0)["limit"],
        )
        return [(r["id"], int(r["n"])) for r in rows]

    # retrieval -----------------------------------------------------------------------------------
    @staticmethod
    def _filter_params(networks: Sequence[Network] | None, time_range: TimeRange | None) -> dict[str, Any]:
        return {
            "networks": [Network(n).value for n in networks] if networks else None,
            "t_hi": _ts(time_range.end) if time_range is not None else None,
            "t_lo": _ts(time_range.start) if time_range is not None else None,
        }

    # Filters shared by keyword and temporal search; null parameters switch a condition off.
    _FILTERS = (
        "($networks IS NULL OR u.network IN $networks) AND ($t_hi IS NULL OR u.t_start <= $t_hi) "
        "AND ($t_lo IS NULL OR u.t_end >= $t_lo)"
    )

    def keyword_search(
        self,
        bank_id: str,
        query: str,
        limit: int,
        networks: Sequence[Network] | None = None,
        time_range: TimeRange | None = None,
        context_weight: float = 0.5,
    ) -> list[tuple[str, float]]:
        """FTS5's bm25 over unit text and, down-weighted, its search context; best first.

        The full-text index finds the units holding any query token; they are scored like the SQLite
        store's ``bm25(units_fts, 1.0, context_weight)``, with the bank's own unit count, mean length and
        phrase hit counts (FTS5 uses the whole file's; a bank's ranking here never depends on other banks).
        """
        phrases = shared_tokenizer().phrases(query_terms(query))
        if not phrases or limit <= 0:
            return []
        filters = self._filter_params(networks, time_range)
        filtered = any(v is not None for v in filters.values())
        # Unfiltered, the index's own top hits are read, up to KEYWORD_CANDIDATES (when fewer match, that is
        # every unit matching a phrase, which also yields the exact hit counts); filtered, every match is read
        # so that filtering after the index cannot starve the result.
        cap = KEYWORD_CANDIDATES if not filtered else None
        # One record holding one string per hit: the driver's per-record cost was most of the search time.
        # Tokens hold no '|' (they are letters and digits) and the id comes last, so any id survives the split.
        packed = self._read(
            "CALL db.index.fulltext.queryNodes($index, $query, $options) YIELD node, score "
            f"WITH node AS u, score WHERE u.bank_id = $bank AND {self._FILTERS} "
            "RETURN collect(toString(coalesce(u.seq, 0)) + '|' + coalesce(u.kw_text, '') + '|' + "
            "coalesce(u.kw_context, '') + '|' + u.id) AS hits",
            index=self.dialect.fulltext_index, query=lucene_query(bank_key(bank_id), phrases),
            options={"limit": cap} if cap else {}, bank=bank_id, **filters,
        )
        hits = packed[0]["hits"] if packed else []
        docs = []
        for hit in hits:
            seq, text, context, uid = hit.split("|", 3)
            docs.append((uid, (text, context), int(seq)))
        complete = cap is not None and len(hits) < cap
        key = bank_key(bank_id)
        stats = self._term_stats.get(
            bank_id, phrases,
            totals=lambda: self._keyword_totals(bank_id),
            count_hits=lambda p: int(self._read(
                "CALL db.index.fulltext.queryNodes($index, $query) YIELD node "
                "WITH node WHERE node.bank_id = $bank RETURN count(node) AS n",
                index=self.dialect.fulltext_index, query=lucene_query(key, [p]), bank=bank_id,
            )[0]["n"]),
            every_match=[cols for _, cols, _ in docs] if complete else None,
        )
        return rank(docs, phrases, stats, (1.0, float(context_weight)), limit)

    def _keyword_totals(self, bank_id: str) -> tuple[int, int]:
        row = self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank RETURN count(u) AS n, sum(u.kw_len) AS tokens", bank=bank_id
        )[0]
        return int(row["n"] or 0), int(row["tokens"] or 0)

    def temporal_search(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """Units whose occurrence interval overlaps ``time_range``, most recent first."""
        rows = self._read(
            f"MATCH (u:Unit) WHERE u.bank_id = $bank AND {self._FILTERS} "
            "RETURN u.id AS id, u.t_start AS t ORDER BY t DESC LIMIT $limit",
            bank=bank_id, limit=int(limit), **self._filter_params(networks, time_range),
        )
        return [(r["id"], _dt(r["t"])) for r in rows]

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
        types = [LinkType(t).value for t in link_types] if link_types is not None else None
        edges = [
            Edge(r["s"], r["t"], r["type"], float(r["w"]))
            for r in self._read(
                "UNWIND $ids AS sid MATCH (s:Unit {id: sid})-[l:LINK]->(t:Unit) "
                "WHERE l.bank_id = $bank AND ($types IS NULL OR l.type IN $types) "
                "RETURN s.id AS s, t.id AS t, l.type AS type, l.weight AS w",
                ids=ids, bank=bank_id, types=types,
            )
        ]
        if entity_fanout > 0:
            for r in self._read(
                # The fan-out filter sits between the two hops: checked before expanding (25x faster on ArcadeDB).
                "UNWIND $ids AS sid MATCH (s:Unit {id: sid})-[:MENTIONS]->(e:Entity) "
                "WHERE e.bank_id = $bank AND e.mention_count <= $fanout "
                "MATCH (e)<-[:MENTIONS]-(t:Unit) WHERE t.id <> s.id "
                "RETURN s.id AS s, t.id AS t, e.mention_count AS n",
                ids=ids, bank=bank_id, fanout=int(entity_fanout),
            ):
                # Rarer entities are stronger evidence of relatedness (same weight as the SQLite store).
                edges.append(Edge(r["s"], r["t"], "entity", 1.0 / (1.0 + math.log1p(max(r["n"] - 1, 0)))))
        return edges

    def spread_activation(
        self,
        bank_id: str,
        seeds: Sequence[tuple[str, float]],
        *,
        hops: int,
        decay: float,
        multipliers: dict[str, float],
        entity_fanout: int,
        k: int,
        default_multiplier: float = 0.5,
    ) -> list[tuple[str, float]]:
        """Bounded spreading activation computed in Cypher: ``A(v) = max A(u) * w * delta * mu(type)``.

        Same result as ``recall.channels.graph`` over ``neighbors`` (seeds keep their score; each hop spreads
        only the ``k`` strongest new activations), but the server aggregates each hop and returns one
        activation per reached unit instead of every edge.
        """
        activation: dict[str, float] = {sid: max(score, 0.0) for sid, score in seeds}
        frontier = dict(activation)
        mu = {t: float(multipliers.get(t, default_multiplier)) for t in [*(lt.value for lt in LinkType), "entity"]}
        for _ in range(hops):
            if not frontier:
                break
            rows = self._read(
                "UNWIND $seeds AS seed MATCH (s:Unit {id: seed.id})-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank "
                "RETURN t.id AS id, max(seed.a * l.weight * $decay * coalesce($mu[l.type], $mu0)) AS a "
                "UNION ALL "
                "UNWIND $seeds AS seed MATCH (s:Unit {id: seed.id})-[:MENTIONS]->(e:Entity) "
                "WHERE e.bank_id = $bank AND e.mention_count <= $fanout "
                "MATCH (e)<-[:MENTIONS]-(t:Unit) WHERE t.id <> s.id "
                "RETURN t.id AS id, max(seed.a * $decay * $mu_entity / (1.0 + log(1.0 + "
                "CASE WHEN e.mention_count > 1 THEN e.mention_count - 1 ELSE 0 END))) AS a",
                seeds=[{"id": i, "a": a} for i, a in frontier.items()], bank=bank_id, decay=float(decay), mu=mu,
                mu0=float(default_multiplier), mu_entity=mu["entity"] if entity_fanout > 0 else 0.0,
                fanout=int(entity_fanout),
            )
            nxt: dict[str, float] = {}
            for r in rows:
                value = float(r["a"])
                if value > activation.get(r["id"], 0.0):
                    activation[r["id"]] = value
                    nxt[r["id"]] = value
            frontier = dict(sorted(nxt.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return sorted(activation.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

    # background jobs -----------------------------------------------------------------------------
    @staticmethod
    def _job(row: dict[str, Any]) -> Job:
        return Job(
            id=row["id"], bank_id=row["bank_id"], kind=row["kind"], payload=json.loads(row["payload"]),
            status=JobStatus(row["status"]), attempts=row["attempts"], error=row.get("error"),
            created_at=_dt(row["created_at"]), run_after=_dt(row["run_after"]), owner=row.get("owner"),
        )

    def enqueue_job(self, job: Job, *, document_id: str | None = None) -> None:
        """Durably queue a job; with ``document_id`` the document becomes pending on it in the same transaction."""
        def work(tx: Any) -> None:
            _create_job_tx(tx, job)
            if document_id is not None:
                tx.run("MATCH (d:Document {key: $key}) SET d.status = 'pending', d.owner = null, d.job_id = $job",
                       key=_doc_key(job.bank_id, document_id), job=job.id).consume()

        self._write(work)

    def claim_job(self, now: datetime, owner: str | None = None) -> Job | None:
        """Atomically take the oldest runnable job and mark it running under ``owner`` (attempts + 1).

        The claim writes a token first (taking the node's write lock on Neo4j; a conflicting commit on
        ArcadeDB is retried), then re-checks the status, so two workers never claim the same job.
        """
        token = uuid.uuid4().hex

        def work(tx: Any) -> dict[str, Any] | None:
            rec = tx.run(
                "MATCH (j:Job) WHERE j.status = $queued AND j.run_after <= $now "
                "WITH j ORDER BY j.run_after, j.created_at, j.id LIMIT 1 SET j.claim = $token "
                "WITH j WHERE j.status = $queued SET j.status = $running, j.attempts = j.attempts + 1, "
                "j.owner = $owner RETURN properties(j) AS j",
                queued=JobStatus.QUEUED.value, running=JobStatus.RUNNING.value, now=_ts(now), token=token,
                owner=owner,
            ).single()
            return rec["j"] if rec else None

        row = self._write(work)
        return self._job(row) if row else None

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None) -> None:
        """Mark a job done (no error), re-queued for ``retry_at``, or failed for good; its lease is released."""
        if error is None:
            status, run_after = JobStatus.DONE, None
        elif retry_at is not None:
            status, run_after = JobStatus.QUEUED, _ts(retry_at)
        else:
            status, run_after = JobStatus.FAILED, None
        self._write(lambda tx: tx.run(
            "MATCH (j:Job {id: $id}) SET j.status = $status, j.error = $error, "
            "j.run_after = coalesce($run_after, j.run_after), j.owner = null",
            id=job_id, status=status.value, error=error, run_after=run_after,
        ).consume())

    # leases --------------------------------------------------------------------------------------
    def register_owner(self, owner: Owner) -> None:
        """Record a live process."""
        self._write(lambda tx: tx.run(
            "MERGE (o:Owner {id: $id}) SET o.host = $host, o.pid = $pid, o.started_at = $started, "
            "o.heartbeat_at = $beat",
            id=owner.id, host=owner.host, pid=owner.pid, started=_ts(owner.started_at),
            beat=_ts(owner.heartbeat_at),
        ).consume(), retry_duplicates=True)

    def heartbeat(self, owner_id: str, at: datetime) -> bool:
        """Renew a lease; False when the owner node is gone."""
        rows = self._write(lambda tx: [r.data() for r in tx.run(
            "MATCH (o:Owner {id: $id}) SET o.heartbeat_at = $at RETURN o.id AS id", id=owner_id, at=_ts(at),
        )])
        return bool(rows)

    def remove_owner(self, owner_id: str) -> None:
        """Forget an owner that closed cleanly: what it still held goes back to nobody (then to the next reaper)."""
        def work(tx: Any) -> None:
            tx.run("MATCH (j:Job) WHERE j.status = 'running' AND j.owner = $id SET j.status = 'queued', j.owner = null",
                   id=owner_id).consume()
            tx.run("MATCH (d:Document) WHERE d.owner = $id SET d.owner = null", id=owner_id).consume()
            tx.run("MATCH (m:VectorMark) WHERE m.owner = $id SET m.owner = null", id=owner_id).consume()
            tx.run("MATCH (o:Owner {id: $id}) DELETE o", id=owner_id).consume()

        self._write(work)

    def list_owners(self) -> list[Owner]:
        """Every registered owner."""
        rows = self._read("MATCH (o:Owner) RETURN properties(o) AS o ORDER BY o.started_at, o.id")
        return [Owner(id=o["id"], host=o["host"], pid=int(o["pid"]), started_at=_at(o["started_at"]),
                      heartbeat_at=_at(o["heartbeat_at"])) for o in (r["o"] for r in rows)]

    def release_owners(self, dead: Sequence[str], reaper: str, now: datetime) -> Released:
        """Take back what dead owners held (see ``Leases.release_owners``)."""
        dead_ids = [d for d in dict.fromkeys(dead) if d != reaper]

        def work(tx: Any) -> Released:
            out = Released()
            # Held by nobody, by a dead owner, or by an owner whose node is gone (removed, or never registered).
            live = [r["id"] for r in tx.run("MATCH (o:Owner) WHERE NOT o.id IN $dead RETURN o.id AS id", dead=dead_ids)]
            gone = "(x.owner IS NULL OR NOT x.owner IN $live)"
            out.jobs = int(tx.run(
                f"MATCH (x:Job) WHERE x.status = 'running' AND {gone} "
                "SET x.status = 'queued', x.owner = null RETURN count(x) AS n", live=live,
            ).single()["n"])
            # Documents waiting for a job that is still queued or running are in hand; the rest pass to the reaper.
            tx.run(
                f"MATCH (x:Document) WHERE x.status IN $active AND {gone} "
                "MATCH (j:Job {id: x.job_id}) WHERE j.status IN ['queued', 'running'] "
                "SET x.status = 'pending', x.owner = null", active=_ACTIVE_DOCS, live=live,
            ).consume()
            out.documents = [(r["bank"], r["id"]) for r in tx.run(
                f"MATCH (x:Document) WHERE x.status IN $active AND {gone} "
                "OPTIONAL MATCH (j:Job {id: x.job_id}) WITH x, j "
                "WHERE j IS NULL OR NOT j.status IN ['queued', 'running'] "
                "SET x.owner = $reaper RETURN x.bank_id AS bank, x.id AS id",
                active=_ACTIVE_DOCS, live=live, reaper=reaper,
            )]
            out.vector_marks = int(tx.run(
                f"MATCH (x:VectorMark) WHERE {gone} SET x.owner = $reaper RETURN count(x) AS n",
                live=live, reaper=reaper,
            ).single()["n"])
            out.owners = int(tx.run(
                "MATCH (o:Owner) WHERE o.id IN $dead DELETE o RETURN count(o) AS n", dead=dead_ids,
            ).single()["n"])
            return out

        return self._write(work)

    # vector marks --------------------------------------------------------------------------------
    def mark_vectors(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> None:
        """Record that these units' vectors are about to change."""
        if ids:
            self._write(lambda tx: _mark(tx, bank_id, list(ids), owner), retry_duplicates=True)

    def clear_vector_marks(self, bank_id: str, ids: Sequence[str]) -> None:
        """The index matches the graph for these ids now."""
        if ids:
            self._write(lambda tx: tx.run(
                "UNWIND $keys AS k MATCH (m:VectorMark {key: k}) DELETE m",
                keys=[_mark_key(bank_id, i) for i in dict.fromkeys(ids)],
            ).consume())

    def vector_marks(self, owner: str | None, limit: int = 10_000) -> list[tuple[str, str]]:
        """(bank, unit id) marks held by ``owner`` (None: held by nobody)."""
        rows = self._read(
            "MATCH (m:VectorMark) WHERE ($owner IS NULL AND m.owner IS NULL) OR m.owner = $owner "
            "RETURN m.bank_id AS bank, m.unit_id AS uid ORDER BY m.marked_at LIMIT $limit",
            owner=owner, limit=int(limit),
        )
        return [(r["bank"], r["uid"]) for r in rows]

    # integrity -----------------------------------------------------------------------------------
    def check_bank(self, bank_id: str) -> dict[str, list[str]]:
        """The bank's graph invariants that do not hold, by kind, with the offending ids."""
        problems: dict[str, list[str]] = {}

        def add(kind: str, ids: Iterable[Any]) -> None:
            found = [str(i) for i in ids]
            if found:
                problems.setdefault(kind, []).extend(found)

        add("dangling_link", (r["k"] for r in self._read(
            "MATCH (s:Unit)-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank AND (s.bank_id <> $bank OR t.bank_id <> $bank) "
            "RETURN s.id + '->' + t.id AS k", bank=bank_id)))
        add("dangling_mention", (r["k"] for r in self._read(
            "MATCH (u:Unit)-[:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank AND e.bank_id <> $bank "
            "RETURN u.id + '->' + e.id AS k", bank=bank_id)))
        counts = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
            "RETURN e.id AS id, e.name AS name, e.norm AS norm, e.key AS key, e.mention_count AS kept, "
            "count(m) AS n", bank=bank_id)
        add("mention_count", (r["id"] for r in counts if r["kept"] != r["n"]))
        add("orphan_entity", (r["id"] for r in counts if r["n"] == 0))
        by_norm: dict[str, list[str]] = {}
        for r in counts:
            by_norm.setdefault(normalise_name(r["name"]), []).append(r["id"])
        add("duplicate_entity", (i for ids in by_norm.values() if len(ids) > 1 for i in ids))
        add("duplicate_entity", (r["id"] for r in counts if r["norm"] != normalise_name(r["name"])
                                 or r["key"] != json.dumps([bank_id, normalise_name(r["name"])], ensure_ascii=False)))
        add("dangling_opinion_event", (r["seq"] for r in self._read(
            "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank OPTIONAL MATCH (u:Unit {id: o.opinion_id}) "
            "WITH o, u WHERE u IS NULL OR u.bank_id <> $bank RETURN o.seq AS seq", bank=bank_id)))
        add("keyword_stats", (r["id"] for r in self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.kw_len IS NULL RETURN u.id AS id", bank=bank_id)))
        return problems

    def repair_bank(self, bank_id: str) -> dict[str, int]:
        """Fix what ``check_bank`` finds; how many of each kind were repaired."""
        found = self.check_bank(bank_id)
        fixed: dict[str, int] = {}
        if "dangling_link" in found:
            fixed["dangling_link"] = int(self._write(lambda tx: tx.run(
                "MATCH (s:Unit)-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank AND (s.bank_id <> $bank OR "
                "t.bank_id <> $bank) DELETE l RETURN count(*) AS n", bank=bank_id).single()["n"]))
        if "dangling_mention" in found:
            fixed["dangling_mention"] = int(self._write(lambda tx: tx.run(
                "MATCH (u:Unit)-[m:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank AND e.bank_id <> $bank DELETE m "
                "RETURN count(*) AS n", bank=bank_id).single()["n"]))
        if "dangling_opinion_event" in found:
            fixed["dangling_opinion_event"] = int(self._write(lambda tx: tx.run(
                "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank OPTIONAL MATCH (u:Unit {id: o.opinion_id}) "
                "WITH o, u WHERE u IS NULL OR u.bank_id <> $bank DELETE o RETURN count(*) AS n",
                bank=bank_id).single()["n"]))
        if "duplicate_entity" in found:
            fixed["duplicate_entity"] = self._renormalise_entities(bank_id)
        if "mention_count" in found or "orphan_entity" in found or "duplicate_entity" in found:
            def recount(tx: Any) -> tuple[int, int]:
                n = tx.run(
                    "MATCH (e:Entity) WHERE e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
                    "WITH e, count(m) AS n WHERE n <> e.mention_count SET e.mention_count = n RETURN count(e) AS c",
                    bank=bank_id).single()["c"]
                o = tx.run("MATCH (e:Entity) WHERE e.bank_id = $bank AND NOT (e)<-[:MENTIONS]-() DETACH DELETE e "
                           "RETURN count(*) AS c", bank=bank_id).single()["c"]
                return int(n), int(o)

            fixed["mention_count"], fixed["orphan_entity"] = self._write(recount)
        if "keyword_stats" in found:
            before = len(found["keyword_stats"])
            while True:
                todo = self._read(
                    "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.kw_len IS NULL "
                    "RETURN u.id AS id, u.text AS text, u.context AS context LIMIT 500", bank=bank_id)
                if not todo:
                    break
                props = keyword_tokens([(r["text"] or "", r["context"] or "") for r in todo])
                rows_ = [{"id": r["id"], "props": p} for r, p in zip(todo, props, strict=True)]
                self._write(functools.partial(_set_unit_props, rows=rows_))
            fixed["keyword_stats"] = before
            self._stale(bank_id)
        return {k: v for k, v in fixed.items() if v}

    def _renormalise_entities(self, bank_id: str | None) -> int:
        """Recompute entity keys with ``normalise_name`` and merge entities that share one (the most mentioned,
        then earliest seen, then smallest id survives; the others' mentions move to it and their aliases join
        its own); returns how many entities were merged away."""
        rows = self._read(
            "MATCH (e:Entity) WHERE $bank IS NULL OR e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
            "RETURN e.id AS id, e.bank_id AS bank, e.name AS name, e.key AS key, e.first_seen AS first, "
            "count(m) AS n", bank=bank_id,
        )
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault((r["bank"], normalise_name(r["name"])), []).append(r)
        merged = 0
        for (bank, norm), members in groups.items():
            members.sort(key=lambda r: (-r["n"], r["first"] if r["first"] is not None else math.inf, r["id"]))
            keep, losers = members[0], members[1:]
            new_key = json.dumps([bank, norm], ensure_ascii=False)
            if not losers and keep["key"] == new_key:
                continue

            def work(tx: Any, keep: dict[str, Any] = keep, losers: list[dict[str, Any]] = losers,
                     norm: str = norm, new_key: str = new_key) -> None:
                for loser in losers:
                    tx.run(
                        "MATCH (l:Entity {id: $loser}), (k:Entity {id: $keep}) "
                        "OPTIONAL MATCH (u:Unit)-[:MENTIONS]->(l) WITH l, k, collect(u) AS units "
                        "FOREACH (u IN units | MERGE (u)-[:MENTIONS]->(k)) "
                        f"WITH l, k SET {_LOSER_MERGE} DETACH DELETE l",
                        loser=loser["id"], keep=keep["id"],
                    ).consume()
                tx.run(
                    "MATCH (e:Entity {id: $id}) SET e.norm = $norm, e.key = $key WITH e "
                    "OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) WITH e, count(m) AS n SET e.mention_count = n",
                    id=keep["id"], norm=norm, key=new_key,
                ).consume()

            self._write(work)
            merged += len(losers)
        return merged

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        rows = self._read(
            "MATCH (j:Job) WHERE $bank IS NULL OR j.bank_id = $bank RETURN properties(j) AS j "
            "ORDER BY j.created_at DESC",
            bank=bank_id,
        )
        return [self._job(r["j"]) for r in rows]

    def page_jobs(self, bank_id: str, status: JobStatus | None = None, *, limit: int = 50,
                  offset: int = 0) -> list[Job]:
        """One page of a bank's jobs, newest first."""
        rows = self._read(
            "MATCH (j:Job) WHERE j.bank_id = $bank AND ($status IS NULL OR j.status = $status) "
            "RETURN properties(j) AS j ORDER BY j.created_at DESC, j.id DESC SKIP $offset LIMIT $limit",
            bank=bank_id, status=JobStatus(status).value if status is not None else None, **_page(limit, offset),
        )
        return [self._job(r["j"]) for r in rows]

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        rows = self._read(
            "MATCH (j:Job) WHERE j.status IN $statuses AND ($bank IS NULL OR j.bank_id = $bank) "
            "RETURN count(j) AS n",
            statuses=[JobStatus.QUEUED.value, JobStatus.RUNNING.value], bank=bank_id,
        )
        return int(rows[0]["n"]) if rows else 0

    def stats(self, bank_id: str) -> dict[str, Any]:
        """Counts of documents, units per network, entities, links and jobs."""
        def grouped(cypher: str) -> dict[str, int]:
            return {r["k"]: int(r["n"]) for r in self._read(cypher, bank=bank_id)}

        networks = grouped("MATCH (u:Unit) WHERE u.bank_id = $bank RETURN u.network AS k, count(*) AS n")
        return {
            "units": sum(networks.values()),
            "networks": networks,
            "documents": grouped("MATCH (d:Document) WHERE d.bank_id = $bank RETURN d.status AS k, count(*) AS n"),
            "entities": int(self._read(
                "MATCH (e:Entity) WHERE e.bank_id = $bank RETURN count(e) AS n", bank=bank_id)[0]["n"]),
            "links": grouped(
                "MATCH (:Unit)-[l:LINK]->(:Unit) WHERE l.bank_id = $bank RETURN l.type AS k, count(*) AS n"
            ),
            "jobs": grouped("MATCH (j:Job) WHERE j.bank_id = $bank RETURN j.status AS k, count(*) AS n"),
        }

    def clear_all(self) -> None:
        """Delete every node this store wrote (tests and benchmarks reset a shared server with it)."""
        for label in ("Job", "OpinionEvent", "Unit", "Entity", "Document", "Bank", "Owner", "VectorMark"):
            self._write(functools.partial(_delete_label, label=label))
        self._term_stats.invalidate()


_UNIT_COLUMNS = ", ".join(
    f"u.{c} AS {c}" for c in (
        "id", "bank_id", "text", "network", "occurred_start", "occurred_end", "mentioned_at", "confidence",
        "sources", "document_id", "metadata", "created_at",
    )
)


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _doc_key(bank_id: str, document_id: str) -> str:
    # One unique property for the (bank, id) pair: composite uniqueness differs between servers.
    return json.dumps([bank_id, document_id], ensure_ascii=False)


def _entity_props(bank_id: str, e: Entity) -> dict[str, Any]:
    norm = normalise_name(e.name)
    return {
        "id": e.id, "key": json.dumps([bank_id, norm], ensure_ascii=False), "bank_id": bank_id, "name": e.name,
        "norm": norm, "type": e.type.value, "aliases": list(e.aliases), "mention_count": e.mention_count,
        "first_seen": _ts(e.first_seen), "last_seen": _ts(e.last_seen),
    }


# Folding a resolver's view of an entity ``r`` into the stored node ``e`` (same key, so ``r.name`` is a spelling of
# ``e.name`` and is not added): aliases are unioned, the time span widened and a specific type replaces OTHER,
# so concurrent writers add to each other instead of overwriting.
_ENTITY_MERGE = (
    "e.aliases = coalesce(e.aliases, []) + [a IN r.aliases WHERE NOT a IN coalesce(e.aliases, [])], "
    "e.type = CASE WHEN r.type <> 'OTHER' THEN r.type ELSE e.type END, "
    "e.first_seen = CASE WHEN e.first_seen IS NULL OR (r.first_seen IS NOT NULL AND r.first_seen < e.first_seen) "
    "THEN r.first_seen ELSE e.first_seen END, "
    "e.last_seen = CASE WHEN e.last_seen IS NULL OR (r.last_seen IS NOT NULL AND r.last_seen > e.last_seen) "
    "THEN r.last_seen ELSE e.last_seen END"
)


def _set_unit_props(tx: Any, rows: list[dict[str, Any]]) -> None:
    tx.run("UNWIND $rows AS r MATCH (u:Unit {id: r.id}) SET u += r.props", rows=rows).consume()


def _delete_label(tx: Any, label: str) -> None:
    tx.run(f"MATCH (n:{label}) DETACH DELETE n").consume()


def _mark_key(bank_id: str, unit_id: str) -> str:
    return json.dumps([bank_id, unit_id], ensure_ascii=False)


def _mark(tx: Any, bank_id: str, unit_ids: Sequence[str], owner: str | None) -> None:
    """Mark vectors inside a transaction (MERGE: a unit marked twice keeps one mark, the latest owner)."""
    if unit_ids:
        tx.run(
            "UNWIND $rows AS r MERGE (m:VectorMark {key: r.key}) "
            "SET m.bank_id = $bank, m.unit_id = r.uid, m.owner = $owner, m.marked_at = $now",
            rows=[{"key": _mark_key(bank_id, u), "uid": u} for u in dict.fromkeys(unit_ids)], bank=bank_id,
            owner=owner, now=time.time(),
        ).consume()


def _create_job_tx(tx: Any, job: Job) -> None:
    tx.run(
        "CREATE (j:Job) SET j = $props",
        props={
            "id": job.id, "bank_id": job.bank_id, "kind": job.kind,
            "payload": json.dumps(job.payload, default=str), "status": job.status.value,
            "attempts": job.attempts, "error": job.error, "created_at": _ts(job.created_at),
            "run_after": _ts(job.run_after), "owner": None,
        },
    ).consume()


def _delete_units_tx(tx: Any, bank_id: str, ids: list[str], owner: str | None) -> int:
    """Delete units (with history), recount and prune their entities, mark their vectors; returns how many."""
    ents = [r["id"] for r in tx.run(
        "UNWIND $ids AS id MATCH (u:Unit {id: id})-[:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank "
        "RETURN DISTINCT e.id AS id", ids=ids, bank=bank_id,
    )]
    tx.run(
        "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank AND o.opinion_id IN $ids DELETE o", ids=ids, bank=bank_id,
    ).consume()
    gone = [r["id"] for r in tx.run(
        "UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank DETACH DELETE u RETURN id",
        ids=ids, bank=bank_id,
    )]
    _mark(tx, bank_id, gone, owner)
    if ents:
        tx.run(
            "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)<-[m:MENTIONS]-() "
            "WITH e, count(m) AS n SET e.mention_count = n",
            ids=ents,
        ).consume()
        tx.run("UNWIND $ids AS id MATCH (e:Entity {id: id}) WHERE e.mention_count = 0 DETACH DELETE e",
               ids=ents).consume()
    return len(gone)


def _set_text(tx: Any, bank_id: str, unit_id: str, text: str, owner: str | None) -> bool:
    """Rewrite a unit's text and keyword tokens and mark its vector; False when there is no such unit."""
    row = tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank RETURN u.context AS context",
                 id=unit_id, bank=bank_id).single()
    if row is None:
        return False
    keywords = keyword_tokens([(text, row["context"] or "")])[0]
    tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.text = $text, u += $keywords",
           id=unit_id, bank=bank_id, text=text, keywords=keywords).consume()
    _mark(tx, bank_id, [unit_id], owner)
    return True


def _event_props(bank_id: str, event: OpinionEvent, offset: int) -> dict[str, Any]:
    return {
        "bank_id": bank_id, "opinion_id": event.opinion_id, "seq": time.time_ns() + offset, "at": _ts(event.at),
        "label": event.label, "old_confidence": event.old_confidence, "new_confidence": event.new_confidence,
        "evidence": json.dumps(event.evidence), "old_text": event.old_text, "new_text": event.new_text,
        "rationale": event.rationale,
    }

# The same fold for a duplicate ``l`` merged into the surviving entity ``k`` (repair and upgrade).
_LOSER_MERGE = _ENTITY_MERGE.replace("e.", "k.").replace("r.", "l.")


def _default_arcadedb_http(uri: str) -> str:
    from urllib.parse import urlparse

    return f"http://{urlparse(uri).hostname or '127.0.0.1'}:2480"


def _page(limit: int, offset: int) -> dict[str, int]:
    """SKIP and LIMIT parameters, never negative (a server rejects a negative one)."""
    return {"limit": max(0, int(limit)), "offset": max(0, int(offset))}
