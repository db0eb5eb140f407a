"""Which banks a request may reach: the server's (every bank, or the one fixed with ``--bank``) intersected with
what the caller's token grants (``hindsight_core.access``).

A fixed bank is enforced where requests arrive, not trusted to the client: its tools are registered without a
bank argument (``tools.bind_bank``), the server rejects any argument a tool does not declare
(``server.HindsightMCPServer.call_tool``), ``list_banks`` and the resource listing show only that bank, and
reading another bank's profile is refused.

A token's grant is found by the HTTP guard (``transports.BearerTokenGuard``), which leaves it in the request's
ASGI scope under ``GRANT_KEY``; the server copies it into a context variable around each tool call and resource
read (``granted``), where ``BankScope`` reads it. A bank outside the grant is reported exactly as a bank that does
not exist, so a scoped caller cannot tell the two apart.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from hindsight_core import BankProfile
from hindsight_core.access import READ, Grant

GRANT_KEY = "hindsight.grant"
"""Where the HTTP guard leaves the caller's ``Grant`` in the ASGI scope."""
NOTHING = Grant(None, READ, frozenset())
"""The grant of a request that should carry one and does not: no bank at all (fail closed)."""

_GRANT: contextvars.ContextVar[Grant | None] = contextvars.ContextVar("hindsight_mcp_grant", default=None)


def grant_of(request: Any) -> Grant | None:
    """The grant the HTTP guard attached to ``request`` (a Starlette request), or None (stdio, no guard)."""
    scope = getattr(request, "scope", None)
    found = scope.get(GRANT_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Grant) else None


@contextmanager
def granted(grant: Grant | None) -> Iterator[None]:
    """Within the block, ``BankScope`` checks banks against ``grant``."""
    reset = _GRANT.set(grant)
    try:
        yield
    finally:
        _GRANT.reset(reset)


def unknown_bank_message(bank_id: str) -> str:
    """What a caller hears about a bank it cannot reach: the same words as for a bank that does not exist
    (``Hindsight.bank``'s message)."""
    return f"no bank {bank_id!r} (hindsight stats lists the banks)"


class BankScope:
    """The banks one server may reach, and within them what the current request's token grants."""

    def __init__(self, fixed: str | None = None, *, tokens_required: bool = False) -> None:
        """``fixed``: the one bank this server serves, or None for every bank of the store. ``tokens_required``:
        every request must carry a grant (HTTP with tokens); one without reaches nothing."""
        self.fixed = fixed
        self.tokens_required = tokens_required

    def __repr__(self) -> str:
        return f"BankScope(fixed={self.fixed!r}, tokens_required={self.tokens_required})"

    def grant(self) -> Grant:
        """The running request's grant (everything on stdio or an open loopback server)."""
        found = _GRANT.get()
        if found is not None:
            return found
        return NOTHING if self.tokens_required else Grant.everything()

    def allows(self, bank_id: str) -> bool:
        """Whether ``bank_id`` may be read or written through this server (its fixed bank), whoever asks."""
        return self.fixed is None or bank_id == self.fixed

    def readable(self, bank_id: str) -> bool:
        """Whether the running request may read ``bank_id``."""
        return self.allows(bank_id) and self.grant().can_read(bank_id)

    def writable(self, bank_id: str) -> bool:
        """Whether the running request may change ``bank_id``."""
        return self.allows(bank_id) and self.grant().can_write(bank_id)

    def visible(self, profiles: Iterable[BankProfile]) -> list[BankProfile]:
        """The profiles the running request may see (another bank's id or name is not shown either)."""
        grant = self.grant()
        return [p for p in profiles if self.allows(p.id) and grant.can_read(p.id)]

    def refusal(self, bank_id: str) -> str:
        """Why ``bank_id`` cannot be reached here (only meaningful when ``allows`` is false)."""
        return f"this server serves bank {self.fixed!r} only; {bank_id!r} cannot be reached through it"
