"""The background work queued after a retain: entity observations and opinion reinforcement (paper 5)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from .disposition import opinion_step
from .extract.base import ExtractedEntity, ExtractedFact
from .models import Document, Job, Memory, Network, OpinionEvent, RetainResult, utcnow
from .observations import summarize_entity
from .opinions import Assessment, assess_opinion, update_confidence
from .retain import index_units

if TYPE_CHECKING:
    from .hindsight import Hindsight

OBSERVATIONS = "observations"
OPINIONS = "opinions"
_FACT_NETWORKS = (Network.WORLD, Network.EXPERIENCE)


def observation_document_id(entity_id: str) -> str:
    """Observations of an entity live under one synthetic document id, so regenerating replaces them."""
    return f"observation:{entity_id}"


class BackgroundJobs:
    """Queues and runs the background jobs of one ``Hindsight`` instance."""

    def __init__(self, hs: Hindsight) -> None:
        self.hs = hs

    @property
    def handlers(self) -> dict[str, object]:
        """Job kind -> handler, for the worker."""
        return {OBSERVATIONS: self.run_observations, OPINIONS: self.run_opinions}

    def queue_after_retain(self, result: RetainResult) -> list[Job]:
        """Queue observation updates for the entities the new facts mention, and opinion reinforcement."""
        store = self.hs.store
        facts = [m for m in result.memories if m.network in _FACT_NETWORKS]
        jobs: list[Job] = []
        entity_ids: list[str] = []
        for name in dict.fromkeys(n for m in facts for n in m.entities):
            entity = store.find_entity(result.bank_id, name)
            if entity is not None:
                entity_ids.append(entity.id)
        if entity_ids:
            jobs.append(Job(id=str(uuid.uuid4()), bank_id=result.bank_id, kind=OBSERVATIONS,
                            payload={"entity_ids": entity_ids}))
        if facts and store.units_in_network(result.bank_id, Network.OPINION, limit=1):
            jobs.append(Job(id=str(uuid.uuid4()), bank_id=result.bank_id, kind=OPINIONS,
                            payload={"unit_ids": [m.id for m in facts]}))
        for job in jobs:
            store.enqueue_job(job)
        return jobs

    # observations --------------------------------------------------------------------------------
    def run_observations(self, job: Job) -> None:
        """Regenerate the observation of each entity from the facts that mention it."""
        for entity_id in job.payload.get("entity_ids", []):
            self.regenerate_observation(job.bank_id, entity_id)

    def regenerate_observation(self, bank_id: str, entity_id: str) -> Memory | None:
        """Write (or replace) one entity's observation; None when no fact mentions it any more."""
        store = self.hs.store
        entity = next((e for e in store.list_entities(bank_id) if e.id == entity_id), None)
        if entity is None:
            return None
        facts = [m for m in store.get_units(bank_id, store.units_of_entity(bank_id, entity_id))
                 if m.network in _FACT_NETWORKS]
        if not facts:
            return None
        facts.sort(key=lambda m: m.occurred_start or m.mentioned_at or m.created_at, reverse=True)
        facts = facts[: self.hs.settings.cara.observation_max_facts]
        doc_id = observation_document_id(entity_id)
        previous = store.get_units(bank_id, store.units_of_document(bank_id, doc_id))
        summary = summarize_entity(self.hs.llm, entity.name, [(m.id, m.text) for m in facts],
                                   previous=previous[0].text if previous else None)
        now = utcnow()
        fact = ExtractedFact(
            text=summary, network=Network.OBSERVATION, mentioned_at=now,
            entities=[ExtractedEntity(name=entity.name, type=entity.type)],
            sources=list(dict.fromkeys(s for m in facts for s in m.sources)),
        )
        doc = Document(id=doc_id, bank_id=bank_id, content=entity.name, timestamp=now)
        meta = {"entity": entity.name, "entity_id": entity_id, "facts": [m.id for m in facts]}
        return self.hs.retainer.store_facts(doc, [fact], metadata=meta).memories[0]

    # opinions ------------------------------------------------------------------------------------
    def run_opinions(self, job: Job) -> None:
        """Assess every opinion related to the new facts and move its confidence (paper 5.3)."""
        hs, bank_id = self.hs, job.bank_id
        settings = hs.settings.cara
        new = [m for m in hs.store.get_units(bank_id, job.payload.get("unit_ids", [])) if m.network in _FACT_NETWORKS]
        if not new:
            return
        profile = hs.store.get_bank(bank_id)
        if profile is None:
            return
        related: dict[str, set[str]] = {}  # opinion id -> ids of new facts that bear on it
        for fact in new:
            entity_ids = [e.id for n in fact.entities if (e := hs.store.find_entity(bank_id, n)) is not None]
            for op_id in hs.store.units_in_network(bank_id, Network.OPINION, entity_ids) if entity_ids else []:
                related.setdefault(op_id, set()).add(fact.id)
        vectors = hs.index.get_embeddings(bank_id, [m.id for m in new])
        for fact_id, vector in vectors.items():
            for op_id, sim in hs.index.query(bank_id, vector, 5, where={"network": Network.OPINION.value}):
                if sim >= settings.opinion_similarity:
                    related.setdefault(op_id, set()).add(fact_id)
        by_id = {m.id: m for m in new}
        step = opinion_step(settings.opinion_step, profile.disposition)
        for opinion in hs.store.get_units(bank_id, list(related)):
            evidence = [by_id[i] for i in by_id if i in related[opinion.id]]
            old = opinion.confidence if opinion.confidence is not None else 0.5
            verdict = assess_opinion(hs.llm, opinion.text, old, [(m.id, m.text) for m in evidence])
            if verdict.label == Assessment.NEUTRAL:
                continue
            new_conf = update_confidence(old, verdict.label, step)
            new_text = verdict.revised_text if verdict.label == Assessment.CONTRADICT else None
            hs.store.update_unit(bank_id, opinion.id, text=new_text, confidence=new_conf)
            if new_text:
                updated = hs.store.get_units(bank_id, [opinion.id])
                index_units(hs.index, hs.embedder, bank_id, updated, hs.settings.embed_time_reference)
            hs.store.add_opinion_event(bank_id, OpinionEvent(
                opinion_id=opinion.id, label=verdict.label.value, old_confidence=old, new_confidence=new_conf,
                evidence=[m.id for m in evidence], old_text=opinion.text if new_text else None, new_text=new_text,
                rationale=verdict.rationale,
            ))
