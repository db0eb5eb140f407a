"""No secret in any log, at any verbosity (issue 39, must have 1).

The credential-echo scenario: ``hindsight mcp --http`` (a real server process) whose LLM upstream answers 401 with
a body that echoes the request's ``Authorization`` header and URL, as a careless proxy does. After a ``retain``
(whose facts job fails and is retried) and a ``reflect`` (a tool error), every byte the server wrote (stderr and
stdout) is searched for the API key, the URL's password and the ``Basic`` header they make, with and without
``-v``. The unit tests below pin the pieces: the worker's own log lines and traceback, the formatter, the HTTP
clients' loggers kept out of ``-v``, control characters escaped in log lines.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from support.openai_server import bag_vector

from hindsight_core import Hindsight
from hindsight_core.errors import LLMError
from hindsight_core.llm import logsafe
from hindsight_core.llm.logsafe import ScrubbingFormatter, configure_logging, describe_exception
from hindsight_core.models import Job
from hindsight_core.runtime.worker import Worker

KEY = "sk-live-Zq8vN3kR5tW7yB2dF4hJ6mP9"
USER, PASSWORD = "alice", "hunter2-Xy7Qp"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = (KEY, PASSWORD, BASIC)
STARTUP_S = 240


class EchoingUpstream:
    """An OpenAI-compatible endpoint: embeddings answer (bag-of-words vectors), chat completions answer 401 with
    the request's Authorization header and path in the error body."""

    def __init__(self) -> None:
        self.auth_seen: list[str] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                auth = self.headers.get("Authorization") or ""
                if self.path.rstrip("/").endswith("/embeddings"):
                    texts = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
                    status, body = 200, {"object": "list", "model": "bag", "data": [
                        {"object": "embedding", "index": i, "embedding": bag_vector(t)} for i, t in enumerate(texts)]}
                else:
                    upstream.auth_seen.append(auth)
                    status, body = 401, {"error": {"message": f"invalid credentials: you sent Authorization: {auth} "
                                                              f"to {self.path}", "type": "invalid_request_error"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def upstream() -> Iterator[EchoingUpstream]:
    served = EchoingUpstream()
    yield served
    served.close()


class Server:
    """``python -m hindsight_core.mcp_server --http 127.0.0.1:0 ...``; collects everything it writes."""

    def __init__(self, options: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "hindsight_core.mcp_server", *options],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **env})
        self.err: list[str] = []
        self.out: list[str] = []
        urls: queue.Queue[str | None] = queue.Queue()

        def read_err() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.err.append(line)
                if line.startswith("hindsight mcp: serving") and " at http://" in line:
                    urls.put(line.rsplit(" at ", 1)[1].strip())
            urls.put(None)

        def read_out() -> None:
            assert self.proc.stdout is not None
            self.out.extend(self.proc.stdout)

        self._readers = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
        for reader in self._readers:
            reader.start()
        try:
            self.url = urls.get(timeout=STARTUP_S)
        except queue.Empty:
            self.url = None
        if self.url is None:
            self.stop()
            pytest.fail("the server did not start:\n" + self.text)

    @property
    def text(self) -> str:
        return "".join(self.err) + "".join(self.out)

    def wait_for(self, needle: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text:
            assert time.monotonic() < deadline, f"{needle!r} never logged:\n{self.text}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=10)


async def _tool(url: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    http = httpx2.AsyncClient(timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
        result = await client.call_tool(name, arguments)
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    return not result.is_error, text


@pytest.mark.parametrize(("verbose", "userinfo"), [(False, False), (False, True), (True, False), (True, True)],
                         ids=["quiet-key", "quiet-url-password", "verbose-key", "verbose-url-password"])
async def test_no_secret_reaches_the_server_log(tmp_path: Path, upstream: EchoingUpstream, verbose: bool,
                                                userinfo: bool) -> None:
    host = f"{USER}:{PASSWORD}@127.0.0.1" if userinfo else "127.0.0.1"
    options = ["--path", str(tmp_path / "m"), "--http", "127.0.0.1:0", "--llm-url", f"http://{host}:{upstream.port}/v1",
               "--llm-model", "m", *(["-v"] if verbose else [])]
    env = {"HINDSIGHT_LLM_API_KEY": KEY, "HINDSIGHT_EMBEDDER": f"openai:http://127.0.0.1:{upstream.port}/v1#bag"}
    server = Server(options, env)
    try:
        assert server.url is not None
        ok, text = await _tool(server.url, "retain", {"bank": "b", "content": "Ana moved to Porto in May."})
        assert ok, text
        # The facts job asks the upstream, gets the 401 and is retried: logged at WARNING, so at any verbosity.
        server.wait_for("failed (attempt 1)")
        ok, text = await _tool(server.url, "reflect", {"bank": "b", "query": "Ana moved to Porto in May: why?"})
        assert not ok and text.startswith("model error:") and "401" in text, text
        assert not any(secret in text for secret in SECRETS), text
    finally:
        server.stop()
    log = server.text
    # The scenario happened: the upstream was sent the credential and echoed it in its answer...
    assert any(KEY in a or BASIC in a for a in upstream.auth_seen), upstream.auth_seen
    assert "answered HTTP 401" in log and "***" in log
    # ...and no log line holds it, in any form.
    for secret in SECRETS:
        assert secret not in log, f"{secret!r} in the server's log:\n{log}"
    if verbose:
        assert "INFO " in log  # -v did log more...
        assert "HTTP Request" not in log  # ...but not the HTTP client's request lines (with their URLs)
    with Hindsight.open(tmp_path / "m", start_worker=False, embedder=env["HINDSIGHT_EMBEDDER"]) as hs:
        errors = " ".join(j.error or "" for j in hs.bank("b").jobs())
    assert "401" in errors and not any(secret in errors for secret in SECRETS)


def _echoing_error() -> LLMError:
    """An LLMError as the OpenAI backend raises it: scrubbed itself, raised from the upstream's unscrubbed error."""
    try:
        try:
            raise RuntimeError(f"Error code: 401 - you sent Authorization: Basic {BASIC} and Bearer {KEY}")
        except RuntimeError as upstream_error:
            raise LLMError("model 'm' answered HTTP 401: you sent Authorization: *** ***") from upstream_error
    except LLMError as exc:
        return exc


def test_the_worker_logs_no_secret_even_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def handler(job: Job) -> None:
        raise _echoing_error()

    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        hs.bank("b")
        store = hs.engine.store  # the job queue the worker runs
        worker = Worker(store, {"boom": handler}, max_attempts=2, backoff_s=0.0)
        store.enqueue_job(Job(id="j1", bank_id="b", kind="boom"))
        with caplog.at_level(logging.DEBUG, logger="hindsight_core.runtime.worker"):
            assert worker.run_once()  # retried
            time.sleep(0.01)
            assert worker.run_once()  # failed for good
    logged = caplog.text + " ".join(str(r.args) for r in caplog.records)
    assert "retrying" in logged and "failed for good" in logged and "Traceback" in logged  # the chain is logged...
    assert "RuntimeError" in logged  # ...the cause included...
    for secret in SECRETS:
        assert secret not in logged, logged  # ...scrubbed


def test_the_formatter_scrubs_tracebacks_and_escapes_controls() -> None:
    logsafe.remember_secrets("opaque-secret-without-a-shape")
    formatter = ScrubbingFormatter(logsafe.LOG_FORMAT)
    exc = _echoing_error()
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "upstream said %s; bank %s", (
        "the key is opaque-secret-without-a-shape", "evil\u202eid\x1b[2J\nERROR forged: line"), (type(exc), exc,
                                                                                             exc.__traceback__))
    text = formatter.format(record)
    assert "opaque-secret-without-a-shape" not in text and all(s not in text for s in SECRETS)
    assert "RuntimeError" in text and "Traceback" in text
    assert "\u202e" not in text and "\x1b" not in text and "\\u202e" in text and "\\u001b[2J" in text
    # Every line after the first is indented: a value cannot start a line that reads as a record of its own.
    assert all(line.startswith("  ") for line in text.splitlines()[1:])
    assert "\n  ERROR forged" in text


def test_verbose_logging_keeps_http_clients_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    handler = configure_logging(verbose=True)
    try:
        logging.getLogger("httpx2").info("HTTP Request: POST http://u:p4ssword@h/v1 200")
        logging.getLogger("openai").info("retrying request to http://u:p4ssword@h/v1")
        logging.getLogger("hindsight_core.test").info("visible at -v")
        logging.getLogger("httpx2").warning("a warning at http://u:p4ssword@h/v1 stays")
    finally:
        logging.getLogger().removeHandler(handler)
    err = capsys.readouterr().err
    assert "visible at -v" in err and "HTTP Request" not in err and "retrying" not in err
    assert "a warning at http://h/v1 stays" in err and "p4ssword" not in err


def test_describe_exception_covers_the_chain() -> None:
    text = describe_exception(_echoing_error())
    assert "direct cause" in text and "RuntimeError" in text and "LLMError" in text
    assert all(secret not in text for secret in SECRETS)
