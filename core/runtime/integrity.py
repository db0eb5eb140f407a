"""``hindsight check``: verify a store's invariants (DESIGN.md section 4) and repair what can be repaired.

Invariants, per bank:

- every unit has a vector and no vector outlives its unit (``missing_vector``, ``orphan_vector``);
- no link or mention points at a missing unit or entity, one entity per normalised name, mention counts
  equal the mentions, no entity without mentions, keyword statistics equal a recount, no history event of a
  missing opinion (the graph store's own ``check_bank``);
- no fact cites a memory that no longer exists (``dangling_citation``: repair strips the citation, and deletes a
  fact left citing nothing);
- no document stays ``pending`` or ``extracting`` after the process holding it died (``stuck_document``),
  no job stays ``running`` for a dead process (``stuck_job``), no vector mark is left by a dead process or
  by nobody (``vector_mark``).

Repair runs the store's ``repair_bank``, takes over dead processes' work (``Hindsight.recover``: jobs queued
again, documents resumed, marks synced) and reconciles the vectors with the units. The torture tests use
``check`` as their oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from ..config import Settings
from ..embedders import Embedder
from ..models import FACT_CITES_KEY, DocumentStatus, JobStatus
from ..stores.base import GraphStore, VectorIndex
from ..stores.citations import own_citations
from ..vectors.reconcile import reconcile_bank
from .leases import ProcessLease


class Checked(Protocol):
    """What a check reads of an open store (``Hindsight`` is one): its stores, embedder, settings and lease, and
    ``recover`` for a repair."""

    store: GraphStore
    index: VectorIndex
    embedder: Embedder
    settings: Settings
    lease: ProcessLease

    def recover(self) -> dict[str, int]:
        """Take over what dead processes left (``Hindsight.recover``)."""
        ...

MAX_IDS = 50  # offending ids listed per kind; the count is always complete


class BankCheck(BaseModel):
    """Problems found in one bank (kind -> offending ids), and what repair fixed."""

    bank_id: str
    problems: dict[str, list[str]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict, description="how many of each kind were found")
    repaired: dict[str, int] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every invariant holds."""
        return not self.problems


class CheckReport(BaseModel):
    """The result of ``check``: one entry per bank checked."""

    banks: list[BankCheck] = Field(default_factory=list)
    repaired: bool = False
    recovered: dict[str, int] = Field(
        default_factory=dict, description="repair: dead processes' work taken over (jobs, documents, vector marks)"
    )

    @property
    def ok(self) -> bool:
        """True when every bank is sound (after repair, when it ran)."""
        return all(b.ok for b in self.banks)


def find_problems(hs: Checked, bank_id: str) -> dict[str, list[str]]:
    """Every broken invariant of one bank, by kind, with all offending ids."""
    store, index = hs.store, hs.index
    problems = dict(store.check_bank(bank_id))
    index.ensure_collection(bank_id, hs.embedder.name, hs.embedder.dimension)
    units, vectors = store.unit_ids(bank_id), index.ids(bank_id)
    if dangling := sorted(_dangling_citations(store, bank_id, units)):
        problems["dangling_citation"] = dangling
    if missing := sorted(units - vectors):
        problems["missing_vector"] = missing
    if orphans := sorted(vectors - units):
        problems["orphan_vector"] = orphans
    owners = {o.id: o for o in store.list_owners()}

    def dead(owner: str | None) -> bool:
        return owner is None or owner not in owners or hs.lease.is_dead(owners[owner])

    jobs = {j.id: j for j in store.list_jobs(bank_id)}
    stuck_jobs = [j.id for j in jobs.values() if j.status == JobStatus.RUNNING and dead(j.owner)]
    if stuck_jobs:
        problems["stuck_job"] = stuck_jobs
    live_job = {JobStatus.QUEUED, JobStatus.RUNNING}
    stuck_docs = []
    for status in (DocumentStatus.PENDING, DocumentStatus.EXTRACTING):
        for doc in store.list_documents(bank_id, status):
            job = jobs.get(doc.job_id or "")
            waiting = job is not None and job.status in live_job and job.id not in stuck_jobs
            if dead(doc.owner) and not waiting:
                stuck_docs.append(doc.id)
    if stuck_docs:
        problems["stuck_document"] = stuck_docs
    marks = [f"{owner}:{uid}" for owner in [None, *owners] if dead(owner)
             for b, uid in store.vector_marks(owner) if b == bank_id]
    if marks:
        problems["vector_mark"] = marks
    return problems


def _dangling_citations(store: GraphStore, bank_id: str, units: set[str]) -> dict[str, list[str]]:
    """Facts citing memories that no longer exist (a forget or a retain of the cited document again takes such
    citations along; one left was missed): fact id -> the missing ids it cites."""
    out: dict[str, list[str]] = {}
    for uid, meta in store.units_with_references(bank_id):
        missing = [str(c) for c in meta.get(FACT_CITES_KEY) or [] if str(c) not in units]
        if missing:
            out[uid] = missing
    return out


def _repair_citations(store: GraphStore, bank_id: str) -> int:
    """Strip the missing ids from the facts citing them; a fact left citing none of the messages it was made of
    rests on nothing and is deleted
    (its vector goes with the sync of the marks that follows). Returns how many facts were repaired."""
    units = store.unit_ids(bank_id)
    dangling = _dangling_citations(store, bank_id, units)
    if not dangling:
        return 0
    store.strip_citations(bank_id, sorted({c for ids in dangling.values() for c in ids}))
    # Lent citations (of restating facts) are not what a fact was made of: one left with only those goes too.
    empty = [uid for uid, meta in store.units_with_references(bank_id)
             if uid in dangling and FACT_CITES_KEY in meta and not own_citations(meta)]
    if empty:
        store.delete_units(bank_id, empty)  # marks their vectors (and neighbours' to embed again) for the sync
    return len(dangling)


def check(hs: Checked, bank_ids: Sequence[str] | None = None, *, repair: bool = False) -> CheckReport:
    """Check the invariants of ``bank_ids`` (default: every bank); with ``repair``, fix what can be fixed and
    report what is still broken afterwards."""
    wanted = list(bank_ids) if bank_ids is not None else [b.id for b in hs.store.list_banks()]
    report = CheckReport(repaired=repair)
    if repair:
        # Dead processes' jobs, documents and vector marks first: the rest builds on them.
        report.recovered = {k: v for k, v in hs.recover().items() if v}
    for bank_id in wanted:
        result = BankCheck(bank_id=bank_id)
        problems = find_problems(hs, bank_id)
        if repair and problems:
            fixed = dict(hs.store.repair_bank(bank_id))
            if "dangling_citation" in problems:
                fixed["dangling_citation"] = _repair_citations(hs.store, bank_id)
                for kind, n in hs.recover().items():  # the vector marks its deletes left
                    if n:
                        report.recovered[kind] = report.recovered.get(kind, 0) + n
            reconciled = reconcile_bank(bank_id, hs.store, hs.index, hs.embedder, hs.settings)
            if reconciled["reindexed"]:
                fixed["missing_vector"] = reconciled["reindexed"]
            if reconciled["dropped"]:
                fixed["orphan_vector"] = reconciled["dropped"]
            result.repaired = fixed
            problems = find_problems(hs, bank_id)
        result.counts = {k: len(v) for k, v in problems.items()}
        result.problems = {k: v[:MAX_IDS] for k, v in problems.items()}
        report.banks.append(result)
    return report
