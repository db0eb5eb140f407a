"""Recording the audit trail: one ``AuditEntry`` per write or forget, with the actor of the running call.

The facade (``Bank``, ``Hindsight``) and the import call ``record`` right after a write succeeded, not inside the
write's own transaction: a retain commits in several steps (the raw document first, then its units), and the
trail is one more store write beside them. So an entry means "this was done"; a write that failed is not
recorded. If recording itself fails, the write stands (the trail is separate data, no other invariant depends on
it) and the caller gets a ``StoreError`` saying the write was made but not recorded, so the gap is never silent.

Who acted comes from ``actor.current_actor()``: the surface a call came through and its token id (never a token).
Background work that follows a recorded write (a retain's facts, observations, opinion reinforcement) is the
consequence of that entry and is not recorded again.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Mapping, Sequence

from ..actor import current_actor
from ..errors import InvalidInputError, StoreError
from ..models import AUDIT_MAX_IDS, AuditEntry, utcnow
from .base import AuditLog

log = logging.getLogger(__name__)

MAX_SUMMARY_CHARS = 200
"""A summary is a short line: what the caller passed is cut to this, never echoed whole."""

MAX_LIMIT = 10_000
"""The most entries one read of the trail returns."""


def name_digest(name: str) -> str:
    """A short digest of a name (folded: case and spacing do not matter), for a trail that must not quote it."""
    from ..text.names import normalise_name

    return hashlib.sha256(normalise_name(name).encode("utf-8")).hexdigest()[:16]


def entry(
    bank_id: str, operation: str, *, document_id: str | None = None, memory_ids: Sequence[str] = (),
    counts: Mapping[str, int] | None = None, summary: str = "",
) -> AuditEntry:
    """An entry for ``operation`` on ``bank_id`` made now by the current actor (ids capped, summary cut)."""
    actor = current_actor()
    return AuditEntry(
        id=uuid.uuid4().hex, bank_id=bank_id, at=utcnow(), surface=actor.surface, token_id=actor.token_id,
        operation=operation, document_id=document_id, memory_ids=list(memory_ids)[:AUDIT_MAX_IDS],
        counts=dict(counts or {}), summary=" ".join(summary.split())[:MAX_SUMMARY_CHARS],
    )


def record(
    store: AuditLog, bank_id: str, operation: str, *, document_id: str | None = None, memory_ids: Sequence[str] = (),
    counts: Mapping[str, int] | None = None, summary: str = "",
) -> AuditEntry:
    """Append an entry for a write that succeeded; ``StoreError`` (the write stands) when it cannot be stored."""
    made = entry(bank_id, operation, document_id=document_id, memory_ids=memory_ids, counts=counts, summary=summary)
    append(store, [made], f"{operation} on bank {bank_id!r}")
    return made


def append(store: AuditLog, entries: Sequence[AuditEntry], what: str) -> int:
    """Append ``entries`` for ``what`` (a description for the error); ``StoreError`` when they cannot be stored."""
    try:
        return store.append_audit(entries)
    except Exception as exc:
        log.error("%s was made but could not be recorded in the audit trail: %s", what, exc)
        raise StoreError(f"{what} was made, but recording it in the audit trail failed: {exc}") from exc


def read(
    store: AuditLog, bank_id: str | None, *, limit: int, offset: int, oldest_first: bool
) -> list[AuditEntry]:
    """A page of the trail, with ``limit`` and ``offset`` checked (``InvalidInputError`` out of range)."""
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be between 0 and {MAX_LIMIT:,}")
    if not 0 <= offset <= 10**9:
        raise InvalidInputError("offset must be between 0 and 10^9")
    return store.audit_entries(bank_id, limit=limit, offset=offset, oldest_first=oldest_first)
