"""Test support: the MCP HTTP server and the explorer served on loopback from a thread of the test process (real
sockets, real uvicorn), over a store the test holds open, so that a test can check the stores afterwards."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import uvicorn

from hindsight_core import Hindsight
from hindsight_core.access import Access
from hindsight_core.explorer.app import create_app
from hindsight_core.explorer.auth import Guard
from hindsight_core.explorer.server import bind, url_of
from hindsight_core.mcp_server import build_server
from hindsight_core.mcp_server.transports import serve_http

START_S = 60


class MCPThread:
    """``transports.serve_http`` for a fresh server over ``hs``, in its own event loop; ``url`` is the endpoint."""

    def __init__(self, hs: Hindsight, host: str, access: Access | None, bank: str | None = None) -> None:
        server = build_server(hs, bank=bank, tokens_required=access is not None and access.required)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self.url = ""
        self.error: BaseException | None = None

        def announce(url: str) -> None:
            self.url = url
            self._ready.set()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            await serve_http(server, host, 0, announce=announce, access=access)

        def run() -> None:
            try:
                asyncio.run(main())
            except asyncio.CancelledError:
                pass
            except BaseException as exc:  # reported by the test, not lost in the thread
                self.error = exc
            finally:
                self._ready.set()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_S) or not self.url:
            raise RuntimeError(f"the MCP server did not start: {self.error!r}")

    @property
    def port(self) -> int:
        """The port it got."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stop(self) -> None:
        """Cancel the serving task and wait for the thread."""
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(30)


class ExplorerThread:
    """The explorer app over ``hs`` with ``guard``, under uvicorn on ``host`` (a free port); ``url`` its address."""

    def __init__(self, hs: Hindsight, host: str, guard: Guard) -> None:
        self._sock: socket.socket = bind(host, 0)
        self.url = url_of(host, self._sock.getsockname()[1])
        config = uvicorn.Config(create_app(hs, guard), log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        waited = threading.Event()
        for _ in range(START_S * 20):
            if self._server.started:
                break
            waited.wait(0.05)
        else:
            raise RuntimeError("the explorer did not start")

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for it."""
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()
