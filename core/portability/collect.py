"""Read one bank out of a store, through the store protocols only, into a ``BankArchive``.

What is read, and from where: the profile (``BankStore.get_bank``), raw documents (``DocumentStore``), entities
(``EntityStore.list_entities``), every unit with its fields (``UnitStore.unit_ids``/``get_units``), mentions (a
unit's entity names resolved to entity ids), links (``UnitStore.neighbors`` with every link type and no entity
hops), document order (``units_of_document``), opinion histories and applied evidence (``OpinionStore``), the
audit trail (``AuditLog``) and, when asked, vectors (``VectorIndex.get_embeddings``). Jobs, leases and vector
marks are process state, not memory, and are not read.

Units are ordered as they were stored: grouped by document (in document order), groups by when their units were
created. On a store with snapshots (the SQLite store on a file) every read of the graph is made in one read
transaction, so writers may go on and the archive is the bank as it was when the export began. Elsewhere (the
Neo4j store, an in-memory SQLite store) a retain running meanwhile may or may not be in the file. Either way
references are checked on the result, so a bank that changed under the export is reported rather than written
inconsistently. Vectors (``with_vectors``) come from the vector index, outside the snapshot: a unit whose vector
is missing there is embedded again, as reconcile would.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime

import numpy as np

from ..engine import Engine
from ..errors import BankNotFoundError, StoreError
from ..models import AuditEntry, Document, Entity, LinkType, Memory, Network, utcnow
from ..stores.base import Snapshots
from ..vectors.unit_text import stored_embedding_texts
from .archive import BankArchive
from .errors import ArchiveError
from .format import (
    FORMAT_VERSION,
    AuditRecord,
    BankRecord,
    DocumentRecord,
    EmbedderInfo,
    EntityRecord,
    EventRecord,
    HeaderRecord,
    LinkRecord,
    OpinionHistoryRecord,
    UnitRecord,
    generator,
)

log = logging.getLogger(__name__)

CHUNK = 500
AUDIT_PAGE = 5000


def _chunks(ids: Sequence[str], size: int = CHUNK) -> list[list[str]]:
    return [list(ids[i : i + size]) for i in range(0, len(ids), size)]


def document_record(doc: Document) -> DocumentRecord:
    """A stored document as a record (without its owner lease and job: process state of the source store)."""
    return DocumentRecord(
        id=doc.id, content=doc.content, context=doc.context, timestamp=doc.timestamp, status=doc.status,
        error=doc.error, metadata=doc.metadata, created_at=doc.created_at, updated_at=doc.updated_at, kind=doc.kind,
        options=doc.options, revision=doc.revision,
    )


def entity_record(entity: Entity) -> EntityRecord:
    """A stored entity as a record."""
    return EntityRecord(id=entity.id, name=entity.name, type=entity.type, aliases=entity.aliases,
                        mention_count=entity.mention_count, first_seen=entity.first_seen, last_seen=entity.last_seen)


def unit_record(unit: Memory, entity_ids: list[str]) -> UnitRecord:
    """A stored unit as a record, mentions given as entity ids."""
    return UnitRecord(
        id=unit.id, text=unit.text, network=unit.network, occurred_start=unit.occurred_start,
        occurred_end=unit.occurred_end, mentioned_at=unit.mentioned_at, confidence=unit.confidence,
        sources=unit.sources, document_id=unit.document_id, metadata=unit.metadata, created_at=unit.created_at,
        entities=entity_ids,
    )


def _ordered(engine: Engine, bank_id: str, units: list[Memory]) -> list[Memory]:
    """Units grouped by document in document order, groups ordered by when their units were created."""
    groups: dict[str, list[Memory]] = {}
    for unit in units:
        # A unit of no document is a group of its own (the NUL keeps that key apart from any document id).
        groups.setdefault(unit.document_id if unit.document_id is not None else f"\0{unit.id}", []).append(unit)
    for key, members in groups.items():
        if len(members) > 1:
            rank = {uid: i for i, uid in enumerate(engine.store.units_of_document(bank_id, key))}
            members.sort(key=lambda m: (rank.get(m.id, len(rank)), m.created_at, m.id))

    def first(item: tuple[str, list[Memory]]) -> tuple[datetime, str]:
        return min(m.created_at for m in item[1]), item[0]

    return [m for _, members in sorted(groups.items(), key=first) for m in members]


def _mentions(engine: Engine, bank_id: str, units: list[Memory], entities: list[Entity]) -> dict[str, list[str]]:
    """Entity ids each unit mentions: its entity names resolved by name (one entity per name), falling back to
    ``units_of_entity`` for a name that several entities share (a store that needs ``check --repair``)."""
    by_name: dict[str, list[str]] = {}
    for e in entities:
        by_name.setdefault(e.name, []).append(e.id)
    shared = {name for name, ids in by_name.items() if len(ids) > 1}
    exact: dict[str, set[str]] = {}
    for name in shared:
        for entity_id in by_name[name]:
            for uid in engine.store.units_of_entity(bank_id, entity_id):
                exact.setdefault(uid, set()).add(entity_id)
    out: dict[str, list[str]] = {}
    for unit in units:
        ids: list[str] = []
        for name in unit.entities:
            if name in shared:
                ids.extend(sorted(exact.get(unit.id, set()) & set(by_name[name])))
            elif name in by_name:
                ids.append(by_name[name][0])
            else:
                raise StoreError(f"unit {unit.id!r} of bank {bank_id!r} mentions {name!r}, which is no entity of the "
                                 "bank (changed during the export? export it again)")
        out[unit.id] = list(dict.fromkeys(ids))
    return out


def _vectors(engine: Engine, bank_id: str, units: list[Memory]) -> dict[str, np.ndarray]:
    """Stored vectors of ``units``; a unit whose vector is missing (a crash left it for reconcile) is embedded now,
    as reconcile would."""
    found: dict[str, np.ndarray] = {}
    for chunk in _chunks([u.id for u in units]):
        found.update(engine.index.get_embeddings(bank_id, chunk))
    missing = [u for u in units if u.id not in found]
    if missing:
        log.warning("bank %r: %d units had no vector; embedded for the export", bank_id, len(missing))
        settings = engine.settings
        texts = stored_embedding_texts(engine.store, bank_id, missing, settings.embed_time_reference,
                                       settings.embed_reply_context)
        found.update(zip([u.id for u in missing], np.asarray(engine.embedder.embed(texts)), strict=True))
    return {u.id: np.asarray(found[u.id], dtype=np.float32) for u in units}


def _audit(engine: Engine, bank_id: str) -> list[AuditEntry]:
    """The bank's whole audit trail, oldest first (paged: a long trail is read a page at a time)."""
    out: list[AuditEntry] = []
    while True:
        page = engine.store.audit_entries(bank_id, limit=AUDIT_PAGE, offset=len(out), oldest_first=True)
        out += page
        if len(page) < AUDIT_PAGE:
            return out


def collect_bank(engine: Engine, bank_id: str, *, with_vectors: bool = False) -> BankArchive:
    """Everything stored for ``bank_id`` as a validated ``BankArchive`` (``BankNotFoundError`` if there is no such
    bank; ``StoreError`` when it changed under the read so that its parts no longer fit together)."""
    store = engine.store
    with store.snapshot() if isinstance(store, Snapshots) else nullcontext():
        return _collect(engine, bank_id, with_vectors)


def _collect(engine: Engine, bank_id: str, with_vectors: bool) -> BankArchive:
    store = engine.store
    profile = store.get_bank(bank_id)
    if profile is None:
        raise BankNotFoundError(f"no bank {bank_id!r}")
    documents = store.list_documents(bank_id)
    entities = store.list_entities(bank_id)
    ids = sorted(store.unit_ids(bank_id))
    units = [u for chunk in _chunks(ids) for u in store.get_units(bank_id, chunk)]
    units = _ordered(engine, bank_id, units)
    mentions = _mentions(engine, bank_id, units, entities)
    all_types = list(LinkType)
    links = [
        LinkRecord(source_id=edge.source_id, target_id=edge.target_id, type=LinkType(edge.type), weight=edge.weight)
        for chunk in _chunks([u.id for u in units])
        for edge in store.neighbors(bank_id, chunk, link_types=all_types, entity_fanout=0)
    ]
    links.sort(key=lambda k: (k.source_id, k.target_id, k.type.value))
    opinions = []
    for unit in units:
        if unit.network != Network.OPINION:
            continue
        history = store.opinion_history(bank_id, unit.id)
        applied = store.applied_evidence(bank_id, unit.id)
        if history or applied:
            opinions.append(OpinionHistoryRecord(opinion_id=unit.id, events=[EventRecord.of(e) for e in history],
                                                 applied_evidence=sorted(applied)))
    archive = BankArchive(
        header=HeaderRecord(
            format="hindsight-bank", version=FORMAT_VERSION, created_at=utcnow(), generator=generator(),
            bank_id=bank_id, embedder=EmbedderInfo(name=engine.embedder.name, dimension=engine.embedder.dimension),
            vectors=with_vectors, counts={}, networks={},
        ),
        bank=BankRecord(id=profile.id, name=profile.name, background=profile.background,
                        disposition=profile.disposition, created_at=profile.created_at),
        documents=[document_record(d) for d in documents],
        entities=[entity_record(e) for e in entities],
        units=[unit_record(u, mentions[u.id]) for u in units],
        links=links,
        opinions=opinions,
        audit=[AuditRecord.of(e) for e in _audit(engine, bank_id)],
        vectors=_vectors(engine, bank_id, units) if with_vectors else None,
    )
    archive.header = archive.header.model_copy(update={"counts": archive.counts(), "networks": archive.networks()})
    try:
        archive.validate()
    except ArchiveError as exc:
        raise StoreError(f"bank {bank_id!r} changed while it was read (export it again): {exc}") from exc
    return archive
