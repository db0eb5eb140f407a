"""Who is acting: the surface (``api``, ``cli``, ``mcp``, ``explorer``) and the token id of a write.

The audit trail records, for every write and forget, which surface made it and with which token (its id, never
the token). The surfaces know that; the pipelines that write do not, and threading it through every signature
would touch them all. So a surface wraps its call in ``acting_as(...)`` and whoever records reads
``current_actor()``: a ``contextvars`` variable, so it follows asyncio tasks and ``asyncio.to_thread`` calls and
one request never sees another's.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SURFACES = ("api", "cli", "mcp", "explorer")
"""The surfaces a write can come through (``api``: a Python caller, the default)."""


@dataclass(frozen=True)
class Actor:
    """The surface a write came through and the id of the token it used (None without one)."""

    surface: str = "api"
    token_id: str | None = None


_API = Actor()
_ACTOR: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("hindsight_actor", default=None)


def current_actor() -> Actor:
    """The actor of the running call (``Actor("api")`` unless a surface said otherwise)."""
    return _ACTOR.get() or _API


@contextmanager
def acting_as(surface: str, token_id: str | None = None) -> Iterator[Actor]:
    """Within the block, writes are recorded as made through ``surface`` with ``token_id``."""
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}; known: {', '.join(SURFACES)}")
    actor = Actor(surface, token_id)
    reset = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(reset)


__all__ = ["SURFACES", "Actor", "acting_as", "current_actor"]
