"""The server launchers start real servers on free loopback ports and leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conformance_support import ServerEnv, server_store
from support import servers
from support.servers import bolt_server, chroma_server

from hindsight_core.errors import StoreError
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.cypher_dialect import ArcadeDBDialect
from hindsight_core.stores.neo4j import SCHEMA_VERSION, Neo4jGraphStore


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
    run = [sys.executable, servers.__file__]  # run by path, as scripts/test.sh does
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
    assert any(s.startswith("CREATE FULLTEXT INDEX hs_unit_terms IF NOT EXISTS") for s in neo4j_ddl)
    assert not any("FULLTEXT" in s for s in ArcadeDBDialect().schema_statements())
    assert isinstance(detect_dialect("Neo4j/5.26.0 compatible (ArcadeDB 26.10.2)"), ArcadeDBDialect)
    assert type(detect_dialect("Neo4j/5.26.0")) is CypherDialect
    with bolt_server(tmp_path / "arcade") as bolt:
        with pytest.raises(StoreError, match="cannot set up the graph schema"):
            Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database, dialect="neo4j5")
        store = Neo4jGraphStore(bolt.uri, bolt.user, bolt.password, database=bolt.database, dialect="arcadedb",
                                arcadedb_http=bolt.http_url)
        assert store.dialect.fulltext_index == "Unit[kw_text,kw_context,bank_key]"
        store.close()


def test_upgrade_from_the_english_analysed_layout(servers: ServerEnv) -> None:
    """A database written before units carried keyword tokens is upgraded at open: the tokens are backfilled,
    the old English-analysed index is dropped and keyword search finds the old units again."""
    from test_graph_store import seed

    store = server_store(servers)
    store.clear_all()
    seed(store, "legacy")
    # Turn it into the old layout: no tokens, no schema marker, the old full-text index instead of the new one.
    store._run("MATCH (u:Unit) REMOVE u.kw_text, u.kw_context, u.kw_len")
    store._run("MATCH (s:Schema) DELETE s")
    assert isinstance(store.dialect, ArcadeDBDialect)
    store.dialect.sql(f"DROP INDEX `{store.dialect.fulltext_index}`")
    for prop in ("text", "context"):
        store.dialect.sql(f"CREATE PROPERTY Unit.{prop} IF NOT EXISTS STRING")
    store.dialect.sql('CREATE INDEX IF NOT EXISTS ON Unit (text, context, bank_key) FULL_TEXT '
                      'METADATA {"analyzer": "org.apache.lucene.analysis.en.EnglishAnalyzer"}')
    store.close()

    upgraded = server_store(servers)
    names = {r["name"] for r in upgraded._run("SHOW INDEXES YIELD name RETURN name")}
    assert upgraded.dialect.fulltext_index in names and "Unit[text,context,bank_key]" not in names
    assert upgraded._run("MATCH (u:Unit) WHERE u.kw_len IS NULL RETURN count(u) AS n")[0]["n"] == 0
    assert upgraded._run("MATCH (s:Schema {id: 'hindsight'}) RETURN s.version AS v")[0]["v"] == SCHEMA_VERSION
    ids = [i for i, _ in upgraded.keyword_search("legacy", "Where did Oscar go running?", 10)]
    assert set(ids) == {"u1", "u3", "u4"}
    upgraded.close()


def test_upgrade_merges_entities_that_one_normalised_name_makes_one(servers: ServerEnv) -> None:
    """Version 2 keyed entities by the casefolded name, so "Zoë" and "Zoe" could be two entities; opening the
    database re-keys every entity with ``normalise_name`` and merges those that became one."""
    import json

    from test_graph_store import seed

    store = server_store(servers)
    store.clear_all()
    seed(store, "legacy")
    for name, eid, unit in (("Zoë", "e_zoe1", "u0"), ("Zoe", "e_zoe2", "u1"), ("ZOE", "e_zoe3", "u2")):
        key = json.dumps(["legacy", name.casefold() + ("" if name != "ZOE" else " ")], ensure_ascii=False)
        store._run("CREATE (e:Entity {id: $id, bank_id: 'legacy', name: $name, norm: $norm, key: $key, "
                   "type: 'PERSON', aliases: [], mention_count: 1})", id=eid, name=name, norm=name.casefold(), key=key)
        store._run("MATCH (u:Unit {id: $u}), (e:Entity {id: $e}) CREATE (u)-[:MENTIONS]->(e)", u=unit, e=eid)
    store._run("MATCH (s:Schema) SET s.version = 2")
    assert "duplicate_entity" in store.check_bank("legacy")
    store.close()

    upgraded = server_store(servers)
    zoe = [e for e in upgraded.list_entities("legacy") if e.name.casefold().startswith("zo")]
    assert len(zoe) == 1 and zoe[0].mention_count == 3
    assert upgraded.check_bank("legacy") == {}
    assert upgraded._run("MATCH (s:Schema {id: 'hindsight'}) RETURN s.version AS v")[0]["v"] == SCHEMA_VERSION
    upgraded.close()
