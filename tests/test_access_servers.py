"""Scoped tokens on every network surface: the MCP HTTP server (the SDK's own client over loopback) and the
explorer (its JSON API), each served in a thread of this process over one real store, so the stores can be checked
afterwards. Tokens: ``alice`` read-write on bank a, ``bob`` read-only on bank b, ``root`` read-write on every bank.

Per surface: a bank outside the token reads exactly as a bank that does not exist; a read-only token cannot write;
a missing, wrong or removed token is refused; rebinding ``Host``/``Origin`` is refused on every loopback spelling;
writes are recorded in the audit trail with the surface and the token's id. Then a load test mixes the three
tokens from several threads against both servers and checks that nothing crossed banks and nothing failed with 5xx.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from starlette.testclient import TestClient
from support.threaded_servers import ExplorerThread, MCPThread

from hindsight_core import Hindsight
from hindsight_core.access import READ, Access, TokenFile
from hindsight_core.explorer.app import create_app
from hindsight_core.explorer.auth import TOKEN_HEADER, Guard

SPELLINGS = ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1"]
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
PLAIN = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class World:
    """The store (open), its token file and the three tokens."""

    hs: Hindsight
    file: TokenFile
    tokens: dict[str, str]

    def access(self) -> Access:
        """What a server started with ``--tokens FILE`` accepts (its own reader of the file)."""
        return Access(TokenFile(self.file.path))

    def documents(self, bank_id: str) -> set[str]:
        """The ids of a bank's documents now."""
        return {d.id for d in self.hs.bank(bank_id, create=False).documents()}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("access")
    file = TokenFile(root / "tokens.json")
    tokens = {"alice": file.add("alice", banks=["a"]), "bob": file.add("bob", scope=READ, banks=["b"]),
              "root": file.add("root")}
    with Hindsight.open(root / "m") as hs:
        for bank_id in ("a", "b", "c"):
            hs.bank(bank_id).retain(f"The secret plan of bank {bank_id} is kept in the {bank_id}-vault.",
                                    document_id=f"{bank_id}-seed", extract=False)
        yield World(hs, file, tokens)


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@asynccontextmanager
async def mcp_client(url: str, token: str | None) -> AsyncIterator[Client]:
    """The SDK's client on ``url``, sending ``token`` as a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """``(ok, structured result or error text)``; an error must be one clear line, never a traceback."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        message = _text(result)
        assert "Traceback" not in message and "Error executing tool" not in message, message
        return False, message
    return True, result.structured_content


# MCP over HTTP --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp(world: World) -> Iterator[MCPThread]:
    server = MCPThread(world.hs, "127.0.0.1", world.access())
    yield server
    server.stop()


async def test_mcp_scoped_token_sees_and_names_only_its_banks(world: World, mcp: MCPThread) -> None:
    async with mcp_client(mcp.url, world.tokens["root"]) as root:
        ok, listed = await call(root, "list_banks", {})
        assert ok and {b["id"] for b in listed["banks"]} >= {"a", "b", "c"}
        ok, unknown = await call(root, "recall", {"bank": "zzz", "query": "plan"})
        assert not ok and unknown.startswith("unknown bank:")
    async with mcp_client(mcp.url, world.tokens["alice"]) as alice:
        ok, listed = await call(alice, "list_banks", {})
        assert ok and [b["id"] for b in listed["banks"]] == ["a"]
        ok, found = await call(alice, "recall", {"bank": "a", "query": "secret plan", "budget": 200})
        assert ok and "a-vault" in found["memories"][0]["text"]
        # Another bank, existing or not, reads exactly as an unknown one: existence is not revealed.
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"query": "secret plan"}), ("forget", {"document_id": "b-seed"}),
            ("retain", {"content": "planted", "extract": False}), ("reflect", {"query": "?"})]
        for tool, arguments in attempts:
            ok, message = await call(alice, tool, {"bank": "b", **arguments})
            assert not ok and message == unknown.replace("'zzz'", "'b'"), (tool, message)
        ok, message = await call(alice, "retain", {"bank": "new-bank", "content": "x", "extract": False})
        assert not ok and message == unknown.replace("'zzz'", "'new-bank'")
        assert {str(r.uri) for r in (await alice.list_resources()).resources} == {"hindsight://banks/a/profile"}
        with pytest.raises(MCPError) as raised:
            await alice.read_resource("hindsight://banks/b/profile")
        assert str(raised.value) == unknown.replace("'zzz'", "'b'")
        ok, kept = await call(alice, "retain", {"bank": "a", "content": "Alice's note.", "document_id": "a-alice",
                                                "extract": False})
        assert ok and kept["document_id"] == "a-alice"
    async with mcp_client(mcp.url, world.tokens["bob"]) as bob:
        ok, found = await call(bob, "recall", {"bank": "b", "query": "secret plan", "budget": 200})
        assert ok and "b-vault" in found["memories"][0]["text"]
        writes: list[tuple[str, dict[str, Any]]] = [
            ("retain", {"content": "planted", "extract": False}), ("forget", {"document_id": "b-seed"}),
            ("reflect", {"query": "Is it safe?"})]
        for tool, arguments in writes:
            ok, message = await call(bob, tool, {"bank": "b", **arguments})
            assert not ok and message.startswith("permission denied: this token (bob) may read bank 'b'"), message
        ok, message = await call(bob, "recall", {"bank": "a", "query": "plan"})
        assert not ok and message == unknown.replace("'zzz'", "'a'")
    assert world.documents("b") == {"b-seed"} and "a-alice" in world.documents("a")
    assert all(b.id != "new-bank" for b in world.hs.banks())
    [entry] = [e for e in world.hs.audit("a", limit=10_000) if e.document_id == "a-alice"]
    assert (entry.surface, entry.token_id, entry.operation) == ("mcp", "alice", "retain")


async def test_mcp_missing_wrong_or_removed_token_is_refused(world: World, tmp_path: Path) -> None:
    file = TokenFile(tmp_path / "tokens.json")
    carol = file.add("carol", banks=["c"])
    server = MCPThread(world.hs, "127.0.0.1", Access(TokenFile(file.path)))
    try:
        async with httpx2.AsyncClient(timeout=60) as http:
            for presented in (None, "Bearer wrong", f"Basic {carol}", carol, f"Bearer {carol}x",
                              f"Bearer {world.tokens['root']}"):  # a token of another file
                headers = PLAIN if presented is None else {**PLAIN, "Authorization": presented}
                refused = await http.post(server.url, json=HELLO, headers=headers)
                assert refused.status_code == 401, presented
                assert "unauthorized" in refused.json()["error"] and carol not in refused.text
            accepted = await http.post(server.url, json=HELLO, headers={**PLAIN, "Authorization": f"Bearer {carol}"})
            assert accepted.status_code == 200, accepted.text
            file.remove("carol")  # revoked while the server runs: refused from the next request on
            revoked = await http.post(server.url, json=HELLO, headers={**PLAIN, "Authorization": f"Bearer {carol}"})
            assert revoked.status_code == 401
    finally:
        server.stop()


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_mcp_refuses_rebinding_on_every_loopback_spelling(world: World, spelling: str) -> None:
    server = MCPThread(world.hs, spelling, world.access())
    authorized = {**PLAIN, "Authorization": f"Bearer {world.tokens['root']}"}
    try:
        port = server.port
        async with httpx2.AsyncClient(timeout=60) as http:
            rebound = await http.post(server.url, json=HELLO, headers={**authorized, "Host": f"evil.example:{port}"})
            assert rebound.status_code == 421, rebound.text
            foreign = await http.post(server.url, json=HELLO, headers={**authorized, "Origin": "http://evil.example"})
            assert foreign.status_code == 403, foreign.text
            unauthorized = await http.post(server.url, json=HELLO, headers={**PLAIN, "Host": f"localhost:{port}"})
            assert unauthorized.status_code == 401
            local = await http.post(server.url, json=HELLO, headers={
                **authorized, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
            assert local.status_code == 200, local.text
    finally:
        server.stop()


# the explorer -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def explorer(world: World) -> Iterator[TestClient]:
    guard = Guard.for_host("127.0.0.1", tokens=TokenFile(world.file.path))
    with TestClient(create_app(world.hs, guard), base_url="http://127.0.0.1:8765") as client:
        yield client


def _as(world: World, name: str) -> dict[str, str]:
    return {TOKEN_HEADER: world.tokens[name]}


def test_explorer_scoped_token_sees_and_names_only_its_banks(world: World, explorer: TestClient) -> None:
    unknown = explorer.get("/api/bank", params={"bank": "zzz"}, headers=_as(world, "root"))
    assert unknown.status_code == 404
    banks = explorer.get("/api/banks", headers=_as(world, "alice"))
    assert banks.status_code == 200 and [b["id"] for b in banks.json()["banks"]] == ["a"]
    bearer = explorer.get("/api/banks", headers={"Authorization": f"Bearer {world.tokens['bob']}"})
    assert [b["id"] for b in bearer.json()["banks"]] == ["b"]
    assert explorer.get("/api/documents", params={"bank": "a"}, headers=_as(world, "alice")).status_code == 200
    for path in ("/api/bank", "/api/documents", "/api/memories", "/api/stats", "/api/graph"):
        refused = explorer.get(path, params={"bank": "b"}, headers=_as(world, "alice"))
        assert refused.status_code == 404 and refused.json() == {
            "error": unknown.json()["error"].replace("'zzz'", "'b'"), "kind": "BankNotFoundError"}, path
    for path, body in [("/api/recall", {"bank": "b", "query": "secret plan"}),
                       ("/api/forget", {"bank": "b", "document_id": "b-seed"})]:
        refused = explorer.post(path, json=body, headers=_as(world, "alice"))
        assert refused.status_code == 404 and "'b'" in refused.json()["error"], path
    recalled = explorer.post("/api/recall", json={"bank": "b", "query": "secret plan"}, headers=_as(world, "bob"))
    assert recalled.status_code == 200 and "b-vault" in json.dumps(recalled.json())
    denied = explorer.post("/api/forget", json={"bank": "b", "document_id": "b-seed"}, headers=_as(world, "bob"))
    assert denied.status_code == 403 and denied.json()["error"].startswith("this token (bob) may read bank 'b'")
    assert denied.json()["kind"] == "ReadOnlyError"  # the page keeps a read-only token (confirm.js)
    assert world.documents("b") == {"b-seed"}

    world.hs.bank("a").retain("A note to forget.", document_id="a-explorer", extract=False)
    forgot = explorer.post("/api/forget", json={"bank": "a", "document_id": "a-explorer"}, headers=_as(world, "alice"))
    assert forgot.status_code == 200 and forgot.json()["deleted"] == 1
    assert "a-explorer" not in world.documents("a")
    [entry] = [e for e in world.hs.audit("a", limit=10_000)
               if e.document_id == "a-explorer" and e.operation != "retain"]
    assert (entry.surface, entry.token_id) == ("explorer", "alice")


def test_explorer_missing_or_wrong_token_is_refused_even_on_loopback(world: World, explorer: TestClient) -> None:
    assert explorer.get("/api/health").json()["reads_need_token"] is True  # a token file guards reads too
    for headers in ({}, {TOKEN_HEADER: "wrong"}, {"Authorization": "Bearer wrong"},
                    {"Authorization": f"Basic {world.tokens['root']}"}):
        for method, path, body in [("GET", "/api/banks", None), ("GET", "/api/documents?bank=a", None),
                                   ("POST", "/api/forget", {"bank": "a", "document_id": "a-seed"})]:
            response = explorer.request(method, path, json=body, headers=headers)
            assert response.status_code == 403, (headers, path)
            assert world.tokens["root"] not in response.text
    assert "a-seed" in world.documents("a")


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("with_tokens", [True, False])
def test_explorer_refuses_rebinding_on_every_loopback_spelling(world: World, spelling: str,
                                                               with_tokens: bool) -> None:
    guard = Guard.for_host(spelling, "ui-token-0123456789", tokens=TokenFile(world.file.path) if with_tokens else None)
    headers = {TOKEN_HEADER: world.tokens["root"] if with_tokens else "ui-token-0123456789"}
    name = f"[{spelling}]" if ":" in spelling else spelling
    with TestClient(create_app(world.hs, guard), base_url=f"http://{name}:8765") as client:
        assert client.get("/api/banks", headers=headers).status_code == 200
        rebound = client.get("/api/banks", headers={**headers, "Host": "evil.example:8765"})
        assert rebound.status_code == 400 and rebound.json()["kind"] == "InvalidHost"
        for origin in ("http://evil.example:8765", "null", "http://localhost.evil.example"):
            foreign = client.post("/api/forget", json={"bank": "a", "document_id": "a-seed"},
                                  headers={**headers, "Origin": origin})
            assert foreign.status_code == 403 and foreign.json()["kind"] == "InvalidOrigin", origin
        same = client.get("/api/banks", headers={**headers, "Host": "localhost:8765",
                                                 "Origin": "http://localhost:8765"})
        assert same.status_code == 200
    assert "a-seed" in world.documents("a")


# load -----------------------------------------------------------------------------------------------------------
THREADS = 6
ROUNDS = 25  # per thread: one MCP call and one explorer request each round (300 requests in all)


def _mcp_round(client: Client, who: str, n: int, rng: random.Random) -> Any:
    """One MCP call for ``who``: what it may do succeeds, what it may not is refused the expected way."""
    async def go() -> list[tuple[str, bool, str]]:
        if who == "alice":
            choice = rng.choice(["retain", "recall", "cross-read", "cross-write", "list"])
            if choice == "retain":
                ok, _ = await call(client, "retain", {"bank": "a", "content": f"alice note {n}",
                                                      "document_id": f"load-alice-{n}", "extract": False})
                return [("alice retain a", ok, "")]
            if choice == "recall":
                ok, found = await call(client, "recall", {"bank": "a", "query": "secret plan", "budget": 200})
                leaked = ok and any("b-vault" in m["text"] or "c-vault" in m["text"] for m in found["memories"])
                return [("alice recall a", ok and not leaked, "")]
            if choice == "cross-read":
                ok, message = await call(client, "recall", {"bank": rng.choice("bc"), "query": "secret plan"})
                return [("alice refused read", not ok and message.startswith("unknown bank"), message)]
            if choice == "cross-write":
                ok, message = await call(client, "retain", {"bank": rng.choice("bc"), "content": "planted",
                                                            "document_id": f"planted-alice-{n}", "extract": False})
                return [("alice refused write", not ok and message.startswith("unknown bank"), message)]
            ok, listed = await call(client, "list_banks", {})
            return [("alice list", ok and [b["id"] for b in listed["banks"]] == ["a"], "")]
        if who == "bob":
            if rng.random() < 0.5:
                choices: list[tuple[str, dict[str, Any]]] = [
                    ("retain", {"content": "planted", "document_id": f"planted-bob-{n}", "extract": False}),
                    ("forget", {"document_id": "b-seed"})]
                tool, arguments = rng.choice(choices)
                ok, message = await call(client, tool, {"bank": "b", **arguments})
                return [("bob refused write", not ok and message.startswith("permission denied"), message)]
            ok, found = await call(client, "recall", {"bank": "b", "query": "secret plan", "budget": 200})
            return [("bob recall b", ok and all("a-vault" not in m["text"] for m in found["memories"]), "")]
        ok, _ = await call(client, "retain", {"bank": "c", "content": f"root note {n}", "document_id": f"load-root-{n}",
                                              "extract": False})
        return [("root retain c", ok, "")]

    return go()


def _explorer_round(http: httpx.Client, tokens: dict[str, str], who: str, n: int,
                    rng: random.Random) -> tuple[str, bool, str]:
    """One explorer request for ``who``; any 5xx fails the round."""
    headers = {TOKEN_HEADER: tokens[who]}
    if who == "alice":
        if rng.random() < 0.5:
            r = http.get("/api/documents", params={"bank": rng.choice("bc")}, headers=headers)
            return ("alice explorer cross-read", r.status_code == 404, r.text)
        r = http.get("/api/banks", headers=headers)
        return ("alice explorer banks", r.status_code == 200 and [b["id"] for b in r.json()["banks"]] == ["a"], r.text)
    if who == "bob":
        if rng.random() < 0.5:
            r = http.post("/api/forget", json={"bank": "b", "document_id": "b-seed"}, headers=headers)
            return ("bob explorer forget", r.status_code == 403, r.text)
        r = http.get("/api/documents", params={"bank": "b"}, headers=headers)
        return ("bob explorer read", r.status_code == 200, r.text)
    r = http.get("/api/memories", params={"bank": rng.choice("abc"), "limit": 20}, headers=headers)
    return ("root explorer read", r.status_code == 200, r.text)


@pytest.mark.slow  # about 10 s of requests on two shared cores
def test_load_mixed_tokens_never_cross_banks(world: World, mcp: MCPThread) -> None:
    """A few hundred requests from several threads, three tokens mixed, against both servers at once."""
    explorer = ExplorerThread(world.hs, "127.0.0.1", Guard.for_host("127.0.0.1", tokens=TokenFile(world.file.path)))
    before = {bank_id: world.documents(bank_id) for bank_id in "abc"}
    outcomes: list[tuple[str, bool, str]] = []
    statuses: list[int] = []
    lock = threading.Lock()
    people = ["alice", "bob", "root"]

    def worker(index: int) -> None:
        who, rng = people[index % len(people)], random.Random(index)

        async def session() -> None:
            async with mcp_client(mcp.url, world.tokens[who]) as client:
                with httpx.Client(base_url=explorer.url, timeout=120,
                                  event_hooks={"response": [lambda r: statuses.append(r.status_code)]}) as http:
                    for round_ in range(ROUNDS):
                        n = index * 1000 + round_
                        got = await _mcp_round(client, who, n, rng)
                        got.append(await asyncio.to_thread(_explorer_round, http, world.tokens, who, n, rng))
                        with lock:
                            outcomes.extend(got)

        asyncio.run(session())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
    finally:
        explorer.stop()
    assert len(outcomes) == THREADS * ROUNDS * 2
    failed = [o for o in outcomes if not o[1]]
    assert failed == [], failed[:5]
    assert statuses and all(s < 500 for s in statuses)
    # The stores: b untouched, nothing planted anywhere, each token's writes only in its own bank.
    after = {bank_id: world.documents(bank_id) for bank_id in "abc"}
    assert after["b"] == before["b"] == {"b-seed"}
    assert all(not d.startswith("planted") for docs in after.values() for d in docs)
    assert {d for d in after["a"] - before["a"]} == {d for d in after["a"] if d.startswith("load-alice-")}
    assert {d for d in after["c"] - before["c"]} == {d for d in after["c"] if d.startswith("load-root-")}
    assert not any(d.startswith("load-") for d in after["b"])
    writers = {(e.surface, e.token_id) for bank_id in "abc" for e in world.hs.audit(bank_id, limit=10_000)
               if (e.document_id or "").startswith("load-")}
    assert writers <= {("mcp", "alice"), ("mcp", "root")}
