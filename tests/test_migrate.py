"""``migrate``: banks of an embedded store (SQLite + on-disk Chroma) copied to the server backend (a Bolt graph
store + a Chroma server), verified, and resumed after an interruption. Real servers, real embedder.

The servers come from the environment ``scripts/test.sh`` exports (``NEO4J_URI``, ``ARCADEDB_HTTP_URL``,
``CHROMA_HOST``, ``CHROMA_PORT``, ...), else this module starts its own with ``tests/support/servers.py``, as the
conformance suite does. The graph store uses a database of its own, wiped before each test.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM
from support.servers import bolt_server, chroma_server, ensure_arcadedb_database
from test_portability import CONVERSATION, EMBEDDER, build_source, open_store, parser, recall_order, snapshot

from hindsight_core import Hindsight
from hindsight_core.cli.run import run_parsed
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.errors import BankNotFoundError, HindsightError
from hindsight_core.portability import restore as restore_module
from hindsight_core.portability.migrate import QueryCheck, migrate
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.neo4j import Neo4jGraphStore

DATABASE = "hsmigrate"


@dataclass
class Servers:
    """Where the Bolt server and the Chroma server are."""

    uri: str
    user: str
    password: str
    http: str | None
    chroma_host: str
    chroma_port: int

    def env(self) -> dict[str, str]:
        out = {"NEO4J_URI": self.uri, "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password,
               "NEO4J_DATABASE": DATABASE, "CHROMA_HOST": self.chroma_host, "CHROMA_PORT": str(self.chroma_port)}
        if self.http:
            out["ARCADEDB_HTTP_URL"] = self.http
        return out

    def graph(self) -> Neo4jGraphStore:
        return Neo4jGraphStore(self.uri, self.user, self.password, database=DATABASE, arcadedb_http=self.http)

    def open(self) -> Hindsight:
        return Hindsight.open(None, graph=self.graph(), vectors=ChromaVectorIndex.http(self.chroma_host,
                                                                                       self.chroma_port),
                              embedder=EMBEDDER, start_worker=False)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """The session's servers from the environment, else started here (and stopped at the end)."""
    uri, port = os.environ.get("NEO4J_URI"), os.environ.get("CHROMA_PORT")
    if uri and port:
        http = os.environ.get("ARCADEDB_HTTP_URL")
        found = Servers(uri, os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", ""), http,
                        os.environ.get("CHROMA_HOST", "127.0.0.1"), int(port))
        if http:
            ensure_arcadedb_database(http, DATABASE, user=found.user, password=found.password)
        yield found
        return
    root = tmp_path_factory.mktemp("servers")
    with bolt_server(root / "arcadedb") as bolt, chroma_server(root / "chroma") as chroma:
        ensure_arcadedb_database(bolt.http_url, DATABASE, user=bolt.user, password=bolt.password)
        yield Servers(bolt.uri, bolt.user, bolt.password, bolt.http_url, chroma.host, chroma.port)


@pytest.fixture()
def server(servers: Servers) -> Iterator[Hindsight]:
    """A server-backend ``Hindsight`` on an empty graph database."""
    wipe = servers.graph()
    wipe.clear_all()
    wipe.close()
    with servers.open() as hs:
        yield hs


@pytest.fixture()
def embedded(tmp_path: Path) -> Iterator[Hindsight]:
    """An embedded store with two banks (ids unique to the test: the Chroma server outlives the test)."""
    summary = {"summary": "Melanie has kids and a puppy named Oscar, paints and runs."}
    # The scripted model writes the observation (observation_mode="model"): the banks are retained raw.
    with open_store(tmp_path / "memory", llm=ScriptedLLM([summary]),
                    settings=Settings(cara=CaraSettings(observation_mode="model"))) as hs:
        rich, chat = f"notes-{uuid.uuid4().hex[:8]}", f"chat-{uuid.uuid4().hex[:8]}"
        build_source(hs, rich)
        bank = hs.bank(chat)
        for day in range(1, 4):
            bank.retain([{**m, "id": f"D{day}:{i}"} for i, m in enumerate(CONVERSATION, start=1)],
                        timestamp=f"2025-03-0{day}T10:00:00", document_id=f"session-{day}", extract=False,
                        background=False)
        yield hs


def banks(hs: Hindsight) -> list[str]:
    return [b.id for b in hs.banks()]


def test_migrate_copies_every_bank_and_verifies_it(embedded: Hindsight, server: Hindsight) -> None:
    report = migrate(embedded, server)
    assert report.ok and [b.bank_id for b in report.banks] == banks(embedded) == banks(server)
    for entry in report.banks:
        assert entry.status == "copied" and entry.verified and entry.counts_match and entry.vectors == "copied"
        assert entry.source_counts == entry.target_counts and entry.source_counts["memories"] > 0
        assert len(entry.queries) == 5 and all(q.matches and q.same_top and q.source_ids for q in entry.queries)
        # Exact beyond what the verification samples: every record, order and score the protocols return.
        assert snapshot(server, entry.bank_id) == snapshot(embedded, entry.bank_id)
        assert recall_order(server, entry.bank_id) == recall_order(embedded, entry.bank_id)
        marker = server.bank(entry.bank_id).jobs()[0]
        assert (marker.kind, marker.status.value) == ("hindsight.migrate", "done")
    assert check(server).ok

    again = migrate(embedded, server)  # nothing left to do
    assert again.ok and [b.status for b in again.banks] == ["skipped", "skipped"]
    assert all(b.reason == "already copied and verified" for b in again.banks)


def test_an_interrupted_migration_resumes_to_a_verified_copy(
    embedded: Hindsight, server: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = banks(embedded)
    # Interrupted during the second bank, after some of its memories were written; a process killed there runs no
    # cleanup, which the no-op ``discard_bank`` stands in for.
    monkeypatch.setattr(restore_module, "BATCH_UNITS", 2)
    monkeypatch.setattr(restore_module, "discard_bank", lambda engine, bank_id: None)
    real = server.store.add_units
    calls: dict[str, int] = {}

    def add_units(bank_id: str, *args: Any, **kwargs: Any) -> Any:
        calls[bank_id] = calls.get(bank_id, 0) + 1
        if bank_id == second and calls[bank_id] > 1:
            raise KeyboardInterrupt
        return real(bank_id, *args, **kwargs)

    monkeypatch.setattr(server.store, "add_units", add_units)
    with pytest.raises(KeyboardInterrupt):
        migrate(embedded, server)
    monkeypatch.undo()
    assert banks(server) == [first, second]
    half = server.store.stats(second)["units"]
    assert 0 < half < embedded.store.stats(second)["units"]
    assert server.bank(second).jobs()[0].status.value == "failed"  # marked incomplete

    resumed = migrate(embedded, server)
    assert resumed.ok
    done, redone = resumed.banks
    assert (done.bank_id, done.status) == (first, "skipped")
    assert (redone.bank_id, redone.status, redone.cleared, redone.verified) == (second, "copied", "leftover", True)
    for bank_id in (first, second):
        assert snapshot(server, bank_id) == snapshot(embedded, bank_id)
    assert check(server).ok


def test_a_failed_bank_is_reported_and_the_others_still_run(
    embedded: Hindsight, server: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = banks(embedded)[0]
    server.bank(first).retain("A bank of the server that no migration wrote.", extract=False, background=False)
    report = migrate(embedded, server)
    assert not report.ok
    refused, copied = report.banks
    assert refused.status == "failed" and "exists already" in refused.reason
    assert copied.status == "copied" and copied.verified
    with pytest.raises(BankNotFoundError):
        migrate(embedded, server, ["no-such-bank"])

    # A copy that does not recall like its source is not kept.
    monkeypatch.setattr("hindsight_core.portability.migrate.compare_recall", lambda *a, **k: [
        QueryCheck(query="q", source_ids=["a"], target_ids=["b"], same_order=False, same_top=False, overlap=0.0)])
    report = migrate(embedded, server, [first], replace=True)
    assert not report.ok and report.banks[0].status == "failed" and "other memories" in report.banks[0].reason
    assert first not in banks(server)


def test_cli_migrate(embedded: Hindsight, server: Hindsight, servers: Servers, monkeypatch: pytest.MonkeyPatch,
                     tmp_path: Path) -> None:
    for key, value in servers.env().items():
        monkeypatch.setenv(key, value)
    path = Path(embedded.store.path).parent  # type: ignore[attr-defined]  # the SQLite store knows its file
    first = banks(embedded)[0]
    argv = ["migrate", "--from", str(path), "--to-graph", servers.uri, "--to-vectors",
            f"http://{servers.chroma_host}:{servers.chroma_port}", "--bank", first]

    def run(extra: list[str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_parsed(parser().parse_args(argv + extra), (HindsightError, OSError))
        return code, out.getvalue(), err.getvalue()

    code, out, err = run(["--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["ok"] and [b["status"] for b in report["banks"]] == ["copied"]
    assert report["banks"][0]["verified"] and len(report["banks"][0]["queries"]) == 5
    code, out, _ = run([])
    assert code == 0 and f"{first}: skipped (already copied and verified)" in out and "ok: 1 banks" in out

    code, out, err = run(["--bank", "no-such-bank"])
    assert code == 2 and "no-such-bank" in err
    argv[2] = str(tmp_path / "absent")
    code, out, err = run([])
    assert code == 2 and "no memory store" in err


def test_verification_tolerates_near_ties_but_not_a_different_top() -> None:
    """The Chroma server's HNSW search may swap two near-tied memories; a broken copy changes what comes first,
    or loses many of them."""
    from hindsight_core.portability.migrate import MIN_OVERLAP, TOP, compare_recall

    assert TOP == 5 and MIN_OVERLAP == 0.8
    ids = [f"m{i}" for i in range(30)]

    def check(target: list[str]) -> QueryCheck:
        class Side:
            def __init__(self, found: list[str]) -> None:
                self.recaller = self
                self.found = found

            def recall(self, *args: object, **kwargs: object) -> Any:
                return type("R", (), {"memories": [type("M", (), {"id": i}) for i in self.found]})

        return compare_recall(Side(ids), Side(target), "b", ["q"], None)[0]  # type: ignore[arg-type]  # duck-typed

    swap5 = check([*ids[:4], ids[5], ids[4], *ids[6:]])          # fifth and sixth swapped
    assert swap5.matches and not swap5.same_top and swap5.top_overlap == 0.8 and swap5.overlap == 1.0
    deep = check([*ids[:29], "other"])                            # one memory traded far down
    assert deep.matches and deep.same_top and not deep.same_order
    first = check(["x", "y", *ids[2:]])                           # two of the first five are others
    assert not first.matches and first.top_overlap == 0.6
    lost = check(ids[:10])                                        # most of the list missing
    assert not lost.matches and lost.overlap < MIN_OVERLAP
    assert check(list(ids)).same_order
