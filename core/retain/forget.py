"""Forgetting: memories, documents, entities and whole banks leave both stores, even across a crash.

The graph store is the truth, so it goes first: one transaction deletes the units and marks their vectors
(``VectorMarks``); the vectors are deleted next and the marks cleared. A process dying in between, or a
vector index that fails, leaves marks that the next sync (same process, worker, or the next open) finishes;
until then no lookup trusts a vector whose unit is gone. The other order could let a crash re-index a
memory the caller asked to forget.

What rests on the deleted memories is read before the delete's transaction, so a fact, observation, correction or
opinion another process commits on them in between would outlive them: after the delete, forgetting looks again and
deletes what rests on what it deleted until nothing does (a correction checks the other way round after its own
commit, ``retain.correct``). A forget that failed half way is finished by calling it again: what is gone from the
graph is not found again, and the vectors it left marked are deleted by the sync that every forget ends with.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config import Settings
from ..errors import ConflictError, InvalidInputError, LostAnswerError
from ..models import FACT_CITES_KEY, FACT_LENT_KEY, Job
from ..stores.base import BankStore, DocumentStore, EntityStore, UnitStore, VectorMarks
from ..stores.citations import own_citations
from ..stores.records import DocumentRewrite
from ..vectors.vector_sync import VectorSync
from .redact import redacted_content

log = logging.getLogger(__name__)

REWRITE_ATTEMPTS = 5
"""How often a forget by memory or entity reads again when a document it cuts a message out of changed meanwhile."""


class ForgetStore(BankStore, DocumentStore, UnitStore, EntityStore, VectorMarks, Protocol):
    """What forgetting deletes through: documents, units (by id or entity), banks, and the vector marks."""


@dataclass
class Dependents:
    """What rests on memories about to be deleted: memory id -> kind (``fact``, ``observation``, ``opinion``,
    ``correction``), and the entities whose observation must be written again from what is left."""

    kinds: dict[str, str] = field(default_factory=dict)
    rebuild: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many of each kind."""
        out: dict[str, int] = {}
        for kind in self.kinds.values():
            out[kind] = out.get(kind, 0) + 1
        return out


def rests_on(metadata: dict[str, Any], gone: set[str], documents: frozenset[str] = frozenset()) -> str | None:
    """The kind of memory ``metadata`` describes if it rests on any of ``gone``, else None: a fact citing a deleted
    message it was made of (a citation lent by a restating fact is only taken back, by the store's delete), an
    observation written from one, a correction of one or of a memory of a deleted document (of ``documents``: the
    corrected memory may have been replaced since, by a retain of the document again), an opinion with one among
    its evidence (an opinion's text may repeat its evidence, so it goes with any of it)."""
    def named(key: str) -> bool:
        value = metadata.get(key)
        return isinstance(value, list) and any(str(v) in gone for v in value)

    # A fact rests on the messages it was made of, not on those a restating fact lent it (taken back instead); one
    # left with lent citations only (a repair stripped its own) rests on those.
    if any(c in gone for c in own_citations(metadata) or [str(c) for c in metadata.get(FACT_CITES_KEY) or []]):
        return "fact"
    if named("facts") and metadata.get("entity_id"):
        return "observation"
    correction = metadata.get("correction")
    if isinstance(correction, dict) and (str(correction.get("of")) in gone
                                         or str(correction.get("document_id")) in documents):
        return "correction"
    if named("based_on") or named("against"):
        return "opinion"
    return None


def dependents(references: Sequence[tuple[str, dict[str, Any]]], ids: Sequence[str],
               documents: Sequence[str] = ()) -> Dependents:
    """Everything that rests on ``ids`` (and on the deleted ``documents``), followed until nothing more does (an
    observation written from a fact that cites a deleted message goes too), given the bank's ``(id, metadata)`` of
    memories with references."""
    gone = set(ids)
    docs = frozenset(documents)
    found = Dependents()
    changed = True
    while changed:
        changed = False
        for uid, meta in references:
            if uid in gone:
                continue
            kind = rests_on(meta, gone, docs)
            if kind is None:
                continue
            gone.add(uid)
            found.kinds[uid] = kind
            changed = True
            entity = meta.get("entity_id")
            if kind == "observation" and entity and entity not in found.rebuild:
                found.rebuild.append(str(entity))
    # A fact that only loses a lent citation stays, but may be history once it has (the store supersedes it when what
    # it has left is superseded: ``stores.citations.inherit``): its observations are written again, not deleted.
    losing = {uid for uid, meta in references
              if uid not in gone and any(str(c) in gone for c in meta.get(FACT_LENT_KEY) or [])}
    for uid, meta in references if losing else ():
        entity, facts = meta.get("entity_id"), meta.get("facts")
        if (uid not in gone and entity and isinstance(facts, list) and any(str(f) in losing for f in facts)
                and str(entity) not in found.rebuild):
            found.rebuild.append(str(entity))
    return found


@dataclass
class Forgotten:
    """What a forget deleted: every memory id (asked for and resting on them) and the count per kind."""

    ids: list[str]
    counts: dict[str, int]


class ForgetPipeline:
    """Deletes from both stores for any bank of one ``Hindsight``, with everything resting on what it deletes:
    facts citing a deleted message, observations written from one (their entity's observation is written again by
    a job queued in the same transaction), corrections of one, opinions with one among their evidence."""

    def __init__(self, store: ForgetStore, vectors: VectorSync,
                 rebuild_job: Callable[[str, list[str]], Job] | None = None, settings: Settings | None = None) -> None:
        """Deletes through ``store`` (the truth) and then ``vectors``; ``rebuild_job(bank, entity_ids)`` is the job
        that writes observations again (none: they are only deleted); ``settings`` say how retain cut documents
        into units (to cut a forgotten message out of its stored document)."""
        self.store = store
        self.vectors = vectors
        self.rebuild_job = rebuild_job
        self.settings = settings or Settings()

    def forget(
        self, bank_id: str, *, memory_id: str | None = None, document_id: str | None = None, entity: str | None = None
    ) -> int:
        """Delete one memory, everything from a document (and the document), or every memory mentioning an
        entity, with what rests on them; returns how many memories were deleted. Exactly one selector is given
        (checked by ``Bank``)."""
        return len(self.forget_all(bank_id, memory_id=memory_id, document_id=document_id, entity=entity).ids)

    def forget_all(
        self, bank_id: str, *, memory_id: str | None = None, document_id: str | None = None, entity: str | None = None
    ) -> Forgotten:
        """``forget`` with what was deleted, per kind (``memories`` asked for, then ``fact``, ``observation``,
        ``opinion``, ``correction`` resting on them)."""
        store = self.store
        try:
            if document_id is not None:
                asked = store.units_of_document(bank_id, document_id)
                found = dependents(store.units_with_references(bank_id), asked, [document_id])
                # The document, its units and what rests on them go in one transaction with the rebuild job: a crash
                # never leaves a summary of what was forgotten, nor a forgotten document without its observation job.
                try:
                    gone = store.forget_document(bank_id, document_id, owner=self.vectors.owner,
                                                 also=list(found.kinds), jobs=self._jobs(bank_id, found))
                except Exception as exc:
                    intended = list(dict.fromkeys([*asked, *found.kinds]))
                    if not self._stood(bank_id, intended, document_id):
                        raise
                    self.vectors.finish_delete(bank_id, intended)
                    done = Forgotten(intended, {"memories": len(set(asked) - set(found.kinds)), **found.counts()})
                    raise LostAnswerError(f"forgetting document {document_id!r}: the store committed but its answer "
                                          f"was lost: {exc}", done) from exc
                self.vectors.finish_delete(bank_id, gone)
                later = self._late_dependents(bank_id, gone, found, [document_id])
                return Forgotten([*gone, *later], {"memories": len(set(gone) - set(found.kinds)), **found.counts()})
            for attempt in range(REWRITE_ATTEMPTS):
                if memory_id is not None:
                    ids = [memory_id]
                else:
                    hit = store.find_entity(bank_id, entity or "")
                    ids = store.units_of_entity(bank_id, hit.id) if hit else []
                present = store.units_exist(bank_id, ids) if ids else set()
                ids = [i for i in dict.fromkeys(ids) if i in present]
                if not ids:
                    return Forgotten([], {"memories": 0})
                found = dependents(store.units_with_references(bank_id), ids)
                everything = list(dict.fromkeys([*ids, *found.kinds]))
                documents = self._redactions(bank_id, everything)
                try:
                    deleted = self.delete_units(bank_id, everything, jobs=self._jobs(bank_id, found),
                                                documents=documents)
                    break
                except ConflictError:
                    # A document changed between its read and this write (a retain of it again, another forget):
                    # nothing was written; read everything again.
                    if attempt == REWRITE_ATTEMPTS - 1:
                        raise
                except Exception as exc:
                    if not self._stood(bank_id, everything):
                        raise
                    self.vectors.finish_delete(bank_id, everything)
                    done = Forgotten(everything, {"memories": len(ids), **found.counts()})
                    raise LostAnswerError(f"forgetting {len(ids)} memories: the store committed but its answer was "
                                          f"lost: {exc}", done) from exc
            if not deleted:
                return Forgotten([], {"memories": 0})  # another process forgot them first (its trail says what)
            later = self._late_dependents(bank_id, everything, found)
            return Forgotten([*everything, *later], {"memories": len(ids), **found.counts()})
        finally:
            # Also when nothing was found: a forget that failed after its transaction left marked vectors, and
            # calling it again is what finishes it.
            self._reembed_neighbours()

    def _redactions(self, bank_id: str, ids: Sequence[str]) -> dict[str, DocumentRewrite]:
        """Document id -> its stored content without the messages of the raw units among ``ids`` (a memory or
        entity forgotten while its document stays: ``export`` and a queued facts job read that content)."""
        store = self.store
        by_document: dict[str, set[str]] = {}
        for unit in store.get_units(bank_id, list(ids)):
            if unit.cites is None and unit.document_id:
                by_document.setdefault(unit.document_id, set()).add(unit.id)
        out: dict[str, DocumentRewrite] = {}
        settings = self.settings
        for document_id, forgotten in by_document.items():
            doc = store.get_document(bank_id, document_id)
            if doc is None:
                continue
            raw = [u for u in store.get_units(bank_id, store.units_of_document(bank_id, document_id))
                   if u.cites is None]
            try:
                content = redacted_content(doc, raw, forgotten, window=settings.raw_window,
                                           passage_chars=settings.passage_chars,
                                           max_chars=settings.max_document_chars)
            except InvalidInputError as exc:  # a stored document that no longer parses: the memories still go
                log.warning("forget: document %r of bank %s left as it is (%s)", document_id, bank_id, exc)
                continue
            if content is not None:
                out[document_id] = DocumentRewrite(expected=doc.content, content=content)
        return out

    def _stood(self, bank_id: str, ids: Sequence[str], document_id: str | None = None) -> bool:
        """Whether a delete that raised committed anyway: none of ``ids`` (nor the document) is left. False when the
        store cannot say (the error then reaches the caller as it was, and calling again finishes the forget)."""
        try:
            gone = not self.store.units_exist(bank_id, list(ids)) if ids else True
            return gone and (document_id is None or self.store.get_document(bank_id, document_id) is None)
        except Exception:
            return False

    def _late_dependents(self, bank_id: str, gone: Sequence[str], found: Dependents,
                         documents: Sequence[str] = ()) -> list[str]:
        """Delete what another process made rest on ``gone`` while they were being deleted (a correction, a fact, an
        opinion committed after the dependents were read); counted into ``found``; returns their ids."""
        late: list[str] = []
        deleted = set(gone)
        for _ in range(10):  # each round is another process's commit; more is not a race but a stream of writes
            refs = [(uid, meta) for uid, meta in self.store.units_with_references(bank_id) if uid not in deleted]
            more = dependents(refs, list(deleted), documents)
            if not more.kinds:
                break
            ids = list(more.kinds)
            self.delete_units(bank_id, ids, jobs=self._jobs(bank_id, more))
            deleted.update(ids)
            late += ids
            found.kinds.update(more.kinds)
            found.rebuild += [e for e in more.rebuild if e not in found.rebuild]
        return late

    def _reembed_neighbours(self) -> None:
        """Embed again the memories whose vectors held a deleted text as context (marked by the delete); a failure
        leaves the marks for the next sync."""
        try:
            self.vectors.sync()
        except Exception as exc:
            log.warning("re-embedding after a forget deferred (left marked for sync): %s", exc)

    def _jobs(self, bank_id: str, found: Dependents) -> list[Job]:
        if not found.rebuild or self.rebuild_job is None:
            return []
        return [self.rebuild_job(bank_id, found.rebuild)]

    def delete_units(self, bank_id: str, ids: list[str], *, jobs: Sequence[Job] = (),
                     documents: Mapping[str, DocumentRewrite] | None = None) -> int:
        """Delete units from the graph (marking their vectors, queueing ``jobs``, setting the ``documents``'
        redacted content), then their vectors; returns how many existed."""
        if not ids:
            return 0
        with self.vectors.hold(bank_id, ids):
            deleted = self.store.delete_units(bank_id, ids, owner=self.vectors.owner, jobs=jobs,
                                              documents=documents)
            self.vectors.finish_delete(bank_id, ids)
        return deleted

    def delete_bank(self, bank_id: str) -> None:
        """Delete a bank from the graph (marking its collection), then drop its vector collection."""
        with self.vectors.hold(bank_id, [""]):
            self.store.delete_bank(bank_id, owner=self.vectors.owner)
            try:
                self.vectors.index.drop_bank(bank_id)
                self.store.clear_vector_marks(bank_id, [""])
            except Exception as exc:  # the mark stays: the next sync drops the collection
                log.warning("dropping the vectors of bank %r deferred (left marked for sync): %s", bank_id, exc)
