"""The observation job (paper section 3): write an entity's observation from what was said about it.

**Grounded.** An observation rests on the raw messages about its entity (the raw units that mention it and those its
facts cite), each with its real speaker and date, not on the facts alone: a fact is the model's reading of a message,
and a wrong one ("Kevin has a cat named Luna", from Paola's "my cat Luna") made a wrong observation look supported.
The model is shown those messages, cut to the sentences that can speak of the entity
(:func:`~hindsight_core.observations.support.material_about`), and the facts about the entity that the
messages bear out (:func:`~hindsight_core.observations.support.grounded_facts`); each sentence of its summary
is then kept only if it is whole, about the entity, and supported by the messages with each speaker's "I" kept to
that speaker (:func:`~hindsight_core.observations.support.check_grounded`).

**Bounded.** After a retain, :meth:`ObservationWriter.plan` queues work only for entities with no observation job
queued (one job per entity at a time: a retain touching an entity whose job waits adds nothing) and with enough new
evidence: ``observation_first_evidence`` raw messages and facts about it for the first observation,
``observation_new_evidence`` more since the last one was written (or tried) for the next. The job checks the same
again when it runs and returns what it cost (``Job.result``: model calls and seconds), which each observation also
records (``metadata["cost"]``).

The observation is stored under one synthetic document per entity, so writing again replaces the previous one; it
lists the messages it rests on and carries their time, never the wall clock (an observation of a 2023 conversation
is dated 2023, and it does not move the entity's "last seen" to today).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from ..extract.base import ExtractedEntity, ExtractedFact
from ..llm.base import LLM, ChatMessage
from ..models import SUPERSEDED_BY_KEY, Document, Entity, Job, JobStatus, Memory, Network
from ..retain.pipeline import FactWriter
from ..stores.base import EntityStore, JobQueue, Supersession, UnitStore
from .extract import extractive_check
from .summary import summarize_entity
from .support import SupportCheck, check_grounded, grounded_facts, material_about

FACT_NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""Observations and opinions are written from these networks only (never from other observations)."""

OBSERVATIONS = "observations"
"""The job kind (``runtime.jobs.OBSERVATIONS`` names the same)."""

SUPPORT_KEY = "support"
"""Observation metadata: for each kept sentence, the positions in ``metadata["facts"]`` of the messages it rests on
(positions, not ids, so that the ids are remapped in one place when a bank is imported)."""
EVIDENCE_KEY = "evidence"
"""Observation metadata: how many raw messages and facts mentioned the entity when it was written."""
COST_KEY = "cost"
"""Observation metadata: ``{"calls": model calls, "seconds": time}`` of the job run that wrote it."""

T = TypeVar("T", bound=BaseModel)

ObservationMode = Literal["extractive", "model"]
"""How an observation is written: from the entity's checked facts (no model call) or by the model."""


def rebuild_job(bank_id: str, entity_ids: list[str]) -> Job:
    """The job that writes the entities' observations again, due or not: what one rested on was forgotten or
    superseded (queued in the same transaction as that change)."""
    return Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=OBSERVATIONS,
               payload={"entity_ids": list(dict.fromkeys(entity_ids)), "rebuild": True})


def observation_document_id(entity_id: str) -> str:
    """Observations of an entity live under one synthetic document id, so regenerating replaces them."""
    return f"observation:{entity_id}"


def observation_of(store: UnitStore, bank_id: str, entity_id: str) -> Memory | None:
    """The current observation of the entity ``entity_id`` (an id: names can be ambiguous, ids are not), or None:
    the one lookup that ``Bank.observation``, the explorer and the observation job (its previous summary) share."""
    ids = store.units_of_document(bank_id, observation_document_id(entity_id))
    # A superseded summary is history: until its rebuild writes a new one (or when nothing current supports one),
    # the entity has no current observation, rather than one that states the old value as the present.
    units = [u for u in (store.get_units(bank_id, ids) if ids else []) if u.superseded_by is None]
    return units[0] if units else None


def fact_time(memory: Memory) -> datetime:
    """When a fact happened or was said: its occurrence start, else its mention time, else when it was stored."""
    return memory.occurred_start or memory.mentioned_at or memory.created_at


def said_time(memory: Memory) -> datetime:
    """When a message was said (its mention time), else when what it tells happened, else when it was stored."""
    return memory.mentioned_at or memory.occurred_start or memory.created_at


def fact_line(memory: Memory) -> str:
    """A memory as the summary prompt and the check see it: its text after its date (``[8 May 2023]``), so that the
    model can tell newer from older and a date it repeats is one the memories state. A raw message reads
    ``[8 May 2023] Paola: text``."""
    when = fact_time(memory)
    return f"[{when.day} {when:%B %Y}] {memory.text}"


def message_line(memory: Memory) -> str:
    """A raw message as the summary prompt and the check see it: ``[8 May 2023] Paola: text``, dated when it was
    said (its "yesterday" and "on Tuesday" read from that day)."""
    when = said_time(memory)
    return f"[{when.day} {when:%B %Y}] {memory.text}"


class ObservationStore(UnitStore, EntityStore, JobQueue, Protocol):
    """What the observation job reads: entities, the units that mention them, and the queue (to coalesce jobs)."""


@dataclass(frozen=True)
class ObservationDraft:
    """An entity's summary before it is stored: the material shown, the model's answer and the verdicts."""

    entity: Entity
    messages: list[Memory]
    """The raw messages about the entity, newest first: what the summary is checked against (and, cut to what
    speaks of the entity, shown to the model)."""
    facts: list[Memory]
    """The entity's facts the messages bear out, newest first (shown to the model)."""
    dropped_facts: list[Memory]
    """The entity's facts the messages do not bear out (not shown)."""
    summary: str
    """The model's answer as it came."""
    check: SupportCheck
    """Each sentence of ``summary`` with its verdict; ``check.text`` is what would be stored."""
    evidence: int = 0
    """Raw messages and facts mentioning the entity when the draft was made."""
    calls: int = 0
    """Model calls the draft took (a malformed answer is asked again)."""
    seconds: float = 0.0
    """Time the draft took, model and check."""

    def supporting(self) -> list[Memory]:
        """The messages the kept sentences rest on, in the order the check cited them."""
        by_id = {m.id: m for m in self.messages}
        return [by_id[i] for i in self.check.fact_ids if i in by_id]


class _Counted:
    """An ``LLM`` that counts the calls made through it."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.calls = 0

    @property
    def name(self) -> str:
        return self.llm.name

    def generate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                 temperature: float = 0.0) -> T:
        self.calls += 1
        return self.llm.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)

    async def agenerate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                        temperature: float = 0.0) -> T:
        self.calls += 1
        return await self.llm.agenerate(messages, schema, max_tokens=max_tokens, temperature=temperature)


@dataclass
class _Run:
    """What one job run did: for ``Job.result``."""

    entities: int = 0
    written: int = 0
    not_written: int = 0
    skipped: int = 0
    calls: int = 0
    seconds: float = 0.0
    sentences: int = 0
    kept: int = 0
    facts_dropped: int = 0
    errors: list[str] = field(default_factory=list)

    def result(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "errors"}
        out["seconds"] = round(self.seconds, 2)
        return out


class ObservationWriter:
    """Writes entity observations from the raw messages about them, keeping only grounded sentences."""

    def __init__(
        self,
        store: ObservationStore,
        write_facts: FactWriter,
        llm: Callable[[], LLM],
        max_facts: int = 40,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
        *,
        first_evidence: int = 1,
        new_evidence: int = 1,
        mode: ObservationMode = "extractive",
    ) -> None:
        self.store = store
        self.write_facts = write_facts
        self._llm = llm
        self.max_facts = max_facts
        # Without an embedder the check uses word overlap alone (stricter: paraphrases are dropped).
        self.embed = embed
        self.first_evidence = first_evidence
        self.new_evidence = new_evidence
        # "extractive": the observation is the entity's checked facts (no model call); "model": a written summary.
        self.mode = mode
        # (bank, entity) -> evidence when a draft was last tried: a try that kept nothing writes no observation to
        # record it in, and must not be repeated at every retain (in memory: after a restart it is tried once more).
        self._tried: dict[tuple[str, str], int] = {}

    # --- what to queue -------------------------------------------------------------------------------------------
    def plan(self, bank_id: str, entity_ids: Sequence[str]) -> list[Job]:
        """The observation job to queue after a retain that touched ``entity_ids``: the entities with no observation
        job queued and with enough new evidence (see the module), in one job; none when no entity qualifies."""
        waiting = self._queued_entities(bank_id)
        due = [e for e in dict.fromkeys(entity_ids) if e not in waiting and self.due(bank_id, e)[0]]
        if not due:
            return []
        return [Job(id=str(uuid.uuid4()), bank_id=bank_id, kind=OBSERVATIONS, payload={"entity_ids": due})]

    def _queued_entities(self, bank_id: str) -> set[str]:
        """Entities that an observation job still waiting in the queue will write."""
        out: set[str] = set()
        offset, page = 0, 500
        while True:
            jobs = self.store.page_jobs(bank_id, JobStatus.QUEUED, limit=page, offset=offset)
            out.update(str(e) for j in jobs if j.kind == OBSERVATIONS for e in j.payload.get("entity_ids", []))
            if len(jobs) < page:
                return out
            offset += page

    def evidence(self, bank_id: str, entity_id: str) -> int:
        """Raw messages and facts that mention the entity (observations and opinions are not evidence)."""
        return sum(self.store.count_units(bank_id, network=n, entity_id=entity_id) for n in FACT_NETWORKS)

    def due(self, bank_id: str, entity_id: str) -> tuple[bool, int]:
        """Whether the entity's observation should be written now, and its evidence count: a first one once
        ``first_evidence`` memories mention it, a new one once ``new_evidence`` more do than when the last one was
        written or tried."""
        count = self.evidence(bank_id, entity_id)
        previous = self._previous(bank_id, entity_id)
        if previous is not None:
            seen = previous.metadata.get(EVIDENCE_KEY)
            base = int(seen) if isinstance(seen, int | float) else 0
        else:
            base = -1
        base = max(base, self._tried.get((bank_id, entity_id), -1))
        if base < 0:
            return count >= self.first_evidence, count
        return count - base >= self.new_evidence, count

    def _previous(self, bank_id: str, entity_id: str) -> Memory | None:
        return observation_of(self.store, bank_id, entity_id)

    def follow(self, bank_id: str, changes: Sequence[Supersession]) -> tuple[list[Supersession], list[Job]]:
        """What supersessions mean for observations: each observation written from a memory now superseded is
        superseded too (by the same memory, so recall puts it after what is current), and one job writes those
        entities' observations again from what is current. Recorded in the same transaction as ``changes``."""
        old = {c.old_id: c for c in changes}
        if not old:
            return [], []
        extra: list[Supersession] = []
        entities: list[str] = []
        for uid, meta in self.store.units_with_references(bank_id):
            basis = meta.get("facts")
            entity = meta.get("entity_id")
            if not entity or not isinstance(basis, list) or meta.get(SUPERSEDED_BY_KEY):
                continue
            hit = next((old[str(b)] for b in basis if str(b) in old), None)
            if hit is None:
                continue
            extra.append(Supersession(uid, hit.new_id, hit.valid_until, {"by": "rests on", "memory": hit.old_id}))
            entities.append(str(entity))
        return extra, ([rebuild_job(bank_id, entities)] if entities else [])

    # --- the job ---------------------------------------------------------------------------------------------------
    def run(self, job: Job) -> dict[str, Any]:
        """Job handler: write the observation of each entity in ``job.payload["entity_ids"]`` that is still due.
        Returns what it did and cost (``Job.result``): entities, written, not_written (nothing supported), skipped
        (not due), calls, seconds, sentences, kept, facts_dropped."""
        run = _Run()
        for entity_id in job.payload.get("entity_ids", []):
            run.entities += 1
            if not job.payload.get("rebuild") and not self.due(job.bank_id, str(entity_id))[0]:
                run.skipped += 1
                continue
            draft = self.draft(job.bank_id, str(entity_id))
            if draft is None:
                run.skipped += 1
                continue
            run.calls += draft.calls
            run.seconds += draft.seconds
            run.sentences += len(draft.check.sentences)
            run.kept += len(draft.check.kept)
            run.facts_dropped += len(draft.dropped_facts)
            written = self.write(job.bank_id, draft)
            run.written += written is not None
            run.not_written += written is None
        return run.result()

    def draft(self, bank_id: str, entity_id: str) -> ObservationDraft | None:
        """Ask the model for the entity's summary and check it; None when the entity is gone or nothing about it is
        left to summarise. Records the try once the model has answered (see :meth:`due`)."""
        began = time.perf_counter()
        store = self.store
        entity = next(iter(store.get_entities(bank_id, [entity_id])), None)
        if entity is None:
            return None
        evidence = self.evidence(bank_id, entity_id)
        messages, facts, mentioned = self._material(bank_id, entity_id)
        if not messages:
            self._tried[(bank_id, entity_id)] = evidence
            return None
        lines = [(m.id, message_line(m)) for m in messages]
        aliases = list(entity.aliases)
        # A message is about the entity when it mentions it, or when a fact about the entity that the messages bear
        # out cites it (the fact judged with every cited message in view; a wrong fact's citation adds nothing).
        cited = {c for f in facts for c in (f.cites or [])}
        kept, dropped = grounded_facts([(f.id, f.text) for f in facts], lines, entity.name, aliases=aliases,
                                       about_ids=mentioned | cited, embed=self.embed)
        by_id = {f.id: f for f in facts}
        shown_facts = [by_id[i] for i, _ in kept]
        about = mentioned | {c for f in shown_facts for c in (f.cites or [])}
        shown = material_about(lines, entity.name, aliases=aliases, about_ids=about)
        if not shown and not kept:
            self._tried[(bank_id, entity_id)] = evidence
            return None
        if self.mode == "extractive":
            summary, check = extractive_check([(f.id, f.text) for f in shown_facts], lines, entity.name,
                                              aliases=aliases, about_ids=about, embed=self.embed)
            self._tried[(bank_id, entity_id)] = evidence
            return ObservationDraft(entity, messages, shown_facts, [by_id[i] for i, _ in dropped], summary, check,
                                    evidence, 0, time.perf_counter() - began)
        previous = self._previous(bank_id, entity_id)
        llm = _Counted(self._llm())
        summary = summarize_entity(llm, entity.name, [(f.id, fact_line(f)) for f in shown_facts],
                                   previous=previous.text if previous else None, messages=shown)
        self._tried[(bank_id, entity_id)] = evidence  # answered (a failed call is retried by the worker)
        # own_words: a sentence about a speaker rests on their own "I ..." or on a sentence naming them (dev: the
        # model's kept sentences 56% -> 72% supported, hindsight bench beliefs).
        check = check_grounded(summary, lines, entity.name, aliases=aliases, about_ids=about, embed=self.embed,
                               own_words=True)
        return ObservationDraft(entity, messages, shown_facts, [by_id[i] for i, _ in dropped], summary, check,
                                evidence, llm.calls, time.perf_counter() - began)

    def _material(self, bank_id: str, entity_id: str) -> tuple[list[Memory], list[Memory], set[str]]:
        """The entity's raw messages (those that mention it and those its facts cite) and its facts, each newest
        first and at most ``max_facts``; and the ids of the messages that mention it."""
        store = self.store
        # Newest stored first, a few times more than are shown, then ordered by time.
        ids = [i for n in FACT_NETWORKS
               for i in store.page_units(bank_id, network=n, entity_id=entity_id, limit=4 * self.max_facts)]
        # Only what is current: a superseded memory is history, and a summary must not state it as the present.
        units = [u for u in (store.get_units(bank_id, ids) if ids else []) if u.superseded_by is None]
        raw = [u for u in units if u.cites is None]
        facts = sorted((u for u in units if u.cites is not None), key=fact_time, reverse=True)[: self.max_facts]
        have = {u.id for u in raw}
        cited = list(dict.fromkeys(c for f in facts for c in (f.cites or []) if c not in have))
        raw += [u for u in (store.get_units(bank_id, cited) if cited else [])
                if u.cites is None and u.superseded_by is None]
        raw.sort(key=said_time, reverse=True)
        raw = raw[: self.max_facts]
        return raw, facts, {u.id for u in raw if u.id in have}

    def regenerate(self, bank_id: str, entity_id: str) -> Memory | None:
        """Write (or replace) one entity's observation now, due or not; None when nothing mentions it any more or no
        sentence of the model's summary is supported (then the previous observation, if any, stays)."""
        draft = self.draft(bank_id, entity_id)
        return self.write(bank_id, draft) if draft is not None else None

    def write(self, bank_id: str, draft: ObservationDraft) -> Memory | None:
        """Store the kept sentences of ``draft``, dated by the messages they rest on; None when none was kept."""
        basis = draft.supporting()
        text = draft.check.text
        if not text or not basis:
            return None
        times = [fact_time(m) for m in basis]
        mentioned = [m.mentioned_at or fact_time(m) for m in basis]
        entity = draft.entity
        # Dated by its messages, never now: it spans what it rests on and was "said" when the latest was. The
        # resolver moves an entity's last-seen to a unit's occurrence start: the earliest message, never later.
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
                "dropped": len(draft.check.sentences) - len(draft.check.kept),
                "facts_shown": len(draft.facts), "facts_dropped": len(draft.dropped_facts),
                EVIDENCE_KEY: draft.evidence,
                COST_KEY: {"calls": draft.calls, "seconds": round(draft.seconds, 2)}}
        return self.write_facts(doc, [fact], metadata=meta).memories[0]
