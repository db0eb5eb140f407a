"""The observation job (paper section 3): regenerate an entity's observation when its facts change.

Runs in the background worker after a retain whose facts mention the entity. The summary itself is one
structured model call (:func:`hindsight_core.observations.summarize_entity`); this module picks the facts and
stores the result under one synthetic document per entity, so regenerating replaces the previous one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .extract.base import ExtractedEntity, ExtractedFact
from .llm.base import LLM
from .models import Document, Job, Memory, Network, utcnow
from .observations import summarize_entity
from .retain import FactWriter
from .stores.base import EntityStore, UnitStore

FACT_NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""Observations and opinions are written from these networks only (never from other observations)."""


def observation_document_id(entity_id: str) -> str:
    """Observations of an entity live under one synthetic document id, so regenerating replaces them."""
    return f"observation:{entity_id}"


class ObservationStore(UnitStore, EntityStore, Protocol):
    """What the observation job reads: entities and the units that mention them."""


class ObservationWriter:
    """Writes entity observations from the entity's most recent facts."""

    def __init__(
        self, store: ObservationStore, write_facts: FactWriter, llm: Callable[[], LLM], max_facts: int = 40
    ) -> None:
        self.store = store
        self.write_facts = write_facts
        self._llm = llm
        self.max_facts = max_facts

    def run(self, job: Job) -> None:
        """Job handler: regenerate the observation of each entity in ``job.payload["entity_ids"]``."""
        for entity_id in job.payload.get("entity_ids", []):
            self.regenerate(job.bank_id, entity_id)

    def regenerate(self, bank_id: str, entity_id: str) -> Memory | None:
        """Write (or replace) one entity's observation; None when no fact mentions it any more."""
        store = self.store
        entity = next((e for e in store.list_entities(bank_id) if e.id == entity_id), None)
        if entity is None:
            return None
        facts = [m for m in store.get_units(bank_id, store.units_of_entity(bank_id, entity_id))
                 if m.network in FACT_NETWORKS]
        if not facts:
            return None
        facts.sort(key=lambda m: m.occurred_start or m.mentioned_at or m.created_at, reverse=True)
        facts = facts[: self.max_facts]
        doc_id = observation_document_id(entity_id)
        previous = store.get_units(bank_id, store.units_of_document(bank_id, doc_id))
        summary = summarize_entity(self._llm(), entity.name, [(m.id, m.text) for m in facts],
                                   previous=previous[0].text if previous else None)
        now = utcnow()
        fact = ExtractedFact(
            text=summary, network=Network.OBSERVATION, mentioned_at=now,
            entities=[ExtractedEntity(name=entity.name, type=entity.type)],
            sources=list(dict.fromkeys(s for m in facts for s in m.sources)),
        )
        doc = Document(id=doc_id, bank_id=bank_id, content=entity.name, timestamp=now)
        meta = {"entity": entity.name, "entity_id": entity_id, "facts": [m.id for m in facts]}
        return self.write_facts(doc, [fact], metadata=meta).memories[0]
