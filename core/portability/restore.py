"""Write a validated ``BankArchive`` into a store as a new bank, all or nothing.

The store protocols have no transaction across calls and no way to rename a bank, so a bank cannot be written
under a hidden name and published at the end. Instead the bank carries a progress marker from before its first
write until its last: a job of kind ``hindsight.import`` (or ``hindsight.migrate``) stored with status ``failed``
and the error "incomplete ...", so that no worker ever runs it, and finished (``done``) as the very last write.

- A failure or an interruption that lets Python unwind (an exception, Ctrl-C) deletes the bank from both stores
  before the error is raised: nothing half-filled is left.
- A process killed outright leaves the bank with its marker still ``failed``: the next import or migration into
  that bank id recognises it as a leftover and clears it before writing (a bank without such a marker is never
  overwritten unless asked), and ``bank.jobs()`` shows any reader that it is incomplete.
- The finished marker stays in the bank's job list as a record of where the bank came from.

Writes follow the same order as retain, so the store's invariants (``hindsight check``) hold at every step:
vectors are marked in the graph store, written to the index, then the units are committed (which clears the
marks); links and opinion histories follow once both ends exist. Units are written a document at a time in the
exported order, with the keyword context each had (its neighbours' texts as they were stored), so keyword
statistics and ties come out as in the source. Before the marker is finished, the bank's counts are compared
with the archive's.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ..engine import Engine
from ..errors import HindsightError, StoreError
from ..models import AuditEntry, BankProfile, Document, DocumentStatus, Entity, Job, JobStatus, Link, Memory, utcnow
from ..runtime.leases import host_key, pid_alive
from ..stores import audit
from ..stores.base import GraphStore, Mention, UnitBatch
from ..vectors.unit_text import embedding_text, search_contexts, vector_metadata
from .archive import BankArchive
from .errors import BankExistsError, VerificationError
from .format import EntityRecord, OpinionHistoryRecord, UnitRecord
from .history import HistoryWriter, Step, commit_text, initial_state, plan
from .trail import after, imported_entry

log = logging.getLogger(__name__)

IMPORT_MARKER = "hindsight.import"
MIGRATE_MARKER = "hindsight.migrate"
MARKER_KINDS = (IMPORT_MARKER, MIGRATE_MARKER)
BATCH_UNITS = 1000  # units per graph transaction (whole documents, so a large one may exceed it)
BATCH_CHARS = 32 * 1024 * 1024  # and characters of text (and vectors) per transaction: what an import holds
AUDIT_BATCH = 1000
LINK_BATCH = 5000
_ACTIVE = (DocumentStatus.PENDING, DocumentStatus.EXTRACTING)


class RestoreResult(BaseModel):
    """What writing one bank did."""

    bank_id: str
    cleared: Literal["leftover", "replaced"] | None = Field(
        None, description="an earlier bank under this id was removed: a dead import's leftover, or replaced as asked")
    vectors: Literal["copied", "recomputed"]
    vectors_reason: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0


def latest_marker(store: GraphStore, bank_id: str) -> Job | None:
    """The newest import or migration marker of a bank, or None."""
    return next((j for j in store.list_jobs(bank_id) if j.kind in MARKER_KINDS), None)


def discard_bank(engine: Engine, bank_id: str) -> None:
    """Remove a bank from both stores (a failed or leftover import). A module function so that tests can stand in
    for a process killed before it could clean up."""
    engine.forgetter.delete_bank(bank_id)


def _running_elsewhere(engine: Engine, marker: Job) -> bool:
    """Whether the process that wrote ``marker`` is another live one (its import is still running, not dead)."""
    owner_id = marker.payload.get("owner")
    if not owner_id or owner_id == engine.vectors.owner:
        return False
    owner = next((o for o in engine.store.list_owners() if o.id == owner_id), None)
    if owner is None:
        return False
    if utcnow() - owner.heartbeat_at > timedelta(seconds=engine.settings.leases.ttl_s):
        return False
    return owner.host != host_key() or pid_alive(owner.pid)


def prepare_target(engine: Engine, bank_id: str, *, replace: bool) -> Literal["leftover", "replaced"] | None:
    """Make room for ``bank_id``: clear a dead import's leftover (or, with ``replace``, an existing bank); raise
    ``BankExistsError`` for any other existing bank."""
    store = engine.store
    marker = latest_marker(store, bank_id)
    if marker is not None and marker.status != JobStatus.DONE and _running_elsewhere(engine, marker):
        raise BankExistsError(f"bank {bank_id!r} is being written right now by another process "
                              f"({marker.kind}, process {marker.payload.get('owner')}); wait for it to finish")
    if store.get_bank(bank_id) is None:
        if marker is not None:  # a marker written just before its bank: a run that died at its very start
            discard_bank(engine, bank_id)
        return None
    if marker is not None and marker.status != JobStatus.DONE:
        log.warning("bank %r is the leftover of an %s that did not finish (%s): clearing it", bank_id, marker.kind,
                    marker.created_at.isoformat())
        discard_bank(engine, bank_id)
        return "leftover"
    if replace:
        discard_bank(engine, bank_id)
        return "replaced"
    raise BankExistsError(f"bank {bank_id!r} exists already: import under another id (--bank) or replace it "
                          "(replace=True, --replace)")


def _vector_plan(engine: Engine, archive: BankArchive, use_vectors: bool) -> tuple[bool, str]:
    """Whether the archive's vectors are written as they are, and why not when they are not."""
    if not archive.has_vectors:
        return False, "the file holds no vectors (export with vectors to copy them)"
    if not use_vectors:
        return False, "vectors were not wanted"
    if archive.vector_problem is not None:
        reason = f"the file's vectors are not ones an embedder makes ({archive.vector_problem})"
        log.warning("%s: recomputing them", reason)
        return False, reason
    source, target = archive.header.embedder, engine.embedder
    if (source.name, source.dimension) != (target.name, target.dimension):
        reason = (f"the file's vectors come from {source.name!r} ({source.dimension}), this store embeds with "
                  f"{target.name!r} ({target.dimension})")
        log.warning("%s: recomputing them", reason)
        return False, reason
    return True, ""


def _groups(units: Iterable[UnitRecord]) -> Iterator[list[UnitRecord]]:
    """Consecutive units of one document (a unit of no document alone)."""
    group: list[UnitRecord] = []
    for unit in units:
        if group and (unit.document_id is None or unit.document_id != group[-1].document_id):
            yield group
            group = []
        group.append(unit)
    if group:
        yield group


def _chars(group: list[UnitRecord]) -> int:
    return sum(len(u.text) + len(u.vector or "") for u in group)


def _batches(units: Iterable[UnitRecord]) -> Iterator[list[list[UnitRecord]]]:
    """Whole documents' units, up to ``BATCH_UNITS`` units and ``BATCH_CHARS`` characters a batch (a single
    larger document is a batch of its own)."""
    batch: list[list[UnitRecord]] = []
    size = chars = 0
    for group in _groups(units):
        n = _chars(group)
        if batch and (size + len(group) > BATCH_UNITS or chars + n > BATCH_CHARS):
            yield batch
            batch, size, chars = [], 0, 0
        batch.append(group)
        size += len(group)
        chars += n
    if batch:
        yield batch


def _entity(bank_id: str, e: EntityRecord) -> Entity:
    return Entity(id=e.id, bank_id=bank_id, name=e.name, type=e.type, aliases=e.aliases, first_seen=e.first_seen,
                  last_seen=e.last_seen)


def _memory(bank_id: str, u: UnitRecord, text: str | None = None, confidence: float | None = None) -> Memory:
    return Memory(id=u.id, bank_id=bank_id, text=u.text if text is None else text, network=u.network,
                  occurred_start=u.occurred_start, occurred_end=u.occurred_end, mentioned_at=u.mentioned_at,
                  confidence=u.confidence if text is None else confidence, sources=u.sources,
                  document_id=u.document_id, metadata=u.metadata, created_at=u.created_at)


class _Writer:
    """One restore: the archive, the target and what has been decided about it."""

    def __init__(self, engine: Engine, archive: BankArchive, copy_vectors: bool) -> None:
        self.engine = engine
        self.store = engine.store
        self.archive = archive
        self.bank_id = archive.bank.id
        self.owner = engine.vectors.owner
        self.copy_vectors = copy_vectors
        self.entities = {e.id: e for e in archive.entities}
        self.histories: dict[str, OpinionHistoryRecord] = {o.opinion_id: o for o in archive.opinions}
        self.steps: dict[str, list[Step]] = {k: plan(v) for k, v in self.histories.items()}
        # Opinions whose history is replayed may change text on the way: their vectors are written at the end.
        self.deferred: list[UnitRecord] = []

    def documents(self) -> None:
        """Store the raw documents."""
        for d in self.archive.documents:
            # An unfinished document is held by this process while the import runs (no one resumes it into a
            # bank that is not there yet), and released at the commit.
            self.store.put_document(Document(
                id=d.id, bank_id=self.bank_id, content=d.content, context=d.context, timestamp=d.timestamp,
                status=d.status, error=d.error, metadata=d.metadata, created_at=d.created_at, updated_at=d.updated_at,
                kind=d.kind, options=d.options, revision=d.revision, owner=self.owner if d.status in _ACTIVE else None,
            ))

    def release_documents(self) -> None:
        """Let go of unfinished documents at the commit: the store's recovery resumes them like any other."""
        for d in self.archive.documents:
            if d.status in _ACTIVE:
                doc = self.store.get_document(self.bank_id, d.id)
                if doc is not None:
                    self.store.put_document(doc.model_copy(update={"owner": None}))

    def _vectors(self, units: list[UnitRecord], previous: dict[str, str | None]) -> np.ndarray:
        """The archive's vectors when they are used, else embedded as the store's own rebuild would (each unit's
        text with its date, and the previous unit's text when that asked something)."""
        if self.copy_vectors and self.archive.has_vectors:
            return np.stack([self.archive.vector_of(u) for u in units])
        settings = self.engine.settings
        texts = [embedding_text(_memory(self.bank_id, u), settings.embed_time_reference,
                                previous[u.id] if settings.embed_reply_context else None) for u in units]
        return np.asarray(self.engine.embedder.embed(texts), dtype=np.float32)

    def units(self, batch: list[list[UnitRecord]]) -> None:
        """Write whole documents' units (vectors first, marked; then one graph transaction with their mentions)."""
        units: list[Memory] = []
        positions: dict[str, int] = {}
        contexts: dict[str, str] = {}
        previous: dict[str, str | None] = {}
        for group in batch:
            # The keyword context each unit was stored with: its neighbours' texts at that time.
            at_commit = [_memory(self.bank_id, u, commit_text(u, self.histories.get(u.id)), u.confidence)
                         for u in group]
            contexts.update(search_contexts(at_commit))
            for i, u in enumerate(group):
                positions[u.id] = i
                previous[u.id] = group[i - 1].text if i > 0 else None
                if u.id in self.steps:
                    text, confidence = initial_state(u, self.steps[u.id])
                    units.append(_memory(self.bank_id, u, text, confidence))
                else:
                    units.append(_memory(self.bank_id, u))
        records = [u for group in batch for u in group]
        replayed = {u.id for u in records if any(s.replay for s in self.steps.get(u.id, []))}
        now = [u for u in records if u.id not in replayed]
        self.deferred += [u for u in records if u.id in replayed]
        mentioned = list(dict.fromkeys(e for u in records for e in u.entities))
        unit_batch = UnitBatch(
            units=units, positions=positions, contexts=contexts,
            updated_entities=[_entity(self.bank_id, self.entities[e]) for e in mentioned],
            mentions=[Mention(u.id, e) for u in records for e in u.entities],
        )
        ids = [u.id for u in now]
        if ids:
            vectors = self._vectors(now, previous)
            self.store.mark_vectors(self.bank_id, ids, self.owner)
            self.engine.index.upsert(self.bank_id, ids, vectors, [vector_metadata(_memory(self.bank_id, u))
                                                                  for u in now])
        self.store.add_units(self.bank_id, unit_batch, owner=self.owner)

    def links(self) -> None:
        """Write the links, once both ends of each exist (and any entity no unit mentions)."""
        mentioned = {e for u in self.archive.units for e in u.entities}
        orphans = [_entity(self.bank_id, e) for e in self.archive.entities if e.id not in mentioned]
        batch: list[Link] = []
        first = True
        for k in self.archive.links:  # a batch at a time: links streamed from a file are never all held
            batch.append(Link(source_id=k.source_id, target_id=k.target_id, type=k.type, weight=k.weight))
            if len(batch) == LINK_BATCH:
                self._add_links(batch, orphans if first else [])
                batch, first = [], False
        if batch or (first and orphans):
            self._add_links(batch, orphans if first else [])

    def _add_links(self, links: list[Link], orphans: list[Entity]) -> None:
        # Entities no unit mentions (a source that needs ``check --repair``) are kept as they were.
        self.store.add_units(self.bank_id, UnitBatch(links=links, new_entities=orphans), owner=self.owner)

    def histories_and_deferred_vectors(self) -> None:
        """Write opinion histories, then the vectors of opinions whose text they moved."""
        writer = HistoryWriter(self.store, self.bank_id, self.owner)
        units = {u.id: u for u in self.archive.units if u.id in self.steps}
        for opinion_id, steps in self.steps.items():
            unit = units[opinion_id]
            writer.write(unit, steps, initial_state(unit, steps))
        if not self.deferred:
            return
        previous = self._previous(self.deferred)
        ids = [u.id for u in self.deferred]
        self.store.mark_vectors(self.bank_id, ids, self.owner)
        self.engine.index.upsert(self.bank_id, ids, self._vectors(self.deferred, previous),
                                 [vector_metadata(_memory(self.bank_id, u)) for u in self.deferred])
        self.store.clear_vector_marks(self.bank_id, ids)

    def _previous(self, wanted: list[UnitRecord]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        ids = {u.id for u in wanted}
        for group in _groups(self.archive.units):
            for i, u in enumerate(group):
                if u.id in ids:
                    out[u.id] = group[i - 1].text if i > 0 else None
        return out

    def verify_counts(self) -> dict[str, int]:
        """The bank's counts as stored; ``VerificationError`` unless they are the archive's."""
        stats = self.store.stats(self.bank_id)
        expected = self.archive.counts()
        got = {"document": sum(stats.get("documents", {}).values()), "entity": int(stats.get("entities", 0)),
               "unit": int(stats.get("units", 0)), "link": sum(stats.get("links", {}).values())}
        wrong = [f"{k}: expected {expected[k]}, stored {v}" for k, v in got.items() if v != expected[k]]
        networks = {k: v for k, v in sorted(stats.get("networks", {}).items()) if v}
        if networks != self.archive.networks():
            wrong.append(f"networks: expected {self.archive.networks()}, stored {networks}")
        vectors = self.engine.index.count(self.bank_id)
        if vectors != expected["unit"]:
            wrong.append(f"vectors: expected {expected['unit']}, stored {vectors}")
        if wrong:
            raise VerificationError(f"bank {self.bank_id!r} does not hold what was written: " + "; ".join(wrong))
        return {**got, "vector": vectors}


def restore(
    engine: Engine,
    archive: BankArchive,
    *,
    marker: str = IMPORT_MARKER,
    source: str = "",
    use_vectors: bool = True,
    replace: bool = False,
    before_commit: Callable[[], None] | None = None,
    payload: dict[str, Any] | None = None,
) -> RestoreResult:
    """Write ``archive`` (validated, under its final bank id) as a new bank of ``engine``'s stores.

    ``marker`` is the kind of the progress marker, ``source`` a description kept in it. The archive's vectors
    are written when it has them, ``use_vectors`` is set and the embedders match; else they are recomputed.
    ``before_commit`` runs once everything is written and counted (migration compares recall there); an error
    from it, like any other, removes the bank. ``payload`` is kept in the marker (migration records the source's
    counts there, to know later that the copy is still current). Raises ``BankExistsError`` for an existing bank
    unless ``replace``.
    """
    started = time.perf_counter()
    bank_id = archive.bank.id
    cleared = prepare_target(engine, bank_id, replace=replace)
    # The graph store is the truth and holds no such bank: vectors still under its id are orphans (a deleted bank
    # whose collection drop was deferred) and would be counted with the new ones.
    engine.index.drop_bank(bank_id)
    copy_vectors, reason = _vector_plan(engine, archive, use_vectors)
    job = _marker_job(engine, archive, marker, source, payload)
    engine.store.enqueue_job(job)  # before the bank exists: no moment where the bank is there without its marker
    writer = _Writer(engine, archive, copy_vectors)
    try:
        _write_bank(engine, archive, writer)
        counts = writer.verify_counts()
        if before_commit is not None:
            before_commit()
        writer.release_documents()
        engine.store.finish_job(job.id)  # the commit: from here on the bank is whole
    except BaseException as exc:
        _discard_unfinished(engine, bank_id)
        if isinstance(exc, Exception) and not isinstance(exc, HindsightError):
            raise StoreError(f"writing bank {bank_id!r} failed and nothing of it was kept: {exc}") from exc
        raise
    _record_trail(engine, archive, marker, source + (f"; the earlier bank was removed ({cleared})" if cleared else ""),
                  counts)
    return RestoreResult(bank_id=bank_id, cleared=cleared, vectors="copied" if copy_vectors else "recomputed",
                         vectors_reason=reason, counts=counts, seconds=round(time.perf_counter() - started, 3))


def _record_trail(engine: Engine, archive: BankArchive, marker: str, source: str, counts: dict[str, int]) -> None:
    """After the commit: the file's audit trail under the new bank id, then an entry for this import (or
    migration). Recorded after the bank is whole, so a failed import leaves no entry of a bank that never was;
    entries stored already (the same file imported again) are skipped. A failure here leaves the bank whole and
    raises ``StoreError`` (``stores/audit.py``)."""
    bank_id = archive.bank.id
    operation = "import" if marker == IMPORT_MARKER else "migrate"
    what = f"{operation} of bank {bank_id!r}"
    now = utcnow()
    # Imported entries are dated in the microseconds before now, one apart, so that they keep the file's order.
    at = now - timedelta(microseconds=len(archive.audit))
    carried: list[AuditEntry] = []
    for n, record in enumerate(archive.audit):  # a batch at a time: a streamed trail is never held whole
        # A file's entries are claims, marked imported (trail.py); a migration's are this user's own trail.
        carried.append(imported_entry(record, bank_id, source=source, at=at + timedelta(microseconds=n))
                       if operation == "import" else record.entry(bank_id))
        if len(carried) == AUDIT_BATCH:
            audit.append(engine.store, carried, what)
            carried = []
    own = audit.entry(bank_id, operation, counts={k: v for k, v in counts.items() if k != "vector"},
                      summary=f"{source}; {len(archive.audit)} audit entries carried")
    audit.append(engine.store, [*carried, after(own, now)], what)


def _marker_job(
    engine: Engine, archive: BankArchive, marker: str, source: str, payload: dict[str, Any] | None
) -> Job:
    """The progress marker of a restore: a job stored as ``failed`` ("incomplete"), so no worker runs it, until
    the restore finishes it."""
    return Job(id=uuid.uuid4().hex, bank_id=archive.bank.id, kind=marker, status=JobStatus.FAILED,
               error=f"incomplete: {marker} started at {utcnow().isoformat()} has not finished; this bank is not "
                     "whole (it is cleared by the next import or migration into this id)",
               payload={"source": source, "format_version": archive.header.version, "counts": archive.counts(),
                        "networks": archive.networks(), "source_bank_id": archive.header.bank_id,
                        "owner": engine.vectors.owner, **(payload or {})})


def _write_bank(engine: Engine, archive: BankArchive, writer: _Writer) -> None:
    """Create the bank and write all of ``archive`` into it, in retain's order (see the module docstring)."""
    bank_id = archive.bank.id
    engine.store.create_bank(BankProfile(id=bank_id, name=archive.bank.name, background=archive.bank.background,
                                         disposition=archive.bank.disposition, created_at=archive.bank.created_at))
    engine.index.ensure_collection(bank_id, engine.embedder.name, engine.embedder.dimension)
    with engine.vectors.hold(bank_id, [u.id for u in archive.units]):
        writer.documents()
        for batch in _batches(archive.units):
            writer.units(batch)
        writer.links()
        writer.histories_and_deferred_vectors()


def _discard_unfinished(engine: Engine, bank_id: str) -> None:
    """Remove a bank whose restore failed; when even that fails, log it: the marker stays ``failed``, and the next
    run into this id clears the bank."""
    try:
        discard_bank(engine, bank_id)
    except Exception as cleanup:
        log.error("could not remove the unfinished bank %r (%s); it stays marked incomplete", bank_id, cleanup)
