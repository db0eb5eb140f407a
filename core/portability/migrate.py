"""``migrate``: copy banks from one opened store to another (embedded to the server backend), resumable, verified.

Each bank is read through the store protocols of the source (``collect``) and written into the target like an
import (``restore``: all or nothing, under a ``hindsight.migrate`` progress marker), keeping its bank id and every
memory, entity and document id. Vectors are copied when both sides use the same embedder (name and dimension),
else recomputed. Before a bank's marker is finished it is verified: its counts (documents, memories per
network, entities, links, vectors) must equal the source's, and a few sample queries must recall the same best
memories on both sides: at least ``MIN_OVERLAP`` of the first ``TOP``, and of all those within the budget. Not
the whole list in the same order: the embedded index ranks vectors exactly and the Chroma server by HNSW, an
approximate search, so near-tied memories may swap (migrating the ten LoCoMo conversations twice, 9 and 4 of
the 50 sample queries differed; all but one had the same first five memories, and that one swapped the fifth
and the sixth). A copy that lost memories or vectors, or holds wrong ones, changes what comes first. A bank
that fails verification is removed again and reported.

Resuming: run the same migration again. A bank whose marker is finished and whose source counts have not
changed since is skipped; a bank left half-copied by a run that was killed is cleared and copied again; a bank
of the target that no migration wrote is never overwritten (unless ``replace``).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ..engine import Engine
from ..errors import BankNotFoundError, HindsightError
from ..models import JobStatus, utcnow
from .archive import BankArchive
from .collect import collect_bank
from .errors import VerificationError
from .restore import MIGRATE_MARKER, latest_marker, restore

log = logging.getLogger(__name__)

SAMPLE_QUERIES = 5
QUERY_CHARS = 200
VERIFY_BUDGET = 1000
TOP = 5
"""How many of the first memories recalled are compared on their own."""
MIN_OVERLAP = 0.8
"""Share of the first ``TOP`` memories, and of all those within the budget, both sides must have in common."""


class Opened(Protocol):
    """An opened store (a ``Hindsight``): migration reads and writes through its engine."""

    @property
    def engine(self) -> Engine:
        """The wired stores, embedder and pipelines."""
        ...


class QueryCheck(BaseModel):
    """One sample query recalled on both sides: the memory ids in recall order."""

    query: str
    source_ids: list[str]
    target_ids: list[str]
    same_order: bool = Field(description="the whole list is the same, in the same order")
    same_top: bool = Field(True, description=f"the first {TOP} memories are the same, in the same order")
    top_overlap: float = Field(1.0, description=f"memories in common among the first {TOP} of each side")
    overlap: float = Field(1.0, description="memories in common over the longer list's length")

    @property
    def matches(self) -> bool:
        """Whether this query recalls alike on both sides (see the module: near-ties may swap)."""
        return self.top_overlap >= MIN_OVERLAP and self.overlap >= MIN_OVERLAP


class BankMigration(BaseModel):
    """What happened to one bank."""

    bank_id: str
    status: Literal["copied", "skipped", "failed"]
    reason: str = Field("", description="why it was skipped or failed")
    source_counts: dict[str, Any] = Field(default_factory=dict)
    target_counts: dict[str, Any] = Field(default_factory=dict)
    counts_match: bool = False
    queries: list[QueryCheck] = Field(default_factory=list)
    verified: bool = Field(False, description="counts equal and every sample query recalled alike (QueryCheck.matches)")
    vectors: Literal["copied", "recomputed"] | None = None
    cleared: Literal["leftover", "replaced"] | None = None
    seconds: float = 0.0
    memories_per_s: float = 0.0


class MigrationReport(BaseModel):
    """The result of ``migrate``: one entry per bank, in order."""

    banks: list[BankMigration] = Field(default_factory=list)
    seconds: float = 0.0
    ok: bool = Field(True, description="every bank copied and verified, or skipped as already done")


def bank_counts(engine: Engine, bank_id: str) -> dict[str, Any]:
    """What verification compares: documents, memories per network, entities, links and vectors of a bank."""
    stats = engine.store.stats(bank_id)
    return {
        "documents": sum(stats.get("documents", {}).values()),
        "memories": int(stats.get("units", 0)),
        "networks": {k: v for k, v in sorted(stats.get("networks", {}).items()) if v},
        "entities": int(stats.get("entities", 0)),
        "links": sum(stats.get("links", {}).values()),
        "vectors": engine.index.count(bank_id),
    }


def sample_queries(archive: BankArchive, n: int = SAMPLE_QUERIES) -> list[str]:
    """``n`` queries taken from memories spread evenly over the bank (by id, so the same bank gives the same ones):
    the text of the memory, cut at ``QUERY_CHARS``."""
    texts = [u.text for u in sorted(archive.units, key=lambda u: u.id) if u.text.strip()]
    if not texts:
        return []
    picks = sorted({round(i * (len(texts) - 1) / max(n - 1, 1)) for i in range(min(n, len(texts)))})
    return [" ".join(texts[i].split())[:QUERY_CHARS] for i in picks]


def reference_time(archive: BankArchive) -> datetime:
    """The "now" both sides recall at: the bank's latest memory time (fixed, so relative dates parse alike)."""
    times = [t for u in archive.units for t in (u.occurred_start, u.mentioned_at) if t is not None]
    return max(times) if times else utcnow()


def compare_recall(source: Engine, target: Engine, bank_id: str, queries: list[str], when: datetime,
                   budget: int = VERIFY_BUDGET) -> list[QueryCheck]:
    """Recall each query on both sides (same budget and reference time); the ids in order, and whether they match."""
    checks = []
    for query in queries:
        a = [m.id for m in source.recaller.recall(bank_id, query, budget=budget, reference_time=when).memories]
        b = [m.id for m in target.recaller.recall(bank_id, query, budget=budget, reference_time=when).memories]
        checks.append(QueryCheck(query=query, source_ids=a, target_ids=b, same_order=a == b,
                                 same_top=a[:TOP] == b[:TOP],
                                 top_overlap=_share(a[:TOP], b[:TOP]),
                                 overlap=_share(a, b)))
    return checks


def _share(a: list[str], b: list[str]) -> float:
    """Items in common over the longer list's length (1.0 for two empty lists)."""
    longest = max(len(a), len(b))
    return round(len(set(a) & set(b)) / longest, 4) if longest else 1.0


def _already_done(target: Engine, bank_id: str, counts: dict[str, Any]) -> bool:
    """Whether an earlier run copied and verified this bank, from a source that still has the same counts."""
    if target.store.get_bank(bank_id) is None:
        return False
    marker = latest_marker(target.store, bank_id)
    return (marker is not None and marker.kind == MIGRATE_MARKER and marker.status == JobStatus.DONE
            and marker.payload.get("source_counts") == counts and bank_counts(target, bank_id) == counts)


def migrate_bank(source: Engine, target: Engine, bank_id: str, *, replace: bool = False,
                 queries: int = SAMPLE_QUERIES) -> BankMigration:
    """Copy and verify one bank (see the module); raises what failed (the target keeps nothing of it)."""
    started = time.perf_counter()
    counts = bank_counts(source, bank_id)
    if _already_done(target, bank_id, counts):
        return BankMigration(bank_id=bank_id, status="skipped", reason="already copied and verified",
                             source_counts=counts, target_counts=counts, counts_match=True, verified=True)
    same_embedder = (source.embedder.name, source.embedder.dimension) == (target.embedder.name,
                                                                          target.embedder.dimension)
    archive = collect_bank(source, bank_id, with_vectors=same_embedder)
    entry = BankMigration(bank_id=bank_id, status="copied", source_counts=counts)
    sample, when = sample_queries(archive, queries), reference_time(archive)

    def verify() -> None:
        entry.target_counts = bank_counts(target, bank_id)
        entry.counts_match = entry.target_counts == counts
        entry.queries = compare_recall(source, target, bank_id, sample, when)
        entry.verified = entry.counts_match and all(q.matches for q in entry.queries)
        if not entry.verified:
            differ = [q.query[:40] for q in entry.queries if not q.matches]
            raise VerificationError(
                f"bank {bank_id!r} does not match its source: "
                + ("counts differ " + f"({counts} vs {entry.target_counts}); " if not entry.counts_match else "")
                + (f"{len(differ)} of {len(entry.queries)} sample queries recall other memories ({differ})"
                   if differ else ""))

    try:
        result = restore(target, archive, marker=MIGRATE_MARKER, source=f"migration of bank {bank_id!r}",
                         use_vectors=True, replace=replace, before_commit=verify, payload={"source_counts": counts})
    except VerificationError as exc:  # the copy was removed; the entry keeps what was compared
        entry.status, entry.reason = "failed", " ".join(str(exc).split())
        entry.seconds = round(time.perf_counter() - started, 3)
        return entry
    seconds = time.perf_counter() - started
    entry.vectors, entry.cleared, entry.seconds = result.vectors, result.cleared, round(seconds, 3)
    entry.memories_per_s = round(len(archive.units) / seconds, 1) if seconds > 0 else 0.0
    return entry


def migrate(
    from_store: Opened,
    to_store: Opened,
    banks: list[str] | None = None,
    *,
    replace: bool = False,
    queries: int = SAMPLE_QUERIES,
) -> MigrationReport:
    """Copy ``banks`` (default: every bank) from ``from_store`` to ``to_store`` (opened ``Hindsight`` objects) and
    verify each; see the module for resuming. A bank that fails is reported (``status="failed"``, ``reason``)
    and the others still run; ``report.ok`` is False then. ``BankNotFoundError`` before anything is copied when
    a bank asked for does not exist in the source.
    """
    started = time.perf_counter()
    source, target = from_store.engine, to_store.engine
    known = [b.id for b in source.store.list_banks()]
    wanted = list(dict.fromkeys(banks)) if banks else known
    missing = [b for b in wanted if b not in known]
    if missing:
        raise BankNotFoundError(f"no bank {missing[0]!r} in the source store; known banks: {known[:20]}")
    report = MigrationReport()
    for bank_id in wanted:
        try:
            entry = migrate_bank(source, target, bank_id, replace=replace, queries=queries)
        except HindsightError as exc:
            log.error("migration of bank %r failed: %s", bank_id, exc)
            entry = BankMigration(bank_id=bank_id, status="failed", reason=" ".join(str(exc).split()))
        report.banks.append(entry)
    report.ok = all(b.status != "failed" for b in report.banks)
    report.seconds = round(time.perf_counter() - started, 3)
    return report
