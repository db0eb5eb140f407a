"""A memory bank: the per-bank face of the engine. It validates and delegates; it holds no pipeline logic."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .engine import Engine
from .errors import BankNotFoundError, DocumentNotFoundError, InvalidInputError, LostAnswerError
from .models import (
    AuditEntry,
    BankProfile,
    Disposition,
    Document,
    DocumentStatus,
    Entity,
    Job,
    Memory,
    Network,
    OpinionEvent,
    Recall,
    Reflection,
    RetainResult,
    utcnow,
)
from .observations.job import observation_of
from .opinions.formed import FormedOpinion
from .reflect.profile_merge import amerge_background, merge_background
from .retain.forget import Forgotten
from .retain.options import RetainOptions
from .stores import audit
from .text.inputs import RetainInput, document_input, parse_timestamp
from .validation import Confidence, DispositionArg, Identifier, Seconds, Text, When, Window, public

if TYPE_CHECKING:
    from .portability.exporter import ExportReport
    from .vectors.reembed import ReembedReport


class BankOwner(Protocol):
    """What ``Bank.hindsight`` gives: the ``Hindsight`` that opened the bank, to reach sibling banks by id."""

    def bank(
        self,
        bank_id: str,
        *,
        create: bool = True,
        name: str | None = None,
        background: str | None = None,
        disposition: DispositionArg | None = None,
    ) -> Bank:
        """A bank by id (see ``Hindsight.bank``)."""
        ...

    def banks(self) -> list[BankProfile]:
        """Profiles of every bank."""
        ...


class Bank:
    """A named memory bank. Obtain one with ``Hindsight.bank(bank_id)``."""

    def __init__(self, engine: Engine, bank_id: str, *, owner: BankOwner) -> None:
        self._engine = engine
        self._owner = owner
        self.id = bank_id

    def __repr__(self) -> str:
        return f"Bank({self.id!r})"

    @property
    def hindsight(self) -> BankOwner:
        """The ``Hindsight`` this bank belongs to (to reach sibling banks by id)."""
        return self._owner

    # profile -------------------------------------------------------------------------------------
    @property
    def profile(self) -> BankProfile:
        """Name, background and disposition as stored now."""
        profile = self._engine.store.get_bank(self.id)
        if profile is None:
            raise BankNotFoundError(f"bank {self.id!r} was deleted")
        return profile

    @public
    def set_disposition(self, disposition: DispositionArg) -> BankProfile:
        """Store a new default disposition for reflect."""
        profile = self.profile.model_copy(update={"disposition": Disposition.model_validate(disposition)})
        self._engine.store.update_bank(profile)
        self._audit("set_disposition", summary=profile.disposition.model_dump_json())
        return profile

    @public
    def set_background(self, background: Text) -> BankProfile:
        """Replace the bank's first-person background verbatim."""
        profile = self.profile.model_copy(update={"background": background.strip()})
        self._engine.store.update_bank(profile)
        self._audit("set_background", counts={"characters": len(profile.background)})
        return profile

    # retain --------------------------------------------------------------------------------------
    @public
    def retain(
        self,
        content: RetainInput,
        *,
        timestamp: When = None,
        document_id: Identifier | None = None,
        context: Text | None = None,
        extract: bool = True,
        metadata: dict[str, Any] | None = None,
        background: bool | None = None,
        document_metadata: dict[str, Any] | None = None,
        defer: bool = False,
    ) -> RetainResult:
        """Store ``content`` (text, a message dict, or a list of messages) as memories, raw first, facts later.

        Messages are dicts ``{"speaker"|"role", "text"|"content", "id"?, "timestamp"?}``; message ids
        become each memory's ``sources``. ``timestamp`` is when the content was said or written (default
        now). Every message becomes a memory at once (entities, dates from its words, embedding, links) and the
        call returns when both stores hold them, without waiting for any model. With ``extract=True`` (the
        default) a durable job then asks the LLM for narrative facts and adds them beside the messages, each
        citing the message memories it came from (``Memory.cites``; ``result.job_id`` is that job, ``wait_idle``
        waits for it); nothing raw is replaced, and recall packs a fact and its messages so that they do not
        spend the budget twice. ``extract=False`` makes no model call at all. Re-retaining a ``document_id``
        replaces what it produced before, facts included; ``forget(document_id=...)`` removes both. The raw
        document is stored first and kept even when storing its memories fails (``ExtractionError.document_id``).
        ``background`` (default: same as ``extract``) queues the LLM background work after the facts (entity
        observations and opinion reinforcement; after the messages with ``extract=False``). ``metadata`` is
        copied onto every memory; ``document_metadata`` is kept with the raw document only
        (``Bank.document(id).metadata``). ``defer=True`` returns as soon as the raw document is durably stored:
        even the raw memories come from a background job (result: ``queued=True``, ``job_id``, no memories yet).
        """
        options = RetainOptions(timestamp, document_id, context, extract, metadata, background, document_metadata)
        if defer:
            result = self._engine.jobs.queue_retain(self.id, content, options)
        else:
            result = self._engine.retainer.retain(self.id, content, options)
        return self._audit_retain(result)

    @public
    async def aretain(
        self,
        content: RetainInput,
        *,
        timestamp: When = None,
        document_id: Identifier | None = None,
        context: Text | None = None,
        extract: bool = True,
        metadata: dict[str, Any] | None = None,
        background: bool | None = None,
        document_metadata: dict[str, Any] | None = None,
        defer: bool = False,
    ) -> RetainResult:
        """Async twin of ``retain``."""
        options = RetainOptions(timestamp, document_id, context, extract, metadata, background, document_metadata)
        if defer:
            result = await asyncio.to_thread(self._engine.jobs.queue_retain, self.id, content, options)
        else:
            result = await self._engine.retainer.aretain(self.id, content, options)
        return await asyncio.to_thread(self._audit_retain, result)  # to_thread copies the actor's context

    @public
    def reprocess(self, document_id: Identifier, *, extract: bool = True) -> RetainResult:
        """Extract a stored raw document again (after a failure, or with another extractor)."""
        doc = self.document(document_id)
        return self.retain(document_input(doc), timestamp=doc.timestamp, document_id=doc.id, context=doc.context,
                           extract=extract, document_metadata=doc.metadata)

    # recall --------------------------------------------------------------------------------------
    @public
    def recall(
        self,
        query: Text,
        *,
        budget: int = 2000,
        max_memories: int | None = None,
        networks: Sequence[Network | str] | None = None,
        time_range: Window = None,
        reference_time: When = None,
        trace: bool = False,
        channels: Sequence[str] | None = None,
        as_of: When = None,
        deadline_ms: int | None = None,
    ) -> Recall:
        """Memories relevant to ``query``, best first, as many as fit in ``budget`` tokens.

        ``reference_time`` is "now" for time expressions in the query ("last week"); ``networks`` and
        ``time_range`` filter; ``channels`` picks a subset of semantic/keyword/graph/temporal (ablations);
        ``trace=True`` attaches per-channel ranks, scores and stage timings (and which memories were packed after
        the memory that superseded them). A superseded memory (``Memory.superseded_by``) comes right after the
        memory current in its place, unless the question asks about the past ("before", "used to", a year) or
        ``time_range`` is given. ``as_of`` answers with what the bank held at that time: only what had been said by
        then, and what was current then (``reference_time`` defaults to it). ``deadline_ms`` (1..600,000, default
        none) returns what finished in time: a channel not done by then is left out, a reranker is skipped, packing
        always runs, and ``Recall.cut`` names what was cut.
        """
        return self._engine.recaller.recall(
            self.id, query, budget=budget, max_memories=max_memories, networks=networks, time_range=time_range,
            reference_time=reference_time, trace=trace, channels=channels, as_of=as_of, deadline_ms=deadline_ms,
        )

    @public
    async def arecall(
        self,
        query: Text,
        *,
        budget: int = 2000,
        max_memories: int | None = None,
        networks: Sequence[Network | str] | None = None,
        time_range: Window = None,
        reference_time: When = None,
        trace: bool = False,
        channels: Sequence[str] | None = None,
        as_of: When = None,
        deadline_ms: int | None = None,
    ) -> Recall:
        """Async twin of ``recall``."""
        return await self._engine.recaller.arecall(
            self.id, query, budget=budget, max_memories=max_memories, networks=networks, time_range=time_range,
            reference_time=reference_time, trace=trace, channels=channels, as_of=as_of, deadline_ms=deadline_ms,
        )

    # reflect (CARA) ------------------------------------------------------------------------------
    @public
    def reflect(
        self,
        query: Text,
        *,
        disposition: DispositionArg | None = None,
        budget: int = 2000,
        reference_time: When = None,
    ) -> Reflection:
        """Answer ``query`` from memory in the bank's voice, shaped by its disposition (or ``disposition``).

        Recall runs first; one structured LLM call then answers, cites the recalled memories it relied on
        (``based_on``) and may form opinions, stored in the opinion network with their formation event.
        With nothing relevant in memory it says it does not know (``known=False``) without a model call.
        """
        return self._audit_reflect(self._engine.reflector.reflect(
            self.id, query, disposition=disposition, budget=budget, reference_time=reference_time
        ))

    @public
    async def areflect(
        self,
        query: Text,
        *,
        disposition: DispositionArg | None = None,
        budget: int = 2000,
        reference_time: When = None,
    ) -> Reflection:
        """Async twin of ``reflect``."""
        reflection = await self._engine.reflector.areflect(
            self.id, query, disposition=disposition, budget=budget, reference_time=reference_time
        )
        return await asyncio.to_thread(self._audit_reflect, reflection)

    @public
    def schedule_reflect(
        self,
        query: Text,
        *,
        disposition: DispositionArg | None = None,
        budget: int = 2000,
        reference_time: When = None,
    ) -> Job:
        """Queue a reflect as a durable background job (it forms and stores opinions; the answer is logged).

        For agents that reflect after a conversation without making the user wait; ``wait_idle`` waits.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("reflect needs a non-empty query")
        job = self._engine.jobs.queue_reflect(
            self.id, query, disposition=disposition, budget=budget, reference_time=reference_time
        )
        self._audit("schedule_reflect", summary=f"job {job.id}")
        return job

    @public
    async def aschedule_reflect(self, query: Text, **kwargs: Any) -> Job:
        """Async twin of ``schedule_reflect``."""
        return await asyncio.to_thread(self.schedule_reflect, query, **kwargs)

    @public
    def add_opinion(
        self,
        text: Text,
        confidence: Confidence,
        *,
        entities: Sequence[Text] = (),
        based_on: Sequence[Identifier] = (),
        rationale: Text = "",
    ) -> Memory:
        """Record a belief the agent holds (as reflect does), with its formation event; returns it."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("an opinion needs text")
        try:
            formed = FormedOpinion(text=text, confidence=confidence, entities=list(entities), rationale=rationale)
        except ValueError as exc:
            raise InvalidInputError(f"invalid opinion: {exc}") from exc
        stored = self._engine.reflector.store_opinions(self.id, [formed], list(based_on))
        if not stored:
            raise InvalidInputError("an opinion needs text")
        opinion = stored[0]
        self._audit("add_opinion", memory_ids=[opinion.id], counts={"memories": 1})
        return opinion

    @public
    def correct(self, memory_id: Identifier, text: Text, *, by: Text | None = None) -> Memory:
        """Say that a memory is wrong and what is true instead: ``text`` is stored as a new memory that supersedes
        it (``Memory.superseded_by``; the wrong one keeps its text as history, with ``valid_until`` now), recording
        ``by`` (who corrected it) and when. Returns the new memory; ``MemoryNotFoundError`` for an unknown id."""
        corrected = self._engine.corrector.correct(self.id, memory_id, text, by=by)
        self._audit("correct", memory_ids=[memory_id, corrected.id], counts={"memories": 1},
                    summary="superseded by a correction")
        return corrected

    @public
    async def acorrect(self, memory_id: Identifier, text: Text, *, by: Text | None = None) -> Memory:
        """Async twin of ``correct``."""
        return await asyncio.to_thread(self.correct, memory_id, text, by=by)

    @public
    def opinions(self) -> list[Memory]:
        """The bank's opinions, newest first, with their current confidence."""
        store = self._engine.store
        return store.get_units(self.id, store.units_in_network(self.id, Network.OPINION))

    @public
    def opinion_history(self, opinion_id: Identifier) -> list[OpinionEvent]:
        """How an opinion was formed and every confidence change since, with the evidence memory ids."""
        return self._engine.store.opinion_history(self.id, opinion_id)

    @public
    def update_opinions(self, memory_ids: Sequence[Identifier]) -> list[OpinionEvent]:
        """Let the memories ``memory_ids`` move the opinions they bear on now, and return the history events.

        The same work the background opinion job does after a retain (one model call per related opinion,
        exactly once per opinion and evidence), for callers that retain with ``background=False`` or want
        the result at once. Evidence already applied is skipped, so calling it again changes nothing.
        """
        events = self._engine.reinforcer.apply(self.id, [str(i) for i in memory_ids])
        if events:
            self._audit("update_opinions", memory_ids=list(dict.fromkeys(e.opinion_id for e in events)),
                        counts={"events": len(events)})
        return events

    @public
    async def aupdate_opinions(self, memory_ids: Sequence[Identifier]) -> list[OpinionEvent]:
        """Async twin of ``update_opinions``."""
        return await asyncio.to_thread(self.update_opinions, memory_ids)

    @public
    def observation(self, entity: Text) -> Memory | None:
        """The current observation (preference-neutral summary) of an entity, or None."""
        store = self._engine.store
        found = store.find_entity(self.id, entity)
        return None if found is None else observation_of(store, self.id, found.id)

    @public
    def merge_background(self, snippet: Text) -> BankProfile:
        """Merge a snippet into the first-person background (the new wins conflicts) and store it."""
        if not isinstance(snippet, str) or not snippet.strip():
            raise InvalidInputError("background snippet is empty")
        profile = self.profile
        merged = merge_background(self._engine.llm(), profile.background, snippet)
        return self.set_background(merged)

    @public
    async def amerge_background(self, snippet: Text) -> BankProfile:
        """Async twin of ``merge_background``."""
        if not isinstance(snippet, str) or not snippet.strip():
            raise InvalidInputError("background snippet is empty")
        profile = await asyncio.to_thread(lambda: self.profile)
        merged = await amerge_background(self._engine.llm(), profile.background, snippet)
        return await asyncio.to_thread(self.set_background, merged)

    # background work -----------------------------------------------------------------------------
    @public
    def jobs(self) -> list[Job]:
        """This bank's background jobs (queued, running, done, failed), newest first."""
        return self._engine.store.list_jobs(self.id)

    @public
    def wait_idle(self, timeout: Seconds | None = 600.0) -> bool:
        """Block until this bank's background jobs are done (or failed for good); False on timeout."""
        return self._engine.worker.wait_idle(timeout, bank_id=self.id)

    @public
    async def await_idle(self, timeout: Seconds | None = 600.0) -> bool:
        """Async twin of ``wait_idle``."""
        return await asyncio.to_thread(self.wait_idle, timeout)

    # reading -------------------------------------------------------------------------------------
    @public
    def get(self, memory_id: Identifier) -> Memory | None:
        """One memory of this bank by id, or None."""
        found = self._engine.store.get_units(self.id, [memory_id])
        return found[0] if found else None

    @public
    def memories(self, ids: Sequence[Identifier]) -> list[Memory]:
        """Memories of this bank by id, in the order asked (unknown ids skipped)."""
        return self._engine.store.get_units(self.id, ids)

    @public
    def entities(self) -> list[Entity]:
        """Canonical entities, most mentioned first."""
        return self._engine.store.list_entities(self.id)

    @public
    def document(self, document_id: Identifier) -> Document:
        """A stored raw document; ``DocumentNotFoundError`` (a ``KeyError``) if absent."""
        doc = self._engine.store.get_document(self.id, document_id)
        if doc is None:
            raise DocumentNotFoundError(f"no document {document_id!r} in bank {self.id!r}")
        return doc

    @public
    def documents(self, status: DocumentStatus | str | None = None, prefix: Text | None = None) -> list[Document]:
        """Stored raw documents, oldest first, optionally by status (pending / done / failed) and id prefix."""
        try:
            wanted = DocumentStatus(status) if status else None
        except ValueError as exc:
            known = [s.value for s in DocumentStatus]
            raise InvalidInputError(f"unknown document status {status!r}; use {known}") from exc
        return self._engine.store.list_documents(self.id, wanted, prefix)

    @public
    def put_document(
        self,
        document_id: Identifier,
        content: Text,
        *,
        metadata: dict[str, Any] | None = None,
        timestamp: When = None,
    ) -> Document:
        """Store a raw document without extracting anything from it (a value kept only for exact reads).

        Memories an earlier version of ``document_id`` produced are forgotten; ``created_at`` is kept.
        """
        if not isinstance(document_id, str) or not document_id:
            raise InvalidInputError("document_id must be a non-empty string")
        old = self._engine.store.get_document(self.id, document_id)
        self.forget(document_id=document_id)
        now = utcnow()
        doc = Document(id=document_id, bank_id=self.id, content=content, timestamp=parse_timestamp(timestamp) or now,
                       status=DocumentStatus.DONE, metadata=dict(metadata or {}),
                       created_at=old.created_at if old else now, updated_at=now)
        self._engine.store.put_document(doc)
        self._audit("put_document", document_id=document_id, counts={"characters": len(content)})
        return self.document(document_id)

    @public
    def delete_document(self, document_id: Identifier) -> None:
        """Delete a raw document but keep the memories extracted from it (``forget(document_id=...)`` drops
        both). Chat transcripts use this: clearing a session should not erase what the agent learned."""
        self._engine.store.delete_document(self.id, document_id)
        self._audit("delete_document", document_id=document_id)

    @public
    def stats(self) -> dict[str, Any]:
        """Counts of documents, memories per network, entities, links, jobs and vectors."""
        stats = self._engine.store.stats(self.id)
        stats["vectors"] = self._engine.index.count(self.id)
        return stats

    # forgetting ----------------------------------------------------------------------------------
    @public
    def forget(
        self, *, memory_id: Identifier | None = None, document_id: Identifier | None = None,
        entity: Text | None = None,
    ) -> int:
        """Delete memories from both stores: one memory, everything from a document (and the document), or
        every memory that mentions an entity, with everything resting on them in the same transaction: facts citing
        a deleted message, observations written from one (rewritten by a queued job from what is left),
        corrections of one, opinions with one among their evidence. Memories a deleted one superseded are current
        again. Returns how many memories were deleted (those asked for and those resting on them)."""
        given = [x for x in (memory_id, document_id, entity) if x is not None]
        if len(given) != 1:
            raise InvalidInputError("forget takes exactly one of memory_id, document_id, entity")
        # The trail must not quote what was forgotten, an entity's name included: a digest of the name lets an
        # auditor check "was X forgotten?" without the trail saying X.
        summary = f"entity sha256:{audit.name_digest(entity)}" if entity is not None else ""
        try:
            done = self._engine.forgetter.forget_all(self.id, memory_id=memory_id, document_id=document_id,
                                                     entity=entity)
        except LostAnswerError as exc:
            # It committed: the trail records it (calling again would find nothing left and record nothing).
            if isinstance(exc.done, Forgotten):
                self._audit("forget", document_id=document_id, memory_ids=[memory_id] if memory_id else [],
                            counts=exc.done.counts, summary=summary)
            raise
        # The trail says what went, per kind, by id and count: never the forgotten text.
        self._audit("forget", document_id=document_id, memory_ids=[memory_id] if memory_id else [],
                    counts=done.counts, summary=summary)
        return len(done.ids)

    @public
    async def aforget(self, **kwargs: Any) -> int:
        """Async twin of ``forget``."""
        return await asyncio.to_thread(self.forget, **kwargs)

    # re-embedding --------------------------------------------------------------------------------
    @public
    def reembed(
        self, embedder: Any, *, batch_size: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> ReembedReport:
        """Rebuild this bank's vectors with another embedder (an ``Embedder`` or anything ``make_embedder`` takes,
        e.g. ``"mpnet"``) from the stored memories, without retaining again (``vectors/reembed.py``).

        The new vectors go to a new collection that replaces the old one in one atomic step once every memory has
        its vector; a crash before that leaves the old one in use, and calling this again resumes. ``progress`` is
        called with (memories done, memories in all). Afterwards the bank opens with the new embedder
        (``Hindsight.open(path, embedder=...)``); this ``Hindsight`` keeps its own, which no longer matches it.
        """
        from .embedders import make_embedder
        from .vectors.reembed import reembed_bank

        engine = self._engine
        report = reembed_bank(engine.store, engine.index, make_embedder(embedder), engine.settings, self.id,
                              batch_size=batch_size, progress=progress)
        self._audit("reembed", counts={"vectors": report.units, "embedded": report.embedded},
                    summary=f"{report.previous_embedder} -> {report.embedder}")
        return report

    @public
    async def areembed(
        self, embedder: Any, *, batch_size: int = 256, progress: Callable[[int, int], None] | None = None
    ) -> ReembedReport:
        """Async twin of ``reembed``."""
        return await asyncio.to_thread(self.reembed, embedder, batch_size=batch_size, progress=progress)

    # audit trail ---------------------------------------------------------------------------------
    def _audit(self, operation: str, **details: Any) -> AuditEntry:
        # After the write succeeded (see ``stores/audit.py``): a failure to record raises, the write stands.
        return audit.record(self._engine.store, self.id, operation, **details)

    def _audit_retain(self, result: RetainResult) -> RetainResult:
        self._audit("retain", document_id=result.document_id, memory_ids=result.memory_ids,
                    counts={"memories": len(result.memories), "links": result.links},
                    summary=f"queued as job {result.job_id}" if result.queued else "")
        return result

    def _audit_reflect(self, reflection: Reflection) -> Reflection:
        if reflection.opinions:  # a reflect that formed no opinion wrote nothing
            self._audit("reflect", memory_ids=[m.id for m in reflection.opinions],
                        counts={"opinions": len(reflection.opinions)})
        return reflection

    @public
    def audit(self, *, limit: int = 50, offset: int = 0, oldest_first: bool = False) -> list[AuditEntry]:
        """This bank's audit trail: every write and forget made through the API, the CLI, MCP or the explorer,
        with its time, surface, token id and what it changed; newest first (``oldest_first`` to reverse),
        ``limit`` entries (at most 10,000) from ``offset``."""
        return audit.read(self._engine.store, self.id, limit=limit, offset=offset, oldest_first=oldest_first)

    @public
    async def aaudit(self, *, limit: int = 50, offset: int = 0, oldest_first: bool = False) -> list[AuditEntry]:
        """Async twin of ``audit``."""
        return await asyncio.to_thread(self.audit, limit=limit, offset=offset, oldest_first=oldest_first)

    # portability ---------------------------------------------------------------------------------
    @public
    def export(self, path: str | Path, *, with_vectors: bool = False) -> ExportReport:
        """Write this bank to a file (``.jsonl``, or ``.jsonl.gz`` for gzip): the profile, raw documents, memories of
        every network, entities, links and opinion histories, in the versioned format of ``docs/PORTABILITY.md``.
        ``with_vectors`` adds the vectors (an import with the same embedder reuses them instead of embedding
        again). The file appears whole or not at all; ``Hindsight.import_bank`` reads it back."""
        from .portability.exporter import export_bank

        return export_bank(self._engine, self.id, path, with_vectors=with_vectors)

    @public
    async def aexport(self, path: str | Path, *, with_vectors: bool = False) -> ExportReport:
        """Async twin of ``export``."""
        return await asyncio.to_thread(self.export, path, with_vectors=with_vectors)
