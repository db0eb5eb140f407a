"""The server launchers start real servers on free loopback ports and leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_core.errors import StoreError
from hindsight_core.servers import bolt_server, chroma_server
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.neo4j import Neo4jGraphStore


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_context_managers_start_answer_and_stop(tmp_path: Path) -> None:
    with bolt_server(tmp_path / "arcade") as bolt, chroma_server(tmp_path / "chroma") as chroma:
        assert bolt.uri.startswith("bolt://127.0.0.1:") and chroma.url.startswith("http://127.0.0.1:")
        store = Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database,
                                arcadedb_http=bolt.http_url)
        assert store.dialect.name == "arcadedb" and store.list_banks() == []
        store.close()
        assert ChromaVectorIndex.http(chroma.host, chroma.port).client.heartbeat() > 0
        pids = (bolt.pid, chroma.pid)
        survivor = Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database,
                                   arcadedb_http=bolt.http_url, max_transaction_retry_time=1.0)
    assert not any(_alive(p) for p in pids)
    with pytest.raises(StoreError):
        ChromaVectorIndex.http(chroma.host, chroma.port)
    with pytest.raises(StoreError, match=f"{bolt.uri} is unreachable"):  # a server gone mid-session
        survivor.list_banks()
    survivor.close()


def test_cli_start_exports_and_stop(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "hindsight_core.servers"]
    out = subprocess.run([*run, "start", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    env = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines())
    assert set(env) == {"NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE", "ARCADEDB_HTTP_URL",
                        "CHROMA_HOST", "CHROMA_PORT"}
    state = (tmp_path / "servers.json").read_text()
    try:
        store = Neo4jGraphStore(env["NEO4J_URI"], env["NEO4J_USER"], env["NEO4J_PASSWORD"],
                                database=env["NEO4J_DATABASE"], arcadedb_http=env["ARCADEDB_HTTP_URL"])
        store.close()
        ChromaVectorIndex.http(env["CHROMA_HOST"], int(env["CHROMA_PORT"]))
    finally:
        subprocess.run([*run, "stop", "--dir", str(tmp_path)], check=True, timeout=120)
    import json

    pids = [v["pid"] for v in json.loads(state).values()]
    assert not any(_alive(p) for p in pids) and not (tmp_path / "servers.json").exists()


def test_dialect_seam(tmp_path: Path) -> None:
    """The Neo4j 5 dialect's full-text DDL is exactly what ArcadeDB rejects; the ArcadeDB dialect avoids it."""
    from hindsight_core.stores.cypher_dialect import ArcadeDBDialect, CypherDialect, detect_dialect

    neo4j_ddl = CypherDialect().schema_statements()
    assert any(s.startswith("CREATE FULLTEXT INDEX hs_unit_fulltext IF NOT EXISTS") for s in neo4j_ddl)
    assert not any("FULLTEXT" in s for s in ArcadeDBDialect().schema_statements())
    assert isinstance(detect_dialect("Neo4j/5.26.0 compatible (ArcadeDB 26.10.2)"), ArcadeDBDialect)
    assert type(detect_dialect("Neo4j/5.26.0")) is CypherDialect
    with bolt_server(tmp_path / "arcade") as bolt:
        with pytest.raises(StoreError, match="cannot set up the graph schema"):
            Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database, dialect="neo4j5")
        store = Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database, dialect="arcadedb",
                                arcadedb_http=bolt.http_url)
        assert store.dialect.fulltext_index == "Unit[text,context,bank_key]"
        store.close()
