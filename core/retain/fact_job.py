"""The facts job: the LLM's narrative facts of a retained document, added beside its raw units.

``retain(extract=True)`` commits every message as a raw unit and, in the same transaction, queues this job; the
worker runs it (with the durable queue's leases and retries). It reads the stored document, asks the extractor
for facts, and writes them under the same document id, each fact listing the raw units it cites
(``Memory.cites``). Nothing raw is replaced: a rerun of the job replaces only the facts an earlier attempt wrote,
a re-retain or forget of the document removes its facts with its messages, and a job whose document was stored
again (another revision) or forgotten does nothing, because the newer retain queued its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from ..errors import ClosedError, ConflictError, EmptyExtractionError
from ..extract.grounding import FactChecker, GroundingReport, Rejection, source_lines
from ..models import Document, DocumentKind, Job, Message, RetainResult
from ..stores.base import DocumentStore, UnitStore
from ..text.inputs import document_input, normalise_messages
from ..text.passages import message_sources, split_long_messages
from .pipeline import RetainPipeline
from .redact import raw_unit_of_message

log = logging.getLogger(__name__)

FACT_POSITION_BASE = 1 << 20
"""Facts are ordered after every raw unit of their document, so a raw unit's neighbours are raw units."""

_LABEL = "~{}"  # the prompt label of a message that has no id of its own (never stored as a source)


class FactJobStore(DocumentStore, UnitStore, Protocol):
    """What the facts job reads: the stored document and its raw units."""


class FactJob:
    """Job handler: extract a document's facts with the LLM and store them beside its raw units."""

    def __init__(
        self, store: FactJobStore, retainer: RetainPipeline, on_retained: Callable[[RetainResult], object],
        checker: FactChecker | None = None,
    ) -> None:
        self.store = store
        self.retainer = retainer
        self.on_retained = on_retained
        # Deletes facts (with their vectors) that the job stored citing a message forgotten during its model call
        # (set by the engine to the forget pipeline's delete; None: they stay).
        self.delete_units: Callable[[str, list[str]], object] | None = None
        # Every fact is checked against the messages it cites before it is stored (``extract/grounding``).
        self.checker = checker or FactChecker(retainer.embedder.embed)

    def run(self, job: Job) -> dict[str, object] | None:
        """Add the facts of ``job.payload["document_id"]`` at ``payload["revision"]``, then queue its background
        work when the retain asked for it. Returns the job's result: facts stored, rejected per reason and a
        sample of the rejected ones (None when there was nothing to do). A failure is raised (the worker retries,
        then marks the job failed); the raw units stay as they are."""
        payload = job.payload
        doc = self.store.get_document(job.bank_id, str(payload.get("document_id")))
        if doc is None or doc.revision != payload.get("revision"):
            return None  # forgotten, or stored again: the newer retain queued its own facts job
        report = GroundingReport()
        result = self.add_facts(doc, report)
        if result is not None and payload.get("background") and result.memories:
            try:
                # It reads and writes the store like the commit before it: ``close`` waits for it, and once closing
                # it is not started (CI caught a segfault: it read a SQLite store that ``close`` had just closed).
                # The entities' observations then follow at their next retain.
                with self.retainer.commit_gate():
                    self.on_retained(result)
            except ClosedError:
                log.info("document %r of bank %s: closing, its facts' follow-up jobs were not queued", doc.id,
                         doc.bank_id)
        if result is None:
            return None
        summary = report.summary()
        summary["restated"] = result.restated  # kept as citations of the facts already held, not stored twice
        return summary

    def add_facts(self, doc: Document, report: GroundingReport | None = None) -> RetainResult | None:
        """Extract, check and store the facts of ``doc``; None when a newer retain of it took over meanwhile.
        ``report`` receives what the check kept and rejected."""
        settings = self.retainer.settings
        units = self.store.get_units(doc.bank_id, self.store.units_of_document(doc.bank_id, doc.id))
        raw = [u for u in units if u.cites is None]
        if not raw:
            return None  # every message was forgotten since the retain: nothing is left to extract from
        # Read again after the units: a forget cuts its messages out of the document in the transaction that deletes
        # their units, so this copy is at least as new as the units (the messages line up with them).
        fresh = self.store.get_document(doc.bank_id, doc.id)
        if fresh is None or fresh.revision != doc.revision:
            return None
        doc = fresh
        messages, _ = normalise_messages(document_input(doc), doc.timestamp, [], settings.max_document_chars)
        # Cut as retain cut it: each passage of a long text is a raw unit, and a prompt window holds a few passages.
        messages = split_long_messages(messages, settings.passage_chars, text=doc.kind == DocumentKind.TEXT)
        labelled, index_of = _labelled(messages)
        raw_of = raw_unit_of_message(messages, raw, settings.raw_window)
        try:
            facts = self.retainer.extract_facts(doc, labelled)
        except EmptyExtractionError:
            facts = []  # greetings and small talk: the raw units hold all there is, and a retry would say the same
        checked = self.checker.check(facts, source_lines(labelled, doc.timestamp))
        # A fact citing a message that has no raw unit any more rests on what was forgotten (``retain.redact`` cuts
        # a forgotten message out of the document, but a job may have read it first): it is not stored, as
        # forgetting deletes a fact that cites any deleted message.
        facts = []
        for fact in checked.kept:
            cited = [index_of[s] for s in fact.sources if s in index_of]
            if cited and all(i in raw_of for i in cited):
                facts.append(fact)
            else:
                # Not quoted: the text may repeat what the user asked to forget.
                checked.rejected.append(Rejection(text="", sources=list(fact.sources), reason="forgotten",
                                                  detail="a message it cites was forgotten"))
        checked.kept = facts
        if report is not None:
            report.kept, report.rejected, report.repointed = checked.kept, checked.rejected, checked.repointed
        if checked.rejected:
            log.info("document %r of bank %s: %d facts rejected by the checks %s", doc.id, doc.bank_id,
                     len(checked.rejected), checked.counts())
        cites: list[list[str]] = []
        for fact in facts:
            indices = [index_of[s] for s in fact.sources if s in index_of]
            cites.append(list(dict.fromkeys(raw_of[i] for i in indices if i in raw_of)))
            fact.sources = _provenance(fact.sources, messages, index_of)
            fact.position += FACT_POSITION_BASE
        log.info("document %r of bank %s: %d facts from %d messages", doc.id, doc.bank_id, len(facts), len(messages))
        try:
            result = self.retainer.store_facts(doc, facts, [], doc.options.get("metadata") or None,
                                               revision=doc.revision, cites=cites)
        except ConflictError:
            return None
        try:
            # A write like the commit before it: ``close`` waits for it, and once closing it is not started (the
            # store may be closed under it); a fact it would have caught is mended by ``hindsight check --repair``.
            with self.retainer.commit_gate():
                return self._without_orphans(doc.bank_id, result)
        except ClosedError:
            return result

    def _without_orphans(self, bank_id: str, result: RetainResult) -> RetainResult:
        """``result`` less the facts citing a message that a forget deleted while the model answered: looked for
        after this commit, as the forget looks for facts committed during its own (between them, nothing is
        missed), and deleted as the forget would have deleted them."""
        cited = list({c for m in result.memories for c in (m.cites or [])})
        alive = self.store.units_exist(bank_id, cited) if cited else set()
        orphans = [m.id for m in result.memories if any(c not in alive for c in (m.cites or []))]
        if not orphans or self.delete_units is None:
            return result
        self.delete_units(bank_id, orphans)
        log.info("bank %s: %d facts deleted after their job: a message they cite was forgotten meanwhile", bank_id,
                 len(orphans))
        gone = set(orphans)
        return result.model_copy(update={"memories": [m for m in result.memories if m.id not in gone]})


def _labelled(messages: Sequence[Message]) -> tuple[list[Message], dict[str, int]]:
    """The messages as the model sees them, each with an id it can cite (a private label where the caller gave
    none), and which message each citable id names."""
    labelled: list[Message] = []
    index_of: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.id is None:
            m = m.model_copy(update={"id": _LABEL.format(i + 1)})
        index_of.setdefault(str(m.id), i)
        labelled.append(m)
    return labelled, index_of


def _provenance(sources: Sequence[str], messages: Sequence[Message], index_of: dict[str, int]) -> list[str]:
    """A fact's sources as a caller reads them: private labels dropped, a passage's label replaced by its
    message id (if any) and character offsets."""
    out: list[str] = []
    for source in sources:
        i = index_of.get(source)
        if i is None:
            out.append(source)
        elif messages[i].id is not None:  # None: a private label, not an id the caller gave
            out.extend(message_sources(messages[i]))
    return list(dict.fromkeys(out))
