"""Which banks a server may reach: every bank of the store, or the one fixed with ``--bank``.

A fixed bank is enforced where requests arrive, not trusted to the client: its tools are registered without a
bank argument (``tools.bind_bank``), the server rejects any argument a tool does not declare
(``server.HindsightMCPServer.call_tool``), ``list_banks`` and the resource listing show only that bank, and
reading another bank's profile is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from hindsight_core import BankProfile


class BankScope:
    """The banks one server may reach."""

    def __init__(self, fixed: str | None = None) -> None:
        """``fixed``: the one bank this server serves, or None for every bank of the store."""
        self.fixed = fixed

    def __repr__(self) -> str:
        return f"BankScope(fixed={self.fixed!r})"

    def allows(self, bank_id: str) -> bool:
        """Whether ``bank_id`` may be read or written through this server."""
        return self.fixed is None or bank_id == self.fixed

    def visible(self, profiles: Iterable[BankProfile]) -> list[BankProfile]:
        """The profiles a client of this server may see (another bank's id or name is not shown either)."""
        return [p for p in profiles if self.allows(p.id)]

    def refusal(self, bank_id: str) -> str:
        """Why ``bank_id`` cannot be reached here (only meaningful when ``allows`` is false)."""
        return f"this server serves bank {self.fixed!r} only; {bank_id!r} cannot be reached through it"
