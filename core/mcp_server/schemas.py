"""What the MCP tools take and return: small JSON-friendly models built from the engine's public models.

The models are the tools' published schemas (input and output), so every field says what it means: an agent
reads these descriptions to decide what to send and how to cite what comes back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hindsight_core import BankProfile, Disposition, Memory, Recall, Reflection, RetainResult
from hindsight_core.validation import MAX_BANK_ID_CHARS, check_bank_id

NetworkName = Literal["world", "experience", "opinion", "observation"]
"""The four memory networks, by the names the engine uses."""

BankId = Annotated[str, Field(min_length=1, max_length=MAX_BANK_ID_CHARS, description="the memory bank's id"),
                  AfterValidator(check_bank_id)]
"""A bank id as a tool argument."""


class MessageIn(BaseModel):
    """One message of a conversation to retain."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="what was said")
    speaker: str | None = Field(None, description="who said it: 'user', 'assistant' or a name")
    id: str | None = Field(None, description="your id for the message; memories cite it in `sources`")
    timestamp: str | None = Field(None, description="when it was said (ISO 8601); default: the retain's timestamp")


class MemoryOut(BaseModel):
    """One memory as a tool returns it: what it says, where it came from and when it happened."""

    id: str = Field(description="the memory's id (for `forget`, and to cite it)")
    text: str
    network: NetworkName = Field(description="world fact, the agent's own experience, opinion or observation")
    score: float | None = Field(None, description="fused recall score (recall results only)")
    sources: list[str] = Field(default_factory=list, description="ids of the messages it came from")
    document_id: str | None = Field(None, description="the retained document it came from")
    occurred_start: datetime | None = Field(None, description="when what it describes began")
    occurred_end: datetime | None = Field(None, description="when what it describes ended")
    mentioned_at: datetime | None = Field(None, description="when it was said or written")
    entities: list[str] = Field(default_factory=list, description="canonical names of the entities it mentions")
    confidence: float | None = Field(None, description="the agent's confidence in it (opinions only)")
    superseded_by: str | None = Field(None, description="the later memory that replaced this one (a move, a new "
                                                        "job, a correction); null while it is current. A superseded "
                                                        "memory is history: true until `valid_until`, not now")
    valid_until: datetime | None = Field(None, description="when it stopped being current (null: current)")

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        """The tool's view of an engine ``Memory``."""
        return cls(id=memory.id, text=memory.text, network=memory.network.value, score=memory.score,
                   sources=list(memory.sources), document_id=memory.document_id,
                   occurred_start=memory.occurred_start, occurred_end=memory.occurred_end,
                   mentioned_at=memory.mentioned_at, entities=list(memory.entities), confidence=memory.confidence,
                   superseded_by=memory.superseded_by, valid_until=memory.valid_until)


class RetainOut(BaseModel):
    """What a retain stored."""

    bank: str
    document_id: str = Field(description="the stored document (for `forget` with document_id)")
    memories: list[MemoryOut] = Field(description="the memories made from it (none yet when queued)")
    entities: list[str] = Field(default_factory=list, description="entities it touched")
    warnings: list[str] = Field(default_factory=list)
    queued: bool = Field(False, description="the whole retain was deferred to a background job")
    job_id: str | None = Field(None, description="the background job still to run: the deferred retain, or the one "
                                                 "adding the model's facts")

    @classmethod
    def of(cls, bank: str, result: RetainResult) -> RetainOut:
        """The tool's view of a ``RetainResult``."""
        return cls(bank=bank, document_id=result.document_id, memories=[MemoryOut.of(m) for m in result.memories],
                   entities=list(result.entities), warnings=list(result.warnings), queued=result.queued,
                   job_id=result.job_id)


class RecallOut(BaseModel):
    """Memories relevant to a query, best first, within the token budget."""

    bank: str
    query: str
    tokens: int = Field(description="tokens the returned texts take")
    memories: list[MemoryOut]
    cut: list[str] = Field(default_factory=list, description="what the deadline cut: search channels (semantic, "
                           "keyword, graph, temporal) or stages (embed, rerank) not done in time and left out; "
                           "empty when the recall is complete")

    @classmethod
    def of(cls, bank: str, recall: Recall) -> RecallOut:
        """The tool's view of a ``Recall``."""
        return cls(bank=bank, query=recall.query, tokens=recall.tokens,
                   memories=[MemoryOut.of(m) for m in recall.memories], cut=list(recall.cut))


class ReflectOut(BaseModel):
    """An answer from memory in the bank's own voice, with the memories it relied on."""

    bank: str
    query: str
    answer: str
    known: bool = Field(description="false when memory held nothing that answers the question")
    stance: str | None = Field(default=None, description="yes / no / unsure on a yes/no question")
    confidence: float | None = Field(default=None, description="on a yes/no question, the stance's confidence, "
                                     "computed from each memory's verdict and the disposition")
    verdicts: dict[str, str] = Field(default_factory=dict, description="on a yes/no question, each judged memory's "
                                     "id and where it points (yes / no / neither)")
    based_on: list[MemoryOut] = Field(description="the recalled memories the answer relied on, in that order")
    against: list[MemoryOut] = Field(default_factory=list, description="recalled memories cited against it")
    opinions: list[MemoryOut] = Field(default_factory=list, description="opinions formed and stored, each with "
                                      "the confidence computed from its evidence")
    disposition: Disposition = Field(description="the disposition the answer was given with")

    @classmethod
    def of(cls, bank: str, reflection: Reflection) -> ReflectOut:
        """The tool's view of a ``Reflection``; ``based_on`` carries the cited memories themselves."""
        recalled = {m.id: m for m in reflection.memories}
        cited = [MemoryOut.of(recalled[i]) for i in reflection.based_on if i in recalled]
        against = [MemoryOut.of(recalled[i]) for i in reflection.against if i in recalled]
        return cls(bank=bank, query=reflection.query, answer=reflection.answer, known=reflection.known,
                   stance=reflection.stance, confidence=reflection.confidence, verdicts=dict(reflection.verdicts),
                   based_on=cited, against=against,
                   opinions=[MemoryOut.of(o) for o in reflection.opinions],
                   disposition=reflection.disposition)


class CorrectOut(BaseModel):
    """A correction: the memory now held instead of a wrong one, which is kept as history superseded by it."""

    bank: str
    memory: MemoryOut = Field(description="the corrected memory, stored now (cite its id from here on)")
    supersedes: str = Field(description="the id of the wrong memory; it keeps its text, with `superseded_by` this "
                                        "memory's id and `valid_until` now")
    by: str | None = Field(None, description="who corrected it: the calling token's id (null without a token)")

    @classmethod
    def of(cls, bank: str, memory: Memory, supersedes: str, by: str | None) -> CorrectOut:
        """The tool's view of ``Bank.correct``'s new memory, which replaced ``supersedes``."""
        return cls(bank=bank, memory=MemoryOut.of(memory), supersedes=supersedes, by=by)


class ForgetOut(BaseModel):
    """What a forget removed."""

    bank: str
    deleted: int = Field(description="how many memories were deleted")


class BankOut(BaseModel):
    """A bank: its id, name, first-person background and default disposition."""

    id: str
    name: str
    background: str = ""
    disposition: Disposition

    @classmethod
    def of(cls, profile: BankProfile) -> BankOut:
        """The tool's view of a ``BankProfile``."""
        return cls(id=profile.id, name=profile.name, background=profile.background,
                   disposition=profile.disposition)


class BankList(BaseModel):
    """The banks this server can reach."""

    banks: list[BankOut]
