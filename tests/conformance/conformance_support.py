"""Types shared by the conformance suite's fixtures and tests (imported as a plain module)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hindsight_core import Hindsight
from hindsight_core.stores.base import GraphStore, VectorIndex
from hindsight_core.stores.neo4j import Neo4jGraphStore


@dataclass
class ServerEnv:
    """Where the Bolt server and the Chroma server of this session are."""

    uri: str
    user: str
    password: str
    database: str
    arcadedb_http: str | None
    chroma_host: str
    chroma_port: int

    @property
    def chroma_url(self) -> str:
        """``http://host:port`` of the Chroma server."""
        return f"http://{self.chroma_host}:{self.chroma_port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point a child process at these servers."""
        out = {"NEO4J_URI": self.uri, "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password,
               "NEO4J_DATABASE": self.database, "CHROMA_HOST": self.chroma_host, "CHROMA_PORT": str(self.chroma_port)}
        if self.arcadedb_http:
            out["ARCADEDB_HTTP_URL"] = self.arcadedb_http
        return out


@dataclass
class Backend:
    """One storage implementation: factories for its stores, reopenable on the same data."""

    name: str
    make_store: Callable[[], GraphStore]
    make_index: Callable[[], VectorIndex]
    graph_spec: Any  # what Hindsight.open(graph=...) takes for this backend
    vectors_spec: Any
    open_kwargs: dict[str, Any] = field(default_factory=dict)
    _opened: list[GraphStore] = field(default_factory=list)

    def store(self) -> GraphStore:
        """A new graph store on this backend's data (closed at teardown)."""
        s = self.make_store()
        self._opened.append(s)
        return s

    def index(self) -> VectorIndex:
        """A new vector index client on this backend's data."""
        return self.make_index()

    def open(self, embedder: Any, **kwargs: Any) -> Hindsight:
        """``Hindsight.open`` on this backend, the way a user would call it."""
        return Hindsight.open(None, graph=self.graph_spec() if callable(self.graph_spec) else self.graph_spec,
                              vectors=self.vectors_spec, embedder=embedder, start_worker=False,
                              **self.open_kwargs, **kwargs)

    def close(self) -> None:
        """Close every store handed out."""
        for s in self._opened:
            s.close()


def server_store(env: ServerEnv) -> Neo4jGraphStore:
    """A Bolt graph store on the session's server database."""
    return Neo4jGraphStore(env.uri, env.user, env.password, database=env.database, arcadedb_http=env.arcadedb_http)
