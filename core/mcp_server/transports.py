"""Serving the MCP server: on this process's stdin/stdout, or on streamable HTTP at ``http://HOST:PORT/mcp``.

On stdio the SDK keeps the protocol stream clean: while it serves, file descriptor 1 points at stderr, so stray
output (a library's print, a native library's log) cannot corrupt the messages. On HTTP the listening socket is
bound here, before serving starts, so an address in use is an ``OSError`` naming it (uvicorn would exit the
process instead), and port 0 picks a free port that the ``announce`` callback reports.

With tokens (a token file, ``--tokens``; or one token in ``$HINDSIGHT_MCP_TOKEN``) every HTTP request must carry
``Authorization: Bearer TOKEN``; any other gets 401 before it reaches the SDK, and a token reaches only the banks
it grants (``hindsight_core.access``). Tokens never come from the command line, where ``ps`` would show them.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from ..access import Access, bearer
from ..cli.net import is_loopback
from .scope import GRANT_KEY

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is mounted."""
GRACEFUL_SHUTDOWN_S = 5
"""How long a stopping HTTP server waits for open requests and event streams before closing them."""
TOKEN_ENV = "HINDSIGHT_MCP_TOKEN"
"""Environment variable holding the bearer token HTTP clients must present (unset or empty: none)."""


def configured_token(environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token from ``$HINDSIGHT_MCP_TOKEN`` (surrounding spaces dropped), or None when unset/empty."""
    return environ.get(TOKEN_ENV, "").strip() or None


SESSION_HEADER = b"mcp-session-id"
MAX_SESSION_OWNERS = 65_536
"""How many sessions' owners the guard remembers (the oldest is forgotten first): a bound on its memory."""
_NO_SESSION = json.dumps({"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32600, "message": "Session not found"}}).encode()


class BearerTokenGuard:
    """ASGI middleware: an HTTP request must carry ``Authorization: Bearer <token>`` with a token ``access``
    accepts; its grant is left in the ASGI scope (``scope.GRANT_KEY``) for the tools to check banks against. Any
    other request gets 401 and never reaches ``app``; lifespan events pass through. Tokens are compared in
    constant time (``hindsight_core.access``).

    A session belongs to the token that opened it: a request naming another token's session (to post into it,
    read its stream or end it with ``DELETE``) gets the SDK's answer for a session that does not exist (404),
    whoever knows its id."""

    def __init__(self, app: Any, access: Access) -> None:
        """Guard ``app`` with the tokens of ``access`` (at least one must be configured)."""
        if not access.required:
            raise ValueError("no token is configured")
        self.app = app
        self.access = access
        self._owners: OrderedDict[bytes, str | None] = OrderedDict()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Refuse or forward one ASGI connection."""
        if scope["type"] in ("http", "websocket"):
            given = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            # Hashing a token against the file is quick, but the file may be re-read: off the event loop.
            grant = await asyncio.to_thread(self.access.authenticate, bearer(given))
            if grant is None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token> (the server's "
                                            f"${TOKEN_ENV}, or a token of its --tokens file)"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="hindsight-mcp"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            scope = {**scope, GRANT_KEY: grant}
            if scope["type"] == "http":
                await self._in_session(scope, receive, send, grant.token_id)
                return
        await self.app(scope, receive, send)

    async def _in_session(self, scope: dict[str, Any], receive: Any, send: Any, token_id: str | None) -> None:
        """Forward a request within its token's own session (or one that opens a session, whose owner this
        records); another token's session is answered as one that does not exist."""
        named = dict(scope.get("headers") or []).get(SESSION_HEADER)
        if named is not None and named in self._owners and self._owners[named] != token_id:
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(_NO_SESSION)).encode())]})
            await send({"type": "http.response.body", "body": _NO_SESSION})
            return

        async def noting_owner(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                opened = dict(message.get("headers") or []).get(SESSION_HEADER)
                if named is None and opened is not None and message.get("status", 500) < 400:
                    self._owners[opened] = token_id
                    while len(self._owners) > MAX_SESSION_OWNERS:
                        self._owners.popitem(last=False)
                elif named is not None and scope.get("method") == "DELETE" and message.get("status", 500) < 300:
                    self._owners.pop(named, None)  # ended by its owner
            await send(message)

        await self.app(scope, receive, noting_owner)


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""Host names a browser on this machine may use for a loopback server; any other name in ``Host`` or ``Origin``
is a page that rebound its own name to this address."""


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding settings, always explicit: on a loopback address (any spelling: ``127.0.0.2``,
    ``LOCALHOST``, ``[::1]``), only loopback names with the served port in ``Host`` and ``Origin``; elsewhere none
    (the bearer token guards a server on the network)."""
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    given = host.strip().lower()
    given = f"[{given.strip('[]')}]" if ":" in given else given
    names = sorted({*LOOPBACK_NAMES, given})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for n in names for h in (n, f"{n}:{port}")],
        allowed_origins=[f"{scheme}://{n}:{port}" for n in names for scheme in ("http", "https")],
    )


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve one client on stdin/stdout until it closes stdin."""
    await server.run_stdio_async()


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
                     announce: Callable[[str], None] = lambda url: None, log_level: str = "warning",
                     access: Access | None = None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (Ctrl-C or SIGTERM).

    ``announce`` is called with the endpoint's URL once the server accepts connections. On a loopback host, however
    it is spelled, requests whose ``Host`` or ``Origin`` header names another site are refused (DNS rebinding:
    ``transport_security``). With ``access`` (a token file, the environment's token), requests must carry
    ``Authorization: Bearer <token>`` and reach only the banks that token grants.
    """
    import uvicorn

    sock = bind(host, port)
    url = endpoint_url(sock)
    app: Any = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                          transport_security=transport_security(host, sock.getsockname()[1]))
    if access is not None and access.required:
        app = BearerTokenGuard(app, access)
    # log_config=None: uvicorn's records (its tracebacks included) go to the process's handler, which a command
    # makes the scrubbing one (cli/safe_output.py), instead of handlers of uvicorn's own.
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, log_config=None)
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
