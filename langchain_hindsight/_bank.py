"""Choosing the bank for a LangGraph node or agent middleware call.

Order: the runtime context (``Runtime.context``, attribute or key ``bank_id``), then
``config["configurable"]["bank_id"]``, then the static bank given when the node was built. No bank is a
clear error, never a silent skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hindsight_core import Bank, Hindsight, InvalidInputError
from hindsight_core.bank import BankOwner

BANK_ID_KEY = "bank_id"


class BankNotConfiguredError(InvalidInputError):
    """No bank id in the runtime context, the config's ``configurable``, or the node's static arguments."""


def hindsight_of(bank: Bank) -> BankOwner:
    """The ``Hindsight`` a bank belongs to (to open sibling banks by id)."""
    return bank.hindsight


def _context_bank_id(context: Any) -> str | None:
    if context is None:
        return None
    value = context.get(BANK_ID_KEY) if isinstance(context, Mapping) else getattr(context, BANK_ID_KEY, None)
    return str(value) if value else None


def dynamic_bank_id(runtime: Any, config: Mapping[str, Any] | None) -> str | None:
    """The bank id carried by the runtime context or the run config, if any."""
    found = _context_bank_id(getattr(runtime, "context", None))
    if found:
        return found
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get(BANK_ID_KEY)
    return str(value) if value else None


class BankSource:
    """A ``Hindsight`` (banks by id) or a fixed ``Bank``, plus an optional default bank id."""

    def __init__(self, memory: Hindsight | Bank, bank_id: str | None = None) -> None:
        self.hindsight: BankOwner
        if isinstance(memory, Bank):
            self.hindsight = hindsight_of(memory)
            self.default_id: str | None = bank_id or memory.id
        elif isinstance(memory, Hindsight):
            self.hindsight = memory
            self.default_id = bank_id
        else:
            raise TypeError(f"expected a hindsight_core Hindsight or Bank, got {type(memory).__name__}")

    def resolve(self, runtime: Any = None, config: Mapping[str, Any] | None = None) -> Bank:
        """The bank for this call; ``BankNotConfiguredError`` when no source names one."""
        bank_id = dynamic_bank_id(runtime, config) or self.default_id
        if not bank_id:
            raise BankNotConfiguredError(
                "no memory bank for this call: set `bank_id` in the runtime context "
                "(graph.invoke(..., context={'bank_id': ...})), in config['configurable']['bank_id'], "
                "or pass bank_id= (or a Bank) when building the node or middleware"
            )
        return self.hindsight.bank(bank_id)
