"""Hindsight Memory: long-term memory for LLM agents that retains, recalls and reflects.

Public entry point::

    from hindsight_core import Hindsight
    hs = Hindsight.open("./memory")
    bank = hs.bank("support-bot")

Names are imported lazily so that ``import hindsight_core`` stays fast (models and stores load on use).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Hindsight": ".hindsight",
    "Bank": ".bank",
    "Settings": ".config",
    "Disposition": ".models",
    "Memory": ".models",
    "Entity": ".models",
    "Link": ".models",
    "LinkType": ".models",
    "Network": ".models",
    "EntityType": ".models",
    "Message": ".models",
    "TimeRange": ".models",
    "BankProfile": ".models",
    "Document": ".models",
    "RetainResult": ".models",
    "Recall": ".models",
    "RecallTrace": ".models",
    "Reflection": ".models",
    "OpinionEvent": ".models",
    "AuditEntry": ".models",
    "HindsightError": ".errors",
    "InvalidInputError": ".errors",
    "BankNotFoundError": ".errors",
    "ExtractionError": ".errors",
    "EmptyExtractionError": ".errors",
    "LLMError": ".errors",
    "LLMUnavailableError": ".errors",
    "EmbedderMismatchError": ".errors",
    "EmbedderUnavailableError": ".errors",
    "EmbeddingError": ".errors",
    "StoreError": ".errors",
    "StoreLockedError": ".errors",
    "ConflictError": ".errors",
    "DocumentNotFoundError": ".errors",
    "TooManyMessagesError": ".errors",
}

__all__ = [
    "AuditEntry",
    "Bank",
    "BankNotFoundError",
    "BankProfile",
    "ConflictError",
    "Disposition",
    "Document",
    "DocumentNotFoundError",
    "EmbedderMismatchError",
    "EmbedderUnavailableError",
    "EmbeddingError",
    "EmptyExtractionError",
    "Entity",
    "EntityType",
    "ExtractionError",
    "Hindsight",
    "HindsightError",
    "InvalidInputError",
    "LLMError",
    "LLMUnavailableError",
    "Link",
    "LinkType",
    "Memory",
    "Message",
    "Network",
    "OpinionEvent",
    "Recall",
    "RecallTrace",
    "Reflection",
    "RetainResult",
    "Settings",
    "StoreError",
    "StoreLockedError",
    "TimeRange",
    "TooManyMessagesError",
]

if TYPE_CHECKING:  # pragma: no cover
    from .bank import Bank
    from .config import Settings
    from .errors import (
        BankNotFoundError,
        ConflictError,
        DocumentNotFoundError,
        EmbedderMismatchError,
        EmbedderUnavailableError,
        EmbeddingError,
        EmptyExtractionError,
        ExtractionError,
        HindsightError,
        InvalidInputError,
        LLMError,
        LLMUnavailableError,
        StoreError,
        StoreLockedError,
        TooManyMessagesError,
    )
    from .hindsight import Hindsight
    from .models import (
        AuditEntry,
        BankProfile,
        Disposition,
        Document,
        Entity,
        EntityType,
        Link,
        LinkType,
        Memory,
        Message,
        Network,
        OpinionEvent,
        Recall,
        RecallTrace,
        Reflection,
        RetainResult,
        TimeRange,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hindsight_core' has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
