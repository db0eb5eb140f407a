"""SQL the SQLite mixins share: timestamps, chunking and paging, and the writes several protocols make inside one
transaction (keyword statistics, entities, jobs, opinion events, a unit's new text, unit deletion)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from ...models import (
    FACT_CITES_KEY,
    FACT_LENT_KEY,
    SUPERSEDED_BY_KEY,
    SUPERSESSION_KEY,
    VALID_UNTIL_KEY,
    Entity,
    EntityType,
    Job,
    OpinionEvent,
)
from ...text.names import normalise_name
from ..citations import inherit, lend, rests_on_inherited, take_back
from ..common import to_epoch as _ts
from ..fts5_bm25 import keyword_columns, split_tokens
from ..records import Supersession, voted_type


def _adjust_keyword_stats(
    con: sqlite3.Connection, bank_id: str, rows: Iterable[Sequence[Any]], sign: int
) -> None:
    """Add (sign +1) or remove (-1) units, given as (kw_text, kw_context, kw_len), from the bank's keyword
    statistics: per term, how many units hold it; per bank, units and tokens (FTS5's bm25 inputs)."""
    counts: Counter[str] = Counter()
    units = tokens = 0
    for text, context, length in rows:
        if length is None:
            continue
        units += 1
        tokens += int(length)
        counts.update(set(split_tokens(text)) | set(split_tokens(context)))
    if not units:
        return
    con.executemany(
        "INSERT INTO keyword_terms (bank_id, term, units) VALUES (?, ?, ?) "
        "ON CONFLICT (bank_id, term) DO UPDATE SET units = units + excluded.units",
        [(bank_id, term, sign * n) for term, n in counts.items()],
    )
    if sign < 0:
        con.executemany("DELETE FROM keyword_terms WHERE bank_id = ? AND term = ? AND units <= 0",
                        [(bank_id, term) for term in counts])
    con.execute(
        "INSERT INTO keyword_totals (bank_id, units, tokens) VALUES (?, ?, ?) ON CONFLICT (bank_id) "
        "DO UPDATE SET units = units + excluded.units, tokens = tokens + excluded.tokens",
        (bank_id, sign * units, sign * tokens),
    )


def _now() -> float:
    return datetime.now(UTC).timestamp()


def _upsert_entity(con: sqlite3.Connection, bank_id: str, entity: Entity) -> tuple[str, str]:
    """Write the resolver's view of an entity inside the retain's transaction; returns (stored id, name).

    The entity is found by its id, else by (bank, normalised name); a concurrent writer's entity of the same
    name is reused rather than duplicated. Aliases are unioned, the time span widened and a specific type
    replaces OTHER; the mention count is not taken from the caller (``_recount`` does it).
    """
    norm = normalise_name(entity.name)
    row = con.execute("SELECT * FROM entities WHERE id = ? AND bank_id = ?", (entity.id, bank_id)).fetchone()
    if row is None:
        row = con.execute("SELECT * FROM entities WHERE bank_id = ? AND norm = ?", (bank_id, norm)).fetchone()
    if row is None:
        aliases = [a for a in dict.fromkeys(entity.aliases) if a != entity.name]
        con.execute(
            "INSERT INTO entities (id, bank_id, name, norm, type, aliases, mention_count, first_seen, last_seen) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (entity.id, bank_id, entity.name, norm, entity.type.value, json.dumps(aliases), _ts(entity.first_seen),
             _ts(entity.last_seen)),
        )
        return entity.id, entity.name
    _freeze_types(con, [row["id"]])  # older mentions keep the type they were stored under as their evidence
    # The name itself is not added: found by id it is the same name, found by key a spelling of the same key.
    aliases = list(json.loads(row["aliases"]))
    for name in entity.aliases:
        if name != row["name"] and name not in aliases:
            aliases.append(name)
    etype = entity.type.value if entity.type != EntityType.OTHER else row["type"]
    first = min((x for x in (row["first_seen"], _ts(entity.first_seen)) if x is not None), default=None)
    last = max((x for x in (row["last_seen"], _ts(entity.last_seen)) if x is not None), default=None)
    con.execute("UPDATE entities SET aliases = ?, type = ?, first_seen = ?, last_seen = ? WHERE id = ?",
                (json.dumps(aliases), etype, first, last, row["id"]))
    return row["id"], row["name"]


def _recount(con: sqlite3.Connection, entity_ids: Iterable[str]) -> None:
    """Set mention counts from the mentions table, and each entity's type from its mentions' type evidence."""
    ids = list(dict.fromkeys(entity_ids))
    con.executemany(
        "UPDATE entities SET mention_count = (SELECT count(*) FROM mentions WHERE entity_id = ?) WHERE id = ?",
        [(e, e) for e in ids],
    )
    _retype(con, ids)


def _freeze_types(con: sqlite3.Connection, entity_ids: Sequence[str]) -> None:
    """Give the mentions stored without type evidence (before v7) their entity's type as it is now, weight 1:
    done before new evidence is added, so that it is weighed against theirs, not followed by them."""
    for chunk in _chunks(list(dict.fromkeys(entity_ids)), 500):
        con.execute(
            f"UPDATE mentions SET type = (SELECT type FROM entities e WHERE e.id = mentions.entity_id), weight = 1.0 "
            f"WHERE type IS NULL AND entity_id IN ({','.join('?' * len(chunk))})", chunk,
        )


def _retype(con: sqlite3.Connection, entity_ids: Sequence[str]) -> None:
    """Set each entity's type to the one its mentions' evidence supports most (``records.voted_type``)."""
    for chunk in _chunks(list(dict.fromkeys(entity_ids)), 500):
        marks = ",".join("?" * len(chunk))
        votes: dict[str, dict[str, float]] = {}
        for eid, etype, weight in con.execute(
            f"SELECT m.entity_id, coalesce(m.type, e.type), sum(coalesce(m.weight, 1.0)) FROM mentions m "
            f"JOIN entities e ON e.id = m.entity_id WHERE m.entity_id IN ({marks}) GROUP BY 1, 2", chunk,
        ):
            votes.setdefault(eid, {})[etype] = weight
        current = dict(con.execute(f"SELECT id, type FROM entities WHERE id IN ({marks})", chunk).fetchall())
        changes = [(voted_type(v, current[e]), e) for e, v in votes.items() if e in current]
        con.executemany("UPDATE entities SET type = ? WHERE id = ? AND type != ?", [(t, e, t) for t, e in changes])


def _insert_job(con: sqlite3.Connection, job: Job) -> None:
    con.execute(
        "INSERT INTO jobs (id, bank_id, kind, payload, status, attempts, error, created_at, run_after, "
        "owner, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
        (job.id, job.bank_id, job.kind, json.dumps(job.payload, default=str), job.status.value,
         job.attempts, job.error, _ts(job.created_at), _ts(job.run_after), _ts(job.finished_at)),
    )


def _insert_event(con: sqlite3.Connection, bank_id: str, event: OpinionEvent) -> None:
    """Append an opinion event, unless the opinion is not a unit of the bank (the Bolt store's MATCH skips too)."""
    con.execute(
        "INSERT INTO opinion_events (bank_id, opinion_id, at, label, old_confidence, new_confidence, "
        "evidence, old_text, new_text, rationale) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
        "WHERE EXISTS (SELECT 1 FROM units WHERE id = ? AND bank_id = ?)",
        (bank_id, event.opinion_id, _ts(event.at), event.label, event.old_confidence, event.new_confidence,
         json.dumps(event.evidence), event.old_text, event.new_text, event.rationale, event.opinion_id, bank_id),
    )


def _set_text(con: sqlite3.Connection, bank_id: str, unit_id: str, text: str, owner: str | None) -> bool:
    """Rewrite a unit's text with its keyword tokens and statistics, and mark its vector; False if absent."""
    row = con.execute(
        "SELECT context, kw_text, kw_context, kw_len FROM units WHERE bank_id = ? AND id = ?", (bank_id, unit_id)
    ).fetchone()
    if row is None:
        return False
    kw = keyword_columns([(text, row[0])])[0]
    _adjust_keyword_stats(con, bank_id, [row[1:]], -1)
    _adjust_keyword_stats(con, bank_id, [kw], +1)
    con.execute("UPDATE units SET text = ?, kw_text = ?, kw_context = ?, kw_len = ? WHERE bank_id = ? AND id = ?",
                (text, *kw, bank_id, unit_id))
    con.execute(
        "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
        (bank_id, unit_id, owner, _now()),
    )
    return True


def _delete_units(con: sqlite3.Connection, bank_id: str, ids: Sequence[str], owner: str | None) -> int:
    deleted = 0
    now = _now()
    for chunk in _chunks(list(dict.fromkeys(ids)), 500):
        marks = ",".join("?" * len(chunk))
        ents = [
            r[0]
            for r in con.execute(
                f"SELECT DISTINCT m.entity_id FROM mentions m JOIN units u ON u.id = m.unit_id "
                f"WHERE +u.bank_id = ? AND m.unit_id IN ({marks})",
                [bank_id, *chunk],
            )
        ]
        gone = con.execute(
            f"SELECT id, kw_text, kw_context, kw_len, text, document_id FROM units "
            f"WHERE +bank_id = ? AND id IN ({marks})",
            [bank_id, *chunk],
        ).fetchall()
        _adjust_keyword_stats(con, bank_id, [r[1:4] for r in gone], -1)
        cur = con.execute(f"DELETE FROM units WHERE +bank_id = ? AND id IN ({marks})", [bank_id, *chunk])
        deleted += cur.rowcount
        _release_superseded(con, bank_id, [r[0] for r in gone])
        _forget_in_context(con, bank_id, [(r[4], r[5]) for r in gone if r[5] is not None], owner, now)
        con.executemany(
            "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
            [(bank_id, r[0], owner, now) for r in gone],
        )
        _recount(con, ents)
        if ents:
            con.execute(f"DELETE FROM entities WHERE id IN ({','.join('?' * len(ents))}) AND mention_count = 0",
                        ents)
    if deleted:
        _take_back_lent(con, bank_id, ids)
    return deleted


SUPERSEDED_EXPR = f"json_extract(metadata, '$.{SUPERSEDED_BY_KEY}')"
"""The SQL expression of a unit's ``superseded_by`` (indexed: ``units_superseded``)."""


def _supersede(con: sqlite3.Connection, bank_id: str, items: Sequence[Supersession]) -> int:
    """Record each supersession whose two memories exist in the bank and whose earlier memory is current; returns
    how many were recorded (see ``records.Supersession``)."""
    done = 0
    for item in items:
        if item.old_id == item.new_id:
            continue
        exists = con.execute("SELECT 1 FROM units WHERE id = ? AND bank_id = ?", (item.new_id, bank_id)).fetchone()
        if exists is None:
            continue
        cur = con.execute(
            f"UPDATE units SET metadata = json_set(metadata, '$.{SUPERSEDED_BY_KEY}', ?, '$.{VALID_UNTIL_KEY}', ?, "
            f"'$.{SUPERSESSION_KEY}', json(?)) WHERE id = ? AND bank_id = ? AND {SUPERSEDED_EXPR} IS NULL",
            (item.new_id, item.valid_until.isoformat(), json.dumps(dict(item.how), default=str), item.old_id,
             bank_id),
        )
        done += cur.rowcount
    return done


def _add_citations(con: sqlite3.Connection, bank_id: str, items: Sequence[tuple[str, list[str]]]) -> None:
    """Held facts gain the citations of the facts that restated them (``UnitBatch.citations``), of messages that
    still exist: one forgotten while the restating facts job ran is not lent (it would name nothing)."""
    for unit_id, cites in items:
        row = con.execute("SELECT metadata FROM units WHERE id = ? AND bank_id = ?", (unit_id, bank_id)).fetchone()
        if row is None or not cites:
            continue
        live = {r[0] for r in con.execute(f"SELECT id FROM units WHERE bank_id = ? AND id IN "
                                          f"({','.join('?' * len(cites))})", [bank_id, *cites])}
        meta = json.loads(row[0])
        if lend(meta, [c for c in cites if c in live]):
            con.execute("UPDATE units SET metadata = ? WHERE id = ?", (json.dumps(meta, default=str), unit_id))


def _drop_citations(con: sqlite3.Connection, bank_id: str, gone: Sequence[str]) -> None:
    """Facts of other documents that cited raw messages replaced by a retain of their document again (a held fact
    gains the citations of the facts that restated it) stop citing them: the ids would name nothing."""
    raw = [r[0] for chunk in _chunks(list(gone), 500) for r in con.execute(
        f"SELECT id FROM units WHERE bank_id = ? AND id IN ({','.join('?' * len(chunk))}) "
        f"AND network IN ('world', 'experience') AND instr(metadata, '\"{FACT_CITES_KEY}\"') = 0",
        [bank_id, *chunk])]
    _strip_citations(con, bank_id, raw)


def _strip_citations(con: sqlite3.Connection, bank_id: str, ids: Sequence[str]) -> int:
    """Remove ``ids`` from every fact's citations (other than their own units'); returns how many facts changed."""
    if not ids:
        return 0
    dropped = set(ids)
    citing = [row for chunk in _chunks(list(dropped), 200) for row in con.execute(
        f"SELECT id, metadata FROM units WHERE bank_id = ? AND instr(metadata, '\"{FACT_CITES_KEY}\"') > 0 "
        f"AND ({' OR '.join('instr(metadata, ?) > 0' for _ in chunk)})", [bank_id, *chunk]).fetchall()]
    changed: dict[str, dict[str, Any]] = {}
    for uid, text in dict(citing).items():
        meta = json.loads(text)
        if uid not in dropped and take_back(meta, dropped):
            changed[uid] = meta
    _settle_citations(con, bank_id, changed, observations=False)
    return len(changed)


def _settle_citations(con: sqlite3.Connection, bank_id: str, changed: dict[str, dict[str, Any]], *,
                      observations: bool) -> None:
    """Write facts whose citations were taken back. One left citing only superseded messages is superseded with them
    (``stores.citations.inherit``); with ``observations`` (a forget, which queues their rebuild:
    ``retain.forget.dependents``) so are the observations written from it."""
    inherited: dict[str, dict[str, Any]] = {}
    for uid, meta in changed.items():
        cites = [str(c) for c in meta.get(FACT_CITES_KEY) or []]
        cited = {r[0]: json.loads(r[1]) for r in con.execute(
            f"SELECT id, metadata FROM units WHERE bank_id = ? AND id IN ({','.join('?' * len(cites))})",
            [bank_id, *cites])} if cites else {}
        if inherit(meta, cited):
            inherited[uid] = meta
        con.execute("UPDATE units SET metadata = ? WHERE id = ? AND bank_id = ?",
                    (json.dumps(meta, default=str), uid, bank_id))
    if not inherited or not observations:
        return
    for uid, text in con.execute("SELECT id, metadata FROM units WHERE bank_id = ? AND network = 'observation'",
                                 (bank_id,)).fetchall():
        meta = json.loads(text)
        if rests_on_inherited(meta, inherited):
            con.execute("UPDATE units SET metadata = ? WHERE id = ? AND bank_id = ?",
                        (json.dumps(meta, default=str), uid, bank_id))


def _take_back_lent(con: sqlite3.Connection, bank_id: str, gone: Sequence[str]) -> None:
    """Facts that were lent citations of deleted messages (by restating facts) stop citing them and stay: they
    were made of their own messages (``stores.citations``). It scans the bank's metadata for the key (about 31 ms
    at 100k rows) and parses only the few facts that hold lent citations."""
    dropped = set(gone)
    if not dropped:
        return
    changed: dict[str, dict[str, Any]] = {}
    for uid, text in con.execute(f"SELECT id, metadata FROM units WHERE bank_id = ? "
                                 f"AND instr(metadata, '\"{FACT_LENT_KEY}\"') > 0", (bank_id,)).fetchall():
        meta = json.loads(text)
        if uid not in dropped and take_back(meta, dropped, lent_only=True):
            changed[uid] = meta
    _settle_citations(con, bank_id, changed, observations=True)


def _release_superseded(con: sqlite3.Connection, bank_id: str, gone: Sequence[str]) -> None:
    """Memories superseded by a deleted one are current again: what superseded them is no longer believed."""
    for chunk in _chunks(list(gone), 500):
        con.execute(
            f"UPDATE units SET metadata = json_remove(metadata, '$.{SUPERSEDED_BY_KEY}', '$.{VALID_UNTIL_KEY}', "
            f"'$.{SUPERSESSION_KEY}') WHERE bank_id = ? AND {SUPERSEDED_EXPR} IN ({','.join('?' * len(chunk))})",
            [bank_id, *chunk],
        )


def _forget_in_context(con: sqlite3.Connection, bank_id: str, gone: Sequence[tuple[str, str]], owner: str | None,
                       now: float) -> None:
    """Deleted texts leave their neighbours' keyword context too (a reply is searched with the message before it),
    and those neighbours' vectors, which embedded them as context, are marked (under ``owner``) to be embedded
    again."""
    by_doc: dict[str, list[str]] = {}
    for text, document_id in gone:
        by_doc.setdefault(document_id, []).append(text)
    for document_id, texts in by_doc.items():
        rows = con.execute("SELECT id, text, context, kw_text, kw_context, kw_len FROM units "
                           "WHERE bank_id = ? AND document_id = ? AND context != ''", (bank_id, document_id)).fetchall()
        for row in rows:
            context = row[2]
            if not any(t and t in context for t in texts):
                continue
            for t in texts:
                context = context.replace(t, " ") if t else context
            context = " ".join(context.split())
            kw = keyword_columns([(row[1], context)])[0]
            _adjust_keyword_stats(con, bank_id, [row[3:6]], -1)
            _adjust_keyword_stats(con, bank_id, [kw], +1)
            con.execute("UPDATE units SET context = ?, kw_text = ?, kw_context = ?, kw_len = ? WHERE id = ?",
                        (context, *kw, row[0]))
            con.execute(
                "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
                (bank_id, row[0], owner, now),
            )


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _page(limit: int, offset: int) -> tuple[int, int]:
    """LIMIT and OFFSET values: never negative (SQLite reads a negative LIMIT as "no limit")."""
    return max(0, int(limit)), max(0, int(offset))
