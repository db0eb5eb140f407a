"""Retain pipeline: store document -> extract -> resolve entities -> embed -> link -> commit (paper 4.1).

The raw document is committed first, so a failing model loses nothing: the document stays in the graph
store with status ``failed`` and its error, and can be extracted again. A retain returns only after both
stores hold the new units.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np

from .config import Settings
from .embedding import Embedder
from .entities import EntityResolver
from .errors import EmptyExtractionError, ExtractionError, HindsightError, StoreError
from .extract.base import ExtractedFact, Extractor
from .extract.raw_extractor import RawExtractor
from .inputs import RetainInput, normalise_messages, parse_timestamp, raw_json
from .links import build_links
from .models import Document, DocumentStatus, Memory, Message, RetainResult, utcnow
from .stores.base import GraphStore, UnitBatch, VectorIndex


def embedding_text(memory: Memory, with_time: bool = True) -> str:
    """The text that is embedded: the unit text plus a human-readable date when known."""
    return timed_text(memory.text, memory.occurred_start or memory.mentioned_at, with_time)


def timed_text(text: str, when: datetime | None, with_time: bool = True) -> str:
    """``text`` with a human-readable date appended (what ``embedding_text`` embeds)."""
    if not with_time or when is None:
        return text
    return f"{text} ({when.day} {when:%B %Y})"


def vector_metadata(memory: Memory) -> dict[str, Any]:
    """Filterable metadata stored with each vector (network and occurrence interval as epoch seconds)."""
    meta: dict[str, Any] = {"network": memory.network.value}
    start = memory.occurred_start or memory.mentioned_at
    end = memory.occurred_end or start
    if start is not None and end is not None:
        meta["t0"] = start.timestamp()
        meta["t1"] = end.timestamp()
    return meta


def index_units(index: VectorIndex, embedder: Embedder, bank_id: str, units: list[Memory], with_time: bool) -> None:
    """(Re-)embed units and write their vectors: used after text changes and by reconcile."""
    if units:
        vectors = embedder.embed([embedding_text(u, with_time) for u in units])
        index.upsert(bank_id, [u.id for u in units], vectors, [vector_metadata(u) for u in units])


def search_contexts(units: list[Memory]) -> dict[str, str]:
    """Each unit's neighbours in document order (previous and next), for the keyword channel's context column."""
    out: dict[str, str] = {}
    for i, unit in enumerate(units):
        parts = [units[j].text for j in (i - 1, i + 1) if 0 <= j < len(units)]
        out[unit.id] = " ".join(parts)
    return out


class RetainPipeline:
    """Runs retain for any bank of one ``Hindsight`` instance."""

    def __init__(
        self,
        store: GraphStore,
        index: VectorIndex,
        embedder: Embedder,
        settings: Settings,
        raw_extractor: Extractor,
        llm_extractor: Callable[[], Extractor],
        on_retained: Callable[[RetainResult], None] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.raw_extractor = raw_extractor
        self._llm_extractor = llm_extractor
        # Called after a retain committed with background work wanted (queues observations, opinions).
        self.on_retained = on_retained
        self.resolver = EntityResolver(store, settings.entities)
        self._bank_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _lock(self, bank_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._bank_locks.setdefault(bank_id, threading.Lock())

    # phases --------------------------------------------------------------------------------------
    def prepare(
        self,
        bank_id: str,
        content: RetainInput,
        *,
        timestamp: datetime | str | None,
        document_id: str | None,
        context: str | None,
        document_metadata: dict[str, Any] | None = None,
    ) -> tuple[Document, list[Message], list[str]]:
        """Validate the input and durably store the raw document before anything can fail."""
        warnings: list[str] = []
        when = parse_timestamp(timestamp) or utcnow()
        messages, _ = normalise_messages(content, when, warnings, self.settings.max_document_chars)
        doc = Document(
            id=document_id or str(uuid.uuid4()),
            bank_id=bank_id,
            content=raw_json(messages, content),
            context=context,
            timestamp=when,
            metadata=dict(document_metadata or {}),
        )
        self.store.put_document(doc)
        return doc, messages, warnings

    def fail(self, doc: Document, exc: BaseException) -> None:
        """Record why extraction failed on the kept document."""
        self.store.set_document_status(doc.bank_id, doc.id, DocumentStatus.FAILED, f"{type(exc).__name__}: {exc}")

    def check_facts(self, doc: Document, messages: list[Message], facts: list[ExtractedFact]) -> None:
        """Never accept zero facts from non-empty input."""
        if not facts and any(m.text.strip() for m in messages):
            raise EmptyExtractionError(
                f"extraction produced no facts from document {doc.id!r}; the raw document is kept",
                document_id=doc.id,
            )

    def commit(
        self,
        doc: Document,
        facts: list[ExtractedFact],
        warnings: list[str],
        metadata: dict[str, Any] | None,
        timings: dict[str, float],
        vectors: np.ndarray | None = None,
    ) -> RetainResult:
        """Resolve, embed (unless ``vectors`` are given), link and write the facts to both stores, then mark
        the document done."""
        result = self.store_facts(doc, facts, warnings, metadata, timings, vectors)
        self.store.set_document_status(doc.bank_id, doc.id, DocumentStatus.DONE)
        return result

    def store_facts(
        self,
        doc: Document,
        facts: list[ExtractedFact],
        warnings: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        timings: dict[str, float] | None = None,
        vectors: np.ndarray | None = None,
    ) -> RetainResult:
        """Resolve, embed, link and write facts of ``doc`` (stored or not: reflect and background work write
        opinions and observations through here too). Units previously written for ``doc.id`` are replaced."""
        bank_id = doc.bank_id
        timings = {} if timings is None else timings
        with self._lock(bank_id):
            t = time.perf_counter()
            old = self.store.units_of_document(bank_id, doc.id)
            if old:  # re-retaining a document replaces what it produced before
                self.store.delete_units(bank_id, old)
                self.index.delete(bank_id, old)
            units = [self._unit(bank_id, doc, fact, metadata) for fact in facts]
            resolution = self.resolver.resolve(bank_id, facts, [u.id for u in units])
            for unit, names in zip(units, resolution.names, strict=True):
                unit.entities = names
            timings["resolve_ms"] = _ms(t)

            if vectors is None or len(vectors) != len(units):
                t = time.perf_counter()
                vectors = self.embedder.embed([embedding_text(u, self.settings.embed_time_reference) for u in units])
                timings["embed_ms"] = _ms(t)

            t = time.perf_counter()
            links = build_links(bank_id, units, facts, vectors, self.store, self.index, self.settings.links)
            timings["link_ms"] = _ms(t)

            t = time.perf_counter()
            batch = UnitBatch(
                units=units,
                positions={u.id: f.position for u, f in zip(units, facts, strict=True)},
                contexts=search_contexts(units),
                new_entities=resolution.new_entities,
                updated_entities=resolution.updated_entities,
                mentions=resolution.mentions,
                links=links,
            )
            self.store.add_units(bank_id, batch)
            try:
                self.index.upsert(bank_id, [u.id for u in units], vectors, [vector_metadata(u) for u in units])
            except Exception as exc:
                # Keep the stores consistent: without vectors the units would be half-retained.
                self.store.delete_units(bank_id, [u.id for u in units])
                raise StoreError(f"vector index write failed; document {doc.id!r} kept for retry: {exc}") from exc
            timings["commit_ms"] = _ms(t)
        return RetainResult(
            bank_id=bank_id,
            document_id=doc.id,
            memories=units,
            entities=sorted({n for names in resolution.names for n in names}),
            links=len(links),
            warnings=warnings or [],
            timings_ms=timings,
        )

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

    def extract(
        self, doc: Document, messages: list[Message], context: str | None, extract: bool
    ) -> tuple[list[ExtractedFact], np.ndarray | None]:
        """Facts of the messages and, for raw ingest, their vectors: embedded while NER runs beside it."""
        when = doc.timestamp or utcnow()
        if extract or not isinstance(self.raw_extractor, RawExtractor):
            extractor = self._llm_extractor() if extract else self.raw_extractor
            return extractor.extract(messages, document_time=when, context=context), None
        with_time = self.settings.embed_time_reference
        return self.raw_extractor.extract_alongside(
            messages,
            # As store_facts would embed them: the unit's time is occurred_start, else mentioned_at, else the doc's.
            lambda facts: self.embedder.embed([
                timed_text(f.text, f.occurred_start or f.mentioned_at or doc.timestamp, with_time) for f in facts
            ]),
            document_time=when, context=context,
        )

    # entry points --------------------------------------------------------------------------------
    def retain(
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
        """Retain synchronously; see ``Bank.retain``."""
        timings: dict[str, float] = {}
        doc, messages, warnings = self.prepare(
            bank_id, content, timestamp=timestamp, document_id=document_id, context=context,
            document_metadata=document_metadata,
        )
        try:
            t = time.perf_counter()
            facts, vectors = self.extract(doc, messages, context, extract)
            timings["extract_ms" if vectors is None else "extract_embed_ms"] = _ms(t)
            self.check_facts(doc, messages, facts)
            result = self.commit(doc, facts, warnings, metadata, timings, vectors)
        except BaseException as exc:
            self.fail(doc, exc)
            if isinstance(exc, HindsightError | KeyboardInterrupt):
                raise
            raise ExtractionError(f"retain of document {doc.id!r} failed: {exc}", document_id=doc.id) from exc
        self._after(result, extract if background is None else background)
        return result

    def _after(self, result: RetainResult, background: bool) -> None:
        if background and self.on_retained is not None:
            self.on_retained(result)

    async def aretain(
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
        """Async twin: the LLM call is natively async; storage and embedding run in a worker thread."""
        timings: dict[str, float] = {}
        doc, messages, warnings = await asyncio.to_thread(
            self.prepare, bank_id, content, timestamp=timestamp, document_id=document_id, context=context,
            document_metadata=document_metadata,
        )
        try:
            t = time.perf_counter()
            vectors: np.ndarray | None = None
            if extract:  # the LLM call itself is async
                extractor = self._llm_extractor()
                facts = await extractor.aextract(messages, document_time=doc.timestamp or utcnow(), context=context)
            else:
                facts, vectors = await asyncio.to_thread(self.extract, doc, messages, context, extract)
            timings["extract_ms" if vectors is None else "extract_embed_ms"] = _ms(t)
            self.check_facts(doc, messages, facts)
            result = await asyncio.to_thread(self.commit, doc, facts, warnings, metadata, timings, vectors)
        except BaseException as exc:
            await asyncio.to_thread(self.fail, doc, exc)
            if isinstance(exc, HindsightError | KeyboardInterrupt | asyncio.CancelledError):
                raise
            raise ExtractionError(f"retain of document {doc.id!r} failed: {exc}", document_id=doc.id) from exc
        await asyncio.to_thread(self._after, result, extract if background is None else background)
        return result


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
