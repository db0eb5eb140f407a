"""The driver core every Neo4j mixin builds on: connecting (and picking the Cypher dialect), sessions, and
reads and writes with the retries a shared server needs."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ...errors import StoreError
from ..cypher_dialect import DEFAULT_NEO4J_URI, ArcadeDBDialect, CypherDialect, detect_dialect
from ..fts5_bm25 import TermStatsCache

T = TypeVar("T")


def _is_conflict(exc: Exception) -> bool:
    # ArcadeDB's optimistic MVCC reports concurrent writes as a generic error naming the Java exception.
    text = str(exc).lower()
    return "concurrent" in text or "conflict" in text or "deadlock" in text or ("lock" in text and "timeout" in text)


def _driver_errors() -> tuple[type[BaseException], ...]:
    from neo4j.exceptions import DriverError, Neo4jError

    return (Neo4jError, DriverError, UnicodeError)


def _default_arcadedb_http(uri: str) -> str:
    from urllib.parse import urlparse

    return f"http://{urlparse(uri).hostname or '127.0.0.1'}:2480"


class Neo4jConnection:
    """The typed base of ``Neo4jGraphStore``'s mixins: the driver, the dialect, ``_read``/``_write``/``_run``."""

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

        self.uri = uri or os.environ.get("NEO4J_URI") or DEFAULT_NEO4J_URI
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

    def _setup_schema(self, tried: str) -> None:
        """Create the indexes and bring the stored layout up to date: ``schema.Neo4jSchema`` does it."""
        raise NotImplementedError

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
