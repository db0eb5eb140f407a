"""A scripted OpenAI-compatible server on loopback (``/v1/embeddings``, ``/v1/chat/completions``) for tests.

Embeddings are deterministic bags of hashed words (texts sharing words are close), so retain and recall through
it behave like a real, if crude, embedding model. Faults are scripted: ``fail_next`` answers the next requests
with the given statuses (a 429 proves the retry), and a text containing ``ECHO-AUTH`` gets a 400 whose body
echoes the request's Authorization header (what a careless upstream does; the client must scrub it). Chat
answers pop from ``chat_replies`` in order.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 32


def bag_vector(text: str, dim: int = DIM) -> list[float]:
    """A deterministic unit vector: each lower-cased word adds 1 at a hashed position."""
    vec = np.zeros(dim, dtype=np.float64)
    for word in text.lower().split():
        word = word.strip(".,!?:;'\"()[]")
        if word:
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = np.linalg.norm(vec)
    return (vec / norm if norm else vec).tolist()


@dataclass
class Script:
    """What the server will do, and what it saw."""

    fail_next: list[int] = field(default_factory=list)
    chat_replies: list[str] = field(default_factory=list)
    embedding_batches: list[list[str]] = field(default_factory=list)
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str | None] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        """Silence the default stderr access log."""

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        with self.script.lock:
            self.script.statuses.append(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # the http.server hook name
        """Serve one scripted request."""
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"{}")
        auth = self.headers.get("Authorization")
        with self.script.lock:
            self.script.auth_headers.append(auth)
            fault = self.script.fail_next.pop(0) if self.script.fail_next else None
        if fault is not None:
            self._send(fault, {"error": {"message": f"scripted {fault}"}})
        elif self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(payload, auth)
        elif self.path.rstrip("/").endswith("/chat/completions"):
            self._chat(payload)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _embeddings(self, payload: dict[str, Any], auth: str | None) -> None:
        texts = payload.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        if any("ECHO-AUTH" in t for t in texts):
            self._send(400, {"error": {"message": f"bad request; you sent Authorization: {auth}"}})
            return
        with self.script.lock:
            self.script.embedding_batches.append(texts)
        data = [{"object": "embedding", "index": i, "embedding": bag_vector(t)} for i, t in enumerate(texts)]
        self._send(200, {"object": "list", "data": data[::-1], "model": payload.get("model")})  # any order

    def _chat(self, payload: dict[str, Any]) -> None:
        with self.script.lock:
            self.script.chat_requests.append(payload)
            content = self.script.chat_replies.pop(0) if self.script.chat_replies else "{}"
        self._send(200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": payload.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })


@contextmanager
def scripted_server(script: Script | None = None) -> Iterator[tuple[str, Script]]:
    """Serve ``script`` on a free loopback port; yields (base URL ending in ``/v1``, script)."""
    script = script or Script()
    handler = type("Handler", (_Handler,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()
