"""An OpenAI-compatible endpoint on loopback whose every answer is a 401 whose body echoes credentials: what an
upstream that leaks them looks like, for the tests that check errors, stored jobs and logs stay clean."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class EchoServer:
    """Answers every POST with 401 and ``{"error": error_of(authorization_header)}``; ``port`` is where it listens."""

    def __init__(self, error_of: Callable[[str | None], dict[str, Any]]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.dumps({"error": error_of(self.headers.get("Authorization"))}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
