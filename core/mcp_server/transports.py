"""Serving the MCP server: on this process's stdin/stdout, or on streamable HTTP at ``http://HOST:PORT/mcp``.

On stdio the SDK keeps the protocol stream clean: while it serves, file descriptor 1 points at stderr, so stray
output (a library's print, a native library's log) cannot corrupt the messages. On HTTP the listening socket is
bound here, before serving starts, so an address in use is an ``OSError`` naming it (uvicorn would exit the
process instead), and port 0 picks a free port that the ``announce`` callback reports.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is mounted."""
GRACEFUL_SHUTDOWN_S = 5
"""How long a stopping HTTP server waits for open requests and event streams before closing them."""


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve one client on stdin/stdout until it closes stdin."""
    await server.run_stdio_async()


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``127.0.0.1``, ``::1``, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``OSError`` naming the address when it cannot be had)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may reuse a port in TIME_WAIT
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock


def endpoint_url(sock: socket.socket) -> str:
    """The MCP endpoint's URL for a bound socket (its real port, also when 0 was asked for)."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


async def serve_http(server: MCPServer[Any], host: str, port: int, *,
                     announce: Callable[[str], None] = lambda url: None, log_level: str = "warning") -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (Ctrl-C or SIGTERM).

    ``announce`` is called with the endpoint's URL once the server accepts connections. On a loopback host the
    SDK also refuses requests whose ``Host`` or ``Origin`` header names another site (DNS rebinding).
    """
    import uvicorn

    sock = bind(host, port)
    url = endpoint_url(sock)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    http = uvicorn.Server(config)
    serving = asyncio.ensure_future(http.serve(sockets=[sock]))
    try:
        while not http.started and not serving.done():
            await asyncio.sleep(0.05)
        if http.started:
            announce(url)
        await serving
    finally:
        sock.close()
