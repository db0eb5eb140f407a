"""The benchmarks' server backend: a Neo4j-compatible graph store over Bolt and a Chroma server.

``--backend server`` connects to the servers named by the environment: ``NEO4J_URI``, ``NEO4J_USER``,
``NEO4J_PASSWORD``, ``NEO4J_DATABASE``, ``ARCADEDB_HTTP_URL`` (ArcadeDB only), ``CHROMA_HOST`` and ``CHROMA_PORT``.
When ``NEO4J_URI`` or ``CHROMA_PORT`` is missing and the benchmarks run from a checkout of the repository (an
editable install), throwaway ArcadeDB (Bolt) and Chroma servers are started with the test suite's launcher,
``tests/support/servers.py`` (it needs ``arcadedb-embedded`` from the ``dev`` extra), and stopped afterwards.
Anywhere else a missing server is an error that says what to set.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from hindsight_core.errors import StoreError

if TYPE_CHECKING:
    from hindsight_core.hindsight import Hindsight

REQUIRED_ENV = ("NEO4J_URI", "CHROMA_PORT")
"""Both set: the benchmark uses the servers the environment names instead of starting its own."""
LAUNCHER = Path(__file__).resolve().parents[2] / "tests" / "support" / "servers.py"
"""The test suite's server launcher, present only in a checkout of the repository."""
_LAUNCHER_MODULE = "hindsight_bench._test_servers"


@contextmanager
def open_server_backend(root: str | Path, **kwargs: Any) -> Iterator[Hindsight]:
    """Benchmark factory for the server backend (``hindsight_bench.backends.OpenHindsight`` shape).

    Connects to the servers named in the environment when ``NEO4J_URI`` and ``CHROMA_PORT`` are set; otherwise
    starts an ArcadeDB Bolt server and a Chroma server with their data under ``root`` (checkout only) and stops
    them when the block ends. Keyword arguments go to ``Hindsight``.
    """
    if all(os.environ.get(name) for name in REQUIRED_ENV):
        with connect(vectors_url="env", **kwargs) as hs:
            yield hs
        return
    launcher = checkout_launcher()
    if launcher is None:
        raise StoreError(
            "the server backend needs running servers: set NEO4J_URI (with NEO4J_USER, NEO4J_PASSWORD, "
            "NEO4J_DATABASE) and CHROMA_HOST/CHROMA_PORT; from a checkout of the repository, "
            "eval \"$(python tests/support/servers.py start --dir DIR)\" starts a pair"
        )
    root = Path(root)
    with (
        launcher.bolt_server(root / "arcadedb") as bolt,
        launcher.chroma_server(root / "chroma") as chroma,
        connect(bolt.uri, chroma.url, user=bolt.user, password=bolt.password, database=bolt.database,
                arcadedb_http=bolt.http_url, **kwargs) as hs,
    ):
        yield hs


def connect(
    graph_uri: str | None = None,
    vectors_url: str = "env",
    *,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    arcadedb_http: str | None = None,
    **kwargs: Any,
) -> Hindsight:
    """A ``Hindsight`` on a Bolt graph store and a Chroma server; missing values come from the environment
    (``vectors_url="env"``: ``CHROMA_HOST``/``CHROMA_PORT``). Other keyword arguments go to ``Hindsight``."""
    from hindsight_core.hindsight import Hindsight
    from hindsight_core.stores.neo4j import Neo4jGraphStore

    # The store is built here, not by Hindsight.open, so that ArcadeDB's HTTP address reaches it.
    store = Neo4jGraphStore(graph_uri, user, password, database=database, arcadedb_http=arcadedb_http)
    try:
        return Hindsight.open(None, graph=store, vectors=vectors_url, **kwargs)
    except BaseException:
        store.close()
        raise


def checkout_launcher() -> ModuleType | None:
    """The test suite's launcher module when this package runs from a checkout, else None (loaded on
    first use only: it is test support, not part of this package)."""
    if _LAUNCHER_MODULE in sys.modules:
        return sys.modules[_LAUNCHER_MODULE]
    if not LAUNCHER.is_file():
        return None
    spec = importlib.util.spec_from_file_location(_LAUNCHER_MODULE, LAUNCHER)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_LAUNCHER_MODULE] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_LAUNCHER_MODULE]
        raise
    return module
