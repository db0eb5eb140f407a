"""Both backends for the security tests (``tests/test_security_*.py``): the embedded one (SQLite + on-disk Chroma)
and the server one (the real ArcadeDB Bolt server + a Chroma server).

The servers are those ``scripts/test.sh`` exports (``NEO4J_URI``, ``CHROMA_PORT``, ... as the conformance suite
reads them), with a database of the security tests' own; when absent, they are started here for the session
(``support.servers``) and stopped at its end. Nothing is skipped: a server that cannot be reached fails the tests.
Each test uses bank ids of its own (``unique``), so tests sharing the server never see each other's banks.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_core import Hindsight
from support.servers import bolt_server, chroma_server, ensure_arcadedb_database

DATABASE = "hssecurity" + os.environ.get("PYTEST_XDIST_WORKER", "")


@dataclass
class Servers:
    """Where the session's Bolt and Chroma servers are."""

    uri: str
    user: str
    password: str
    database: str
    chroma_url: str
    arcadedb_http: str | None = None

    def env(self) -> dict[str, str]:
        """What points ``Hindsight.open(graph=bolt://...)`` and the command line at these servers."""
        out = {"NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password, "NEO4J_DATABASE": self.database}
        if self.arcadedb_http:
            out["ARCADEDB_HTTP_URL"] = self.arcadedb_http
        return out


@contextlib.contextmanager
def session_servers(root: Path) -> Iterator[Servers]:
    """The servers of the environment, else fresh ones under ``root``."""
    uri, chroma_port = os.environ.get("NEO4J_URI"), os.environ.get("CHROMA_PORT")
    http = os.environ.get("ARCADEDB_HTTP_URL")
    if uri and chroma_port and http:
        user, password = os.environ.get("NEO4J_USER", "root"), os.environ.get("NEO4J_PASSWORD", "")
        ensure_arcadedb_database(http, DATABASE, user=user, password=password)
        yield Servers(uri, user, password, DATABASE,
                      f"http://{os.environ.get('CHROMA_HOST', '127.0.0.1')}:{chroma_port}", http)
        return
    with bolt_server(root / "arcadedb") as bolt, chroma_server(root / "chroma") as chroma:
        ensure_arcadedb_database(bolt.http_url, DATABASE, user=bolt.user, password=bolt.password)
        yield Servers(bolt.uri, bolt.user, bolt.password, DATABASE, f"http://{chroma.host}:{chroma.port}",
                      bolt.http_url)


@dataclass
class Backend:
    """One backend: how to open it from Python and how to name it on the command line."""

    name: str
    root: Path
    servers: Servers | None = None
    banks: list[str] = field(default_factory=list)

    def open(self, **kwargs: Any) -> Hindsight:
        """A ``Hindsight`` on this backend (the embedded one under ``root/m``)."""
        if self.servers is None:
            return Hindsight.open(self.root / "m", **kwargs)
        s = self.servers
        return Hindsight.open(None, graph=s.uri, vectors=s.chroma_url, neo4j_user=s.user, neo4j_password=s.password,
                              neo4j_database=s.database, **kwargs)

    def cli(self) -> list[str]:
        """The ``hindsight`` options that name this backend's store (with ``env()`` set)."""
        if self.servers is None:
            return ["--path", str(self.root / "m")]
        return ["--graph", self.servers.uri, "--vectors", self.servers.chroma_url]

    def env(self) -> dict[str, str]:
        """Environment variables the command line needs for this backend."""
        return {} if self.servers is None else self.servers.env()

    def unique(self, prefix: str = "bank") -> str:
        """A bank id no other test uses (the server backend is shared by the whole session)."""
        bank_id = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.banks.append(bank_id)
        return bank_id
