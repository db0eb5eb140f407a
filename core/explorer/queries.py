"""What each view of the explorer reads and writes, as JSON-ready dicts, a page at a time.

Everything goes through the public ``Bank`` API or the graph store's protocols (``stores.base``), scoped by
bank: this module holds no memory logic, only the shape the page wants. Lists are paged on the server
(``limit``/``offset``, at most ``MAX_PAGE`` rows) so that a bank of any size is never read whole; the entity
graph starts from the ``limit`` most mentioned entities and grows one node's neighbourhood at a time.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import BankNotFoundError, InvalidInputError, MemoryNotFoundError, shown
from ..models import (
    AuditEntry,
    Document,
    DocumentStatus,
    Entity,
    Job,
    JobStatus,
    LinkType,
    Memory,
    Message,
    Network,
    Recall,
    utcnow,
)
from ..observations.job import EVIDENCE_KEY, FACT_NETWORKS, SUPPORT_KEY, observation_document_id, observation_of
from ..opinions.trajectory import trajectory
from ..retain.correct import CORRECTION_KEY
from ..temporal.timestamps import parse_timestamp
from ..text.inputs import document_input
from ..text.words import split_sentences

if TYPE_CHECKING:
    from ..bank import Bank
    from ..hindsight import Hindsight

MAX_PAGE = 500
MAX_GRAPH_NODES = 300
MAX_VISIBLE = 300
"""Most nodes already on screen that an expansion links new nodes to (bounds the co-occurrence query)."""
PREVIEW_CHARS = 240
MAX_LINKS = 50
EDGES_PER_NODE = 4
"""Edges drawn per node of the graph, the strongest (in a large bank nearly every pair of frequent entities is
mentioned together somewhere: 1,700 edges among 60 nodes draw a hairball and take the layout seconds)."""


MAX_TIMELINE = 50_000
"""Most memories one timeline answer holds (10,000 by default): the newest stored, with ``truncated`` set beyond."""
TIMELINE_BATCH = 2_000
TIMELINE_TEXT = 160
"""Characters of a memory's text that the timeline carries (its tooltip); the memory page has the rest."""
AUDIT_SCAN = 20_000
"""Most audit entries the timeline reads to find a bank's forgets (and the retains that stored what they removed)."""

GROWTH_SCAN = 20_000
"""Most memories (the newest stored) that the overview's growth chart and an entity's chart count by day."""
JOB_SCAN = 5_000
"""Most jobs (the newest queued) that the overview's job charts and rejected-facts summary read."""
FRESHNESS_MAX = 100
"""Most observations (the newest stored) whose freshness the overview shows (each costs two counts of its entity's
memories)."""
REJECTION_SAMPLES = 20
"""Rejected facts the overview lists (the jobs keep a sample of theirs each)."""
CHANGES_SCAN = 2_000
"""Most memories mentioning an entity (the newest stored) read to find its superseded values."""
DAY_MS = 86_400_000
HOUR_MS = 3_600_000


class NotFoundError(LookupError):
    """A memory, entity, opinion or job that the bank does not hold (HTTP 404)."""


def page_args(limit: int, offset: int) -> tuple[int, int]:
    """Checked paging arguments: ``1 <= limit <= MAX_PAGE``, ``offset >= 0``."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
    if offset < 0:
        raise InvalidInputError(f"offset must not be negative, not {offset}")
    return limit, offset


def _page(items: list[Any], limit: int, offset: int, *, total: int | None = None,
          fetched: int | None = None) -> dict[str, Any]:
    """A page of ``items``. With a ``total``, more follow when it is beyond this page; without one, the caller
    asked the store for ``limit + 1`` rows and got ``fetched``: more follow when it got the extra row."""
    more = offset + limit < total if total is not None else (fetched or 0) > limit
    return {"items": items[:limit], "limit": limit, "offset": offset, "total": total, "has_more": more}


def memory_json(m: Memory) -> dict[str, Any]:
    """Every field of a memory but its bank id."""
    return m.model_dump(mode="json", exclude={"bank_id"})


def brief_json(m: Memory) -> dict[str, Any]:
    """What a list of related memories shows: id, text, network, dates, document, and whether (by which memory,
    until when) it is superseded."""
    return {"id": m.id, "text": m.text, "network": m.network.value,
            "occurred_start": _iso(m.occurred_start), "mentioned_at": _iso(m.mentioned_at),
            "document_id": m.document_id, "superseded_by": m.superseded_by, "valid_until": _iso(m.valid_until)}


def _ms(value: datetime | None) -> int | None:
    """Milliseconds since the epoch (what the page's time axis counts), or None."""
    return round(value.timestamp() * 1000) if value is not None else None


def timeline_json(m: Memory) -> dict[str, Any]:
    """What the timeline draws of a memory: its network, when it happened (``start``, ``end``), when it was said
    (``said``) and stored (``stored``), in ms since the epoch; whether and until when it was superseded; an opinion's
    confidence; the start of its text."""
    text = m.text if len(m.text) <= TIMELINE_TEXT else m.text[: TIMELINE_TEXT - 1] + "…"
    return {"id": m.id, "network": m.network.value, "start": _ms(m.occurred_start), "end": _ms(m.occurred_end),
            "said": _ms(m.mentioned_at), "stored": _ms(m.created_at), "superseded_by": m.superseded_by,
            "valid_until": _ms(m.valid_until), "confidence": m.confidence, "text": text}


def _bucket(value: datetime, size_ms: int) -> int:
    """The start (ms since the epoch, UTC) of the hour or day that ``value`` falls in."""
    ms = round(value.timestamp() * 1000)
    return ms - ms % size_ms


def per_bucket(rows: Sequence[tuple[datetime | None, str]], keys: Sequence[str],
               size_ms: int = DAY_MS) -> dict[str, Any]:
    """``rows`` of (time, key) counted per hour or day and key: ``{"x": [bucket starts, ms], "counts": {key:
    [count per bucket]}}``, the buckets in time order (only those that hold a row); rows without a time are
    left out."""
    table: dict[int, dict[str, int]] = {}
    for when, key in rows:
        if when is not None:
            row = table.setdefault(_bucket(when, size_ms), {})
            row[key] = row.get(key, 0) + 1
    xs = sorted(table)
    return {"x": xs, "counts": {k: [table[x].get(k, 0) for x in xs] for k in keys}}


def observation_sentences(m: Memory) -> list[dict[str, Any]]:
    """An observation's text as its kept sentences, in order, each with the positions in ``metadata["facts"]`` of
    the messages it rests on (``metadata["support"]``). When the text does not split into as many sentences as
    there are support lists (an observation written before they were recorded, or a sentence with a full stop
    inside), it is one piece resting on all of them."""
    facts = m.metadata.get("facts")
    support = m.metadata.get(SUPPORT_KEY)
    ids = [str(f) for f in facts] if isinstance(facts, list) else []
    pieces = split_sentences(m.text)
    if isinstance(support, list) and len(support) == len(pieces) and all(isinstance(s, list) for s in support):
        return [{"text": text, "facts": [ids[i] for i in s if isinstance(i, int) and 0 <= i < len(ids)]}
                for text, s in zip(pieces, support, strict=True)]
    return [{"text": m.text, "facts": ids}]


def audit_json(e: AuditEntry) -> dict[str, Any]:
    """Every field of an audit entry but its bank id."""
    return e.model_dump(mode="json", exclude={"bank_id"})


def entity_json(e: Entity) -> dict[str, Any]:
    """Every field of an entity but its bank id."""
    return e.model_dump(mode="json", exclude={"bank_id"})


def job_json(j: Job) -> dict[str, Any]:
    """Every field of a job but its bank id."""
    return j.model_dump(mode="json", exclude={"bank_id"})


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def document_json(d: Document, *, full: bool = False) -> dict[str, Any]:
    """A document's fields; its content as a short preview, or (``full``) parsed into messages or text."""
    out = d.model_dump(mode="json", exclude={"bank_id", "content", "options", "revision"})
    out["chars"] = len(d.content)
    messages = _messages(d)
    if full:
        if messages is None:
            out["text"] = d.content
        else:
            out["messages"] = messages
        out["options"] = d.options
    else:
        first = messages[0]["text"] if messages else d.content
        out["preview"] = first[:PREVIEW_CHARS]
        out["message_count"] = len(messages) if messages is not None else None
    return out


def _messages(d: Document) -> list[dict[str, Any]] | None:
    """The document's messages (id, speaker, text, timestamp), or None when it holds plain text."""
    try:
        parsed = document_input(d)
    except InvalidInputError:  # content that does not parse the way it was recorded: shown as text
        return None
    if isinstance(parsed, str | Mapping):
        return None
    out = []
    for m in parsed:  # document_input gives Message models; the other shapes of RetainInput are read alike
        msg = m if isinstance(m, Message) else Message.model_validate(m if isinstance(m, Mapping) else {"text": m})
        out.append({"id": msg.id, "speaker": msg.speaker, "text": msg.text, "timestamp": _iso(msg.timestamp)})
    return out


def strongest(edges: list[dict[str, Any]], cap: int, per_node: int = 2) -> list[dict[str, Any]]:
    """The edges worth drawing: each node's ``per_node`` strongest (so no node loses all its links), then the
    strongest of the rest, up to ``cap`` in all (more when the per-node ones alone exceed it); strongest first."""
    ordered = sorted(edges, key=lambda e: (-e["weight"], e["source"], e["target"]))
    degree: dict[str, int] = {}
    keep: list[int] = []
    for i, e in enumerate(ordered):
        if degree.get(e["source"], 0) < per_node or degree.get(e["target"], 0) < per_node:
            keep.append(i)
            for end in (e["source"], e["target"]):
                degree[end] = degree.get(end, 0) + 1
    chosen = set(keep)
    for i in range(len(ordered)):
        if len(chosen) >= cap:
            break
        chosen.add(i)
    return [ordered[i] for i in sorted(chosen)]


class Explorer:
    """The explorer's reads and its two writes (forget, correct) over an open ``Hindsight``; thread-safe."""

    def __init__(self, hs: Hindsight) -> None:
        self.hs = hs
        self.store = hs.store
        self._banks: dict[str, Bank] = {}
        self._graphs: dict[tuple[str, int], tuple[tuple[int, tuple[str, ...]], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def bank(self, bank_id: str) -> Bank:
        """The bank, or ``BankNotFoundError`` (a bank deleted meanwhile is not found either)."""
        if not bank_id or self.store.get_bank(bank_id) is None:
            # Other banks' ids are not named: a caller of a shared server may not be entitled to know them.
            raise BankNotFoundError(f"no bank {bank_id!r}")
        with self._lock:
            bank = self._banks.get(bank_id)
            if bank is None:  # Hindsight.bank checks the vector collection: once per bank is enough
                bank = self._banks[bank_id] = self.hs.bank(bank_id, create=False)
        return bank

    # banks ---------------------------------------------------------------------------------------------------
    def banks(self) -> list[dict[str, Any]]:
        """Every bank with its number of memories."""
        return [{"id": b.id, "name": b.name, "created_at": _iso(b.created_at),
                 "memories": self.store.count_units(b.id)} for b in self.store.list_banks()]

    def summary(self, bank_id: str) -> dict[str, Any]:
        """Profile and number of memories: what every view needs first, cheap at any size."""
        profile = self.bank(bank_id).profile
        return {"profile": profile.model_dump(mode="json"), "memories": self.store.count_units(bank_id)}

    def counts(self, bank_id: str) -> dict[str, Any]:
        """Memories per network (a scan of the bank per network: the page asks for it after showing a page)."""
        self.bank(bank_id)
        return {"networks": {n.value: self.store.count_units(bank_id, network=n) for n in Network}}

    def stats(self, bank_id: str) -> dict[str, Any]:
        """The bank's full counts (``Bank.stats``: documents and jobs by status, links by type, vectors)."""
        return self.bank(bank_id).stats()

    # the overview's pictures ---------------------------------------------------------------------------------
    def overview(self, bank_id: str) -> dict[str, Any]:
        """What the overview draws: how the bank grew (``growth``), the jobs' backlog and throughput (``jobs``),
        the facts the checks rejected and why (``rejected``) and how fresh the observations are (``freshness``)."""
        self.bank(bank_id)
        jobs = self._scan_jobs(bank_id)
        return {"growth": self.growth(bank_id), "jobs": self._job_flow(jobs, len(jobs) >= JOB_SCAN),
                "rejected": self._rejected(jobs), "freshness": self._freshness(bank_id)}

    def growth(self, bank_id: str, *, entity_id: str | None = None) -> dict[str, Any]:
        """Memories per day and network (of one entity's, with ``entity_id``), by the day each was stored
        (``stored``) and by the day it was said (``said``: its mention, else its occurrence); the newest
        ``GROWTH_SCAN`` stored, ``truncated`` beyond."""
        total = self.store.count_units(bank_id, entity_id=entity_id)
        units = self._newest(bank_id, GROWTH_SCAN, entity_id=entity_id)
        keys = [n.value for n in Network]
        return {"stored": per_bucket([(m.created_at, m.network.value) for m in units], keys),
                "said": per_bucket([(m.mentioned_at or m.occurred_start, m.network.value) for m in units], keys),
                "scanned": len(units), "total": total, "truncated": total > len(units)}

    def _newest(self, bank_id: str, cap: int, *, entity_id: str | None = None,
                network: Network | None = None) -> list[Memory]:
        """The newest stored ``cap`` memories (of one entity, one network), read in batches."""
        out: list[Memory] = []
        offset = 0
        while offset < cap:
            want = min(TIMELINE_BATCH, cap - offset)
            ids = self.store.page_units(bank_id, network=network, entity_id=entity_id, limit=want, offset=offset)
            offset += len(ids)
            out.extend(self.store.get_units(bank_id, ids) if ids else [])
            if len(ids) < want:
                break
        return out

    def _scan_jobs(self, bank_id: str) -> list[Job]:
        out: list[Job] = []
        while len(out) < JOB_SCAN:
            page = self.store.page_jobs(bank_id, limit=MAX_PAGE, offset=len(out))
            out.extend(page)
            if len(page) < MAX_PAGE:
                break
        return out[:JOB_SCAN]

    @staticmethod
    def _job_flow(jobs: Sequence[Job], truncated: bool) -> dict[str, Any]:
        """Jobs by status now; how many were queued per hour (when they span under three days) or per day, by
        their status now; the throughput: how many finished (done or failed for good) per hour or day, by when
        they finished (``finished_at``; a job that finished before stores recorded it counts when it was queued,
        ``finished_undated`` says how many); the backlog: queued (due now or waiting for a retry), running, the
        oldest queued."""
        now = utcnow()
        statuses = [s.value for s in JobStatus]
        ended = [j for j in jobs if j.status in (JobStatus.DONE, JobStatus.FAILED)]
        finished = [(j.finished_at or j.created_at, j.status.value) for j in ended]
        times = [j.created_at for j in jobs] + [at for at, _ in finished]
        size = HOUR_MS if times and max(times) - min(times) < timedelta(days=3) else DAY_MS
        queued = [j for j in jobs if j.status == JobStatus.QUEUED]
        kinds: dict[str, dict[str, int]] = {}
        for j in jobs:
            row = kinds.setdefault(j.kind, {})
            row[j.status.value] = row.get(j.status.value, 0) + 1
        return {
            "by_status": {s: sum(1 for j in jobs if j.status.value == s) for s in statuses},
            "by_kind": kinds, "bucket": "hour" if size == HOUR_MS else "day",
            "queued_per_bucket": per_bucket([(j.created_at, j.status.value) for j in jobs], statuses, size),
            "finished_per_bucket": per_bucket(finished, [JobStatus.DONE.value, JobStatus.FAILED.value], size),
            "finished_undated": sum(1 for j in ended if j.finished_at is None),
            "backlog": {"queued": len(queued), "due": sum(1 for j in queued if j.run_after <= now),
                        "waiting": sum(1 for j in queued if j.run_after > now),
                        "running": sum(1 for j in jobs if j.status == JobStatus.RUNNING),
                        "oldest_queued": _iso(min((j.created_at for j in queued), default=None))},
            "scanned": len(jobs), "truncated": truncated,
        }

    @staticmethod
    def _rejected(jobs: Sequence[Job]) -> dict[str, Any]:
        """What the fact checks rejected, summed over the finished jobs that report it (``Job.result``:
        ``facts``, ``rejected``, ``rejected_by_reason``, a sample in ``rejections``): totals, per reason, and the
        newest samples with their job and document."""
        reasons: dict[str, int] = {}
        kept = rejected = reporting = 0
        samples: list[dict[str, Any]] = []
        for j in jobs:  # newest first
            r = j.result
            if not isinstance(r, dict) or "rejected" not in r:
                continue
            reporting += 1
            kept += int(r.get("facts") or 0)
            rejected += int(r.get("rejected") or 0)
            by = r.get("rejected_by_reason")
            for reason, n in (by.items() if isinstance(by, dict) else ()):
                reasons[str(reason)] = reasons.get(str(reason), 0) + int(n or 0)
            for sample in r.get("rejections") or []:
                if isinstance(sample, dict) and len(samples) < REJECTION_SAMPLES:
                    samples.append({"text": str(sample.get("text", "")), "reason": str(sample.get("reason", "")),
                                    "detail": str(sample.get("detail", "") or ""),
                                    "sources": [str(x) for x in sample.get("sources") or []], "job_id": j.id,
                                    "document_id": j.payload.get("document_id"), "at": _iso(j.created_at)})
        return {"jobs": reporting, "facts": kept, "rejected": rejected,
                "by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))), "samples": samples}

    def _freshness(self, bank_id: str) -> dict[str, Any]:
        """Each observation (the newest ``FRESHNESS_MAX``) against its entity now: the raw messages and facts that
        mentioned the entity when it was written (``metadata["evidence"]``) and now, and how many arrived since;
        stalest first."""
        total = self.store.count_units(bank_id, network=Network.OBSERVATION)
        rows = []
        for m in self._newest(bank_id, FRESHNESS_MAX, network=Network.OBSERVATION):
            entity_id = m.metadata.get("entity_id")
            then = m.metadata.get(EVIDENCE_KEY)
            now = (sum(self.store.count_units(bank_id, network=n, entity_id=str(entity_id)) for n in FACT_NETWORKS)
                   if entity_id else None)
            written = int(then) if isinstance(then, int | float) else None
            name = m.metadata.get("entity") or ", ".join(m.entities)
            rows.append({"id": m.id, "entity_id": entity_id, "entity": name,
                         "written": _iso(m.created_at), "said": _iso(m.mentioned_at), "evidence_then": written,
                         "evidence_now": now, "superseded_by": m.superseded_by,
                         "new_since": now - written if now is not None and written is not None else None})
        rows.sort(key=lambda r: (-int(r["new_since"] or 0), str(r["entity"] or "")))
        return {"observations": rows, "total": total, "truncated": total > len(rows),
                "current": sum(1 for r in rows if r["new_since"] == 0 and not r["superseded_by"])}

    # memories ------------------------------------------------------------------------------------------------
    def memories(
        self, bank_id: str, *, network: Network | None = None, entity_id: str | None = None,
        document_id: str | None = None, limit: int = 50, offset: int = 0,
    ) -> dict[str, Any]:
        """One page of memories, newest first; by network, by entity, or a document's (in document order)."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        if document_id is not None:
            ids = self.store.units_of_document(bank_id, document_id)
            if network is not None or entity_id is not None:
                kept = {m.id for m in self.store.get_units(bank_id, ids)
                        if (network is None or m.network == network)}
                if entity_id is not None:
                    kept &= set(self.store.units_of_entity(bank_id, entity_id))
                ids = [i for i in ids if i in kept]
            total: int = len(ids)
            page_ids = ids[offset : offset + limit]
        else:
            page_ids = self.store.page_units(bank_id, network=network, entity_id=entity_id, limit=limit,
                                             offset=offset)
            total = self.store.count_units(bank_id, network=network, entity_id=entity_id)
        items = [memory_json(m) for m in self.store.get_units(bank_id, page_ids)]
        return _page(items, limit, offset, total=total)

    def memory(self, bank_id: str, memory_id: str) -> dict[str, Any]:
        """A memory with its provenance: the source messages inside its document, the document, its entities
        (with ids), its stored links and, for an opinion, its history."""
        bank = self.bank(bank_id)
        m = bank.get(memory_id)
        if m is None:
            raise NotFoundError(f"no memory {memory_id!r} in bank {bank_id!r}")
        doc = self.store.get_document(bank_id, m.document_id) if m.document_id else None
        sources: list[dict[str, Any]] = []
        if doc is not None:
            wanted = set(m.sources)
            sources = [msg for msg in (_messages(doc) or []) if msg["id"] is not None and msg["id"] in wanted]
        entities = []
        for name in m.entities:
            found = self.store.find_entity(bank_id, name)
            entities.append({"id": found.id if found else None, "name": name})
        edges = self.store.neighbors(bank_id, [m.id], link_types=list(LinkType), entity_fanout=0)
        edges = sorted(edges, key=lambda e: (-e.weight, e.target_id))[:MAX_LINKS]
        linked = {u.id: u for u in self.store.get_units(bank_id, [e.target_id for e in edges])}
        links = [{"type": e.type, "weight": e.weight, "memory": brief_json(linked[e.target_id])}
                 for e in edges if e.target_id in linked]
        out: dict[str, Any] = {
            "memory": memory_json(m), "document": document_json(doc) if doc is not None else None,
            "sources": sources, "entities": entities, "links": links,
        }
        if m.network == Network.OPINION:
            out["history"] = self._history(bank_id, m)
        out.update(self._supersession(bank_id, m))
        return out

    def _supersession(self, bank_id: str, m: Memory) -> dict[str, Any]:
        """The memories a memory's history names, each brief (``{"id", "missing": True}`` for one forgotten since):
        ``superseded_by`` (the later memory that replaced it, or None while current), ``corrects`` (for a
        correction, the memory it corrects, with ``correction``: who and when), ``supersedes`` (the earlier memories
        it replaced)."""
        fix = m.metadata.get(CORRECTION_KEY)
        correction = fix if isinstance(fix, dict) and isinstance(fix.get("of"), str) else None
        older = self.store.superseded_by_ids(bank_id, [m.id]).get(m.id, [])[:MAX_LINKS]
        wanted = [i for i in (m.superseded_by, correction["of"] if correction else None) if i] + older
        found = {u.id: u for u in self.store.get_units(bank_id, wanted)}

        def brief(memory_id: str | None) -> dict[str, Any] | None:
            if memory_id is None:
                return None
            return brief_json(found[memory_id]) if memory_id in found else {"id": memory_id, "missing": True}

        return {
            "superseded_by": brief(m.superseded_by),
            "corrects": brief(correction["of"] if correction else None),
            "correction": {"by": correction.get("by"), "at": correction.get("at")} if correction else None,
            "supersedes": [brief_json(found[i]) for i in older if i in found],
        }

    # the timeline ------------------------------------------------------------------------------------------
    def timeline(self, bank_id: str, *, network: Network | None = None, entity: str | None = None,
                 query: str | None = None, limit: int = 10_000) -> dict[str, Any]:
        """The memories to draw on the time axis (``timeline_json``), newest stored first, at most ``limit``: of
        one network, mentioning one entity (a name, alias or id) and/or whose text contains ``query`` (case
        ignored); and the bank's forgets as gaps (``_forgotten``). ``total`` counts the memories that match (None
        when a text filter stopped at ``limit`` before reading the whole bank)."""
        if not 1 <= limit <= MAX_TIMELINE:
            raise InvalidInputError(f"limit must be between 1 and {MAX_TIMELINE:,}, not {limit}")
        self.bank(bank_id)
        entity_id: str | None = None
        if entity:
            found = self.store.find_entity(bank_id, entity) or next(iter(self.store.get_entities(bank_id, [entity])),
                                                                     None)
            if found is None:
                raise NotFoundError(f"no entity {shown(entity)} in bank {bank_id!r}")
            entity_id = found.id
        needle = " ".join(query.split()).casefold() if query and query.strip() else None
        count = self.store.count_units(bank_id, network=network, entity_id=entity_id)
        kept: list[Memory] = []
        offset, matched, complete = 0, 0, True
        while offset < count:
            ids = self.store.page_units(bank_id, network=network, entity_id=entity_id, limit=TIMELINE_BATCH,
                                        offset=offset)
            if not ids:
                break
            offset += len(ids)
            for m in self.store.get_units(bank_id, ids):
                if needle is not None and needle not in " ".join(m.text.split()).casefold():
                    continue
                matched += 1
                if len(kept) < limit:
                    kept.append(m)
            if needle is not None and len(kept) >= limit and offset < count:
                complete = False  # a text filter that filled the answer stops reading
                break
        total = (count if needle is None else matched) if complete else None
        return {"items": [timeline_json(m) for m in kept], "total": total, "limit": limit,
                "truncated": total is None or total > len(kept), "entity_id": entity_id,
                "forgotten": self._forgotten(bank_id, kept)}

    def _forgotten(self, bank_id: str, shown_units: Sequence[Memory]) -> list[dict[str, Any]]:
        """The bank's forgets (from the audit trail, at most ``AUDIT_SCAN`` entries read), each placed on the time
        axis (``place``, and ``place_end`` for a span), although the forgotten memories' own times went with them:
        a forgotten memory whose document is still stored, at the time of that document's messages that no memory
        cites any more (``placed_by`` ``"its message"``); a forget whose memory or document a retain entry names,
        between the said times of the memories shown that were stored just before and just after that retain
        (``"stored between"``); any other at the time of the forget itself (``"forgotten at"``)."""
        retained: dict[str, AuditEntry] = {}
        forgets: list[AuditEntry] = []
        offset = 0
        while offset < AUDIT_SCAN:
            page = self.store.audit_entries(bank_id, limit=2_000, offset=offset, oldest_first=True)
            if not page:
                break
            offset += len(page)
            for e in page:
                if e.operation == "retain":
                    for key in [*e.memory_ids, *([f"document:{e.document_id}"] if e.document_id else [])]:
                        retained.setdefault(key, e)
                elif e.operation == "forget":
                    forgets.append(e)
        dated = sorted(((m.created_at, m.mentioned_at or m.occurred_start) for m in shown_units
                        if m.mentioned_at or m.occurred_start), key=lambda d: d[0])
        stored = [d[0] for d in dated]
        out = []
        for e in forgets:
            keys = [*e.memory_ids, *([f"document:{e.document_id}"] if e.document_id else [])]
            by = next((retained[k] for k in keys if k in retained), None)
            span: list[datetime] = []
            placed_by = "forgotten at"
            if e.memory_ids and by is not None and by.document_id:
                span = self._uncited_times(bank_id, by.document_id)
                placed_by = "its message"
            if not span and by is not None and dated:
                i = bisect.bisect_right(stored, by.at)
                span = [d for d in (dated[i - 1][1] if i > 0 else None, dated[i][1] if i < len(dated) else None) if d]
                placed_by = "stored between"
            if not span:
                span, placed_by = [e.at], "forgotten at"
            first, last = min(span), max(span)
            out.append({**audit_json(e), "place": _ms(first), "place_end": _ms(last) if last != first else None,
                        "placed_by": placed_by})
        return out

    def _uncited_times(self, bank_id: str, document_id: str) -> list[datetime]:
        """The times of a stored document's messages that no memory of the bank cites any more (what a forget took
        out of it); empty when the document is gone or every message is still cited."""
        doc = self.store.get_document(bank_id, document_id)
        if doc is None:
            return []
        cited = {s for m in self.store.get_units(bank_id, self.store.units_of_document(bank_id, document_id))
                 for s in m.sources}
        return [datetime.fromisoformat(msg["timestamp"].replace("Z", "+00:00")) for msg in _messages(doc) or []
                if msg["id"] is not None and msg["id"] not in cited and msg["timestamp"]]

    # the audit trail -----------------------------------------------------------------------------------------
    def audit(self, bank_id: str, *, entry_id: str | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """One page of the bank's audit trail, newest first; with ``entry_id``, that entry too (``entry``: found
        among the newest ``AUDIT_SCAN``, else ``NotFoundError``)."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        rows = self.store.audit_entries(bank_id, limit=limit, offset=offset)
        out = _page([audit_json(e) for e in rows], limit, offset, total=self.store.count_audit(bank_id))
        if entry_id is not None:
            found: AuditEntry | None = None
            at = 0
            while found is None and at < AUDIT_SCAN:
                page = self.store.audit_entries(bank_id, limit=2_000, offset=at)
                if not page:
                    break
                found = next((e for e in page if e.id == entry_id), None)
                at += len(page)
            if found is None:
                raise NotFoundError(f"no audit entry {shown(entry_id)} in bank {bank_id!r}")
            out["entry"] = audit_json(found)
        return out

    # entities and the graph ----------------------------------------------------------------------------------
    def entities(self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """One page of entities, most mentioned first, optionally those whose name contains ``query``."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        rows = self.store.page_entities(bank_id, query=query, limit=limit + 1, offset=offset)
        return _page([entity_json(e) for e in rows[:limit]], limit, offset, fetched=len(rows))

    def entity(self, bank_id: str, *, entity_id: str | None = None, name: str | None = None,
               related: int = 20) -> dict[str, Any]:
        """An entity (by id, or by name or alias) with its current observation and the entities most often
        mentioned with it."""
        self.bank(bank_id)
        found: Entity | None = None
        if entity_id:
            got = self.store.get_entities(bank_id, [entity_id])
            found = got[0] if got else None
        elif name:
            found = self.store.find_entity(bank_id, name)
        if found is None:
            raise NotFoundError(f"no entity {entity_id or name!r} in bank {bank_id!r}")
        pairs = self.store.related_entities(bank_id, found.id, limit=related)
        others = {e.id: e for e in self.store.get_entities(bank_id, [i for i, _ in pairs])}
        return {
            "entity": entity_json(found),
            "observation": self._observation(bank_id, found.id),
            "related": [{"entity": entity_json(others[i]), "shared": n} for i, n in pairs if i in others],
        }

    def entity_history(self, bank_id: str, entity_id: str) -> dict[str, Any]:
        """An entity's page beyond its card: its memories per day (``growth``), its values that changed (each
        memory mentioning it that was superseded, with the memory that superseded it; among the newest
        ``CHANGES_SCAN``) and its observation's sentences, each with the messages it rests on."""
        self.bank(bank_id)
        if not self.store.get_entities(bank_id, [entity_id]):
            raise NotFoundError(f"no entity {shown(entity_id)} in bank {bank_id!r}")
        units = self._newest(bank_id, CHANGES_SCAN, entity_id=entity_id)
        old = [m for m in units if m.superseded_by and m.network != Network.OBSERVATION]
        newer = {u.id: u for u in self.store.get_units(bank_id, [m.superseded_by or "" for m in old])}
        changes = [{"memory": brief_json(m),
                    "by": brief_json(newer[m.superseded_by]) if m.superseded_by in newer
                    else {"id": m.superseded_by, "missing": True}}
                   for m in sorted(old, key=lambda m: m.valid_until or m.created_at, reverse=True)]
        observation = self._observation(bank_id, entity_id)
        sentences: list[dict[str, Any]] = []
        if observation is not None:
            unit = self.store.get_units(bank_id, [observation["id"]])[0]
            pieces = observation_sentences(unit)
            basis = {u.id: u for u in self.store.get_units(bank_id, [f for p in pieces for f in p["facts"]])}
            sentences = [{"text": p["text"],
                          "support": [{**brief_json(basis[f]), "sources": basis[f].sources} if f in basis
                                      else {"id": f, "missing": True} for f in p["facts"]]} for p in pieces]
        return {"growth": self.growth(bank_id, entity_id=entity_id), "changes": changes,
                "changes_scanned": len(units), "changes_truncated": len(units) >= CHANGES_SCAN,
                "sentences": sentences}

    def _observation(self, bank_id: str, entity_id: str) -> dict[str, Any] | None:
        found = observation_of(self.store, bank_id, entity_id)  # the lookup Bank.observation makes, by id
        return memory_json(found) if found is not None else None

    def graph(self, bank_id: str, *, limit: int = 60) -> dict[str, Any]:
        """The ``limit`` most mentioned entities and how many memories each pair shares."""
        if not 1 <= limit <= MAX_GRAPH_NODES:
            raise InvalidInputError(f"limit must be between 1 and {MAX_GRAPH_NODES}, not {limit}")
        self.bank(bank_id)
        # Counting co-mentions among the top entities reads most of the bank's mentions (about 0.5 s at 100k
        # memories), so the answer is kept until the bank's memories change (their number or the newest one).
        version = (self.store.count_units(bank_id), tuple(self.store.page_units(bank_id, limit=1)))
        key = (bank_id, limit)
        with self._lock:
            cached = self._graphs.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        top = self.store.page_entities(bank_id, limit=limit)
        edges = self._edges(bank_id, [e.id for e in top])
        graph = {"nodes": [self._node(bank_id, e) for e in top], "edges": strongest(edges, EDGES_PER_NODE * limit),
                 "edges_total": len(edges)}
        with self._lock:
            self._graphs[key] = (version, graph)
        return graph

    def expand(self, bank_id: str, entity_id: str, *, limit: int = 15,
               visible: Sequence[str] = ()) -> dict[str, Any]:
        """The ``limit`` entities most often mentioned with ``entity_id``, and the edges that link them to it, to
        each other and to the ``visible`` nodes already shown."""
        if not 1 <= limit <= MAX_GRAPH_NODES:
            raise InvalidInputError(f"limit must be between 1 and {MAX_GRAPH_NODES}, not {limit}")
        self.bank(bank_id)
        if not self.store.get_entities(bank_id, [entity_id]):
            raise NotFoundError(f"no entity {entity_id!r} in bank {bank_id!r}")
        pairs = self.store.related_entities(bank_id, entity_id, limit=limit)
        new = self.store.get_entities(bank_id, [i for i, _ in pairs])
        new_ids = {e.id for e in new}
        shown = [v for v in dict.fromkeys(visible) if v not in new_ids][:MAX_VISIBLE]
        edges = [e for e in self._edges(bank_id, [*new_ids, *shown, entity_id])
                 if e["source"] in new_ids or e["target"] in new_ids]
        # Every new node keeps its link to the expanded one; the others compete for the rest.
        own = [e for e in edges if entity_id in (e["source"], e["target"])]
        rest = strongest([e for e in edges if entity_id not in (e["source"], e["target"])], EDGES_PER_NODE * limit)
        return {"nodes": [self._node(bank_id, e) for e in new], "edges": own + rest, "edges_total": len(edges)}

    def _node(self, bank_id: str, e: Entity) -> dict[str, Any]:
        has_observation = bool(self.store.units_of_document(bank_id, observation_document_id(e.id)))
        return {"id": e.id, "name": e.name, "type": e.type.value, "mentions": e.mention_count,
                "observation": has_observation}

    def _edges(self, bank_id: str, ids: list[str]) -> list[dict[str, Any]]:
        pairs = self.store.entity_cooccurrence(bank_id, list(dict.fromkeys(ids)))
        return [{"source": a, "target": b, "weight": n} for (a, b), n in sorted(pairs.items())]

    # opinions ------------------------------------------------------------------------------------------------
    def opinions(self, bank_id: str, *, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """One page of opinions, newest first, each with its confidence history."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        ids = self.store.page_units(bank_id, network=Network.OPINION, limit=limit, offset=offset)
        total = self.store.count_units(bank_id, network=Network.OPINION)
        items = []
        for m in self.store.get_units(bank_id, ids):
            items.append({**memory_json(m), "history": [e.model_dump(mode="json")
                                                         for e in self.store.opinion_history(bank_id, m.id)]})
        return _page(items, limit, offset, total=total)

    def opinion(self, bank_id: str, opinion_id: str) -> dict[str, Any]:
        """An opinion with every step of its history and the evidence memories of each step."""
        m = self.bank(bank_id).get(opinion_id)
        if m is None or m.network != Network.OPINION:
            raise NotFoundError(f"no opinion {opinion_id!r} in bank {bank_id!r}")
        return {"opinion": memory_json(m), "history": self._history(bank_id, m)}

    def _history(self, bank_id: str, opinion: Memory) -> list[dict[str, Any]]:
        """Each step with its evidence memories, each with its verdict (for / against / neutral: ``trajectory``)."""
        events = self.store.opinion_history(bank_id, opinion.id)
        steps = trajectory(events, opinion)
        ids = [i for step in steps for i in step["verdicts"]]
        evidence = {u.id: u for u in self.store.get_units(bank_id, ids)}
        for step in steps:
            step["evidence_memories"] = [
                {**(brief_json(evidence[i]) if i in evidence else {"id": i, "missing": True}), "verdict": v}
                for i, v in step["verdicts"].items()]
        return steps

    # documents and jobs --------------------------------------------------------------------------------------
    def documents(self, bank_id: str, *, status: DocumentStatus | None = None, limit: int = 50,
                  offset: int = 0) -> dict[str, Any]:
        """One page of documents, newest first, each with a preview and its number of memories."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        rows = self.store.page_documents(bank_id, status, limit=limit + 1, offset=offset)
        items = [{**document_json(d), "memories": len(self.store.units_of_document(bank_id, d.id))}
                 for d in rows[:limit]]
        return _page(items, limit, offset, fetched=len(rows))

    def document(self, bank_id: str, document_id: str) -> dict[str, Any]:
        """A document in full (messages or text, metadata, status and error) and its number of memories."""
        doc = self.bank(bank_id).document(document_id)
        return {"document": document_json(doc, full=True),
                "memories": len(self.store.units_of_document(bank_id, document_id))}

    def jobs(self, bank_id: str, *, status: JobStatus | None = None, limit: int = 50,
             offset: int = 0) -> dict[str, Any]:
        """One page of background jobs, newest first, with status, attempts and error."""
        limit, offset = page_args(limit, offset)
        self.bank(bank_id)
        rows = self.store.page_jobs(bank_id, status, limit=limit + 1, offset=offset)
        return _page([job_json(j) for j in rows[:limit]], limit, offset, fetched=len(rows))

    # recall, forget and correct ------------------------------------------------------------------------------
    def recall(
        self, bank_id: str, query: str, *, budget: int = 2000, max_memories: int | None = None,
        networks: Sequence[str] | None = None, reference_time: str | None = None, as_of: str | None = None,
    ) -> dict[str, Any]:
        """``Bank.recall`` with the trace: the memories returned, then every candidate with its fused rank and
        score, its rank and raw score per channel, its tokens and whether it was returned (and, when supersession
        moved it, how); stage timings. ``as_of``: what the bank held then."""
        bank = self.bank(bank_id)
        believed_at = parse_timestamp(as_of, "as_of") if as_of else None
        t = time.perf_counter()
        rec: Recall = bank.recall(query, budget=budget, max_memories=max_memories, networks=networks or None,
                                  reference_time=reference_time or None, trace=True, as_of=believed_at)
        elapsed = (time.perf_counter() - t) * 1000
        trace = rec.trace
        candidates: list[dict[str, Any]] = []
        out: dict[str, Any] = {"query": rec.query, "tokens": rec.tokens, "budget": budget, "as_of": _iso(believed_at),
                               "elapsed_ms": round(elapsed, 1), "memories": [memory_json(m) for m in rec.memories]}
        if trace is not None:
            items = sorted(trace.items, key=lambda i: i.fused_rank)
            texts = {u.id: u for u in self.store.get_units(bank_id, [i.memory_id for i in items])}
            for item in items:
                m = texts.get(item.memory_id)
                candidates.append({**item.model_dump(mode="json"), "memory": brief_json(m) if m else None})
            out["trace"] = {
                "reference_time": _iso(trace.reference_time),
                "time_range": trace.time_range.model_dump(mode="json") if trace.time_range else None,
                "channel_sizes": trace.channel_sizes, "timings_ms": trace.timings_ms, "budget": trace.budget,
                "channels": [c for c in ("semantic", "keyword", "graph", "temporal") if c in trace.channel_sizes],
            }
        out["candidates"] = candidates
        return out

    def forget(self, bank_id: str, *, memory_id: str | None = None, document_id: str | None = None,
               entity: str | None = None) -> dict[str, Any]:
        """``Bank.forget``: one memory, a document and its memories, or every memory mentioning an entity."""
        deleted = self.bank(bank_id).forget(memory_id=memory_id, document_id=document_id, entity=entity)
        return {"deleted": deleted}

    def correct(self, bank_id: str, memory_id: str, text: str, *, by: str | None = None) -> dict[str, Any]:
        """``Bank.correct``: ``text`` stored as the memory that supersedes ``memory_id`` (kept as history); the new
        memory and the corrected one's id. ``NotFoundError`` for a memory the bank does not hold."""
        bank = self.bank(bank_id)
        try:
            corrected = bank.correct(memory_id, text, by=by)
        except MemoryNotFoundError:  # reported like every other missing record of the explorer (HTTP 404)
            raise NotFoundError(f"no memory {shown(memory_id)} in bank {bank_id!r}") from None
        return {"memory": memory_json(corrected), "corrected": memory_id}
