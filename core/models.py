"""Public data model: memory units, entities, links, banks, documents and recall results.

These pydantic models are the edge of the library: stores return them, pipelines produce them and the
framework adapters translate them. They carry no behaviour beyond validation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator


def utcnow() -> datetime:
    """Current time as an aware UTC datetime (all stored times are aware UTC)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime; naive values are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Network(StrEnum):
    """The four memory networks of the paper (section 3)."""

    WORLD = "world"
    EXPERIENCE = "experience"
    OPINION = "opinion"
    OBSERVATION = "observation"


class EntityType(StrEnum):
    """Coarse entity types shared by the LLM extractor and the NER fallback."""

    PERSON = "PERSON"
    ORGANIZATION = "ORGANIZATION"
    LOCATION = "LOCATION"
    PRODUCT = "PRODUCT"
    CONCEPT = "CONCEPT"
    OTHER = "OTHER"


class LinkType(StrEnum):
    """Kinds of unit-to-unit links. Entity links go through entity nodes and are not stored here."""

    TEMPORAL = "temporal"
    SEMANTIC = "semantic"
    CAUSES = "causes"
    CAUSED_BY = "caused_by"
    ENABLES = "enables"
    PREVENTS = "prevents"


CAUSAL_LINK_TYPES: frozenset[LinkType] = frozenset(
    {LinkType.CAUSES, LinkType.CAUSED_BY, LinkType.ENABLES, LinkType.PREVENTS}
)


class Disposition(BaseModel):
    """Behavioural profile that shapes reflect (paper 5.2): three traits in 1..5 and a bias in [0, 1]."""

    model_config = ConfigDict(frozen=True)

    skepticism: int = Field(3, ge=1, le=5, description="1 trusting .. 5 demands strong evidence")
    literalism: int = Field(3, ge=1, le=5, description="1 reads between the lines .. 5 takes words literally")
    empathy: int = Field(3, ge=1, le=5, description="1 detached .. 5 weighs feelings strongly")
    bias: float = Field(0.5, ge=0.0, le=1.0, description="how strongly the disposition shapes judgments")


class TimeRange(BaseModel):
    """A closed time interval; either end may be open (None)."""

    model_config = ConfigDict(frozen=True)

    start: datetime | None = None
    end: datetime | None = None

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise ValueError(f"time range starts after it ends: {self.start} > {self.end}")
        return self


class Message(BaseModel):
    """One conversational message as accepted by retain (``speaker``/``role``, ``text``/``content``)."""

    model_config = ConfigDict(extra="ignore")

    text: str
    speaker: str | None = None
    id: str | None = None
    timestamp: datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "text" not in data and "content" in data:
                data["text"] = data.pop("content")
            if "speaker" not in data and "role" in data:
                data["speaker"] = data.pop("role")
            if "id" not in data and "dia_id" in data:
                data["id"] = data.pop("dia_id")
            if data.get("id") is not None:
                data["id"] = str(data["id"])
        return data

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None


FACT_CITES_KEY = "fact_of"
FACT_LENT_KEY = "fact_lent"
"""Metadata key: the citations a held fact gained from facts of later retains that restated it (a subset of
``FACT_CITES_KEY``). The fact does not rest on them: forgetting one only takes the citation back."""
SUPERSEDED_BY_KEY = "superseded_by"
"""Metadata key: the id of the later memory that supersedes this one (``Memory.superseded_by``)."""
VALID_UNTIL_KEY = "valid_until"
"""Metadata key: when this memory stopped being current, as an ISO time (``Memory.valid_until``)."""
REFERENCE_KEYS = (FACT_CITES_KEY, "facts", "correction", "based_on", "against")
"""Metadata keys that name other memories a memory rests on: a fact's citations, an observation's basis, a
correction's original, an opinion's evidence (forgetting follows them)."""
SUPERSESSION_KEY = "supersession"
"""Metadata key: how the supersession was decided (``rule``, ``model``, ``correction``) and its evidence."""
"""Metadata key of an LLM fact: the ids of the raw message memories it cites (``Memory.cites``)."""


class Memory(BaseModel):
    """A memory unit: one narrative fact (or one raw message) in one network of one bank."""

    id: str
    bank_id: str
    text: str
    network: Network = Network.WORLD
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="opinions only")
    entities: list[str] = Field(default_factory=list, description="canonical entity names")
    sources: list[str] = Field(default_factory=list, description="ids of the messages it came from")
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    score: float | None = Field(None, description="fused recall score, set on recall results only")

    @computed_field  # type: ignore[prop-decorator]  # pydantic documents this stacking; mypy cannot type it
    @property
    def superseded_by(self) -> str | None:
        """The id of the later memory that supersedes this one (a move, a new job, a correction), or None while it
        is current. A superseded memory keeps its text: it is history, never deleted (``valid_until`` says until
        when it held)."""
        value = self.metadata.get(SUPERSEDED_BY_KEY)
        return str(value) if value else None

    @computed_field  # type: ignore[prop-decorator]  # pydantic documents this stacking; mypy cannot type it
    @property
    def valid_until(self) -> datetime | None:
        """When this memory stopped being current: the time the superseding memory was said (None: current)."""
        value = self.metadata.get(VALID_UNTIL_KEY)
        if not value:
            return None
        try:
            when = datetime.fromisoformat(str(value))
        except ValueError:
            return None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)

    def current_at(self, when: datetime | None) -> bool:
        """Whether this memory was current at ``when`` (now when None): not superseded, or superseded later."""
        until = self.valid_until
        if until is None or self.superseded_by is None:
            return True
        return when is not None and when < until

    @property
    def cites(self) -> list[str] | None:
        """For a fact the LLM wrote beside the raw messages (``retain(extract=True)``): the ids of the raw message
        memories it cites; None for every other memory (a raw message, an opinion, an observation)."""
        value = self.metadata.get(FACT_CITES_KEY)
        return [str(v) for v in value] if isinstance(value, list) else None

    def provenance(self) -> dict[str, Any]:
        """Flat, JSON-friendly fields for framework documents and nodes: id, network, occurred_start/end and
        mentioned_at as ISO strings, confidence, entities, sources, document_id, score."""
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value is not None else None

        return {
            "id": self.id, "network": self.network.value, "occurred_start": iso(self.occurred_start),
            "occurred_end": iso(self.occurred_end), "mentioned_at": iso(self.mentioned_at),
            "confidence": self.confidence, "entities": list(self.entities), "sources": list(self.sources),
            "document_id": self.document_id, "score": self.score,
        }


class Entity(BaseModel):
    """A canonical entity of a bank, resolved from its mentions."""

    id: str
    bank_id: str
    name: str
    type: EntityType = EntityType.OTHER
    aliases: list[str] = Field(default_factory=list)
    mention_count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class Link(BaseModel):
    """A weighted, directed link between two memory units of one bank."""

    source_id: str
    target_id: str
    type: LinkType
    weight: float = Field(1.0, ge=0.0, le=1.0)


class BankProfile(BaseModel):
    """A memory bank: its name, first-person background and disposition."""

    id: str
    name: str
    background: str = ""
    disposition: Disposition = Field(default_factory=Disposition)
    created_at: datetime = Field(default_factory=utcnow)


class DocumentStatus(StrEnum):
    """Lifecycle of a raw document: stored first (pending), extracted by one process, then done or failed.

    A document left ``pending`` or ``extracting`` by a process that died is resumed by the next process that
    opens the store (see ``Hindsight.recover``).
    """

    PENDING = "pending"
    EXTRACTING = "extracting"
    DONE = "done"
    FAILED = "failed"


class DocumentKind(StrEnum):
    """What a raw document was given as, so reprocessing reads it back the same way."""

    TEXT = "text"
    MESSAGES = "messages"


class Document(BaseModel):
    """A raw retained input, stored before extraction so nothing is lost when a model fails."""

    id: str
    bank_id: str
    content: str = Field(description="the raw input as JSON (messages) or plain text")
    context: str | None = None
    timestamp: datetime | None = None
    status: DocumentStatus = DocumentStatus.PENDING
    error: str | None = None
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="caller's JSON-serialisable data kept with the raw input (not on memories)"
    )
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow, description="last time this document id was (re)stored")
    kind: DocumentKind | None = Field(
        None, description="text or messages (None: stored by a version that did not record it, or a value)"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="how it was retained (extract, background, metadata): used to resume it"
    )
    owner: str | None = Field(None, description="the process extracting it, while pending or extracting")
    job_id: str | None = Field(None, description="the background job that extracts it, when deferred or resumed")
    revision: str | None = Field(
        None, description="changes whenever the content is stored again: a retain commits only onto its own revision"
    )


class JobStatus(StrEnum):
    """Lifecycle of a durable background job."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Job(BaseModel):
    """A durable unit of background work (observations, opinion reinforcement, ...)."""

    id: str
    bank_id: str
    kind: str
    payload: dict[str, Any] = Field(default_factory=dict)
    status: JobStatus = JobStatus.QUEUED
    attempts: int = 0
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    run_after: datetime = Field(default_factory=utcnow)
    owner: str | None = Field(None, description="the process whose lease holds it while running")
    result: dict[str, Any] | None = Field(
        None, description="what a finished job reports (the facts job: facts stored, rejected per reason, a sample "
                          "of the rejected facts)")
    finished_at: datetime | None = Field(
        None, description="when it finished: done, or failed for good (None while queued or running, and for a job "
                          "that finished before stores recorded it)")


class OpinionEvent(BaseModel):
    """One step in an opinion's history: formation, or a confidence change caused by new evidence."""

    opinion_id: str
    at: datetime = Field(default_factory=utcnow)
    label: str = Field(description="formed, reinforce, weaken, contradict or neutral")
    old_confidence: float | None = None
    new_confidence: float
    evidence: list[str] = Field(default_factory=list, description="ids of the memories that caused it")
    old_text: str | None = None
    new_text: str | None = None
    rationale: str | None = None


class Reflection(BaseModel):
    """The result of reflect: an answer grounded in recalled memories, and the opinions it formed."""

    query: str
    answer: str
    known: bool = Field(description="False when memory held nothing that answers the query")
    based_on: list[str] = Field(default_factory=list, description="ids of the recalled memories relied on, in "
                                "the order the answer cites them, each once")
    against: list[str] = Field(default_factory=list, description="ids of recalled memories cited against the answer")
    stance: Literal["yes", "no", "unsure"] | None = Field(
        default=None, description="the judgment on a yes/no question (None when memory held nothing)")
    citations_dropped: int = Field(default=0, description="cited numbers that named no recalled memory (ignored)")
    verdicts: dict[str, Literal["yes", "no", "neither"]] = Field(
        default_factory=dict, description="for a yes/no question: each judged memory's id and where it points; the "
        "stance and its confidence are computed from them and the disposition")
    confidence: float | None = Field(
        default=None, description="for a yes/no question: the confidence of the stance, computed from the evidence")
    opinions: list[Memory] = Field(default_factory=list, description="opinions formed and stored")
    memories: list[Memory] = Field(default_factory=list, description="what recall returned")
    disposition: Disposition
    system_message: str = ""


class RetainResult(BaseModel):
    """What one retain stored."""

    bank_id: str
    document_id: str
    memories: list[Memory]
    entities: list[str] = Field(default_factory=list, description="canonical names touched")
    links: int = 0
    warnings: list[str] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    restated: int = Field(0, description="LLM facts not stored because the bank already held one that says the same: "
                                         "their citations were added to it")
    queued: bool = Field(default=False, description="the whole retain was deferred to a background job (defer=True: "
                                                    "no memories yet)")
    job_id: str | None = Field(default=None, description="the background job still to run for this document: with "
                                                         "defer=True the whole retain, else (extract=True) the LLM "
                                                         "facts added beside the raw messages")

    @property
    def memory_ids(self) -> list[str]:
        """Ids of the stored memories, in extraction order."""
        return [m.id for m in self.memories]


class ChannelHit(BaseModel):
    """A memory's rank (1-based) and raw score in one recall channel."""

    rank: int
    score: float


class TraceItem(BaseModel):
    """How one candidate fared: its fused score and its place in every channel that found it."""

    memory_id: str
    fused_score: float
    fused_rank: int = Field(description="place in the fusion; context that no channel found comes after every "
                                        "fused candidate, with fused_score 0")
    channels: dict[str, ChannelHit] = Field(default_factory=dict)
    tokens: int = 0
    selected: bool = False
    context_of: str | None = Field(None, description="the hit this memory was packed beside, as the memory just "
                                                     "before or after it in its document")
    cites: list[str] | None = Field(None, description="for an LLM fact, the raw message memories it cites (None: "
                                                      "not a fact, or never loaded)")
    covered_by: str | None = Field(None, description="the higher-ranked memory that already showed this one's "
                                                     "evidence, so it was packed after every memory that adds new "
                                                     "evidence")
    found_by: str | None = Field(None, description="the LLM fact whose rank brought this raw message in (facts are "
                                                   "keys to the messages they cite: RecallSettings.fact_ranking)")
    superseded_by: str | None = Field(None, description="the later memory that supersedes this one; with "
                                                        "``demoted`` it was packed after it")
    demoted: bool = Field(False, description="packed after the memory that superseded it (the question asks what "
                                             "is current), not at its fused rank")
    brought_by: str | None = Field(None, description="the superseded memory whose rank brought this current one in")
    later_statement: str | None = Field(None, description="the same speaker's later message on the same subject that "
                                                          "was packed just ahead of this one, for a question about how "
                                                          "things are now (RecallSettings.later_first_depth)")
    demoted_as: str | None = Field(None, description="why it was packed below its fused rank: 'superseded' (with "
                                                     "``demoted``), 'said_earlier' (with ``later_statement``), or "
                                                     "'question' / 'acknowledgement': a message that only asks or "
                                                     "acknowledges, packed after the next memory that says something "
                                                     "(RecallSettings.question_rule); 'not_of_asked': about nobody "
                                                     "a question about how a named person is now names, packed "
                                                     "after what is (RecallSettings.asked_first_window)")


class RecallTrace(BaseModel):
    """Diagnostics of one recall: parsed time constraint, per-channel results and stage timings."""

    query: str
    reference_time: datetime
    time_range: TimeRange | None = None
    channel_sizes: dict[str, int] = Field(default_factory=dict)
    items: list[TraceItem] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    budget: int = 0
    deadline_ms: int | None = None
    """The deadline recall was given (``recall(deadline_ms=...)``), None when it had none."""
    cut: list[str] = Field(default_factory=list)
    """The channels (``semantic``, ``keyword``, ``graph``, ``temporal``) and stages (``embed``, ``rerank``) the
    deadline cut: left out of the result, not waited for."""


class Recall(BaseModel):
    """Recall result: memories best first that fit the token budget, their token count and a trace."""

    query: str
    memories: list[Memory]
    tokens: int
    trace: RecallTrace | None = None
    cut: list[str] = Field(default_factory=list)
    """What ``deadline_ms`` cut: the channels and stages not done in time, left out (empty: recall was complete)."""

    @property
    def partial(self) -> bool:
        """Whether the deadline cut anything (see ``cut``)."""
        return bool(self.cut)

    def to_context(self) -> str:
        """The memories' texts, one per line, ready to put in a prompt (``tokens`` counts the texts)."""
        return "\n".join(m.text for m in self.memories)


AUDIT_MAX_IDS = 100
"""The most memory ids one audit entry lists (``counts`` holds the totals): a 2,000-message retain is one entry
of bounded size."""


class AuditEntry(BaseModel):
    """One write or forget in a bank's audit trail: when, through which surface, with which token, what changed.

    ``surface`` is ``api`` (a Python caller), ``cli``, ``mcp`` or ``explorer``; ``token_id`` names the token a
    network caller used (its id, never the token itself). ``operation`` is the public call (``retain``, ``forget``,
    ``delete_bank``, ``import``, ...); ``memory_ids`` lists at most ``AUDIT_MAX_IDS`` of the memories it stored or
    deleted and ``counts`` the totals; ``summary`` is a short line for people.
    """

    id: str
    bank_id: str
    at: datetime
    surface: str
    token_id: str | None = None
    operation: str
    document_id: str | None = None
    memory_ids: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    summary: str = ""
