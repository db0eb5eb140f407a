"""One bound on echoed input, for every error (issue 39, must have 4): 100 kB sent to every MCP tool parameter and
every explorer parameter comes back, if at all, as at most ``MAX_SHOWN_CHARS`` (200) characters of it.

The MCP server runs in a thread of this process on real sockets (``support.threaded_servers``) and is called with
the SDK's own client; the explorer is called through its ASGI app (``TestClient``: uvicorn would refuse a 100 kB
URL before the app saw it, which is a bound too, but not the one under test). The sent value is one character
repeated, so any echo of more than 200 characters of it is a run of 201 of that character in the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from starlette.testclient import TestClient
from support.threaded_servers import MCPThread

from hindsight_core import Hindsight
from hindsight_core.access import TokenFile
from hindsight_core.errors import MAX_SHOWN_CHARS
from hindsight_core.explorer.app import create_app
from hindsight_core.explorer.auth import TOKEN_HEADER, Guard

BIG = 100_000
MARK = "Q"
TOO_MUCH = MARK * (MAX_SHOWN_CHARS + 1)

# Each tool's valid arguments; every parameter is then replaced, one at a time, by 100 kB.
TOOLS: dict[str, dict[str, Any]] = {
    "retain": {"bank": "b", "content": "Ana moved to Porto in May.", "timestamp": "2025-05-01",
               "document_id": "d-probe", "context": "a chat", "extract": False, "defer": False},
    "recall": {"bank": "b", "query": "Porto", "budget": 500, "max_memories": 5, "networks": ["world"],
               "time_start": "2025-01-01", "time_end": "2025-12-31", "reference_time": "2025-06-01"},
    "reflect": {"bank": "b", "query": "Where does Ana live?", "budget": 500, "reference_time": "2025-06-01",
                "skepticism": 3, "literalism": 3, "empathy": 3, "bias": 0.5},
    "forget": {"bank": "b", "memory_id": "no-such-memory"},
}
MESSAGE_FIELDS = ("speaker", "text", "id", "timestamp")


def _cases() -> Iterator[tuple[str, dict[str, Any]]]:
    for tool, valid in TOOLS.items():
        for name in valid:
            yield f"{tool}.{name}", {**valid, name: MARK * BIG}
        if tool == "retain":
            for name in MESSAGE_FIELDS:
                message = {"speaker": "Ana", "text": "I moved to Porto.", "id": "m1", "timestamp": "2025-05-01"}
                yield f"retain.content[].{name}", {**valid, "content": [{**message, name: MARK * BIG}]}
            yield "retain.content[]", {**valid, "content": [MARK * BIG]}
        if tool == "recall":
            yield "recall.networks[]", {**valid, "networks": [MARK * BIG]}
        if tool == "forget":
            for name in ("document_id", "entity"):
                yield f"forget.{name} alone", {"bank": "b", name: MARK * BIG}
    yield "list_banks.(unknown)", {MARK * BIG: 1}
    yield "recall.(unknown name)", {**TOOLS["recall"], MARK * BIG: "x"}


@pytest.fixture(scope="module")
def hs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hindsight]:
    with Hindsight.open(tmp_path_factory.mktemp("echo") / "m", start_worker=False) as opened:
        opened.bank("b").retain("Ana moved to Porto in May.", extract=False, document_id="seed")
        yield opened


@pytest.fixture(scope="module")
def mcp(hs: Hindsight) -> Iterator[MCPThread]:
    server = MCPThread(hs, "127.0.0.1", None)
    yield server
    server.stop()


async def test_every_mcp_tool_parameter_echoes_at_most_200_characters(mcp: MCPThread) -> None:
    http = httpx2.AsyncClient(timeout=120)
    echoed: dict[str, int] = {}
    refused: list[str] = []
    async with http, Client(streamable_http_client(mcp.url, http_client=http), read_timeout_seconds=120) as client:
        for case, arguments in _cases():
            tool = case.split(".", 1)[0]
            result = await client.call_tool(tool, arguments)
            text = "".join(b.text for b in result.content if isinstance(b, TextContent))
            if result.is_error:
                refused.append(case)
                assert "Traceback" not in text, (case, text[:300])
                if TOO_MUCH in text:
                    echoed[case] = len(text)
                assert len(text) < 4 * MAX_SHOWN_CHARS + 600, (case, len(text))
            # An accepted value (a memory's text, recall's query) may be answered back: only errors are bounded.
    assert not echoed, f"errors echoing more than {MAX_SHOWN_CHARS} characters of input: {echoed}"
    assert len(refused) >= 20 and "recall.time_start" in refused  # the probe did reach the error paths


@pytest.fixture(scope="module")
def explorer(hs: Hindsight, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    file = TokenFile(tmp_path_factory.mktemp("tokens") / "tokens.json")
    token = file.add("root")
    app = create_app(hs, Guard.for_host("127.0.0.1", tokens=TokenFile(file.path)))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client, token


READ_PARAMETERS = {
    "bank": ["bank", "counts", "stats", "memories", "entities", "graph", "opinions", "documents", "jobs"],
    "network": ["memories"], "entity": ["memories", "graph/expand"], "document": ["memories"],
    "limit": ["memories", "entities", "graph", "graph/expand", "opinions", "documents", "jobs"],
    "offset": ["memories", "entities", "opinions", "documents", "jobs"],
    "id": ["memory", "entity", "opinion", "document"], "q": ["entities"], "name": ["entity"],
    "status": ["documents", "jobs"], "visible": ["graph/expand"],
}


@pytest.mark.parametrize("size", [BIG, 60_000], ids=["100kB", "60kB-under-the-body-limit"])
def test_every_explorer_parameter_echoes_at_most_200_characters(explorer: tuple[TestClient, str], size: int) -> None:
    client, token = explorer
    headers = {TOKEN_HEADER: token}
    value = MARK * size
    # The HTTP client refuses a URL part over 64 kB (and uvicorn one over 16 kB): query values are 60 kB at most.
    in_url = MARK * min(size, 60_000)
    answers: dict[str, tuple[int, str]] = {}
    for name, paths in READ_PARAMETERS.items():
        for path in paths:
            params = {"bank": "b", "id": "x", "entity": "x", name: in_url}
            response = client.get(f"/api/{path}", params=params, headers=headers)
            answers[f"GET {path}?{name}"] = (response.status_code, response.text)
    bodies = {"recall": {"bank": "b", "query": "Porto", "budget": 100, "max_memories": 3, "networks": ["world"],
                         "reference_time": "2025-06-01"},
              "forget": {"bank": "b", "memory_id": "no-such-memory"}}
    for path, valid in bodies.items():
        for name in [*valid, "document_id", "entity"] if path == "forget" else valid:
            body = {**valid, name: value}
            if path == "forget" and name in ("document_id", "entity"):
                body = {"bank": "b", name: value}
            response = client.post(f"/api/{path}", content=json.dumps(body), headers={
                **headers, "Content-Type": "application/json"})
            answers[f"POST {path}.{name}"] = (response.status_code, response.text)
    response = client.get("/api/" + in_url, headers=headers)  # the path itself
    answers["GET /api/<path>"] = (response.status_code, response.text)
    assert all(status < 500 for status, _ in answers.values()), {k: v for k, v in answers.items() if v[0] >= 500}
    echoed = {case: len(text) for case, (status, text) in answers.items() if status >= 400 and TOO_MUCH in text}
    assert not echoed, f"errors echoing more than {MAX_SHOWN_CHARS} characters of input: {echoed}"
    assert any(status >= 400 for status, _ in answers.values())  # the probe did reach the error paths


def test_a_long_recall_window_is_one_short_error(tmp_path: Path) -> None:
    """The library's own message (which the MCP tool passes on): at most 200 characters of the value."""
    from hindsight_core.errors import InvalidInputError

    with Hindsight.open(tmp_path / "m", start_worker=False) as opened:
        bank = opened.bank("b")
        with pytest.raises(InvalidInputError) as raised:
            bank.recall("Porto", time_range=(MARK * BIG, None))
    assert TOO_MUCH not in str(raised.value) and len(str(raised.value)) < 1000
