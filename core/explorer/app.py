"""The explorer's ASGI application: the JSON API, the static page, security headers and error mapping.

``create_app(hs, guard)`` serves an open ``Hindsight``; ``server.serve`` opens one and runs it under uvicorn,
and tests drive it with Starlette's ``TestClient``. The page is plain files from ``static/`` (vendored libraries
included), under a Content-Security-Policy that allows nothing from anywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    BankNotFoundError,
    DocumentNotFoundError,
    HindsightError,
    InvalidInputError,
    StoreLockedError,
    bounded,
    shown,
)
from .auth import Guard
from .queries import Explorer, NotFoundError
from .routes import ForbiddenError, UnsupportedMediaError, api_routes

if TYPE_CHECKING:
    from ..hindsight import Hindsight

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
# HTTP status of each error the API can raise, most specific first.
STATUS: list[tuple[type[BaseException], int]] = [
    (BankNotFoundError, 404), (DocumentNotFoundError, 404), (NotFoundError, 404), (InvalidInputError, 400),
    (ForbiddenError, 403), (UnsupportedMediaError, 415), (StoreLockedError, 503), (HindsightError, 500),
]


class Headers:
    """ASGI middleware: refuses a ``Host`` this server does not answer to (DNS rebinding) and, on loopback, an
    ``Origin`` of another site; adds the security headers to every response, and keeps API answers out of
    caches."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += SECURITY_HEADERS
                headers.append((b"cache-control", b"no-store" if api else b"no-cache"))
                message = {**message, "headers": headers}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:  # answered here, with the same headers as any other answer
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def refusal(self, scope: Scope) -> Response | None:
        """The answer to a request whose ``Host`` (DNS rebinding) or ``Origin`` (another site) this server refuses;
        None when it may go on."""
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1") or None
        if not self.guard.host_ok(host):
            return JSONResponse({"error": f"this server does not answer to host {(host or '')[:100]!r}",
                                 "kind": "InvalidHost"}, status_code=400)
        origin = headers.get(b"origin")
        sent = None if origin is None else origin.decode("latin-1")
        # A preflight (OPTIONS) reaches no endpoint and is never approved: it fails by itself (405, no CORS).
        if scope["method"] != "OPTIONS" and not self.guard.origin_ok(sent):
            return JSONResponse({"error": "requests from other sites are refused", "kind": "InvalidOrigin"},
                                status_code=403)
        return None


def error_response(request: Request, exc: Exception) -> Response:
    """An error as ``{"error": message, "kind": class name}`` with its HTTP status."""
    status = next((code for kind, code in STATUS if isinstance(exc, kind)), 500)
    message = bounded(" ".join(str(exc).split())) or type(exc).__name__  # no long input echoed whole
    if isinstance(exc, KeyError) and message.startswith(("'", '"')):  # KeyError quotes its message
        message = message[1:-1]
    if status == 500:
        log.exception("explorer request %s failed", request.url.path, exc_info=exc)
    return JSONResponse({"error": message, "kind": type(exc).__name__}, status_code=status)


def api_not_found(request: Request) -> Response:
    """An unknown API path: a JSON 404 rather than the static files' page."""
    return JSONResponse({"error": f"no API endpoint {shown(request.url.path)}", "kind": "NotFound"}, status_code=404)


def create_app(hs: Hindsight, guard: Guard) -> Starlette:
    """The explorer over an open ``Hindsight`` (which the caller closes), with ``guard``'s token policy."""
    routes = [
        *api_routes(),
        Route("/api/{rest:path}", api_not_found, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        Mount("/", app=StaticFiles(directory=STATIC, html=True), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Response]] = {kind: error_response for kind, _ in STATUS}
    handlers[Exception] = error_response  # anything else: still JSON for the page (and logged)
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.explorer = Explorer(hs)
    app.state.guard = guard
    app.add_middleware(Headers, guard=guard)
    return app
