"""Which Chroma collection holds a bank's vectors: the generation record that lets a re-embed swap collections at once.

A bank starts in the collection ``collection_name(bank_id)`` (generation 0, what every older store has). A
re-embed (``vectors/reembed.py``) builds the vectors of another embedder in a new collection beside it and then
makes that one the bank's collection. Which one is in use is recorded in one row of a small registry collection
(``REGISTRY``, one record per bank that was ever re-embedded, keyed by the bank's base collection name), so the
swap is a single upsert: Chroma writes a record atomically (one SQLite transaction embedded, one log entry on a
server), so a reader sees the old collection or the new one, never a mix. The record holds:

- ``active``: the collection in use;
- ``pending``: the collection a re-embed is filling ("" when none), kept across a crash so a rerun resumes it;
- ``retired``: the collection the last swap replaced, until it is deleted ("" when gone); a process that died
  between the swap and the delete leaves it for the next re-embed (or ``drop_bank``) to delete.

A bank without a record uses its base collection. Reads never create the registry (a read must not write under the
embedded index's shared lock).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

REGISTRY = "hs_registry"
"""The registry collection's name (no bank's collection can have it: those are ``hs_`` + 40 hex digits)."""

_PLACEHOLDER = [[1.0]]  # Chroma stores a vector with every record; the registry's records carry no meaning in it


@dataclass(frozen=True)
class Generation:
    """A bank's collections: the one in use, the one being built, the one replaced and not yet deleted."""

    active: str
    pending: str = ""
    retired: str = ""

    def as_metadata(self) -> dict[str, str]:
        """The registry record's metadata."""
        return {"active": self.active, "pending": self.pending, "retired": self.retired}


def new_collection_name(base: str) -> str:
    """A fresh collection name for a bank whose base collection is ``base`` (a re-embed's target)."""
    return f"{base}_{uuid.uuid4().hex[:8]}"


def _registry(client: Any, *, create: bool) -> Any | None:
    if create:
        return client.get_or_create_collection(REGISTRY, metadata={"kind": "hindsight bank generations"},
                                               embedding_function=None)
    try:
        return client.get_collection(REGISTRY, embedding_function=None)
    except Exception as exc:  # NotFoundError, or ValueError on older clients: no bank was ever re-embedded
        if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
            return None
        raise


def read_generation(client: Any, base: str) -> Generation:
    """The bank's record, or its base collection alone when it has none."""
    registry = _registry(client, create=False)
    if registry is None:
        return Generation(active=base)
    got = registry.get(ids=[base], include=["metadatas"])
    if not got["ids"]:
        return Generation(active=base)
    meta = (got["metadatas"] or [{}])[0] or {}
    return Generation(active=str(meta.get("active") or base), pending=str(meta.get("pending") or ""),
                      retired=str(meta.get("retired") or ""))


def write_generation(client: Any, base: str, generation: Generation) -> None:
    """Record the bank's collections in one upsert (the atomic step of a swap)."""
    registry = _registry(client, create=True)
    assert registry is not None  # created when missing
    registry.upsert(ids=[base], embeddings=_PLACEHOLDER, metadatas=[generation.as_metadata()])


def forget_generation(client: Any, base: str) -> None:
    """Remove the bank's record (its collections are dropped by the caller)."""
    registry = _registry(client, create=False)
    if registry is not None:
        registry.delete(ids=[base])


def delete_collection(client: Any, name: str) -> None:
    """Delete a collection; one that is already gone is no error."""
    if not name:
        return
    try:
        client.delete_collection(name)
    except Exception as exc:  # NotFoundError, or ValueError on older clients
        if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
            return
        raise


def without_retired(generation: Generation) -> Generation:
    """The record once its retired collection is deleted."""
    return replace(generation, retired="")
