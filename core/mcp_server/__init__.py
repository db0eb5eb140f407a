"""Hindsight memory as an MCP server: tools ``retain``, ``recall``, ``reflect``, ``correct``, ``forget``,
``list_banks`` and a profile resource per bank, on stdio or streamable HTTP (``hindsight mcp``).

Built on the official ``mcp`` SDK (the optional ``mcp`` extra). Like the framework adapters it holds no memory
logic: it translates MCP calls to the public ``Hindsight``/``Bank`` API and back.

- ``schemas``: what the tools take and return (JSON-friendly models).
- ``scope``: which banks a request may reach (all, or the one fixed with ``--bank``, within its token's grant).
- ``errors``: library errors to clear tool errors.
- ``tools``: the tool bodies and their registration.
- ``resources``: the per-bank profile resource.
- ``server``: ``build_server``, the server object that ties them together.
- ``transports``: serving it on stdio or streamable HTTP.
- ``cli``: the ``mcp`` command (``add_commands``), also run by ``python -m hindsight_core.mcp_server``.

Importing this package imports neither the SDK nor the engine; ``build_server`` is loaded on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["build_server"]

if TYPE_CHECKING:  # pragma: no cover
    from .server import build_server


def __getattr__(name: str) -> Any:
    if name == "build_server":
        return import_module(".server", __name__).build_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
