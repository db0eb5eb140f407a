"""The observation job (paper section 3): regenerate an entity's observation when its facts change.

Runs in the background worker after a retain whose facts mention the entity. The summary itself is one
structured model call (:func:`hindsight_core.reflect.observations.summarize_entity`); each of its sentences is then
checked against the facts (:func:`hindsight_core.reflect.observation_support.check_support`) and only supported,
non-repeated sentences are kept. The observation is stored under one synthetic document per entity, so
regenerating replaces the previous one; it lists the facts it rests on and carries their time, never the
wall clock (an observation of a 2023 conversation is dated 2023, and it does not move the entity's
"last seen" to today).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from ..extract.base import ExtractedEntity, ExtractedFact
from ..llm.base import LLM
from ..models import Document, Entity, Job, Memory, Network
from ..retain.pipeline import FactWriter
from ..stores.base import EntityStore, UnitStore
from .observation_support import SupportCheck, check_support, facts_about
from .observations import summarize_entity

FACT_NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""Observations and opinions are written from these networks only (never from other observations)."""

SUPPORT_KEY = "support"
"""Observation metadata: for each kept sentence, the positions in ``metadata["facts"]`` of the facts it rests on
(positions, not ids, so that the ids are remapped in one place when a bank is imported)."""


def observation_document_id(entity_id: str) -> str:
    """Observations of an entity live under one synthetic document id, so regenerating replaces them."""
    return f"observation:{entity_id}"


def fact_time(memory: Memory) -> datetime:
    """When a fact happened or was said: its occurrence start, else its mention time, else when it was stored."""
    return memory.occurred_start or memory.mentioned_at or memory.created_at


def fact_line(memory: Memory) -> str:
    """A fact as the summary prompt and the support check see it: its text after its date (``[8 May 2023]``),
    so that the model can tell newer from older and a date it repeats is one the facts state."""
    when = fact_time(memory)
    return f"[{when.day} {when:%B %Y}] {memory.text}"


class ObservationStore(UnitStore, EntityStore, Protocol):
    """What the observation job reads: entities and the units that mention them."""


@dataclass(frozen=True)
class ObservationDraft:
    """An entity's summary before it is stored: the facts shown, the model's answer and the support verdicts."""

    entity: Entity
    facts: list[Memory]
    """The entity's most recent facts, newest first (what of them speaks of the entity was shown to the model)."""
    summary: str
    """The model's answer as it came."""
    check: SupportCheck
    """Each sentence of ``summary`` with its verdict; ``check.text`` is what would be stored."""

    def supporting_facts(self) -> list[Memory]:
        """The facts the kept sentences rest on, in the order the check cited them."""
        by_id = {m.id: m for m in self.facts}
        return [by_id[i] for i in self.check.fact_ids if i in by_id]


class ObservationWriter:
    """Writes entity observations from the entity's most recent facts, keeping only supported sentences."""

    def __init__(
        self,
        store: ObservationStore,
        write_facts: FactWriter,
        llm: Callable[[], LLM],
        max_facts: int = 40,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        self.store = store
        self.write_facts = write_facts
        self._llm = llm
        self.max_facts = max_facts
        # Without an embedder the support check uses word overlap alone (stricter: paraphrases are dropped).
        self.embed = embed

    def run(self, job: Job) -> None:
        """Job handler: regenerate the observation of each entity in ``job.payload["entity_ids"]``."""
        for entity_id in job.payload.get("entity_ids", []):
            self.regenerate(job.bank_id, entity_id)

    def draft(self, bank_id: str, entity_id: str) -> ObservationDraft | None:
        """Ask the model for the entity's summary and check it; None when the entity or its facts are gone."""
        store = self.store
        entity = next((e for e in store.list_entities(bank_id) if e.id == entity_id), None)
        if entity is None:
            return None
        facts = [m for m in store.get_units(bank_id, store.units_of_entity(bank_id, entity_id))
                 if m.network in FACT_NETWORKS]
        if not facts:
            return None
        facts.sort(key=fact_time, reverse=True)
        facts = facts[: self.max_facts]
        previous = store.get_units(bank_id, store.units_of_document(bank_id, observation_document_id(entity_id)))
        # Only what speaks of the entity goes to the model: a chat line's other-speaker news is where a small
        # model's misattributions come from ("Jon lost his job at Door Dash", which Gina said of herself).
        lines = facts_about([(m.id, fact_line(m)) for m in facts], entity.name)
        if not lines:
            return None
        summary = summarize_entity(self._llm(), entity.name, lines, previous=previous[0].text if previous else None)
        return ObservationDraft(entity, facts, summary, check_support(summary, lines, entity.name, embed=self.embed))

    def regenerate(self, bank_id: str, entity_id: str) -> Memory | None:
        """Write (or replace) one entity's observation; None when no fact mentions it any more or no sentence
        of the model's summary is supported (then the previous observation, if any, stays)."""
        draft = self.draft(bank_id, entity_id)
        return self.write(bank_id, draft) if draft is not None else None

    def write(self, bank_id: str, draft: ObservationDraft) -> Memory | None:
        """Store the kept sentences of ``draft``, dated by the facts they rest on; None when none was kept."""
        basis = draft.supporting_facts()
        text = draft.check.text
        if not text or not basis:
            return None
        times = [fact_time(m) for m in basis]
        mentioned = [m.mentioned_at or fact_time(m) for m in basis]
        entity = draft.entity
        # Dated by its facts, never now: it spans the facts it rests on and was "said" when the latest was. The
        # resolver moves an entity's last-seen to a unit's occurrence start: the earliest fact, never later.
        fact = ExtractedFact(
            text=text, network=Network.OBSERVATION, occurred_start=min(times), occurred_end=max(times),
            mentioned_at=max(mentioned), entities=[ExtractedEntity(name=entity.name, type=entity.type)],
            sources=list(dict.fromkeys(s for m in basis for s in m.sources)),
        )
        doc = Document(id=observation_document_id(entity.id), bank_id=bank_id, content=entity.name,
                       timestamp=max(mentioned))
        ids = [m.id for m in basis]
        meta = {"entity": entity.name, "entity_id": entity.id, "facts": ids,
                SUPPORT_KEY: [[ids.index(f) for f in s.fact_ids if f in ids] for s in draft.check.kept],
                "dropped": len(draft.check.sentences) - len(draft.check.kept)}
        return self.write_facts(doc, [fact], metadata=meta).memories[0]
