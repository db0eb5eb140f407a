"""An imported audit trail, marked as imported: what a file claims is kept as data, never taken as the trail's own.

A bank file is input like any other: whoever wrote it chose its audit records' surface, token id and time, a date
in 2099 included. So an import does not store them as entries of this store. Each becomes an ``imported`` entry
of the import itself: dated when the import ran, made through the importing surface with its token (who imported
it), and its summary says which file it came from and what the file claims (the original operation, surface,
token id, time and summary). The document, memory ids (renewed with the memories) and counts are kept, as the
data they are. The entry keeps the record's id, so importing the same file again skips what it holds already.
A migration (one store of the user's to another) carries its trail unchanged: it is not written here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..actor import current_actor
from ..models import AuditEntry
from .format import AuditRecord

IMPORTED = "imported"
"""The operation of an entry that a bank file brought in."""
_SOURCE_CHARS = 120  # a file name in a summary
_CLAIM_CHARS = 64  # an operation, surface or token id the file claims
_SUMMARY_CHARS = 200  # the file's own summary of the entry


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def claimed(record: AuditRecord) -> str:
    """What the file says of an entry, in words: ``retain via mcp (token t1) at 2099-01-01 00:00:00 UTC: ...``."""
    token = f" (token {_cut(record.token_id, _CLAIM_CHARS)})" if record.token_id else ""
    at = record.at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    said = f": {_cut(record.summary, _SUMMARY_CHARS)}" if record.summary.strip() else ""
    return (f"{_cut(record.operation, _CLAIM_CHARS)} via {_cut(record.surface, _CLAIM_CHARS)}{token} at {at}"
            f"{said}")


def imported_entry(record: AuditRecord, bank_id: str, *, source: str, at: datetime) -> AuditEntry:
    """The entry recording that ``record`` was imported from ``source`` at ``at`` by the current actor."""
    actor = current_actor()
    return AuditEntry(
        id=record.id, bank_id=bank_id, at=at, surface=actor.surface, token_id=actor.token_id, operation=IMPORTED,
        document_id=record.document_id, memory_ids=list(record.memory_ids), counts=dict(record.counts),
        summary=f"from {_cut(source, _SOURCE_CHARS)}, which says: {claimed(record)}",
    )


def after(entry: AuditEntry, earliest: datetime) -> AuditEntry:
    """``entry`` dated no earlier than just after ``earliest`` (the import's own entry is the newest of all)."""
    floor = earliest + timedelta(milliseconds=1)  # stored as float seconds: a microsecond may round away
    return entry if entry.at >= floor else entry.model_copy(update={"at": floor})
