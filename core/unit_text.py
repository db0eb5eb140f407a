"""What is embedded and stored with each unit's vector, and the keyword channel's context column."""

from __future__ import annotations

from datetime import datetime

from .embedding import Embedder
from .models import Memory
from .stores.base import VectorIndex, VectorMeta


def embedding_text(memory: Memory, with_time: bool = True) -> str:
    """The text that is embedded: the unit text plus a human-readable date when known."""
    return timed_text(memory.text, memory.occurred_start or memory.mentioned_at, with_time)


def timed_text(text: str, when: datetime | None, with_time: bool = True) -> str:
    """``text`` with a human-readable date appended (what ``embedding_text`` embeds)."""
    if not with_time or when is None:
        return text
    return f"{text} ({when.day} {when:%B %Y})"


def vector_metadata(memory: Memory) -> VectorMeta:
    """What the index filters a unit's vector on: its network and occurrence interval (else when it was said)."""
    start = memory.occurred_start or memory.mentioned_at
    return VectorMeta(network=memory.network, start=start, end=memory.occurred_end or start)


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
