"""The one seam between Neo4j 5 and ArcadeDB's Neo4j-compatible Bolt server.

Everything else in the ``neo4j`` package is Cypher both servers accept. What differs lives here:

- Neo4j 5 creates the full-text index in Cypher (``CREATE FULLTEXT INDEX ... OPTIONS {indexConfig: ...}``);
  ArcadeDB rejects that statement and creates one with SQL over its HTTP API, where the index is then named
  ``Type[prop,...]``. Both are queried with ``db.index.fulltext.queryNodes`` and Lucene query syntax. The
  index covers pre-tokenised properties (``kw_text``, ``kw_context``: FTS5's tokens, see ``fts5_bm25``) with a
  whitespace analyzer, so both servers find exactly the tokens the SQLite store indexes.
- Element ids: Neo4j's are opaque strings, ArcadeDB's look like ``#1:0``; the store never relies on them.

The Neo4j 5 side is written to Neo4j's documented syntax; the tests here run the ArcadeDB side.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError

log = logging.getLogger(__name__)

NEAR_TIME_CYPHER = (
    "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.occurred_start >= $lo AND u.occurred_start <= $hi "
    "RETURN u.id AS id, u.occurred_start AS t ORDER BY abs(u.occurred_start - $t), u.seq LIMIT $limit"
)
NEAR_TIME_SQL_ROWS = 5000
"""Rows an ArcadeDB SQL time-range read returns at most before it hands the query back to Cypher."""
SQL_FAILURES_ALLOWED = 3
"""Failed SQL reads in a row after which ArcadeDB's indexed reads go through Cypher for the rest of the process."""

DEFAULT_NEO4J_URI = "bolt://127.0.0.1:7687"
"""The graph server tried when neither an option nor ``NEO4J_URI`` names one."""

# Range indexes and uniqueness constraints, valid Cypher on Neo4j 5 and on ArcadeDB. Labels and property
# names here are the complete fixed set the store uses: no label or type ever comes from user input.
SCHEMA_CYPHER: tuple[str, ...] = (
    "CREATE CONSTRAINT hs_bank_id IF NOT EXISTS FOR (b:Bank) REQUIRE b.id IS UNIQUE",
    "CREATE CONSTRAINT hs_document_key IF NOT EXISTS FOR (d:Document) REQUIRE d.key IS UNIQUE",
    "CREATE CONSTRAINT hs_unit_id IF NOT EXISTS FOR (u:Unit) REQUIRE u.id IS UNIQUE",
    "CREATE CONSTRAINT hs_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT hs_entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE e.key IS UNIQUE",
    "CREATE CONSTRAINT hs_job_id IF NOT EXISTS FOR (j:Job) REQUIRE j.id IS UNIQUE",
    "CREATE CONSTRAINT hs_owner_id IF NOT EXISTS FOR (o:Owner) REQUIRE o.id IS UNIQUE",
    "CREATE CONSTRAINT hs_vector_mark_key IF NOT EXISTS FOR (m:VectorMark) REQUIRE m.key IS UNIQUE",
    "CREATE INDEX hs_document_bank IF NOT EXISTS FOR (d:Document) ON (d.bank_id)",
    "CREATE INDEX hs_document_status IF NOT EXISTS FOR (d:Document) ON (d.status)",
    "CREATE INDEX hs_vector_mark_owner IF NOT EXISTS FOR (m:VectorMark) ON (m.owner)",
    "CREATE INDEX hs_unit_bank IF NOT EXISTS FOR (u:Unit) ON (u.bank_id)",
    "CREATE INDEX hs_unit_bank_time IF NOT EXISTS FOR (u:Unit) ON (u.bank_id, u.t_start)",
    "CREATE INDEX hs_unit_bank_occurred IF NOT EXISTS FOR (u:Unit) ON (u.bank_id, u.occurred_start)",
    "CREATE INDEX hs_unit_bank_doc IF NOT EXISTS FOR (u:Unit) ON (u.bank_id, u.document_id)",
    "CREATE INDEX hs_entity_bank_norm IF NOT EXISTS FOR (e:Entity) ON (e.bank_id, e.norm)",
    "CREATE INDEX hs_opinion_event IF NOT EXISTS FOR (o:OpinionEvent) ON (o.opinion_id)",
    "CREATE INDEX hs_opinion_event_bank IF NOT EXISTS FOR (o:OpinionEvent) ON (o.bank_id)",
    "CREATE INDEX hs_job_runnable IF NOT EXISTS FOR (j:Job) ON (j.status, j.run_after)",
    "CREATE INDEX hs_job_bank IF NOT EXISTS FOR (j:Job) ON (j.bank_id)",
    "CREATE CONSTRAINT hs_audit_key IF NOT EXISTS FOR (a:AuditEntry) REQUIRE a.key IS UNIQUE",
    "CREATE INDEX hs_audit_bank IF NOT EXISTS FOR (a:AuditEntry) ON (a.bank_id)",
)

# Properties of :Unit covered by the full-text index: the tokens of text and of search context (weighted at
# query time) and a hex token of the bank id, so the index itself filters by bank (``+bank_key:...``).
FULLTEXT_PROPERTIES: tuple[str, ...] = ("kw_text", "kw_context", "bank_key")
# The previous layout's index (English analyzer over raw text), dropped when a database is upgraded.
LEGACY_FULLTEXT_PROPERTIES: tuple[str, ...] = ("text", "context", "bank_key")


@dataclass
class CypherDialect:
    """What differs between Bolt servers: schema statements and the full-text index."""

    name: str = "neo4j5"

    @property
    def fulltext_index(self) -> str:
        """Name passed to ``db.index.fulltext.queryNodes``."""
        return "hs_unit_terms"

    def schema_statements(self) -> list[str]:
        """Idempotent Cypher run at open (constraints, range indexes and, on Neo4j, the full-text index)."""
        props = ", ".join(f"u.{p}" for p in FULLTEXT_PROPERTIES)
        return [
            *SCHEMA_CYPHER,
            "DROP INDEX hs_unit_fulltext IF EXISTS",  # the previous layout's English-analysed index
            # Whitespace: the properties already hold FTS5's tokens (stemmed, lower-cased, diacritics removed).
            f"CREATE FULLTEXT INDEX {self.fulltext_index} IF NOT EXISTS FOR (u:Unit) ON EACH [{props}] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
        ]

    def after_schema(self, run: Callable[[str], list[dict[str, Any]]]) -> None:
        """Extra set-up outside Cypher, given a Cypher runner (nothing on Neo4j)."""

    def units_near_time(self, read: Callable[..., list[dict[str, Any]]], bank_id: str, lo: float, hi: float,
                        t: float, limit: int) -> list[dict[str, Any]]:
        """Rows ``{id, t}`` of the bank's units whose occurrence starts in ``[lo, hi]``, nearest to ``t`` first (then
        by ``seq``), at most ``limit``: a range on the (bank_id, occurred_start) index. ``read`` runs Cypher."""
        return read(NEAR_TIME_CYPHER, bank=bank_id, lo=lo, hi=hi, t=t, limit=int(limit))


@dataclass
class ArcadeDBDialect(CypherDialect):
    """ArcadeDB's Bolt endpoint: the full-text index is created with SQL over the HTTP API."""

    name: str = "arcadedb"
    http_url: str = "http://127.0.0.1:2480"
    database: str = "hindsight"
    user: str = "root"
    password: str = ""
    sql_reads: bool = field(default=True, init=False, compare=False)
    """Whether indexed reads go through SQL (turned off for good after ``SQL_FAILURES_ALLOWED`` failures in a row)."""
    _sql_failures: int = field(default=0, init=False, compare=False, repr=False)

    @property
    def fulltext_index(self) -> str:
        """ArcadeDB names an index after its type and properties."""
        return "Unit[" + ",".join(FULLTEXT_PROPERTIES) + "]"

    def schema_statements(self) -> list[str]:
        """Constraints and range indexes only: ArcadeDB rejects ``CREATE FULLTEXT INDEX`` in Cypher."""
        return list(SCHEMA_CYPHER)

    def after_schema(self, run: Callable[[str], list[dict[str, Any]]]) -> None:
        """Create the full-text index (whitespace analyzer, like Neo4j's 'whitespace') with SQL, unless it exists.

        The check goes over Bolt, so reopening a set-up database does not need the HTTP API at all.
        """
        names = {r.get("name") for r in run("SHOW INDEXES YIELD name RETURN name")}
        legacy = "Unit[" + ",".join(LEGACY_FULLTEXT_PROPERTIES) + "]"
        if legacy in names:
            self.sql(f"DROP INDEX `{legacy}`")
        if self.fulltext_index in names:
            return
        self.sql("CREATE VERTEX TYPE Unit IF NOT EXISTS")
        for prop in FULLTEXT_PROPERTIES:
            self.sql(f"CREATE PROPERTY Unit.{prop} IF NOT EXISTS STRING")
        cols = ", ".join(FULLTEXT_PROPERTIES)
        self.sql(
            f"CREATE INDEX IF NOT EXISTS ON Unit ({cols}) FULL_TEXT "
            'METADATA {"analyzer": "org.apache.lucene.analysis.core.WhitespaceAnalyzer"}'
        )

    def units_near_time(self, read: Callable[..., list[dict[str, Any]]], bank_id: str, lo: float, hi: float,
                        t: float, limit: int) -> list[dict[str, Any]]:
        """As on Neo4j, but through SQL: ArcadeDB's Cypher does not use the composite range index for this filter
        and scans the bank (100-170 ms per call at 67k units against 5-19 ms in SQL, one call per new unit's time,
        so a raw ingest grew quadratic). Falls back to Cypher when the HTTP API cannot answer, for good."""
        if self.sql_reads:
            try:
                answer = self.sql(
                    "SELECT id, occurred_start AS t, seq FROM Unit WHERE bank_id = :bank AND occurred_start >= :lo "
                    f"AND occurred_start <= :hi LIMIT {NEAR_TIME_SQL_ROWS + 1}",
                    params={"bank": bank_id, "lo": lo, "hi": hi},
                )
                rows = answer.get("result") if isinstance(answer, dict) else None
                if isinstance(rows, list) and len(rows) <= NEAR_TIME_SQL_ROWS:
                    rows.sort(key=lambda r: (abs(float(r["t"]) - t), r.get("seq") or 0))
                    self._sql_failures = 0
                    return [{"id": r["id"], "t": r["t"]} for r in rows[: int(limit)]]
            except (StoreError, KeyError, TypeError, ValueError) as exc:
                # One failure may be a busy moment: this read goes to Cypher; a few in a row turn SQL off.
                self._sql_failures += 1
                if self._sql_failures >= SQL_FAILURES_ALLOWED:
                    self.sql_reads = False
                    log.warning("ArcadeDB's HTTP API at %s cannot serve indexed reads (%s); using Cypher, which "
                                "scans", self.http_url, exc)
        return super().units_near_time(read, bank_id, lo, hi, t, limit)

    def sql(self, command: str, params: dict[str, Any] | None = None) -> Any:
        """Run one SQL command through ArcadeDB's HTTP API: a fixed statement, values only as ``params`` (never
        spliced into the command)."""
        url = f"{self.http_url.rstrip('/')}/api/v1/command/{self.database}"
        request: dict[str, Any] = {"language": "sql", "command": command}
        if params:
            request["params"] = params
        body = json.dumps(request).encode()
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        req = urllib.request.Request(
            url, data=body, method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise StoreError(f"ArcadeDB HTTP API at {url} refused {command!r}: {exc.code} {detail}") from exc
        except OSError as exc:
            raise StoreError(
                f"cannot reach ArcadeDB's HTTP API at {url} (needed to create the full-text index): {exc}"
            ) from exc


def detect_dialect(server_agent: str, **arcadedb: Any) -> CypherDialect:
    """Choose the dialect from the Bolt server's agent string (ArcadeDB announces itself in it)."""
    if "arcadedb" in server_agent.lower():
        return ArcadeDBDialect(**arcadedb)
    return CypherDialect()
