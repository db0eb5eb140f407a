"""The MCP server end to end: the official SDK's own client against ``python -m hindsight_core.mcp_server``
subprocesses, over stdio and over streamable HTTP, with the real default embedder (MiniLM).

Reflect runs in the HTTP server process against a stub OpenAI-compatible endpoint served by this test (the server
takes it as ``--llm-url``, the same seam ``HINDSIGHT_LLM_BASE_URL`` is; see ``StubEndpoint`` in
``test_llm_unit.py``), so the model's answer is scripted and the request it received can be checked.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from hindsight_core import Hindsight
from hindsight_core.mcp_server.__main__ import main as mcp_main
from hindsight_core.mcp_server.cli import host_port
from hindsight_core.mcp_server.transports import TOKEN_ENV

TOOLS = {"retain", "recall", "reflect", "correct", "forget", "list_banks"}
MESSAGES = [
    {"speaker": "Emma", "text": "My sister moved to Lisbon last spring.", "id": "m1"},
    {"speaker": "assistant", "text": "Noted! Is she enjoying Portugal?", "id": "m2"},
    {"speaker": "Emma", "text": "I adopted a grey cat called Pixel in January.", "id": "m3"},
    {"speaker": "Emma", "text": "My favourite food is ramen from the place near my office.", "id": "m4"},
]
SISTER = "Where does Emma's sister live?"
STARTUP_S = 240  # the server loads torch, MiniLM and spaCy before it answers; CPUs here are shared
CALL_TIMEOUT_S = 180.0


# helpers --------------------------------------------------------------------------------------------------------
def _server_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "hindsight_core.mcp_server", *options]


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, _text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """A tool call that must fail as a tool error; its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    message = _text(result)
    assert "Traceback" not in message and "Error executing tool" not in message, message
    return message


async def _profile(client: Client, bank_id: str) -> dict[str, Any]:
    contents = (await client.read_resource(f"hindsight://banks/{bank_id}/profile")).contents
    assert len(contents) == 1 and contents[0].mime_type == "application/json"
    text = getattr(contents[0], "text", None)
    assert isinstance(text, str)
    profile: dict[str, Any] = json.loads(text)
    return profile


async def exercise_memory(client: Client, bank: dict[str, str]) -> None:
    """What every transport must carry: tools listed, retain, recall with provenance, a clear argument error,
    forget. ``bank`` is the bank argument (empty when the server is fixed to a bank)."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert ("bank" in tools["recall"].input_schema["properties"]) == bool(bank)
    assert tools["recall"].annotations is not None and tools["recall"].annotations.read_only_hint
    assert tools["forget"].annotations is not None and tools["forget"].annotations.destructive_hint

    retained = await _call(client, "retain", {**bank, "content": MESSAGES, "timestamp": "2025-03-02T10:00:00",
                                               "document_id": "chat-1", "extract": False})
    assert retained["document_id"] == "chat-1" and len(retained["memories"]) == len(MESSAGES)
    by_source = {m["sources"][0]: m for m in retained["memories"]}
    assert set(by_source) == {m["id"] for m in MESSAGES}

    recalled = await _call(client, "recall", {**bank, "query": SISTER, "budget": 300})
    top = recalled["memories"][0]
    assert top["id"] == by_source["m1"]["id"] and "Lisbon" in top["text"]
    assert top["sources"] == ["m1"] and top["document_id"] == "chat-1" and top["network"] == "world"
    assert top["mentioned_at"].startswith("2025-03-02") and top["score"] > 0
    assert 0 < recalled["tokens"] <= 300

    message = await _error(client, "recall", {**bank, "query": SISTER, "budget": "lots"})
    assert message.startswith("invalid input: budget:") and "'lots'" in message

    assert (await _call(client, "forget", {**bank, "memory_id": top["id"]}))["deleted"] == 1
    after = await _call(client, "recall", {**bank, "query": SISTER, "budget": 300})
    assert top["id"] not in {m["id"] for m in after["memories"]}


def _seed_other_bank(path: Path) -> None:
    """A second bank in the store, with a document, for a server fixed to another bank to try to reach (no model
    needed)."""
    with Hindsight.open(path) as hs:
        hs.bank("other", name="Other", background="I keep the secret plans.").put_document("plans", "the plans")


# the stub model -------------------------------------------------------------------------------------------------
class StubLLM:
    """An OpenAI-compatible chat-completions endpoint answering reflect's schema with a scripted answer, and each
    per-memory verdict of a yes/no question with good news; any other schema gets an error. Records every
    request."""

    ANSWER: ClassVar[dict[str, Any]] = {
        "known": True, "based_on": [1], "answer": "Emma's sister lives in Lisbon.",
        "opinions": [{"text": "Lisbon suits Emma's sister.", "rationale": "she chose to move there",
                      "confidence": 0.6, "entities": ["Lisbon"]}],
    }

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                stub.requests.append(request)
                schema = request.get("response_format", {}).get("json_schema", {}).get("name")
                answers = {"_Answer": stub.ANSWER, "_NewsOut": {"about": "she likes it", "news": "good"}}
                if schema in answers:
                    status, body = 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                             "role": "assistant", "content": json.dumps(answers[schema])}}]}
                else:
                    status, body = 503, {"error": {"message": f"no script for {schema}", "type": "server_error"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def reflect_requests(self) -> list[dict[str, Any]]:
        """The requests that asked for reflect's answer."""
        return [r for r in self.requests if r["response_format"]["json_schema"]["name"] == "_Answer"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    stub = StubLLM()
    yield stub
    stub.close()


# an HTTP server process -----------------------------------------------------------------------------------------
class ServerProcess:
    """``python -m hindsight_core.mcp_server --http 127.0.0.1:0 ...``: its URL (read from its start-up line on
    stderr) and everything it wrote to stderr."""

    def __init__(self, *options: str, env: dict[str, str] | None = None, http: str = "127.0.0.1:0") -> None:
        self.proc = subprocess.Popen(_server_command(*options, "--http", http), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self._urls: queue.Queue[str | None] = queue.Queue()
        # Reading on, so that the pipe never fills and blocks the server.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.url = self._urls.get(timeout=STARTUP_S)
        except queue.Empty:
            self.url = None
        if self.url is None:
            self.stop()
            pytest.fail("the server did not start:\n" + self.stderr)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("hindsight mcp: serving") and " at http://" in line:
                self._urls.put(line.rsplit(" at ", 1)[1].strip())
        self._urls.put(None)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=10)
        return self.proc.returncode


# tests ----------------------------------------------------------------------------------------------------------
async def test_stdio_serves_every_bank(tmp_path: Path) -> None:
    errlog = tmp_path / "server-stderr.log"
    params = StdioServerParameters(command=sys.executable, args=_server_command("--path", str(tmp_path / "m"))[1:],
                                   env=dict(os.environ))
    try:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err), read_timeout_seconds=CALL_TIMEOUT_S) as client:
                await exercise_memory(client, {"bank": "emma"})
                await _call(client, "retain", {"bank": "work", "content": "The quarterly review is on Friday.",
                                               "extract": False})
                banks = await _call(client, "list_banks", {})
                assert {b["id"] for b in banks["banks"]} == {"emma", "work"}

                message = await _error(client, "recall", {"query": SISTER})
                assert message == "invalid input: bank: Field required"
                message = await _error(client, "recall", {"bank": "nobody", "query": SISTER})
                assert message.startswith("unknown bank: no bank 'nobody'")
                message = await _error(client, "forget", {"bank": "emma", "memory_id": "x", "entity": "Emma"})
                assert message.startswith("invalid input:") and "exactly one" in message
                message = await _error(client, "recall", {"bank": "emma", "query": SISTER, "top_k": 3})
                assert message.startswith("invalid input: recall takes no argument 'top_k'")

                listed = {str(r.uri) for r in (await client.list_resources()).resources}
                assert listed == {"hindsight://banks/emma/profile", "hindsight://banks/work/profile"}
                profile = await _profile(client, "emma")
                assert profile["id"] == "emma" and profile["disposition"]["skepticism"] == 3
                with pytest.raises(MCPError, match="unknown bank"):
                    await client.read_resource("hindsight://banks/nobody/profile")
    finally:
        log = errlog.read_text() if errlog.exists() else ""
    # The client closed stdin: the server closed the store and exited by itself, before any SIGTERM.
    assert "serving every bank of" in log and "on stdio" in log
    assert "stopped" not in log and "Traceback" not in log, log
    with Hindsight.open(tmp_path / "m") as hs:
        assert hs.recovered["owners_released"] == 0


async def test_http_with_a_fixed_bank(tmp_path: Path, stub_llm: StubLLM) -> None:
    path = tmp_path / "m"
    _seed_other_bank(path)
    server = ServerProcess("--path", str(path), "--bank", "emma", "--llm-url", stub_llm.base_url,
                           "--llm-model", "stub")
    try:
        assert server.url is not None and server.url.startswith("http://127.0.0.1:")
        async with Client(streamable_http_client(server.url), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            await exercise_memory(client, {})

            # The lock: no tool takes a bank, naming one is refused, and the other bank is invisible.
            for tool in TOOLS - {"list_banks"}:
                schema = next(t for t in (await client.list_tools()).tools if t.name == tool).input_schema
                assert "bank" not in schema["properties"]
            message = await _error(client, "recall", {"bank": "other", "query": "secret plans"})
            assert message.startswith("invalid input: recall takes no argument 'bank'")
            assert "serves bank 'emma' only" in message
            message = await _error(client, "retain", {"bank": "other", "content": "x", "extract": False})
            assert "takes no argument 'bank'" in message
            assert [b["id"] for b in (await _call(client, "list_banks", {}))["banks"]] == ["emma"]
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert listed == {"hindsight://banks/emma/profile"}
            with pytest.raises(MCPError, match="serves bank 'emma' only"):
                await client.read_resource("hindsight://banks/other/profile")
            assert (await _profile(client, "emma"))["id"] == "emma"
            # An id that exists in the other bank names nothing here.
            assert (await _call(client, "forget", {"document_id": "plans"}))["deleted"] == 0

            # Reflect with a disposition override: the model was asked once, in that disposition.
            await _call(client, "retain", {"content": MESSAGES[:1], "timestamp": "2025-03-02T10:00:00",
                                           "document_id": "chat-2", "extract": False})
            reflected = await _call(client, "reflect", {"query": "What do you think of Lisbon for Emma's sister?",
                                                        "skepticism": 5, "bias": 0.9})
            assert reflected["answer"] == "Emma's sister lives in Lisbon." and reflected["known"]
            assert reflected["disposition"] == {"skepticism": 5, "literalism": 3, "empathy": 3, "bias": 0.9}
            cited = reflected["based_on"][0]
            assert "Lisbon" in cited["text"] and cited["sources"] == ["m1"] and cited["document_id"] == "chat-2"
            [opinion] = reflected["opinions"]
            # Its confidence is computed from the one cited memory at skepticism 5, not the model's 0.6.
            assert opinion["network"] == "opinion" and 0 < opinion["confidence"] < 0.6
            [request] = stub_llm.reflect_requests()
            system = next(m["content"] for m in request["messages"] if m["role"] == "system")
            assert "Skepticism 5/5" in system and "Empathy 3/5" in system
            # A yes/no question is judged memory by memory: the stance, its confidence and each verdict come back.
            judged = await _call(client, "reflect", {"query": "Is Lisbon a good fit for Emma's sister?"})
            assert judged["stance"] == "yes" and 0 < judged["confidence"] <= 0.95 and judged["known"]
            assert set(judged["verdicts"].values()) == {"yes"} and cited["id"] in judged["verdicts"]
            assert judged["answer"].startswith(("Yes (confidence", "Probably yes (confidence"))
            message = await _error(client, "reflect", {"query": "Is Lisbon a good fit?", "empathy": 9})
            assert message.startswith("invalid input: empathy:")
            assert (await _call(client, "recall", {"query": "Lisbon", "networks": ["opinion"]}))["memories"]
    finally:
        status = server.stop()
    assert status == 0, server.stderr  # SIGTERM is how a server is stopped
    assert "Traceback" not in server.stderr and "hindsight mcp: stopped" in server.stderr, server.stderr
    with Hindsight.open(path) as hs:  # the server closed the store: no lease of a dead process to take over
        assert hs.recovered["owners_released"] == 0 and hs.recovered["documents_resumed"] == 0
        assert hs.bank("other", create=False).document("plans").content == "the plans"


@pytest.mark.parametrize("spelling", ["127.0.0.2", "LOCALHOST"])
async def test_http_on_any_loopback_spelling_refuses_a_rebound_host_or_origin(tmp_path: Path, spelling: str) -> None:
    """DNS rebinding: a page at evil.example that points its name at this address must not reach the tools, however
    the loopback address was written on the command line (no token is needed on loopback)."""
    server = ServerProcess("--path", str(tmp_path / "m"), "--bank", "emma", http=f"{spelling}:0")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}}}
    plain = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        assert server.url is not None
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        async with httpx2.AsyncClient(timeout=60) as http:
            rebound = await http.post(server.url, json=hello, headers={**plain, "Host": f"evil.example:{port}"})
            assert rebound.status_code == 421
            foreign = await http.post(server.url, json=hello, headers={**plain, "Origin": "http://evil.example"})
            assert foreign.status_code == 403
            local = await http.post(server.url, json=hello,
                                    headers={**plain, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})
            assert local.status_code == 200, local.text
    finally:
        assert server.stop() == 0, server.stderr


async def test_http_with_a_token_refuses_requests_without_it(tmp_path: Path) -> None:
    token = "test-token-4f9c2"
    server = ServerProcess("--path", str(tmp_path / "m"), "--bank", "emma", env={TOKEN_ENV: f" {token} "})
    try:
        assert server.url is not None and "(bearer token required)" in server.stderr
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "0"}}}
        plain = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(timeout=60) as http:
            for presented in (None, "Bearer wrong", f"Basic {token}", token, f"Bearer {token}x"):
                headers = plain if presented is None else {**plain, "Authorization": presented}
                refused = await http.post(server.url, json=hello, headers=headers)
                assert refused.status_code == 401, presented
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert "unauthorized" in refused.json()["error"] and token not in refused.text
        auth = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=CALL_TIMEOUT_S)
        async with auth, Client(streamable_http_client(server.url, http_client=auth),
                                read_timeout_seconds=CALL_TIMEOUT_S) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            await _call(client, "retain", {"content": MESSAGES[:1], "document_id": "c1", "extract": False})
            found = await _call(client, "recall", {"query": SISTER})
            assert "Lisbon" in found["memories"][0]["text"]
    finally:
        status = server.stop()
    assert status == 0, server.stderr
    assert token not in server.stderr  # never printed


def test_command_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert host_port("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert host_port("[::1]:0") == ("::1", 0)
    for given, expected in [
        (["--graph", "bolt://127.0.0.1:1"], "--graph needs --vectors"),
        (["--llm-url", "http://127.0.0.1:1/v1"], "--llm-url needs --llm-model"),
        (["--path", str(tmp_path), "--http", "127.0.0.1"], "expected HOST:PORT"),
        (["--path", str(tmp_path), "--http", "127.0.0.1:99999"], "port out of range"),
        (["--llm-url", "http://h/v1", "--local-model", "qwen2.5-0.5b"], "not allowed with argument"),
        # Beyond loopback, no token means no server unless the user says the network is trusted.
        (["--path", str(tmp_path), "--http", "0.0.0.0:0"], "refusing to serve 0.0.0.0 without authentication"),
    ]:
        assert mcp_main(given) == 2
        err = capsys.readouterr().err
        assert expected in err, (given, err)
    assert not (tmp_path / "graph.sqlite").exists()  # nothing was opened
