"""The background work queued after a retain: entity observations and opinion reinforcement (paper 5)."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .disposition import opinion_step
from .extract.base import ExtractedEntity, ExtractedFact
from .inputs import RetainInput
from .models import Disposition, Document, DocumentStatus, Job, Memory, Network, RetainResult, utcnow
from .observations import summarize_entity
from .opinions import Assessment, assess_opinion, confidence_delta
from .retain import retain_options
from .stores.base import OpinionUpdate

if TYPE_CHECKING:
    from .hindsight import Hindsight

log = logging.getLogger(__name__)

OBSERVATIONS = "observations"
OPINIONS = "opinions"
RETAIN = "retain"
REFLECT = "reflect"
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
        return {
            OBSERVATIONS: self.run_observations, OPINIONS: self.run_opinions,
            RETAIN: self.run_retain, REFLECT: self.run_reflect,
        }

    def _enqueue(self, job: Job) -> Job:
        self.hs.store.enqueue_job(job)
        self.hs.notify_worker()
        return job

    # deferred retain and reflect ----------------------------------------------------------------
    def queue_retain(
        self,
        bank_id: str,
        content: RetainInput,
        *,
        timestamp: datetime | str | None = None,
        document_id: str | None = None,
        context: str | None = None,
        extract: bool = True,
        metadata: dict[str, Any] | None = None,
        background: bool | None = None,
        document_metadata: dict[str, Any] | None = None,
    ) -> RetainResult:
        """Store the raw document now (validated, durable) and queue its extraction as a job.

        The document and its job are linked in one transaction (the document is pending on the job); a crash
        before that leaves the document held by this process's lease, and the next process resumes it.
        """
        job_id = str(uuid.uuid4())
        doc, _, warnings = self.hs.retainer.prepare(
            bank_id, content, timestamp=timestamp, document_id=document_id, context=context,
            document_metadata=document_metadata, options=retain_options(extract, background, metadata),
            deferred=True,
        )
        job = Job(id=job_id, bank_id=bank_id, kind=RETAIN,
                  payload={"document_id": doc.id, "extract": extract, "metadata": metadata or {},
                           "background": background})
        self.hs.store.enqueue_job(job, document_id=doc.id)
        self.hs.notify_worker()
        return RetainResult(bank_id=bank_id, document_id=doc.id, memories=[], warnings=warnings, queued=True,
                            job_id=job.id)

    def run_retain(self, job: Job) -> None:
        """Extract a document stored by a deferred retain, or left unfinished by a process that died (a failure
        is retried by the worker). Running it twice is harmless: a retain replaces its document's memories."""
        payload = job.payload
        doc = self.hs.store.get_document(job.bank_id, payload["document_id"])
        if doc is None or doc.status == DocumentStatus.DONE:  # forgotten, or finished by someone else meanwhile
            return
        if doc.job_id not in (None, job.id) and doc.status == DocumentStatus.PENDING:
            return  # re-queued under another job since (a reprocess, a resume): that one extracts it
        if not doc.options:  # stored before documents recorded how they are retained: the job carried it
            doc = doc.model_copy(update={"options": {k: payload[k] for k in ("extract", "metadata", "background")
                                                     if k in payload}})
        self.hs.retainer.retain_stored(doc)

    def queue_reflect(
        self,
        bank_id: str,
        query: str,
        *,
        disposition: Disposition | None = None,
        budget: int = 2000,
        reference_time: datetime | str | None = None,
    ) -> Job:
        """Queue a reflect (its opinions are stored when it runs)."""
        payload = {
            "query": query, "budget": budget,
            "disposition": Disposition.model_validate(disposition).model_dump() if disposition else None,
            "reference_time": reference_time.isoformat() if isinstance(reference_time, datetime) else reference_time,
        }
        return self._enqueue(Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=REFLECT, payload=payload))

    def run_reflect(self, job: Job) -> None:
        """Run a scheduled reflect. Its opinions are stored under a document named after the job, so a retried
        job replaces what an earlier attempt stored instead of adding the opinions twice."""
        p = job.payload
        disposition = Disposition.model_validate(p["disposition"]) if p.get("disposition") else None
        result = self.hs.reflector.reflect(
            job.bank_id, p["query"], disposition=disposition, budget=p.get("budget", 2000),
            reference_time=p.get("reference_time"), opinion_document=f"opinion:{job.id}",
        )
        log.info("scheduled reflect in bank %s: %r -> %r (%d opinions)", job.bank_id, p["query"], result.answer,
                 len(result.opinions))

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
        """Assess every opinion related to the new facts and move its confidence (paper 5.3).

        Exactly once per (opinion, evidence): evidence already applied to an opinion (by an earlier attempt of
        this job, or another job) is left out before the model is asked, and the store re-checks it inside
        the transaction that moves the confidence and appends the history event.
        """
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
        for opinion in hs.store.get_units(bank_id, sorted(related)):  # a vector without a unit is skipped here
            applied = hs.store.applied_evidence(bank_id, opinion.id)
            evidence = [by_id[i] for i in by_id if i in related[opinion.id] and i not in applied]
            if not evidence:
                continue
            old = opinion.confidence if opinion.confidence is not None else 0.5
            verdict = assess_opinion(hs.llm, opinion.text, old, [(m.id, m.text) for m in evidence])
            if verdict.label == Assessment.NEUTRAL:
                continue
            new_text = verdict.revised_text if verdict.label == Assessment.CONTRADICT else None
            event = hs.store.apply_opinion_update(bank_id, OpinionUpdate(
                opinion_id=opinion.id, label=verdict.label.value, delta=confidence_delta(verdict.label, step),
                evidence=tuple(m.id for m in evidence), rationale=verdict.rationale, new_text=new_text,
            ), owner=hs.lease.id)
            if event is not None and event.new_text:
                hs.vectors.reindex(bank_id, [opinion.id])
