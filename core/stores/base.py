"""The storage seams: a graph store (source of truth) and a vector index (derived, rebuildable).

Every method takes the bank id first: no call can read or write outside its bank.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..models import (
    BankProfile,
    Document,
    DocumentStatus,
    Entity,
    Job,
    Link,
    LinkType,
    Memory,
    Network,
    OpinionEvent,
    TimeRange,
)


@dataclass(frozen=True)
class Mention:
    """A unit mentions a canonical entity."""

    unit_id: str
    entity_id: str


@dataclass
class UnitBatch:
    """Everything one retain writes to the graph store, committed in one transaction."""

    units: list[Memory] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    # Text of neighbouring units in the same document, searched by the keyword channel at lower weight:
    # a reply ("A sunrise, by the lake") is found through the question it answers.
    contexts: dict[str, str] = field(default_factory=dict)
    new_entities: list[Entity] = field(default_factory=list)
    updated_entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    """A traversable edge returned by ``GraphStore.neighbors`` (unit links and entity hops alike)."""

    source_id: str
    target_id: str
    type: str  # a LinkType value, or "entity"
    weight: float


@runtime_checkable
class GraphStore(Protocol):
    """Source of truth: banks, raw documents, units, entities, links, background jobs."""

    # banks
    def create_bank(self, profile: BankProfile) -> BankProfile:
        """Create a bank; return the existing profile unchanged if it already exists."""
        ...

    def get_bank(self, bank_id: str) -> BankProfile | None:
        """The bank's profile, or None."""
        ...

    def update_bank(self, profile: BankProfile) -> None:
        """Replace the bank's name, background and disposition."""
        ...

    def list_banks(self) -> list[BankProfile]:
        """All banks, oldest first."""
        ...

    def delete_bank(self, bank_id: str) -> None:
        """Delete a bank and everything in it."""
        ...

    # documents
    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document with its metadata; committed before extraction starts. Replacing
        keeps the first ``created_at`` of that id and takes the new ``updated_at``."""
        ...

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        ...

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None
    ) -> None:
        """Mark a document extracted or failed."""
        ...

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and by id prefix (matched literally), oldest first
        (``created_at``, then id)."""
        ...

    # units
    def add_units(self, bank_id: str, batch: UnitBatch) -> None:
        """Commit units, entities, mentions and links of one retain atomically."""
        ...

    def get_units(self, bank_id: str, ids: Sequence[str]) -> list[Memory]:
        """Units by id, in the order asked; unknown ids are skipped."""
        ...

    def unit_ids(self, bank_id: str) -> set[str]:
        """Every unit id of the bank (used to reconcile the vector index)."""
        ...

    def units_of_document(self, bank_id: str, document_id: str) -> list[str]:
        """Ids of the units extracted from a document."""
        ...

    def units_of_entity(self, bank_id: str, entity_id: str) -> list[str]:
        """Ids of the units that mention an entity."""
        ...

    def delete_units(self, bank_id: str, ids: Sequence[str]) -> int:
        """Delete units with their links and mentions; return how many existed."""
        ...

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        ...

    def update_unit(
        self, bank_id: str, unit_id: str, *, text: str | None = None, confidence: float | None = None
    ) -> None:
        """Change a unit's text and/or confidence in place."""
        ...

    def units_in_network(
        self, bank_id: str, network: Network, entity_ids: Sequence[str] | None = None, limit: int = 1000
    ) -> list[str]:
        """Ids of a network's units, optionally only those mentioning one of ``entity_ids``; newest first."""
        ...

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history."""
        ...

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        ...

    def units_near_time(
        self, bank_id: str, when: datetime, window_s: float, limit: int, exclude: Iterable[str] = ()
    ) -> list[tuple[str, datetime]]:
        """Units whose occurrence starts within ``window_s`` of ``when``, nearest first."""
        ...

    # entities
    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank."""
        ...

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, case-insensitively."""
        ...

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ...

    # retrieval
    def keyword_search(
        self,
        bank_id: str,
        query: str,
        limit: int,
        networks: Sequence[Network] | None = None,
        time_range: TimeRange | None = None,
        context_weight: float = 0.5,
    ) -> list[tuple[str, float]]:
        """Full-text search over unit text and (weighted) search context; (unit id, score) best first."""
        ...

    def temporal_search(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """Units whose occurrence interval overlaps ``time_range``."""
        ...

    def neighbors(
        self,
        bank_id: str,
        unit_ids: Sequence[str],
        link_types: Sequence[LinkType] | None = None,
        entity_fanout: int = 50,
    ) -> list[Edge]:
        """Outgoing edges of the given units: stored links plus entity hops (unit -> entity -> unit).

        Entity hops skip entities mentioned by more than ``entity_fanout`` units so that very common
        entities do not flood traversal.
        """
        ...

    # background jobs
    def enqueue_job(self, job: Job) -> None:
        """Durably queue a background job."""
        ...

    def claim_job(self, now: datetime) -> Job | None:
        """Atomically take the oldest runnable job (status queued, run_after <= now) and mark it running."""
        ...

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None) -> None:
        """Mark a job done, failed, or re-queued for ``retry_at``."""
        ...

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        ...

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        ...

    def requeue_running_jobs(self) -> int:
        """Put jobs left running by a dead process back in the queue."""
        ...

    def stats(self, bank_id: str) -> dict[str, Any]:
        """Counts of documents, units per network, entities, links, jobs."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Per-bank nearest-neighbour index over unit embeddings (cosine)."""

    def ensure_collection(self, bank_id: str, embedder_name: str, dimension: int) -> None:
        """Create the bank's collection or check that it was built with the same embedder."""
        ...

    def upsert(
        self,
        bank_id: str,
        ids: Sequence[str],
        embeddings: np.ndarray,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """Add or replace vectors."""
        ...

    def query(
        self, bank_id: str, embedding: np.ndarray, k: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest units as (id, cosine similarity), best first."""
        ...

    def query_many(self, bank_id: str, embeddings: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """``query`` for each row of ``embeddings`` in one round trip."""
        ...

    def get_embeddings(self, bank_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent)."""
        ...

    def ids(self, bank_id: str) -> set[str]:
        """Every id in the bank's collection."""
        ...

    def delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Remove vectors."""
        ...

    def drop_bank(self, bank_id: str) -> None:
        """Remove the bank's collection."""
        ...

    def count(self, bank_id: str) -> int:
        """Number of vectors in the bank's collection."""
        ...
