"""The plain records the store protocols (``base``) pass in and out: a retain's batch, leases, opinion updates,
vector metadata and filters, traversal edges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..models import Entity, Job, Link, Memory, Network, OpinionEvent, TimeRange


@dataclass(frozen=True)
class Mention:
    """A unit mentions a canonical entity, with the type this mention is evidence for and how strong that
    evidence is (``weight``: see ``extract.base.ExtractedEntity.evidence``). A mention without a type (a restored
    bank's) counts for the entity's type as it was when the mention was stored, with weight 1."""

    unit_id: str
    entity_id: str
    type: str | None = None
    weight: float = 1.0


def voted_type(votes: Mapping[str, float], current: str) -> str:
    """An entity's type from its mentions' type evidence (type -> summed weight): the type most weight supports.

    OTHER is no evidence: it wins only when nothing else has weight. A tie keeps ``current`` when it is among the
    tied, else takes PERSON (chat names people most), else the first in alphabetical order, so that every store
    decides alike.
    """
    weighted = {t: w for t, w in votes.items() if t and t != "OTHER" and w > 0}
    if not weighted:
        return current
    best = max(weighted.values())
    tied = sorted(t for t, w in weighted.items() if best - w < 1e-9)
    if current in tied:
        return current
    return "PERSON" if "PERSON" in tied else tied[0]


@dataclass(frozen=True)
class DocumentRewrite:
    """New content for a stored document, written only while it still holds ``expected`` (what the writer read):
    otherwise the whole write conflicts (``ConflictError``) and changes nothing."""

    expected: str
    content: str


@dataclass(frozen=True)
class Supersession:
    """A later memory supersedes an earlier one about the same subject and attribute (a move, a new job, a
    correction). Nothing is deleted: the earlier memory keeps its text and gets ``superseded_by`` (``new_id``) and
    ``valid_until`` (when the later one was said); ``how`` records who decided and on what evidence (``by``: rule,
    model or correction, plus the cue or the corrector). A store applies it only when both memories exist in the
    bank and the earlier one is not superseded already (the first supersession stands)."""

    old_id: str
    new_id: str
    valid_until: datetime
    how: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class UnitBatch:
    """Everything one retain writes to the graph store, committed in one transaction.

    ``replaces`` are units the batch supersedes (a re-retained document's previous memories): they are
    deleted in the same transaction, so readers see either the old memories or the new ones, never neither.
    Entities are upserted by (bank, normalised name): an entity another writer created meanwhile is reused
    (the mentions follow it), and mention counts are recounted inside the transaction.
    """

    units: list[Memory] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    # Text of neighbouring units in the same document, searched by the keyword channel at lower weight:
    # a reply ("A sunrise, by the lake") is found through the question it answers.
    contexts: dict[str, str] = field(default_factory=dict)
    new_entities: list[Entity] = field(default_factory=list)
    updated_entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    replaces: list[str] = field(default_factory=list)
    # History events written with the units (an opinion's "formed" step commits with the opinion itself).
    opinion_events: list[OpinionEvent] = field(default_factory=list)
    # The stored document the units come from, at the revision the retain read: the commit checks it (else
    # ``ConflictError``: a newer retain of that document owns it) and marks the document done in the same
    # transaction. None for units of no stored document (opinions, observations).
    document_id: str | None = None
    revision: str | None = None
    # Jobs queued in the same transaction: the raw messages of ``retain(extract=True)`` commit with the job that
    # adds the LLM's facts, so no crash can leave them stored without it.
    jobs: list[Job] = field(default_factory=list)
    # Earlier memories the batch's units supersede, recorded in the same transaction (see ``Supersession``).
    supersedes: list[Supersession] = field(default_factory=list)
    # (held fact id, raw message ids): a new fact that restated a held one adds its citations to it instead of being
    # stored (``retain.restated``); a held fact that is gone meanwhile gains nothing.
    citations: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass(frozen=True)
class Owner:
    """A live process holding leases on jobs, documents and vector marks (renewed by its heartbeat)."""

    id: str
    host: str  # hostname, boot id and pid namespace: a pid is only meaningful on the same host
    pid: int
    started_at: datetime
    heartbeat_at: datetime


@dataclass
class Released:
    """What ``release_owners`` took back from dead processes."""

    jobs: int = 0  # running jobs put back in the queue
    documents: list[tuple[str, str]] = field(default_factory=list)  # (bank, document) now held by the reaper
    vector_marks: int = 0  # vector marks handed to the reaper
    owners: int = 0  # owner rows removed


@dataclass(frozen=True)
class OpinionUpdate:
    """One assessed piece of evidence moving an opinion: applied at most once per (opinion, evidence id).

    The numbers are computed by ``hindsight_core.opinions.confidence``; a store computes nothing. It writes
    ``new_confidence`` only while the opinion's stored confidence is still ``read_confidence`` (what the caller
    computed from; None for an opinion stored without one), and raises ``StaleConfidenceError`` otherwise.
    ``old_confidence`` is the value the move started from, recorded in the history event."""

    opinion_id: str
    label: str
    read_confidence: float | None
    old_confidence: float
    new_confidence: float
    evidence: tuple[str, ...]
    rationale: str | None = None
    new_text: str | None = None  # a contradiction may rewrite the opinion
    at: datetime | None = None


class StaleConfidenceError(Exception):
    """An ``OpinionUpdate`` was computed from a confidence the opinion no longer has (another writer moved it):
    nothing was written; read the opinion again and compute the move again."""


@dataclass(frozen=True)
class VectorMeta:
    """What an index keeps beside a unit's vector to filter on: its network and occurrence interval."""

    network: Network | None = None
    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True)
class VectorFilter:
    """Which vectors a query may return; each index translates it into its own filter language.

    ``networks``: units of these networks only. ``time_range``: units whose occurrence interval overlaps it
    (units without one never match). ``ids``: only these units. Empty fields do not filter.
    """

    networks: tuple[Network, ...] | None = None
    time_range: TimeRange | None = None
    ids: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        networks: Sequence[Network | str] | None = None,
        time_range: TimeRange | None = None,
        ids: Sequence[str] | None = None,
    ) -> VectorFilter | None:
        """A filter from optional parts, or None when none of them filters anything."""
        if not networks and time_range is None and ids is None:
            return None
        return cls(
            networks=tuple(Network(n) for n in networks) if networks else None,
            time_range=time_range,
            ids=tuple(ids) if ids is not None else None,
        )


@dataclass(frozen=True)
class Edge:
    """A traversable edge returned by ``GraphStore.neighbors`` (unit links and entity hops alike)."""

    source_id: str
    target_id: str
    type: str  # a LinkType value, or "entity"
    weight: float
