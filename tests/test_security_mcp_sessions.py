"""An MCP session is ended (or used) only by the token that opened it (issue 39, must have 4).

The MCP HTTP server runs with a token file in a thread of this process (real sockets, real uvicorn); requests are
made with plain HTTP, so that a request can name a session of another token, as an attacker who learnt its id
would. Another token's ``DELETE``, ``POST`` or ``GET`` on the session is answered as for a session that does not
exist (404), and the session goes on working for its owner, who alone can end it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.threaded_servers import MCPThread

from hindsight_core import Hindsight
from hindsight_core.access import Access, TokenFile

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MCPThread, dict[str, str]]]:
    root = tmp_path_factory.mktemp("sessions")
    file = TokenFile(root / "tokens.json")
    tokens = {"alice": file.add("alice"), "mallory": file.add("mallory", banks=["m"])}
    with Hindsight.open(root / "m", start_worker=False) as hs:
        server = MCPThread(hs, "127.0.0.1", Access(TokenFile(file.path)))
        try:
            yield server, tokens
        finally:
            server.stop()


def _post(url: str, token: str, body: dict[str, Any], session: str | None = None) -> httpx.Response:
    headers = {**HEADERS, "Authorization": f"Bearer {token}", **({"mcp-session-id": session} if session else {})}
    return httpx.post(url, json=body, headers=headers, timeout=60)


def _open(url: str, token: str) -> str:
    opened = _post(url, token, HELLO)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    assert _post(url, token, READY, session).status_code == 202
    return session


def test_another_token_cannot_end_or_use_a_session(served: tuple[MCPThread, dict[str, str]]) -> None:
    server, tokens = served
    url = server.url
    alice = _open(url, tokens["alice"])
    theirs = {"Authorization": f"Bearer {tokens['mallory']}", "mcp-session-id": alice, **HEADERS}
    # Mallory knows the id: ending it, posting into it or reading its stream reads as no such session.
    ended = httpx.delete(url, headers=theirs, timeout=60)
    assert ended.status_code == 404 and "Session not found" in ended.text
    assert _post(url, tokens["mallory"], LIST, alice).status_code == 404
    assert httpx.get(url, headers=theirs, timeout=60).status_code == 404
    # Alice's session is untouched...
    listed = _post(url, tokens["alice"], LIST, alice)
    assert listed.status_code == 200 and "recall" in listed.text
    # ...and Mallory's own session works, beside it.
    mallory = _open(url, tokens["mallory"])
    assert _post(url, tokens["mallory"], LIST, mallory).status_code == 200
    # Only Alice ends hers; after that the id is unknown to everyone.
    mine = {"Authorization": f"Bearer {tokens['alice']}", "mcp-session-id": alice, **HEADERS}
    assert httpx.delete(url, headers=mine, timeout=60).status_code == 200
    assert _post(url, tokens["alice"], LIST, alice).status_code == 404
    assert _post(url, tokens["mallory"], LIST, mallory).status_code == 200


def test_a_wrong_token_is_refused_before_any_session_is_looked_at(served: tuple[MCPThread, dict[str, str]]) -> None:
    server, tokens = served
    session = _open(server.url, tokens["mallory"])
    assert _post(server.url, tokens["mallory"], LIST, session).status_code == 200
    # A wrong token is refused before any session is looked at (401, not 404): it learns nothing of the id.
    assert _post(server.url, "hst_wrong", LIST, session).status_code == 401
