"""The wiring: every pipeline of one ``Hindsight``, built in one place with its dependencies explicit.

``wire`` is the only function that knows which part needs which; the pipelines themselves receive the
narrow store protocols, callables and settings they use and never reach through the facade. ``Bank``
delegates to the ``Engine`` it is given; ``Hindsight`` owns the process-level parts (lease, recovery,
opening the stores) and builds the engine with ``wire``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from .config import Settings
from .embedders import Embedder
from .extract.base import Extractor
from .extract.raw_extractor import RawExtractor
from .llm.base import LLM
from .models import Job
from .observations.job import ObservationWriter, rebuild_job
from .opinions.reinforce import OpinionReinforcer, ReinforceStore
from .recall.pipeline import RecallPipeline
from .recall.rerank import Reranker
from .reflect.pipeline import ReflectPipeline
from .retain.correct import Corrector
from .retain.fact_job import FactJob
from .retain.forget import ForgetPipeline
from .retain.pipeline import FACTS, RetainPipeline
from .retain.supersede import SupersessionDetector
from .runtime.gate import CommitGate, GatedWrites
from .runtime.jobs import OBSERVATIONS, OPINIONS, REFLECT, RETAIN, JobScheduler
from .runtime.worker import Handler, Worker
from .stores.base import GraphStore, Supersession, VectorIndex
from .vectors.vector_sync import VectorSync

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value made on first use, once, thread-safely (the local model must not load at open)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._make()
        return self._value


@dataclass(frozen=True)
class Engine:
    """The wired parts of one ``Hindsight``, as its banks use them."""

    store: GraphStore
    index: VectorIndex
    embedder: Embedder
    settings: Settings
    vectors: VectorSync
    retainer: RetainPipeline
    recaller: RecallPipeline
    reflector: ReflectPipeline
    forgetter: ForgetPipeline
    corrector: Corrector
    jobs: JobScheduler
    facts: FactJob
    observations: ObservationWriter
    reinforcer: OpinionReinforcer
    worker: Worker
    llm: Callable[[], LLM]
    gate: CommitGate


def wire(
    store: GraphStore,
    index: VectorIndex,
    embedder: Embedder,
    settings: Settings,
    *,
    llm: Callable[[], LLM],
    extractor: Callable[[], Extractor],
    count_tokens: Callable[[str], int],
    executor: ThreadPoolExecutor,
    owner: str | None,
    notify: Callable[[], None],
    reranker: Reranker | None = None,
    gate: CommitGate | None = None,
) -> Engine:
    """Build every pipeline of one ``Hindsight``.

    ``llm`` and ``extractor`` are called when first needed; ``owner`` is this process's lease id (jobs,
    documents and vector marks it holds); ``notify`` wakes the worker after a job is queued; every commit, job
    outcome and enqueue passes ``gate`` (closed by ``Hindsight.close``: nothing is written after it).
    """
    gate = gate or CommitGate()
    vectors = VectorSync(store, index, embedder, settings, owner)
    retainer = RetainPipeline(store, index, embedder, settings, RawExtractor(window=settings.raw_window), extractor,
                              vectors=vectors)
    recaller = RecallPipeline(store, index, embedder, settings.recall, count_tokens, executor, reranker)
    reflector = ReflectPipeline(store, recaller, retainer.store_facts, llm,
                                judgement=settings.cara.reflect_judgement)
    jobs = JobScheduler(store, retainer, reflector, notify, gate)
    retainer.on_retained = jobs.queue_follow_ups
    retainer.notify = notify
    retainer.commit_gate = gate.commit
    facts = FactJob(store, retainer, jobs.queue_follow_ups)
    observations = ObservationWriter(store, retainer.store_facts, llm, settings.cara.observation_max_facts,
                                     embedder.embed, first_evidence=settings.cara.observation_first_evidence,
                                     new_evidence=settings.cara.observation_new_evidence,
                                     mode=settings.cara.observation_mode)
    jobs.plan_observations = observations.plan  # one queued job per entity, and only with enough new evidence
    # A memory superseded (a move, a new job, a correction) takes the observations written from it along: they are
    # superseded in the same transaction and written again from what is current.
    detector = SupersessionDetector(store, index, settings.supersession)
    retainer.detect_supersessions = detector

    def follow(bank_id: str, changes: list[Supersession]) -> tuple[list[Supersession], list[Job]]:
        facts = detector.follow(bank_id, changes)  # facts of a superseded message, then what rests on either
        more, jobs = observations.follow(bank_id, [*changes, *facts])
        return [*facts, *more], jobs

    retainer.follow_supersessions = follow
    # The opinion job writes to the store directly (one transaction per opinion), so those writes pass the gate too.
    opinion_store = cast(ReinforceStore, GatedWrites(store, gate, ["apply_opinion_update"]))
    reinforcer = OpinionReinforcer(opinion_store, index, gate.unless_closed(vectors.reindex), llm, settings.cara, owner)
    handlers: dict[str, Handler] = {RETAIN: jobs.run_retain, FACTS: facts.run, REFLECT: jobs.run_reflect,
                                    OBSERVATIONS: observations.run, OPINIONS: reinforcer.run}
    worker = Worker(store, handlers, owner=owner, gate=gate)
    forgetter = ForgetPipeline(store, vectors, rebuild_job, settings)
    facts.delete_units = forgetter.delete_units  # a fact citing a message forgotten during its job goes too
    return Engine(store=store, index=index, embedder=embedder, settings=settings, vectors=vectors,
                  retainer=retainer, recaller=recaller, reflector=reflector,
                  forgetter=forgetter,
                  corrector=Corrector(store, retainer.store_facts, lambda: retainer.raw_extractor),
                  jobs=jobs, facts=facts, observations=observations, reinforcer=reinforcer, worker=worker, llm=llm,
                  gate=gate)
