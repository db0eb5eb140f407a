"""Where a store lives, and opening it: one place for paths, ``graph``/``vectors`` pairs and the environment.

``Hindsight.open`` and every command (``retain``, ``recall``, ``reflect``, ``stats``, ``check``, ``export``,
``import``, ``ui``, ``mcp``) go through here, so a store is named the same way everywhere and a wrong name fails
with one error type, ``StoreLocationError``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from ..errors import InvalidInputError
from .cypher_dialect import DEFAULT_NEO4J_URI

if TYPE_CHECKING:
    from .base import GraphStore, VectorIndex

ENV_PATH = "HINDSIGHT_PATH"
"""Environment variable: the embedded store's directory when no ``--path`` is given (default ``./memory``)."""
ENV_GRAPH = "HINDSIGHT_GRAPH"
"""Environment variable: a graph store (``bolt://...`` or a SQLite file) when no option names one."""
ENV_VECTORS = "HINDSIGHT_VECTORS"
"""Environment variable: the vector index that goes with ``HINDSIGHT_GRAPH`` (``http://host:port`` or a folder)."""
DEFAULT_PATH = "memory"
DEFAULT_CHROMA_PORT = 8000
BOLT_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
GRAPH_FILE = "graph.sqlite"


class StoreLocationError(InvalidInputError):
    """A store named in a way that cannot be opened: ``--graph`` without ``--vectors`` (or the reverse), both a
    path and a server pair, or no store where a command that only reads needs one."""


def is_server_graph(graph: str) -> bool:
    """True for a Neo4j/Bolt URI (``bolt://``, ``neo4j://`` and their ``+s``/``+ssc`` variants)."""
    return graph.startswith(BOLT_SCHEMES)


@dataclass(frozen=True)
class StoreLocation:
    """A store's address: an embedded directory (``path``), or a graph store with its vector index."""

    path: Path | None = None
    graph: str | None = None
    vectors: str | None = None

    @classmethod
    def resolve(
        cls,
        path: str | Path | None = None,
        graph: str | None = None,
        vectors: str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> StoreLocation:
        """The location named by options, else by ``HINDSIGHT_GRAPH``/``HINDSIGHT_VECTORS``, else by
        ``HINDSIGHT_PATH``, else ``./memory``. ``graph`` and ``vectors`` go together; a path excludes them."""
        env = os.environ if environ is None else environ
        if graph or vectors:
            if path:
                raise StoreLocationError("give --path or --graph/--vectors, not both")
            return cls._pair(graph, vectors, "--graph", "--vectors")
        if path:
            return cls(path=Path(path))
        if env.get(ENV_GRAPH) or env.get(ENV_VECTORS):
            return cls._pair(env.get(ENV_GRAPH), env.get(ENV_VECTORS), ENV_GRAPH, ENV_VECTORS)
        return cls(path=Path(env.get(ENV_PATH) or DEFAULT_PATH))

    @classmethod
    def _pair(cls, graph: str | None, vectors: str | None, graph_name: str, vectors_name: str) -> StoreLocation:
        if not graph:
            raise StoreLocationError(f"{vectors_name} goes with {graph_name} (the graph store it indexes)")
        if not vectors:
            raise StoreLocationError(f"{graph_name} needs {vectors_name} (the vector index that goes with it)")
        return cls(graph=graph, vectors=vectors)

    @property
    def exists(self) -> bool:
        """Whether an embedded store is already there (a server pair is taken to exist: opening it checks)."""
        if self.path is None:
            return True
        return (self.path / GRAPH_FILE).exists()

    def require(self, what: str = "") -> StoreLocation:
        """This location, or ``StoreLocationError`` when no store is there: for commands that only read, so a
        mistyped path is reported instead of leaving an empty store behind. ``what`` prefixes the message."""
        if not self.exists:
            raise StoreLocationError(f"{what}there is no memory store at {self.path} (retain something first, or "
                                     f"pass --path / --graph with --vectors, or set {ENV_PATH})")
        return self

    def describe(self) -> str:
        """The location in words (an absolute path: servers start in any directory)."""
        if self.path is not None:
            return str(self.path.resolve())
        return f"{self.graph} + {self.vectors}"


def open_index(vectors: VectorIndex | str | None, root: Path | None) -> VectorIndex:
    """A vector index from an object (returned as is), ``"http(s)://host:port"`` (a Chroma server), ``"memory"``
    (in process), ``"env"`` (``CHROMA_HOST``/``CHROMA_PORT``), a directory, or None: ``root/vectors`` (in process
    when ``root`` is None too)."""
    from .chroma import ChromaVectorIndex

    if vectors is not None and not isinstance(vectors, str):
        return vectors
    if vectors == "env":
        vectors = (f"http://{os.environ.get('CHROMA_HOST', '127.0.0.1')}:"
                   f"{os.environ.get('CHROMA_PORT', str(DEFAULT_CHROMA_PORT))}")
    if vectors is None:
        if root is None:
            return ChromaVectorIndex.ephemeral()
        private_dir(root)
        return ChromaVectorIndex.persistent(private_dir(root / "vectors"))
    if vectors == "memory":
        return ChromaVectorIndex.ephemeral()
    if vectors.startswith(("http://", "https://")):
        url = urlparse(vectors)
        return ChromaVectorIndex.http(url.hostname or "127.0.0.1", url.port or DEFAULT_CHROMA_PORT,
                                      ssl=url.scheme == "https")
    return ChromaVectorIndex.persistent(vectors)


def open_graph(
    graph: GraphStore | str | None, root: Path | None, neo4j_options: Mapping[str, str | None] | None = None
) -> GraphStore:
    """A graph store from an object (returned as is), a Bolt URI (``"env"``: ``NEO4J_URI``), a SQLite file, or
    None: ``root/graph.sqlite`` (in memory when ``root`` is None too)."""
    if graph is not None and not isinstance(graph, str):
        return graph
    if graph == "env":
        graph = os.environ.get("NEO4J_URI") or DEFAULT_NEO4J_URI
    if graph is not None and is_server_graph(graph):
        from .neo4j import Neo4jGraphStore

        options = neo4j_options or {}
        return Neo4jGraphStore(graph, options.get("user"), options.get("password"), database=options.get("database"))
    from .sqlite import SQLiteGraphStore

    if graph is None:
        if root is None:
            return SQLiteGraphStore(":memory:")
        return SQLiteGraphStore(private_file(private_dir(root) / GRAPH_FILE))
    return SQLiteGraphStore(private_file(Path(graph)) if graph != ":memory:" else graph)


def private_dir(path: Path) -> Path:
    """``path``, created readable by its owner only (0700) when it does not exist yet; an existing folder keeps
    the mode its owner gave it. A memory store holds everything its banks remember."""
    if not path.exists():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """``path``, created empty and readable by its owner only (0600) when it does not exist yet, so that SQLite
    (which gives its journal files the database's mode) never makes it world-readable under a loose umask."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process created it meanwhile: theirs stands
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
    return path
