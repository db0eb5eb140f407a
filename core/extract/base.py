"""What every extractor produces, and the protocol they share.

An extractor turns the messages of one retained document into candidate facts. It knows nothing about
storage: entity resolution, embedding and linking happen later in the retain pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from ..models import EntityType, LinkType, Message, Network

T = TypeVar("T")


class ExtractedEntity(BaseModel):
    """An entity mention as the extractor saw it (not yet resolved to a canonical entity)."""

    name: str
    type: EntityType = EntityType.OTHER
    # How strongly the text supports ``type``: the stored entity's type is the one its mentions' evidence supports
    # most (``stores.records.voted_type``). 1 is a model's label (an LLM's, spaCy's); see ``EVIDENCE`` for the rest.
    evidence: float = 1.0


EVIDENCE = {"speaker": 4.0, "cue": 3.0, "label": 1.0, "guess": 0.5}
"""Type evidence of a mention by source: a conversation's speaker (a person), a cue in the context or a gazetteer
("my dog Pepper", "in Porto", "Ryanair"), the model's label, and capitalisation alone (a guess)."""


class CausalRelation(BaseModel):
    """A causal relation from the fact that holds it to another fact of the same extraction."""

    target: int = Field(ge=0, description="index of the other fact in the extraction result")
    type: LinkType


class ExtractedFact(BaseModel):
    """One candidate memory unit."""

    text: str
    network: Network = Network.WORLD
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    entities: list[ExtractedEntity] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="ids of the messages it came from")
    causal: list[CausalRelation] = Field(default_factory=list)
    confidence: float | None = Field(None, ge=0.0, le=1.0, description="opinions only")
    position: int = Field(0, description="order within the document, used for temporal adjacency")


@runtime_checkable
class Extractor(Protocol):
    """Turns the messages of one document into candidate facts (``Hindsight.open(extractor=...)`` takes any)."""

    def extract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Extract facts; messages carry ids (sources) and timestamps (falling back to document_time)."""
        ...

    async def aextract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Async twin of ``extract``."""
        ...


@runtime_checkable
class ExtractorWithWork(Extractor, Protocol):
    """Optional capability: an extractor that runs other work (retain embeds the facts) while it extracts.

    The raw extractor has it: its facts' texts are known before NER runs, so embedding overlaps NER.
    """

    def extract_alongside(
        self,
        messages: Sequence[Message],
        work: Callable[[list[ExtractedFact]], T],
        *,
        document_time: datetime,
        context: str | None = None,
    ) -> tuple[list[ExtractedFact], T]:
        """``extract``, with ``work(facts)`` running beside it; ``work`` must not depend on the facts' entities."""
        ...
