"""New ids for a bank imported under another bank id.

Unit and entity ids are unique across a whole store (not per bank), so a clone imported beside its original
(``import bank.jsonl --bank copy``) cannot reuse them. Under a new bank id every unit and entity id becomes
``uuid5(namespace, new bank id + old id)``: deterministic (importing the same file under the same id again gives
the same ids) and distinct per target bank. Every reference follows: mentions, links, opinion histories and
their evidence, applied evidence, the memory ids of audit entries, observation document ids
(``observation:<entity id>``) and the id lists the engine keeps in unit metadata (an opinion's ``based_on``, an
observation's ``facts`` and ``entity_id``).
Document ids are per bank already and stay as they are. Under the same bank id nothing changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel

from ..models import FACT_CITES_KEY, FACT_LENT_KEY, SUPERSEDED_BY_KEY, SUPERSESSION_KEY
from ..observations.job import observation_document_id
from ..retain.correct import CORRECTION_KEY
from .archive import BankArchive
from .format import AuditRecord, EventRecord, LinkRecord, UnitRecord
from .jsonl import FileRecords

R = TypeVar("R", bound=BaseModel)

NAMESPACE = uuid.UUID("5b1f2d8e-8c57-4a7e-9d3e-4f1f8b6a2c10")
OBSERVATION_PREFIX = observation_document_id("")
# Unit metadata written by the engine that holds unit ids (opinions: based_on, against; observations: facts;
# facts: their citations, own and lent), the maps keyed by them (a judged opinion's verdicts), single ids (what
# superseded a memory) and the ids inside records (how it was superseded: "via"; what a correction corrects: "of").
_UNIT_ID_LISTS = ("based_on", "against", "facts", FACT_CITES_KEY, FACT_LENT_KEY)
_UNIT_ID_MAPS = ("verdicts",)
_UNIT_ID_KEYS = (SUPERSEDED_BY_KEY,)
_UNIT_ID_RECORDS = ((SUPERSESSION_KEY, "via"), (CORRECTION_KEY, "of"))


def _each(records: Collection[R], fn: Callable[[R], R]) -> Collection[R]:
    """``fn`` applied to every record: at once for a list, as they are read for records streamed from a file."""
    if isinstance(records, FileRecords):
        return records.mapped(fn)
    return [fn(r) for r in records]


def new_id(bank_id: str, old: str) -> str:
    """The id ``old`` takes in bank ``bank_id``."""
    return str(uuid.uuid5(NAMESPACE, f"{bank_id}\n{old}"))


def remap(archive: BankArchive, bank_id: str) -> BankArchive:
    """The archive as it is stored under ``bank_id``: the same archive when that is its own bank id, else a copy
    with new unit and entity ids and every reference to them rewritten."""
    if bank_id == archive.bank.id:
        return archive

    def f(old: str) -> str:
        return new_id(bank_id, old)

    def document(doc_id: str | None) -> str | None:
        if doc_id is not None and doc_id.startswith(OBSERVATION_PREFIX):
            return observation_document_id(f(doc_id[len(OBSERVATION_PREFIX):]))
        return doc_id

    def metadata(meta: dict[str, Any]) -> dict[str, Any]:
        out = dict(meta)
        for key in _UNIT_ID_LISTS:
            if isinstance(out.get(key), list):
                out[key] = [f(x) if isinstance(x, str) else x for x in out[key]]
        for key in _UNIT_ID_MAPS:
            if isinstance(out.get(key), dict):
                out[key] = {f(k): v for k, v in out[key].items()}
        for key in _UNIT_ID_KEYS:
            if isinstance(out.get(key), str):
                out[key] = f(out[key])
        for key, field in _UNIT_ID_RECORDS:
            record = out.get(key)
            if isinstance(record, dict) and isinstance(record.get(field), str):
                out[key] = {**record, field: f(record[field])}
        if isinstance(out.get("entity_id"), str):
            out["entity_id"] = f(out["entity_id"])
        return out

    def event(e: EventRecord) -> EventRecord:
        return e.model_copy(update={"evidence": [f(x) for x in e.evidence]})

    def unit(u: UnitRecord) -> UnitRecord:
        return u.model_copy(update={"id": f(u.id), "entities": [f(e) for e in u.entities],
                                    "document_id": document(u.document_id), "metadata": metadata(u.metadata)})

    def link(k: LinkRecord) -> LinkRecord:
        return k.model_copy(update={"source_id": f(k.source_id), "target_id": f(k.target_id)})

    def entry(a: AuditRecord) -> AuditRecord:
        return a.model_copy(update={"memory_ids": [f(x) for x in a.memory_ids]})

    return replace(
        archive,
        header=archive.header.model_copy(update={"bank_id": bank_id}),
        bank=archive.bank.model_copy(update={"id": bank_id}),
        entities=[e.model_copy(update={"id": f(e.id)}) for e in archive.entities],
        units=_each(archive.units, unit),
        links=_each(archive.links, link),
        opinions=[o.model_copy(update={"opinion_id": f(o.opinion_id), "events": [event(e) for e in o.events],
                                       "applied_evidence": [f(x) for x in o.applied_evidence]})
                  for o in archive.opinions],
        audit=_each(archive.audit, entry),
        vectors={f(k): v for k, v in archive.vectors.items()} if archive.vectors is not None else None,
    )
