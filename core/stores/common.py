"""What both graph stores compute alike outside their query languages: times as UTC epoch seconds (floats), a
finished job's outcome (and when it finished), ``find_entity``'s alias fallback and the cut of ``units_near_time``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from ..models import Entity, JobStatus, as_utc, utcnow
from ..text.names import normalise_name


def to_epoch(value: datetime | None) -> float | None:
    """A datetime as epoch seconds; None stays None."""
    return as_utc(value).timestamp() if value is not None else None


def from_epoch(value: float | None) -> datetime | None:
    """Epoch seconds as a UTC datetime; None stays None."""
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def from_epoch_required(value: float) -> datetime:
    """A timestamp column that is never null."""
    return datetime.fromtimestamp(value, UTC)


def job_outcome(error: str | None, retry_at: datetime | None) -> tuple[JobStatus, float | None]:
    """A finished job's status and ``run_after`` (None: unchanged): done (no error), queued again for
    ``retry_at``, or failed for good."""
    if error is None:
        status, run_after = JobStatus.DONE, None
    elif retry_at is not None:
        status, run_after = JobStatus.QUEUED, to_epoch(retry_at)
    else:
        status, run_after = JobStatus.FAILED, None
    return status, run_after


def job_finished_at(status: JobStatus) -> float | None:
    """When a job whose outcome is ``status`` finished, as epoch seconds: now when it is done or failed for good,
    None when it was queued again (a retry has not finished)."""
    return to_epoch(utcnow()) if status in (JobStatus.DONE, JobStatus.FAILED) else None


def by_alias(entities: Iterable[Entity], norm: str) -> Entity | None:
    """The first of ``entities`` with an alias whose ``normalise_name`` is ``norm`` (``find_entity``'s fallback)."""
    for entity in entities:
        if norm in (normalise_name(a) for a in entity.aliases):
            return entity
    return None


def nearest(rows: Iterable[tuple[str, float | None]], skip: set[str], limit: int) -> list[tuple[str, datetime]]:
    """``units_near_time``'s answer from (id, start in epoch seconds) rows nearest first, read ``limit +
    len(skip)`` deep: the first ``limit`` not skipped, less any without a start."""
    out = [(i, from_epoch(t)) for i, t in rows if i not in skip]
    return [(i, d) for i, d in out[:limit] if d is not None]
