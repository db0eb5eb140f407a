"""Follow-up work queued as durable jobs: deferred retains, scheduled reflects, and after each retain the
observation and opinion jobs (paper section 5).

Jobs live in the graph store's queue (``JobQueue``) and are run by the ``Worker`` with retries; this module
decides what to queue and holds the handlers of the retain and reflect kinds. The observation and opinion
handlers are ``ObservationWriter.run`` and ``OpinionReinforcer.run``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..models import Disposition, DocumentStatus, Job, Network, RetainResult
from ..observations.job import FACT_NETWORKS
from ..reflect.pipeline import ReflectPipeline
from ..retain.options import RetainOptions
from ..retain.pipeline import RetainPipeline
from ..stores.base import DocumentStore, EntityStore, JobQueue, UnitStore
from ..text.inputs import RetainInput, parse_timestamp
from ..validation import When
from .gate import CommitGate

log = logging.getLogger(__name__)

OBSERVATIONS = "observations"
OPINIONS = "opinions"
RETAIN = "retain"
REFLECT = "reflect"


class SchedulerStore(JobQueue, DocumentStore, UnitStore, EntityStore, Protocol):
    """What scheduling reads: the queue, stored documents, and which entities and opinions new facts touch."""


class JobScheduler:
    """Queues jobs and runs the retain and reflect kinds. ``notify`` wakes the worker after a job is queued; every
    enqueue passes ``gate`` (nothing is queued through a closed ``Hindsight``)."""

    def __init__(
        self,
        store: SchedulerStore,
        retainer: RetainPipeline,
        reflector: ReflectPipeline,
        notify: Callable[[], None] = lambda: None,
        gate: CommitGate | None = None,
    ) -> None:
        self.store = store
        self.retainer = retainer
        self.reflector = reflector
        self.notify = notify
        # (bank, entity ids) -> the observation jobs to queue; ``wire`` sets ``ObservationWriter.plan``.
        self.plan_observations: Callable[[str, list[str]], list[Job]] = lambda bank_id, entity_ids: [
            Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=OBSERVATIONS, payload={"entity_ids": entity_ids})]
        self.gate = gate or CommitGate()

    def _enqueue(self, job: Job) -> Job:
        with self.gate.commit():
            self.store.enqueue_job(job)
        self.notify()
        return job

    # deferred retain ------------------------------------------------------------------------------
    def queue_retain(self, bank_id: str, content: RetainInput, options: RetainOptions) -> RetainResult:
        """Store the raw document now (validated, durable) and queue its extraction as a job.

        The document and its job are linked in one transaction (the document is pending on the job); a crash
        before that leaves the document held by this process's lease, and the next process resumes it.
        """
        doc, _, warnings = self.retainer.prepare(bank_id, content, options, deferred=True)
        job = Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=RETAIN,
                  payload={"document_id": doc.id, **options.recorded()})
        with self.gate.commit():
            self.store.enqueue_job(job, document_id=doc.id)
        self.notify()
        return RetainResult(bank_id=bank_id, document_id=doc.id, memories=[], warnings=warnings, queued=True,
                            job_id=job.id)

    def resume_document(self, bank_id: str, document_id: str) -> Job:
        """Queue a retain job for a stored document a dead process left unfinished (linked in one transaction)."""
        job = Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=RETAIN,
                  payload={"document_id": document_id, "resumed": True})
        with self.gate.commit():
            self.store.enqueue_job(job, document_id=document_id)
        return job

    def run_retain(self, job: Job) -> None:
        """Extract a document stored by a deferred retain, or left unfinished by a process that died (a failure
        is retried by the worker). Running it twice is harmless: a retain replaces its document's memories."""
        payload = job.payload
        doc = self.store.get_document(job.bank_id, payload["document_id"])
        if doc is None or doc.status == DocumentStatus.DONE:  # forgotten, or finished by someone else meanwhile
            return
        if doc.job_id not in (None, job.id) and doc.status == DocumentStatus.PENDING:
            return  # re-queued under another job since (a reprocess, a resume): that one extracts it
        if not doc.options:  # stored before documents recorded how they are retained: the job carried it
            doc = doc.model_copy(update={"options": {k: payload[k] for k in ("extract", "metadata", "background")
                                                     if k in payload}})
        self.retainer.retain_stored(doc)

    # scheduled reflect ----------------------------------------------------------------------------
    def queue_reflect(
        self,
        bank_id: str,
        query: str,
        *,
        disposition: Disposition | Mapping[str, Any] | None = None,
        budget: int = 2000,
        reference_time: When = None,
    ) -> Job:
        """Queue a reflect (its opinions are stored when it runs)."""
        payload = {
            "query": query, "budget": budget,
            "disposition": Disposition.model_validate(disposition).model_dump() if disposition else None,
            "reference_time": ref.isoformat() if (ref := parse_timestamp(reference_time, "reference_time")) else None,
        }
        return self._enqueue(Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=REFLECT, payload=payload))

    def run_reflect(self, job: Job) -> None:
        """Run a scheduled reflect. Its opinions are stored under a document named after the job, so a retried
        job replaces what an earlier attempt stored instead of adding the opinions twice."""
        p = job.payload
        disposition = Disposition.model_validate(p["disposition"]) if p.get("disposition") else None
        result = self.reflector.reflect(
            job.bank_id, p["query"], disposition=disposition, budget=p.get("budget", 2000),
            reference_time=p.get("reference_time"), opinion_document=f"opinion:{job.id}",
        )
        log.info("scheduled reflect in bank %s: %r -> %r (%d opinions)", job.bank_id, p["query"], result.answer,
                 len(result.opinions))

    # after a retain -------------------------------------------------------------------------------
    def queue_follow_ups(self, result: RetainResult) -> list[Job]:
        """Queue observation updates for the entities the new facts mention, and opinion reinforcement when the
        bank holds opinions; the worker is woken when anything was queued."""
        store = self.store
        facts = [m for m in result.memories if m.network in FACT_NETWORKS]
        jobs: list[Job] = []
        entity_ids: list[str] = []
        for name in dict.fromkeys(n for m in facts for n in m.entities):
            entity = store.find_entity(result.bank_id, name)
            if entity is not None:
                entity_ids.append(entity.id)
        if entity_ids:
            jobs.extend(self.plan_observations(result.bank_id, entity_ids))
        if facts and store.units_in_network(result.bank_id, Network.OPINION, limit=1):
            jobs.append(Job(id=str(uuid.uuid4()), bank_id=result.bank_id, kind=OPINIONS,
                            payload={"unit_ids": [m.id for m in facts]}))
        if jobs:
            # After the facts' commit: a close in between leaves the follow-ups to the facts job's rerun.
            with self.gate.commit():
                for job in jobs:
                    store.enqueue_job(job)
            self.notify()
        return jobs
