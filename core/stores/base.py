"""The storage seams: a graph store (source of truth) and a vector index (derived, rebuildable).

Every method takes the bank id first: no call can read or write outside its bank.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..errors import HindsightError, StoreError
from ..models import BankProfile, Document, DocumentStatus, Entity, LinkType, Memory, Network, OpinionEvent, TimeRange

# isort: split
from ..models import AuditEntry  # the audit trail's record (``AuditLog``)

# isort: split
from ..models import Job, JobStatus  # a second statement keeps the list above on one line

# The records the protocols pass in and out live in ``records``; they are imported from here as well.
from .records import (
    DocumentRewrite,
    Edge,
    OpinionUpdate,
    Owner,
    Released,
    Supersession,
    UnitBatch,
    VectorFilter,
    VectorMeta,
)
from .records import Mention as Mention

C = TypeVar("C", bound=type)

# Everything a store can raise that is not ours becomes a StoreError naming the store and the call.
_PASSTHROUGH = (HindsightError, KeyboardInterrupt, SystemExit, GeneratorExit)


def translate_errors(
    errors: tuple[type[BaseException], ...] | Callable[[], tuple[type[BaseException], ...]],
    describe: Callable[[Any], str],
) -> Callable[[C], C]:
    """Class decorator: public methods raise ``StoreError`` instead of the backend's own exception types.

    The methods a class inherits count too (a store assembled from one mixin per protocol is decorated once,
    where it is assembled); each is wrapped on the decorated class, the mixins stay as they are.

    ``errors`` are the backend's exception classes (``sqlite3.Error``; ``Exception`` for clients that raise
    unrelated types), or a function returning them (for drivers imported lazily); ``describe(self)`` names
    the store in the message.
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except _PASSTHROUGH:
                raise
            except BaseException as exc:
                if not isinstance(exc, errors() if callable(errors) else errors):
                    raise
                raise StoreError(f"{describe(self)}: {fn.__name__} failed: {type(exc).__name__}: {exc}") from exc

        return wrapper

    def decorate(cls: C) -> C:
        for name, member in public_methods(cls).items():
            setattr(cls, name, wrap(member))
        return cls

    return decorate


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """A class's public instance methods by name, inherited ones included (the most derived definition wins; no
    static or class methods, no nested classes): what a class decorator over a store's API wraps."""
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):  # object excluded
        members.update(vars(klass))
    return {name: member for name, member in members.items()
            if not name.startswith("_") and callable(member)
            and not isinstance(member, staticmethod | classmethod | type)}


@runtime_checkable
class JobQueue(Protocol):
    """Durable background jobs, claimed under an owner's lease (see ``Leases``)."""

    def enqueue_job(self, job: Job, *, document_id: str | None = None) -> None:
        """Durably queue a job. With ``document_id``, the same transaction makes that document pending on this
        job (its ``job_id``), so a deferred or resumed document and its job are never stored apart."""
        ...

    def claim_job(self, now: datetime, owner: str | None = None) -> Job | None:
        """Atomically take the oldest runnable job (queued, run_after <= now), mark it running under ``owner``
        (attempts + 1) and return it; two claimers never get the same job."""
        ...

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None,
                   result: dict[str, Any] | None = None) -> None:
        """Mark a job done, failed, or re-queued for ``retry_at``; its lease is released. ``result`` is what a
        finished job reports (``Job.result``: the facts job's counts of stored and rejected facts)."""
        ...

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        ...

    def page_jobs(self, bank_id: str, status: JobStatus | None = None, *, limit: int = 50,
                  offset: int = 0) -> list[Job]:
        """One page of a bank's jobs, optionally of one status: newest first (``created_at``, then id, both
        descending), ``limit`` of them from ``offset``."""
        ...

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        ...


@runtime_checkable
class Leases(Protocol):
    """Which processes are alive. Jobs, documents being extracted and vector marks name their owner; a
    process whose heartbeat stopped is dead and ``release_owners`` hands its work to a live one."""

    def register_owner(self, owner: Owner) -> None:
        """Record a live process (insert or refresh)."""
        ...

    def heartbeat(self, owner_id: str, at: datetime) -> bool:
        """Renew a lease; False when the owner row is gone (another process declared it dead)."""
        ...

    def remove_owner(self, owner_id: str) -> None:
        """Forget an owner that closed cleanly (its running jobs go back to the queue)."""
        ...

    def list_owners(self) -> list[Owner]:
        """Every registered owner."""
        ...

    def release_owners(self, dead: Sequence[str], reaper: str, now: datetime) -> Released:
        """Take back what dead owners held, in one transaction: their running jobs are queued again; documents
        they left pending or extracting (and pending documents whose job is gone) pass to ``reaper`` to be
        resumed (returned), unless their job is still queued; their vector marks pass to ``reaper``; their
        rows are removed. Work held by no owner at all (rows from before leases existed) counts as dead."""
        ...


@runtime_checkable
class VectorMarks(Protocol):
    """An outbox of unit ids whose vector may not match the graph (a write in progress, or one that failed
    half way). Whoever holds a mark makes the vector follow the graph, then clears it."""

    def mark_vectors(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> None:
        """Record that these units' vectors are about to change (committed before the index is touched)."""
        ...

    def clear_vector_marks(self, bank_id: str, ids: Sequence[str]) -> None:
        """The index now matches the graph for these ids."""
        ...

    def vector_marks(self, owner: str | None, limit: int = 10_000) -> list[tuple[str, str]]:
        """(bank, unit id) marks held by ``owner`` (None: marks held by nobody). A unit id of ``""`` means the
        whole bank's collection is to be dropped (the bank was deleted)."""
        ...


@runtime_checkable
class IntegrityChecks(Protocol):
    """The graph store's own invariants (``hindsight check``); the vector side is compared in the core."""

    def check_bank(self, bank_id: str) -> dict[str, list[str]]:
        """Problems by kind, each with the offending ids (empty dict: none). Kinds: ``dangling_link``,
        ``dangling_mention``, ``mention_count``, ``duplicate_entity``, ``orphan_entity``, ``keyword_stats``,
        ``dangling_opinion_event``."""
        ...

    def repair_bank(self, bank_id: str) -> dict[str, int]:
        """Fix what ``check_bank`` finds; how many of each kind were repaired."""
        ...


@runtime_checkable
class BankStore(Protocol):
    """Bank profiles."""

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

    def delete_bank(self, bank_id: str, owner: str | None = None) -> None:
        """Delete a bank and everything in it; mark its vector collection for dropping (under ``owner``)."""
        ...


@runtime_checkable
class DocumentStore(Protocol):
    """Raw documents: stored before extraction, the input a retain can always be redone from."""

    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document with its metadata; committed before extraction starts. Replacing
        keeps the first ``created_at`` of that id and takes the new ``updated_at``."""
        ...

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        ...

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None, *,
        revision: str | None = None, owner: str | None = None,
    ) -> bool:
        """Set a document's status: ``extracting`` under ``owner``; done or failed release the owner. With
        ``revision``, only if the document is still at that revision. Returns whether it was updated."""
        ...

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and by id prefix (matched literally), oldest first
        (``created_at``, then id)."""
        ...

    def page_documents(
        self, bank_id: str, status: DocumentStatus | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Document]:
        """One page of a bank's documents, optionally of one status: newest first (``created_at``, then id, both
        descending), ``limit`` of them from ``offset``. Browsing tools read a large bank this way."""
        ...

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        ...

    def forget_document(self, bank_id: str, document_id: str, owner: str | None = None, *,
                        also: Sequence[str] = (), jobs: Sequence[Job] = ()) -> list[str]:
        """Delete a document, every unit extracted from it and the units ``also`` names in one transaction, marking
        their vectors (under ``owner``) and queueing ``jobs``; returns the ids of the deleted units."""
        ...


@runtime_checkable
class UnitStore(Protocol):
    """Memory units (``Memory`` in the API, a fact before it is stored) with their links, mentions and
    stats: what retain commits and what recall reads back."""

    def add_units(self, bank_id: str, batch: UnitBatch, owner: str | None = None) -> dict[str, str]:
        """Commit one retain atomically: delete ``batch.replaces`` (their vectors marked for removal under
        ``owner``), upsert entities by normalised name, insert units, mentions, links whose both ends exist,
        and opinion events; clear the vector marks of the new units. Returns, per entity id of the batch, the
        name of the entity it was stored as (another writer's entity when one existed)."""
        ...

    def get_units(self, bank_id: str, ids: Sequence[str]) -> list[Memory]:
        """Units by id, in the order asked; unknown ids are skipped."""
        ...

    def unit_ids(self, bank_id: str) -> set[str]:
        """Every unit id of the bank (used to reconcile the vector index)."""
        ...

    def units_exist(self, bank_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are units of the bank: a vector hit is trusted only if its unit exists."""
        ...

    def units_of_document(self, bank_id: str, document_id: str) -> list[str]:
        """Ids of the units extracted from a document."""
        ...

    def adjacent_units(self, bank_id: str, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """For each unit of ``ids``, the units just before and just after it in its document (by position);
        None at a document's ends. Units without a document, or not in the bank, are absent."""
        ...

    def units_of_entity(self, bank_id: str, entity_id: str) -> list[str]:
        """Ids of the units that mention an entity."""
        ...

    def delete_units(self, bank_id: str, ids: Sequence[str], owner: str | None = None, *,
                     jobs: Sequence[Job] = (), documents: Mapping[str, DocumentRewrite] | None = None) -> int:
        """Delete units with their links, mentions and opinion history, mark their vectors for removal (under
        ``owner``), queue ``jobs`` and rewrite the ``documents`` (id -> the stored input with the deleted messages
        cut out, ``retain.redact``; their facts jobs' samples of rejected facts are dropped) in the same
        transaction; memories the deleted ones superseded are current again. Return how many existed. A document
        that no longer holds what its rewrite expected raises ``ConflictError`` and nothing is written."""
        ...

    def strip_citations(self, bank_id: str, ids: Sequence[str]) -> int:
        """Remove ``ids`` (memories that no longer exist) from every fact's citations in one transaction; returns
        how many facts changed (``hindsight check --repair``)."""
        ...

    def units_with_references(self, bank_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(id, metadata) of the bank's units whose metadata names other memories they rest on
        (``models.REFERENCE_KEYS``: facts' citations, observations' basis, opinions' evidence, corrections)."""
        ...

    def supersede_units(self, bank_id: str, items: Sequence[Supersession]) -> int:
        """Record supersessions between stored memories in one transaction (``batch.supersedes`` does the same
        inside ``add_units``); deleting a memory makes those it superseded current again. Returns how many."""
        ...

    def superseded_by_ids(self, bank_id: str, ids: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``ids`` that superseded earlier memories, their ids (what a question about the past wants)."""
        ...

    def update_unit(
        self, bank_id: str, unit_id: str, *, text: str | None = None, confidence: float | None = None
    ) -> None:
        """Change a unit's text and/or confidence in place (a text change marks its vector, owner None)."""
        ...

    def units_in_network(
        self, bank_id: str, network: Network, entity_ids: Sequence[str] | None = None, limit: int = 1000
    ) -> list[str]:
        """Ids of a network's units, optionally only those mentioning one of ``entity_ids``; newest first."""
        ...

    def page_units(
        self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None, limit: int = 50,
        offset: int = 0,
    ) -> list[str]:
        """Ids of one page of the bank's units, optionally of one network and/or mentioning one entity: newest
        stored first, ``limit`` of them from ``offset``. Browsing tools read a large bank this way."""
        ...

    def count_units(self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None) -> int:
        """How many units ``page_units`` pages through with the same filters."""
        ...

    def units_near_time(
        self, bank_id: str, when: datetime, window_s: float, limit: int, exclude: Iterable[str] = ()
    ) -> list[tuple[str, datetime]]:
        """Units whose occurrence starts within ``window_s`` of ``when``, nearest first."""
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

    def stats(self, bank_id: str) -> dict[str, Any]:
        """Counts of documents, units per network, entities, links, jobs."""
        ...


@runtime_checkable
class OpinionStore(Protocol):
    """Opinion confidence and its history, moved exactly once per piece of evidence."""

    def apply_opinion_update(
        self, bank_id: str, update: OpinionUpdate, owner: str | None = None
    ) -> OpinionEvent | None:
        """In one transaction: skip evidence already applied to this opinion; if any is new, write
        ``update.new_confidence`` (computed by ``hindsight_core.opinions.confidence``: the store computes nothing)
        provided the stored confidence is still ``update.read_confidence`` (else raise
        ``records.StaleConfidenceError`` and write nothing), rewrite the text if given (marking the vector under
        ``owner``), append the history event and record each (opinion, evidence) pair. Returns the event, or None
        when the opinion is gone or every piece of evidence was applied before."""
        ...

    def applied_evidence(self, bank_id: str, opinion_id: str) -> set[str]:
        """Ids of the evidence already applied to an opinion."""
        ...

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history."""
        ...

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        ...


@runtime_checkable
class EntityStore(Protocol):
    """Canonical entities (resolved at retain, upserted by normalised name in ``add_units``)."""

    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank."""
        ...

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, case-insensitively."""
        ...

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ...

    def get_entities(self, bank_id: str, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids (or other banks' entities) are skipped."""
        ...

    def page_entities(
        self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Entity]:
        """One page of the bank's entities, most mentioned first (then name, then id); with ``query``, only those
        whose normalised name contains ``normalise_name(query)``."""
        ...

    def related_entities(self, bank_id: str, entity_id: str, limit: int = 20) -> list[tuple[str, int]]:
        """The entities most often mentioned by the same units as ``entity_id``: (entity id, shared units), most
        shared first, ties by id; ``limit`` of them."""
        ...


@runtime_checkable
class SearchStore(Protocol):
    """The graph store's own retrieval: BM25 keyword search and the occurrence-time index."""

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


@runtime_checkable
class SpreadingActivation(Protocol):
    """Optional capability: a store that computes recall's spreading activation itself (a server store, in its
    own query language, one round trip per hop) instead of the reference hop-by-hop walk over ``neighbors``."""

    def spread_activation(
        self,
        bank_id: str,
        seeds: Sequence[tuple[str, float]],
        *,
        hops: int,
        decay: float,
        multipliers: dict[str, float],
        entity_fanout: int,
        k: int,
        default_multiplier: float = 0.5,
    ) -> list[tuple[str, float]]:
        """Bounded spreading activation ``A(v) = max A(u) * w * decay * mu(type)`` from ``seeds``; the ``k`` most
        activated units (seeds included), best first, ties by id."""
        ...


@runtime_checkable
class AuditLog(Protocol):
    """The audit trail: one entry per write or forget made through the public API, kept apart from the bank's
    data. Deleting a bank keeps its entries (the trail outlives the data it describes)."""

    def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Store entries (each under its own ``bank_id``); an entry whose (bank, id) is stored already is skipped,
        so appending the same entries twice (an import retried) changes nothing. Returns how many were new."""
        ...

    def audit_entries(
        self, bank_id: str | None = None, *, limit: int = 50, offset: int = 0, oldest_first: bool = False
    ) -> list[AuditEntry]:
        """One page of the trail of one bank (None: every bank, deleted ones included): newest first (``at``,
        then id), or oldest first, ``limit`` of them from ``offset``."""
        ...

    def count_audit(self, bank_id: str | None = None) -> int:
        """How many entries ``audit_entries`` pages through."""
        ...


@runtime_checkable
class GraphStore(
    BankStore, DocumentStore, UnitStore, OpinionStore, EntityStore, SearchStore, JobQueue, Leases, VectorMarks,
    IntegrityChecks, AuditLog, Protocol,
):
    """Source of truth: everything above in one store (SQLite embedded, Neo4j/Bolt for servers).

    Pipelines depend on the narrower protocols they use; the facade opens one ``GraphStore`` and hands it
    to each of them.
    """

    def close(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class Snapshots(Protocol):
    """A store whose reads can be pinned to one committed state (optional: export uses it where it exists)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Inside the block, this thread's reads see one committed state; writers elsewhere go on. No writes
        may be made by this thread inside it."""
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
        metadatas: Sequence[VectorMeta],
    ) -> None:
        """Add or replace vectors with what ``query`` filters on."""
        ...

    def query(
        self, bank_id: str, embedding: np.ndarray, k: int, filter: VectorFilter | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest units that pass ``filter``, as (id, cosine similarity), best first."""
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


@runtime_checkable
class ResettableIndex(Protocol):
    """Optional capability: an index that can discard everything it holds (a damaged embedded index is reset
    and rebuilt from the graph store at open)."""

    def reset(self) -> None:
        """Drop every collection and start empty."""
        ...


@runtime_checkable
class RebuildableIndex(Protocol):
    """Optional capability: rebuild a bank's vectors with another embedder beside the ones in use, then swap them in
    at once (``vectors/reembed.py``). Until ``finish_rebuild`` every other method sees the old collection; the
    rebuild survives a crash (``begin_rebuild`` with the same embedder resumes it) and never touches the old one."""

    def collection_embedder(self, bank_id: str) -> tuple[str, int] | None:
        """The embedder name and dimension the bank's collection in use records (None when it has none yet)."""
        ...

    def begin_rebuild(self, bank_id: str, embedder_name: str, dimension: int) -> set[str]:
        """Open the bank's pending collection for this embedder (resumed when one is there, else new: a pending one
        of another embedder is dropped) and return the ids it already holds."""
        ...

    def rebuild_upsert(
        self, bank_id: str, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[VectorMeta]
    ) -> None:
        """Write vectors to the pending collection (``begin_rebuild`` first)."""
        ...

    def rebuild_delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Remove vectors from the pending collection."""
        ...

    def rebuild_ids(self, bank_id: str) -> set[str]:
        """Every id in the pending collection."""
        ...

    def finish_rebuild(self, bank_id: str) -> None:
        """Make the pending collection the bank's collection in one atomic write, then drop the old one."""
        ...
