"""What is embedded and stored with each unit's vector, and the keyword channel's context column."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .embedding import Embedder
from .models import Memory
from .stores.base import VectorIndex


def embedding_text(memory: Memory, with_time: bool = True) -> str:
    """The text that is embedded: the unit text plus a human-readable date when known."""
    return timed_text(memory.text, memory.occurred_start or memory.mentioned_at, with_time)


def timed_text(text: str, when: datetime | None, with_time: bool = True) -> str:
    """``text`` with a human-readable date appended (what ``embedding_text`` embeds)."""
    if not with_time or when is None:
        return text
    return f"{text} ({when.day} {when:%B %Y})"


def vector_metadata(memory: Memory) -> dict[str, Any]:
    """Filterable metadata stored with each vector (network and occurrence interval as epoch seconds)."""
    meta: dict[str, Any] = {"network": memory.network.value}
    start = memory.occurred_start or memory.mentioned_at
    end = memory.occurred_end or start
    if start is not None and end is not None:
        meta["t0"] = start.timestamp()
        meta["t1"] = end.timestamp()
    return meta


def index_units(index: VectorIndex, embedder: Embedder, bank_id: str, units: list[Memory], with_time: bool) -> None:
    """(Re-)embed units and write their vectors: used by reconcile."""
    if units:
        vectors = embedder.embed([embedding_text(u, with_time) for u in units])
        index.upsert(bank_id, [u.id for u in units], vectors, [vector_metadata(u) for u in units])


def search_contexts(units: list[Memory]) -> dict[str, str]:
    """Each unit's neighbours in document order (previous and next), for the keyword channel's context column."""
    out: dict[str, str] = {}
    for i, unit in enumerate(units):
        parts = [units[j].text for j in (i - 1, i + 1) if 0 <= j < len(units)]
        out[unit.id] = " ".join(parts)
    return out
