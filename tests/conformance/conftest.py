"""Fixtures of the store conformance suite: every test runs against every backend.

Backends: ``embedded`` (SQLite graph store + on-disk Chroma) and ``server`` (Neo4j graph store over Bolt +
Chroma server). The servers come from the environment that ``scripts/test.sh`` exports (``NEO4J_URI``,
``NEO4J_USER``, ``NEO4J_PASSWORD``, ``ARCADEDB_HTTP_URL``, ``CHROMA_HOST``, ``CHROMA_PORT``); when those are
absent this suite starts its own through ``tests/support/servers.py``. It never skips: a server that cannot be
reached fails the tests with the address that was tried.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_support import Backend, ServerEnv, server_store
from support.servers import bolt_server, chroma_server, ensure_arcadedb_database

from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.sqlite import SQLiteGraphStore

# The suite's own database on the Bolt server, wiped before each test: other suites sharing the server keep theirs,
# and each pytest-xdist worker (``gw0``, ``gw1``: scripts/test.sh runs two) has one of its own.
CONFORMANCE_DATABASE = "hsconformance" + os.environ.get("PYTEST_XDIST_WORKER", "")


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerEnv]:
    """The session's servers: from the environment, else started here (and stopped at the end)."""
    uri = os.environ.get("NEO4J_URI")
    chroma_port = os.environ.get("CHROMA_PORT")
    if uri and chroma_port:
        http = os.environ.get("ARCADEDB_HTTP_URL")
        user, password = os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
        if http:  # ArcadeDB: a database of our own, created here
            ensure_arcadedb_database(http, CONFORMANCE_DATABASE, user=user, password=password)
            database = CONFORMANCE_DATABASE
        else:  # a real Neo4j: the suite wipes its database before every test, so it must be named explicitly
            database = os.environ.get("NEO4J_CONFORMANCE_DATABASE", "")
            if not database:
                pytest.fail(
                    f"NEO4J_URI={uri} is not an ArcadeDB test server (no ARCADEDB_HTTP_URL): set "
                    "NEO4J_CONFORMANCE_DATABASE to a database this suite may wipe", pytrace=False,
                )
        yield ServerEnv(uri, user, password, database, http, os.environ.get("CHROMA_HOST", "127.0.0.1"),
                        int(chroma_port))
        return
    root = tmp_path_factory.mktemp("servers")
    with bolt_server(root / "arcadedb") as bolt, chroma_server(root / "chroma") as chroma:
        ensure_arcadedb_database(bolt.http_url, CONFORMANCE_DATABASE, user=bolt.user, password=bolt.password)
        env = ServerEnv(bolt.uri, bolt.user, bolt.password, CONFORMANCE_DATABASE, bolt.http_url, chroma.host,
                        chroma.port)
        saved = {k: os.environ.get(k) for k in env.env()}
        os.environ.update(env.env())  # Hindsight.open(graph="bolt://...") and child processes read these
        try:
            yield env
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The real embedder, loaded once for the suite."""
    return SentenceTransformerEmbedder()


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each implementation in turn, on fresh data."""
    if request.param == "embedded":
        graph_path = tmp_path / "graph.sqlite"
        vector_path = tmp_path / "vectors"
        b = Backend(
            "embedded",
            make_store=lambda: SQLiteGraphStore(graph_path),
            make_index=lambda: ChromaVectorIndex.persistent(vector_path),
            graph_spec=str(graph_path),
            vectors_spec=str(vector_path),
        )
    else:
        env: ServerEnv = request.getfixturevalue("servers")
        wipe = server_store(env)
        wipe.clear_all()  # a fresh graph for every test, like the embedded backend's new files
        wipe.close()
        b = Backend(
            "server",
            make_store=lambda: server_store(env),
            make_index=lambda: ChromaVectorIndex.http(env.chroma_host, env.chroma_port),
            graph_spec=env.uri,
            vectors_spec=env.chroma_url,
            open_kwargs={"neo4j_user": env.user, "neo4j_password": env.password, "neo4j_database": env.database},
        )
    try:
        yield b
    finally:
        b.close()


@pytest.fixture()
def bank_id() -> str:
    """A bank id unique to the test: Chroma collections on the shared server never collide."""
    return f"bank-{uuid.uuid4().hex[:12]}"
