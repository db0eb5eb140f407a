"""Retain pipeline, raw first and facts later: store document -> raw units -> commit -> (job) LLM facts added.

The raw document is committed first, so nothing is lost whatever fails later. Every message then becomes a
raw unit at once (entities by NER, time from the text, embedding, links), committed to both stores, and the
call returns. With ``extract=True`` the same graph transaction queues a durable job (``fact_job``) that asks
the LLM for narrative facts and *adds* them beside the raw units, each citing the raw units it came from
(``Memory.cites``); nothing raw is replaced or hidden. A process that dies mid-retain leaves the document
``extracting`` under its lease, and the next process to open the store resumes it. A retain returns only
after both stores hold the new units. The commit order makes every crash point safe: the new vectors are
written first (marked in the graph store, so a crash leaves no untracked vector), then one graph transaction
swaps the document's old units for the new ones (and queues the facts job), then the old vectors are removed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import numpy as np

from ..config import Settings
from ..embedders import Embedder
from ..errors import ClosedError, ConflictError, EmptyExtractionError, ExtractionError, HindsightError, StoreError
from ..extract.base import ExtractedFact, Extractor, ExtractorWithWork
from ..models import (
    FACT_CITES_KEY,
    SUPERSESSION_KEY,
    Document,
    DocumentKind,
    DocumentStatus,
    Job,
    Memory,
    Message,
    OpinionEvent,
    RetainResult,
    utcnow,
)
from ..stores.base import (
    BankStore,
    DocumentStore,
    EntityStore,
    Mention,
    Supersession,
    UnitBatch,
    UnitStore,
    VectorIndex,
    VectorMarks,
)
from ..text.inputs import RetainInput, date_messages, normalise_messages, parse_timestamp, raw_json
from ..text.passages import split_long_messages
from ..vectors.unit_text import embedding_texts, search_contexts, timed_text, vector_metadata
from ..vectors.vector_sync import VectorSync
from .entities import EntityResolver
from .links import build_links
from .options import RetainOptions
from .restated import restated

log = logging.getLogger(__name__)

FACTS = "facts"
"""Job kind: the LLM's facts of a document whose raw units are stored (``fact_job.FactJob``)."""


class RetainStore(DocumentStore, UnitStore, EntityStore, VectorMarks, BankStore, Protocol):
    """What retain writes through: the raw document, units with their entities and links, and vector marks."""


class FactWriter(Protocol):
    """Writes facts of a (stored or synthetic) document as memory units: how reflect stores opinions and the
    observation job stores summaries (``RetainPipeline.store_facts``)."""

    def __call__(
        self,
        doc: Document,
        facts: list[ExtractedFact],
        *,
        metadata: dict[str, Any] | None = None,
        opinion_events: Callable[[list[Memory]], list[OpinionEvent]] | None = None,
    ) -> RetainResult:
        """Resolve, embed, link and commit ``facts``; units written before for ``doc.id`` are replaced."""
        ...


FollowHook = Callable[[str, list[Supersession]], tuple[list[Supersession], list[Job]]]
"""(bank, supersessions) -> the further supersessions and jobs they imply."""


class SupersessionHook(Protocol):
    """Finds the earlier memories that new units supersede (``retain.supersede.SupersessionDetector``)."""

    def __call__(self, bank_id: str, units: Sequence[Memory], facts: Sequence[ExtractedFact],
                 vectors: np.ndarray) -> list[Supersession]:
        """The supersessions to record with the units (none when nothing changed)."""
        ...


class RetainPipeline:
    """Runs retain for any bank of one ``Hindsight`` instance."""

    def __init__(
        self,
        store: RetainStore,
        index: VectorIndex,
        embedder: Embedder,
        settings: Settings,
        raw_extractor: Extractor,
        llm_extractor: Callable[[], Extractor],
        on_retained: Callable[[RetainResult], object] | None = None,
        vectors: VectorSync | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.vectors = vectors or VectorSync(store, index, embedder, settings, None)
        self.raw_extractor = raw_extractor
        self._llm_extractor = llm_extractor
        # Called after a retain committed with background work wanted (queues observations, opinions).
        self.on_retained = on_retained
        # Wakes the worker after a commit queued the facts job.
        self.notify: Callable[[], None] = lambda: None
        # Every commit runs inside it: the engine's ``CommitGate.commit`` (no commit after ``Hindsight.close``).
        self.commit_gate: Callable[[], AbstractContextManager[object]] = nullcontext
        self.resolver = EntityResolver(store, settings.entities)
        # Finds the earlier memories new units supersede (``retain.supersede``); None: no detection.
        self.detect_supersessions: SupersessionHook | None = None
        # What supersessions imply beyond the memories (observations resting on them): more supersessions and jobs
        # recorded in the same transaction (``ObservationWriter.follow``).
        self.follow_supersessions: FollowHook | None = None
        self._bank_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _lock(self, bank_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._bank_locks.setdefault(bank_id, threading.Lock())

    # phases --------------------------------------------------------------------------------------
    def prepare(
        self, bank_id: str, content: RetainInput, options: RetainOptions, *, deferred: bool = False
    ) -> tuple[Document, list[Message], list[str]]:
        """Validate the input and durably store the raw document before anything can fail.

        The document records what kind of input it was and how it is retained (``RetainOptions.recorded``:
        extract, background, metadata), and is held by this process's lease while it is extracted (``deferred``: pending
        until its job runs), so that a process dying half way leaves something the next one can resume.
        """
        warnings: list[str] = []
        given = parse_timestamp(options.timestamp)
        messages, _ = normalise_messages(content, given, warnings, self.settings.max_document_chars,
                                         self.settings.max_messages_per_retain)
        # A message with no time of its own (and none given) is dated by the date line it opens with, else now; a
        # text is the one message it becomes, so its date line is the document's time (the facts job reads it).
        now = utcnow()
        messages = date_messages(messages, now)
        when = given or (messages[0].timestamp if isinstance(content, str) else None) or now
        doc = Document(
            id=options.document_id or str(uuid.uuid4()),
            bank_id=bank_id,
            content=raw_json(messages, content),
            context=options.context,
            timestamp=when,
            metadata=dict(options.document_metadata or {}),
            kind=DocumentKind.TEXT if isinstance(content, str) else DocumentKind.MESSAGES,
            options=options.recorded(),
            status=DocumentStatus.PENDING if deferred else DocumentStatus.EXTRACTING,
            owner=self.vectors.owner,
            revision=uuid.uuid4().hex,
        )
        self.store.put_document(doc)
        return doc, messages, warnings

    def fail(self, doc: Document, exc: BaseException) -> None:
        """Record why extraction failed on the kept document (a store that fails here too is only logged: the
        document stays held by this process's lease and is resumed later)."""
        if isinstance(exc, ConflictError | ClosedError):
            return  # a newer retain of the document owns it now, or closing released it to the next process
        try:
            # Only the revision this retain stored: a newer one in progress must not be marked failed.
            with self.commit_gate():
                self.store.set_document_status(doc.bank_id, doc.id, DocumentStatus.FAILED,
                                               f"{type(exc).__name__}: {exc}"[:4000], revision=doc.revision)
        except ClosedError:
            return
        except Exception as store_exc:
            log.error("could not mark document %r failed: %s", doc.id, store_exc)

    def check_facts(self, doc: Document, messages: list[Message], facts: list[ExtractedFact]) -> None:
        """Never accept zero facts from non-empty input."""
        if not facts and any(m.text.strip() for m in messages):
            raise EmptyExtractionError(
                f"extraction produced no facts from document {doc.id!r}; the raw document is kept",
                document_id=doc.id,
            )

    def store_facts(
        self,
        doc: Document,
        facts: list[ExtractedFact],
        warnings: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        timings: dict[str, float] | None = None,
        vectors: np.ndarray | None = None,
        opinion_events: Callable[[list[Memory]], list[OpinionEvent]] | None = None,
        revision: str | None = None,
        *,
        jobs: Sequence[Job] = (),
        cites: Sequence[list[str]] | None = None,
        supersedes: Sequence[tuple[int, str, dict[str, Any]]] = (),
    ) -> RetainResult:
        """Resolve, embed, link and write facts of ``doc`` (stored or not: reflect and background work write
        opinions and observations through here too). Units previously written for ``doc.id`` are replaced in
        the same graph transaction that adds the new ones; with ``cites`` (the raw unit ids each fact cites:
        the LLM facts added beside a document's raw units) only the document's earlier facts are. ``jobs`` are
        queued in that transaction; ``opinion_events(units)`` gives history events committed with the units.
        ``supersedes`` holds (index of a fact, id of the memory it supersedes, how it was decided): recorded in the
        same transaction, beside the supersessions the ``detect_supersessions`` hook finds for the new units."""
        bank_id = doc.bank_id
        timings = {} if timings is None else timings
        with self._lock(bank_id):
            t = time.perf_counter()
            old = self._replaced(doc, facts_only=cites is not None)
            units = [self._unit(bank_id, doc, fact, metadata) for fact in facts]
            for unit, cited in zip(units, cites or (), strict=False):
                unit.metadata[FACT_CITES_KEY] = list(cited)
            vectors = self._vectors(units, vectors, timings)
            citations: list[tuple[str, list[str]]] = []
            if cites is not None and units:
                # A fact the bank already holds (from another document) gains these citations instead of a twin.
                again = restated(self.store, self.index, bank_id, doc.id, units, facts, vectors)
                if again:
                    citations = [(held, list(cites[i])) for i, held in again.items()]
                    keep = [i for i in range(len(units)) if i not in again]
                    units, facts = [units[i] for i in keep], [facts[i] for i in keep]
                    vectors = np.asarray(vectors)[keep]
            t = time.perf_counter()
            resolution = self.resolver.resolve(bank_id, facts, [u.id for u in units])
            timings["resolve_ms"] = _ms(t)
            t = time.perf_counter()
            links = build_links(bank_id, units, facts, vectors, self.store, self.index, self.settings.links)
            timings["link_ms"] = _ms(t)
            changes = [Supersession(old, units[i].id, units[i].mentioned_at or doc.timestamp or utcnow(), how)
                       for i, old, how in supersedes]
            changes += self._kept_corrections(bank_id, old, units)
            if self.detect_supersessions is not None and units:
                t = time.perf_counter()
                changes += self.detect_supersessions(bank_id, units, facts, vectors)
                timings["supersede_ms"] = _ms(t)
            follow_jobs: list[Job] = []
            if changes and self.follow_supersessions is not None:
                more, follow_jobs = self.follow_supersessions(bank_id, changes)
                changes += more

            t = time.perf_counter()
            batch = UnitBatch(
                units=units,
                positions={u.id: f.position for u, f in zip(units, facts, strict=True)},
                contexts=search_contexts(units),
                new_entities=resolution.new_entities,
                updated_entities=resolution.updated_entities,
                mentions=resolution.mentions,
                links=links,
                replaces=old,
                opinion_events=opinion_events(units) if opinion_events is not None else [],
                document_id=doc.id,
                revision=revision,
                jobs=[*jobs, *follow_jobs],
                supersedes=changes,
                citations=citations,
            )
            names = self._commit(bank_id, doc.id, batch, vectors)
            _name_entities(units, resolution.mentions, names)
            timings["commit_ms"] = _ms(t)
        return RetainResult(bank_id=bank_id, document_id=doc.id, memories=units, links=len(links),
                            entities=sorted({n for u in units for n in u.entities}), warnings=warnings or [],
                            timings_ms=timings, restated=len(citations))

    def _kept_corrections(self, bank_id: str, replaced: list[str], units: list[Memory]) -> list[Supersession]:
        """A re-retained document stays corrected: a replaced memory that a correction superseded hands that
        supersession to the new memory of the same message and text (the correction lives under its own document,
        so it outlives the replace; without this the restated wrong memory would be current again)."""
        if not replaced or not units:
            return []
        out = []
        for m in self.store.get_units(bank_id, replaced):
            how = m.metadata.get(SUPERSESSION_KEY)
            if m.superseded_by is None or not isinstance(how, dict) or how.get("by") != "correction":
                continue
            twin = next((u for u in units if u.text == m.text and list(u.sources) == list(m.sources)), None)
            if twin is not None:
                out.append(Supersession(twin.id, m.superseded_by, m.valid_until or utcnow(),
                                        {**how, "carried_from": m.id}))
        return out

    def _replaced(self, doc: Document, *, facts_only: bool) -> list[str]:
        """The units a new write of ``doc`` replaces: all of them, or (facts beside raw units) its facts only."""
        old = self.store.units_of_document(doc.bank_id, doc.id)
        if facts_only:
            old = [u.id for u in self.store.get_units(doc.bank_id, old) if u.cites is not None]
        return old

    def _vectors(self, units: list[Memory], given: np.ndarray | None, timings: dict[str, float]) -> np.ndarray:
        """The units' vectors: those computed alongside extraction when they match, else embedded now."""
        if not units:
            return np.zeros((0, 0), dtype=np.float32)
        if given is not None and len(given) == len(units):
            return given
        t = time.perf_counter()
        vectors = self.embedder.embed(embedding_texts(units, self.settings.embed_time_reference,
                                                      self.settings.embed_reply_context))
        timings["embed_ms"] = _ms(t)
        return vectors

    def _commit(self, bank_id: str, document_id: str, batch: UnitBatch, vectors: np.ndarray) -> dict[str, str]:
        """Vectors first (marked), then the graph swap in one transaction, then the old vectors go."""
        owner = self.vectors.owner
        new_ids = [u.id for u in batch.units]
        with self.commit_gate(), self.vectors.hold(bank_id, [*new_ids, *batch.replaces]):
            self.store.mark_vectors(bank_id, new_ids, owner)
            try:
                self.index.upsert(bank_id, new_ids, vectors, [vector_metadata(u) for u in batch.units])
                names = self.store.add_units(bank_id, batch, owner=owner)
            except BaseException as exc:
                if isinstance(exc, Exception) and self._stood(bank_id, new_ids):
                    # The commit went through and only its answer was lost (a connection dropped after it): the new
                    # memories stand, so their vectors stay and the replaced ones go; the caller still hears of it.
                    self.vectors.finish_delete(bank_id, batch.replaces)
                    if isinstance(exc, HindsightError):
                        raise
                    raise StoreError(f"storing document {document_id!r}: the store committed but its answer was "
                                     f"lost: {exc}") from exc
                # Nothing of the graph changed: the old memories stand; the new vectors must not outlive this.
                self.vectors.undo_upsert(bank_id, new_ids)
                if isinstance(exc, HindsightError) or not isinstance(exc, Exception):
                    raise
                raise StoreError(f"storing document {document_id!r} failed; nothing was changed: {exc}") from exc
            self.vectors.finish_delete(bank_id, batch.replaces)
        return names

    def _stood(self, bank_id: str, new_ids: list[str]) -> bool:
        """Whether a graph write that raised committed anyway (its first new memory is stored); False when the store
        cannot say (the vectors are then undone, and the next open's sync restores what the graph holds)."""
        try:
            return bool(new_ids) and bool(self.store.get_units(bank_id, new_ids[:1]))
        except Exception:
            return False

    @staticmethod
    def _unit(bank_id: str, doc: Document, fact: ExtractedFact, metadata: dict[str, Any] | None) -> Memory:
        meta = dict(metadata or {})
        if doc.context:
            meta.setdefault("context", doc.context)
        return Memory(
            id=str(uuid.uuid4()),
            bank_id=bank_id,
            text=fact.text,
            network=fact.network,
            occurred_start=fact.occurred_start,
            occurred_end=fact.occurred_end or fact.occurred_start,
            mentioned_at=fact.mentioned_at or doc.timestamp,
            confidence=fact.confidence,
            sources=fact.sources,
            document_id=doc.id,
            metadata=meta,
        )

    def extract(self, doc: Document, messages: list[Message]) -> tuple[list[ExtractedFact], np.ndarray | None]:
        """The raw units of the messages and their vectors: embedded while NER runs beside it."""
        when = doc.timestamp or utcnow()
        extractor = self.raw_extractor
        if not isinstance(extractor, ExtractorWithWork):
            return extractor.extract(messages, document_time=when, context=doc.context), None
        with_time, reply = self.settings.embed_time_reference, self.settings.embed_reply_context
        return extractor.extract_alongside(
            messages,
            # As store_facts would embed them: the unit's time is occurred_start, else mentioned_at, else the doc's;
            # each fact with the one before it (a reply with its question).
            lambda facts: self.embedder.embed([
                timed_text(f.text, f.occurred_start or f.mentioned_at or doc.timestamp, with_time,
                           facts[i - 1].text if reply and i > 0 else None)
                for i, f in enumerate(facts)
            ]),
            document_time=when, context=doc.context,
        )

    def extract_facts(self, doc: Document, messages: list[Message]) -> list[ExtractedFact]:
        """The LLM's narrative facts of the messages (the facts job calls this; retain never waits for it)."""
        return self._llm_extractor().extract(messages, document_time=doc.timestamp or utcnow(), context=doc.context)

    def store_raw(
        self, doc: Document, messages: list[Message], warnings: list[str], metadata: dict[str, Any] | None,
        extract: bool, background: bool | None,
    ) -> RetainResult:
        """Every message as a raw unit (a long text or message as passages: ``passages``), committed at the
        document's revision; with ``extract`` the facts job is queued in the same transaction. Failures mark the
        document failed and are raised."""
        timings: dict[str, float] = {}
        try:
            messages = split_long_messages(messages, self.settings.passage_chars, text=doc.kind == DocumentKind.TEXT)
            t = time.perf_counter()
            facts, vectors = self.extract(doc, messages)
            timings["extract_embed_ms"] = _ms(t)
            self.check_facts(doc, messages, facts)
            jobs = [facts_job(doc, background)] if extract else []
            result = self.store_facts(doc, facts, warnings, metadata, timings, vectors, revision=doc.revision,
                                      jobs=jobs)
        except BaseException as exc:
            self.fail(doc, exc)
            if isinstance(exc, HindsightError) or not isinstance(exc, Exception):
                raise  # ours, or an interrupt or exit (Ctrl-C, SIGTERM as SystemExit): never wrapped
            raise ExtractionError(f"retain of document {doc.id!r} failed: {exc}", document_id=doc.id) from exc
        if jobs:
            result.job_id = jobs[0].id
            self.notify()
        # Background work (observations, opinions) follows the facts when there will be any, else the raw units.
        self._after(result, bool(background) and not extract)
        return result

    # entry points --------------------------------------------------------------------------------
    def retain(self, bank_id: str, content: RetainInput, options: RetainOptions | None = None) -> RetainResult:
        """Retain synchronously; see ``Bank.retain``. Returns once the raw units are committed."""
        options = options or RetainOptions()
        doc, messages, warnings = self.prepare(bank_id, content, options)
        return self.store_raw(doc, messages, warnings, options.metadata, options.extract, options.runs_background)

    def retain_stored(self, doc: Document) -> RetainResult | None:
        """Retain a document as stored (deferred, or resumed after a process died), without storing it again.

        The document is claimed at the revision read (``extracting`` under this process's lease); if it was
        stored again meanwhile, the newer retain owns it and None is returned. Options come from the
        document's record. A failure marks this revision failed and is raised (the worker retries).
        """
        recorded = doc.options
        options = RetainOptions(extract=bool(recorded.get("extract", True)), metadata=recorded.get("metadata") or None,
                                background=None if recorded.get("background") is None else bool(recorded["background"]))
        if doc.revision is None:  # stored before revisions existed: give it one to commit onto
            doc = doc.model_copy(update={"revision": uuid.uuid4().hex})
            self.store.put_document(doc)
        if not self.store.set_document_status(doc.bank_id, doc.id, DocumentStatus.EXTRACTING,
                                              revision=doc.revision, owner=self.vectors.owner):
            return None
        from ..text.inputs import document_input

        warnings: list[str] = []
        try:
            messages, _ = normalise_messages(document_input(doc), doc.timestamp, warnings,
                                             self.settings.max_document_chars)
        except BaseException as exc:
            self.fail(doc, exc)
            raise
        try:
            return self.store_raw(doc, messages, warnings, options.metadata, options.extract,
                                  options.runs_background)
        except ConflictError:
            return None

    def _after(self, result: RetainResult, background: bool) -> None:
        if background and self.on_retained is not None:
            self.on_retained(result)

    async def aretain(
        self, bank_id: str, content: RetainInput, options: RetainOptions | None = None
    ) -> RetainResult:
        """Async twin: no model is called (the facts come from a job), so storage and embedding run in a
        worker thread and the event loop is never blocked."""
        return await asyncio.to_thread(self.retain, bank_id, content, options)


def facts_job(doc: Document, background: bool | None) -> Job:
    """The job that adds the LLM's facts of ``doc`` at its current revision (then its background work)."""
    return Job(id=str(uuid.uuid4()), bank_id=doc.bank_id, kind=FACTS,
               payload={"document_id": doc.id, "revision": doc.revision, "background": bool(background)})


def _name_entities(units: list[Memory], mentions: Sequence[Mention], names: dict[str, str]) -> None:
    """Each unit's entity names as stored: a mention of an entity another writer created meanwhile names the
    stored entity."""
    by_unit: dict[str, list[str]] = {u.id: [] for u in units}
    for m in mentions:
        by_unit[m.unit_id].append(names.get(m.entity_id, m.entity_id))
    for unit in units:
        unit.entities = by_unit[unit.id]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
