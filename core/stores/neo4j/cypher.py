"""Cypher the Neo4j mixins share: keys, paging, keyword tokens, and the writes several protocols make inside one
transaction (vector marks, jobs, unit deletion, a unit's new text, opinion events, entity folding)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from ...models import (
    FACT_CITES_KEY,
    FACT_LENT_KEY,
    SUPERSEDED_BY_KEY,
    SUPERSESSION_KEY,
    VALID_UNTIL_KEY,
    DocumentStatus,
    Job,
    OpinionEvent,
)
from ..citations import inherit, lend, rests_on_inherited, take_back
from ..common import to_epoch as _ts
from ..fts5_bm25 import keyword_columns
from ..records import Supersession, voted_type

_ACTIVE_DOCS = [DocumentStatus.PENDING.value, DocumentStatus.EXTRACTING.value]


def bank_key(bank_id: str) -> str:
    """A token the full-text analyzer keeps intact, standing for the bank id inside the full-text index."""
    return "b" + hashlib.sha256(bank_id.encode("utf-8")).hexdigest()[:32]


def keyword_tokens(texts: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The ``kw_text``/``kw_context``/``kw_len`` properties of units with these (text, context) pairs."""
    return [{"kw_text": t, "kw_context": c, "kw_len": n} for t, c, n in keyword_columns(texts)]


def _doc_key(bank_id: str, document_id: str) -> str:
    # One unique property for the (bank, id) pair: composite uniqueness differs between servers.
    return json.dumps([bank_id, document_id], ensure_ascii=False)


# Folding a resolver's view of an entity ``r`` into the stored node ``e`` (same key, so ``r.name`` is a spelling of
# ``e.name`` and is not added): aliases are unioned, the time span widened and a specific type replaces OTHER,
# so concurrent writers add to each other instead of overwriting.
_ENTITY_MERGE = (
    "e.aliases = coalesce(e.aliases, []) + [a IN r.aliases WHERE NOT a IN coalesce(e.aliases, [])], "
    "e.type = CASE WHEN r.type <> 'OTHER' THEN r.type ELSE e.type END, "
    "e.first_seen = CASE WHEN e.first_seen IS NULL OR (r.first_seen IS NOT NULL AND r.first_seen < e.first_seen) "
    "THEN r.first_seen ELSE e.first_seen END, "
    "e.last_seen = CASE WHEN e.last_seen IS NULL OR (r.last_seen IS NOT NULL AND r.last_seen > e.last_seen) "
    "THEN r.last_seen ELSE e.last_seen END"
)

# The same fold for a duplicate ``l`` merged into the surviving entity ``k`` (repair and upgrade).
_LOSER_MERGE = _ENTITY_MERGE.replace("e.", "k.").replace("r.", "l.")


def _set_unit_props(tx: Any, rows: list[dict[str, Any]]) -> None:
    tx.run("UNWIND $rows AS r MATCH (u:Unit {id: r.id}) SET u += r.props", rows=rows).consume()


def _mark_key(bank_id: str, unit_id: str) -> str:
    return json.dumps([bank_id, unit_id], ensure_ascii=False)


def _mark(tx: Any, bank_id: str, unit_ids: Sequence[str], owner: str | None) -> None:
    """Mark vectors inside a transaction (MERGE: a unit marked twice keeps one mark, the latest owner)."""
    if unit_ids:
        tx.run(
            "UNWIND $rows AS r MERGE (m:VectorMark {key: r.key}) "
            "SET m.bank_id = $bank, m.unit_id = r.uid, m.owner = $owner, m.marked_at = $now",
            rows=[{"key": _mark_key(bank_id, u), "uid": u} for u in dict.fromkeys(unit_ids)], bank=bank_id,
            owner=owner, now=time.time(),
        ).consume()


def _create_job_tx(tx: Any, job: Job) -> None:
    tx.run(
        "CREATE (j:Job) SET j = $props",
        props={
            "id": job.id, "bank_id": job.bank_id, "kind": job.kind,
            "payload": json.dumps(job.payload, default=str), "status": job.status.value,
            "attempts": job.attempts, "error": job.error, "created_at": _ts(job.created_at),
            "run_after": _ts(job.run_after), "owner": None, "finished_at": _ts(job.finished_at),
        },
    ).consume()


def retype_tx(tx: Any, entity_ids: list[str]) -> None:
    """Set each entity's type to the one its mentions' type evidence supports most (``records.voted_type``); a
    mention without evidence counts for the entity's type as it is, with weight 1."""
    votes: dict[str, dict[str, float]] = {}
    current: dict[str, str] = {}
    for r in tx.run(
        "UNWIND $ids AS id MATCH (e:Entity {id: id})<-[m:MENTIONS]-(:Unit) "
        "RETURN e.id AS id, e.type AS current, coalesce(m.type, e.type) AS t, sum(coalesce(m.weight, 1.0)) AS w",
        ids=entity_ids,
    ):
        current[r["id"]] = r["current"]
        votes.setdefault(r["id"], {})[r["t"]] = float(r["w"])
    rows = [{"id": e, "type": t} for e, v in votes.items() if (t := voted_type(v, current[e])) != current[e]]
    if rows:
        tx.run("UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e.type = r.type", rows=rows).consume()


def _delete_units_tx(tx: Any, bank_id: str, ids: list[str], owner: str | None) -> int:
    """Delete units (with history), recount and prune their entities, mark their vectors; returns how many."""
    ents = [r["id"] for r in tx.run(
        "UNWIND $ids AS id MATCH (u:Unit {id: id})-[:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank "
        "RETURN DISTINCT e.id AS id", ids=ids, bank=bank_id,
    )]
    tx.run(
        "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank AND o.opinion_id IN $ids DELETE o", ids=ids, bank=bank_id,
    ).consume()
    texts = [(r["text"], r["doc"]) for r in tx.run(
        "UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank AND u.document_id IS NOT NULL "
        "RETURN u.text AS text, u.document_id AS doc", ids=ids, bank=bank_id,
    )]
    gone = [r["id"] for r in tx.run(
        "UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank DETACH DELETE u RETURN id",
        ids=ids, bank=bank_id,
    )]
    _mark(tx, bank_id, gone, owner)
    _release_superseded_tx(tx, bank_id, gone)
    _take_back_lent_tx(tx, bank_id, gone)
    _forget_in_context_tx(tx, bank_id, texts, owner)
    if ents:
        tx.run(
            "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)<-[m:MENTIONS]-() "
            "WITH e, count(m) AS n SET e.mention_count = n",
            ids=ents,
        ).consume()
        tx.run("UNWIND $ids AS id MATCH (e:Entity {id: id}) WHERE e.mention_count = 0 DETACH DELETE e",
               ids=ents).consume()
        retype_tx(tx, ents)
    return len(gone)


def _supersede_tx(tx: Any, bank_id: str, items: Sequence[Supersession]) -> int:
    """Record each supersession whose two memories exist in the bank and whose earlier memory is current (the
    metadata, as the API reads it, and a ``superseded_by`` property to find it by); returns how many."""
    done = 0
    for item in items:
        if item.old_id == item.new_id:
            continue
        row = tx.run(
            "MATCH (o:Unit {id: $old}) WHERE o.bank_id = $bank AND o.superseded_by IS NULL "
            "MATCH (n:Unit {id: $new}) WHERE n.bank_id = $bank RETURN o.metadata AS metadata",
            old=item.old_id, new=item.new_id, bank=bank_id,
        ).single()
        if row is None:
            continue
        meta = json.loads(row["metadata"] or "{}")
        meta.update({SUPERSEDED_BY_KEY: item.new_id, VALID_UNTIL_KEY: item.valid_until.isoformat(),
                     SUPERSESSION_KEY: dict(item.how)})
        tx.run("MATCH (o:Unit {id: $old}) WHERE o.bank_id = $bank SET o.metadata = $meta, o.superseded_by = $new",
               old=item.old_id, bank=bank_id, meta=json.dumps(meta, default=str), new=item.new_id).consume()
        done += 1
    return done


def _add_citations_tx(tx: Any, bank_id: str, items: Sequence[tuple[str, list[str]]]) -> None:
    """Held facts gain the citations of the facts that restated them (``UnitBatch.citations``), of messages that
    still exist: one forgotten while the restating facts job ran is not lent (it would name nothing)."""
    for unit_id, cites in items:
        row = tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank RETURN u.metadata AS metadata",
                     id=unit_id, bank=bank_id).single()
        if row is None or not cites:
            continue
        live = {r["id"] for r in tx.run("UNWIND $ids AS id MATCH (u:Unit {id: id}) WHERE u.bank_id = $bank "
                                        "RETURN u.id AS id", ids=list(cites), bank=bank_id)}
        meta = json.loads(row["metadata"] or "{}")
        if lend(meta, [c for c in cites if c in live]):
            tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.metadata = $meta",
                   id=unit_id, bank=bank_id, meta=json.dumps(meta, default=str)).consume()


def _drop_citations_tx(tx: Any, bank_id: str, gone: Sequence[str]) -> None:
    """Facts of other documents that cited raw messages replaced by a retain of their document again (a held fact
    gains the citations of the facts that restated it) stop citing them: the ids would name nothing."""
    raw = [r["id"] for r in tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.id IN $gone "
                                   "AND u.network IN ['world', 'experience'] "
                                   "AND NOT coalesce(u.metadata, '') CONTAINS $key RETURN u.id AS id",
                                   bank=bank_id, gone=list(gone), key=f'"{FACT_CITES_KEY}"')]
    _strip_citations_tx(tx, bank_id, raw)


def _strip_citations_tx(tx: Any, bank_id: str, ids: Sequence[str]) -> int:
    """Remove ``ids`` from every fact's citations (other than their own units'); returns how many facts changed."""
    if not ids:
        return 0
    dropped = set(ids)
    rows = tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.metadata CONTAINS $key "
                  "AND any(g IN $ids WHERE u.metadata CONTAINS g) RETURN u.id AS id, u.metadata AS metadata",
                  bank=bank_id, key=f'"{FACT_CITES_KEY}"', ids=list(dropped))
    changed: dict[str, dict[str, Any]] = {}
    for row in list(rows):
        meta = json.loads(row["metadata"] or "{}")
        if row["id"] not in dropped and take_back(meta, dropped):
            changed[row["id"]] = meta
    _settle_citations_tx(tx, bank_id, changed, observations=False)
    return len(changed)


def _settle_citations_tx(tx: Any, bank_id: str, changed: dict[str, dict[str, Any]], *,
                         observations: bool) -> None:
    """Write facts whose citations were taken back. One left citing only superseded messages is superseded with them
    (``stores.citations.inherit``); with ``observations`` (a forget, which queues their rebuild:
    ``retain.forget.dependents``) so are the observations written from it; the ``superseded_by`` property
    recall finds superseded units by follows the metadata."""
    inherited: dict[str, dict[str, Any]] = {}
    for uid, meta in changed.items():
        cites = [str(c) for c in meta.get(FACT_CITES_KEY) or []]
        cited = {r["id"]: json.loads(r["metadata"] or "{}") for r in tx.run(
            "UNWIND $ids AS id MATCH (c:Unit {id: id}) WHERE c.bank_id = $bank "
            "RETURN c.id AS id, c.metadata AS metadata", ids=cites, bank=bank_id)} if cites else {}
        if inherit(meta, cited):
            inherited[uid] = meta
        _write_metadata_tx(tx, bank_id, uid, meta)
    if not inherited or not observations:
        return
    for row in list(tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.network = 'observation' "
                           "RETURN u.id AS id, u.metadata AS metadata", bank=bank_id)):
        meta = json.loads(row["metadata"] or "{}")
        if rests_on_inherited(meta, inherited):
            _write_metadata_tx(tx, bank_id, row["id"], meta)


def _write_metadata_tx(tx: Any, bank_id: str, uid: str, meta: dict[str, Any]) -> None:
    tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.metadata = $meta, u.superseded_by = $successor",
           id=uid, bank=bank_id, meta=json.dumps(meta, default=str), successor=meta.get(SUPERSEDED_BY_KEY)).consume()


def _take_back_lent_tx(tx: Any, bank_id: str, gone: Sequence[str]) -> None:
    """Facts that were lent citations of deleted messages (by restating facts) stop citing them and stay: they
    were made of their own messages (``stores.citations``)."""
    dropped = set(gone)
    if not dropped:
        return
    rows = tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.metadata CONTAINS $key "
                  "RETURN u.id AS id, u.metadata AS metadata", bank=bank_id, key=f'"{FACT_LENT_KEY}"')
    changed: dict[str, dict[str, Any]] = {}
    for row in list(rows):
        meta = json.loads(row["metadata"] or "{}")
        if row["id"] not in dropped and take_back(meta, dropped, lent_only=True):
            changed[row["id"]] = meta
    _settle_citations_tx(tx, bank_id, changed, observations=True)


def _release_superseded_tx(tx: Any, bank_id: str, gone: Sequence[str]) -> None:
    """Memories superseded by a deleted one are current again: what superseded them is no longer believed."""
    if not gone:
        return
    rows = tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.superseded_by IN $gone "
                  "RETURN u.id AS id, u.metadata AS metadata", bank=bank_id, gone=list(gone))
    for row in list(rows):
        meta = json.loads(row["metadata"] or "{}")
        for key in (SUPERSEDED_BY_KEY, VALID_UNTIL_KEY, SUPERSESSION_KEY):
            meta.pop(key, None)
        tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.metadata = $meta REMOVE u.superseded_by",
               id=row["id"], bank=bank_id, meta=json.dumps(meta, default=str)).consume()


def _forget_in_context_tx(tx: Any, bank_id: str, gone: Sequence[tuple[str, str]], owner: str | None) -> None:
    """Deleted texts leave their neighbours' keyword context too, and those neighbours' vectors (which embedded
    them as context) are marked to be embedded again."""
    by_doc: dict[str, list[str]] = {}
    for text, document_id in gone:
        by_doc.setdefault(document_id, []).append(text)
    for document_id, texts in by_doc.items():
        rows = list(tx.run("MATCH (u:Unit) WHERE u.bank_id = $bank AND u.document_id = $doc AND u.context <> '' "
                           "RETURN u.id AS id, u.text AS text, u.context AS context", bank=bank_id, doc=document_id))
        changed: list[str] = []
        for row in rows:
            context = row["context"] or ""
            if not any(t and t in context for t in texts):
                continue
            for t in texts:
                context = context.replace(t, " ") if t else context
            context = " ".join(context.split())
            keywords = keyword_tokens([(row["text"], context)])[0]
            tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.context = $context, u += $keywords",
                   id=row["id"], bank=bank_id, context=context, keywords=keywords).consume()
            changed.append(row["id"])
        if changed:
            _mark(tx, bank_id, changed, owner)


def _set_text(tx: Any, bank_id: str, unit_id: str, text: str, owner: str | None) -> bool:
    """Rewrite a unit's text and keyword tokens and mark its vector; False when there is no such unit."""
    row = tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank RETURN u.context AS context",
                 id=unit_id, bank=bank_id).single()
    if row is None:
        return False
    keywords = keyword_tokens([(text, row["context"] or "")])[0]
    tx.run("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.text = $text, u += $keywords",
           id=unit_id, bank=bank_id, text=text, keywords=keywords).consume()
    _mark(tx, bank_id, [unit_id], owner)
    return True


def _event_props(bank_id: str, event: OpinionEvent, offset: int) -> dict[str, Any]:
    return {
        "bank_id": bank_id, "opinion_id": event.opinion_id, "seq": time.time_ns() + offset, "at": _ts(event.at),
        "label": event.label, "old_confidence": event.old_confidence, "new_confidence": event.new_confidence,
        "evidence": json.dumps(event.evidence), "old_text": event.old_text, "new_text": event.new_text,
        "rationale": event.rationale,
    }


def _page(limit: int, offset: int) -> dict[str, int]:
    """SKIP and LIMIT parameters, never negative (a server rejects a negative one)."""
    return {"limit": max(0, int(limit)), "offset": max(0, int(offset))}
