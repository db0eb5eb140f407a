"""``JobQueue`` and ``Leases`` on SQLite: durable background jobs claimed under an owner's lease, and taking
back what dead owners held."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...models import DocumentStatus, Job, JobStatus
from ..common import from_epoch as _dt
from ..common import from_epoch_required as _at
from ..common import job_finished_at, job_outcome
from ..common import to_epoch as _ts
from ..records import Owner, Released
from .connection import SQLiteConnection
from .sql import _insert_job, _page

_ACTIVE_DOCS = (DocumentStatus.PENDING.value, DocumentStatus.EXTRACTING.value)


class SQLiteJobQueue(SQLiteConnection):
    """Durable background jobs (``base.JobQueue``)."""

    @staticmethod
    def _job(row: sqlite3.Row) -> Job:
        return Job(
            id=row["id"], bank_id=row["bank_id"], kind=row["kind"], payload=json.loads(row["payload"]),
            status=JobStatus(row["status"]), attempts=row["attempts"], error=row["error"],
            created_at=_dt(row["created_at"]), run_after=_dt(row["run_after"]), owner=row["owner"],
            result=json.loads(row["result"]) if row["result"] else None, finished_at=_dt(row["finished_at"]),
        )

    def enqueue_job(self, job: Job, *, document_id: str | None = None) -> None:
        """Durably queue a job; with ``document_id`` the document becomes pending on it in the same transaction."""
        with self._tx() as con:
            _insert_job(con, job)
            if document_id is not None:
                con.execute(
                    "UPDATE documents SET status = 'pending', owner = NULL, job_id = ? WHERE bank_id = ? AND id = ?",
                    (job.id, job.bank_id, document_id),
                )

    def claim_job(self, now: datetime, owner: str | None = None) -> Job | None:
        """Atomically take the oldest runnable job and mark it running under ``owner`` (attempts + 1)."""
        with self._tx() as con:
            row = con.execute(
                "SELECT * FROM jobs WHERE status = ? AND run_after <= ? ORDER BY run_after, created_at, id LIMIT 1",
                (JobStatus.QUEUED.value, _ts(now)),
            ).fetchone()
            if row is None:
                return None
            con.execute(
                "UPDATE jobs SET status = ?, attempts = attempts + 1, owner = ? WHERE id = ?",
                (JobStatus.RUNNING.value, owner, row["id"]),
            )
        job = self._job(row)
        return job.model_copy(update={"status": JobStatus.RUNNING, "attempts": job.attempts + 1, "owner": owner})

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None,
                   result: dict[str, Any] | None = None) -> None:
        """Mark a job done (no error), re-queued for ``retry_at``, or failed for good; its lease is released.
        ``result`` is what a finished job reports (kept as it is given, None clears it); a job done or failed for
        good records when (``finished_at``), a re-queued one has not finished."""
        status, run_after = job_outcome(error, retry_at)
        with self._tx() as con:
            con.execute(
                "UPDATE jobs SET status = ?, error = ?, run_after = coalesce(?, run_after), owner = NULL, result = ?, "
                "finished_at = ? WHERE id = ?",
                (status.value, error, run_after, None if result is None else json.dumps(result, default=str),
                 job_finished_at(status), job_id),
            )

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        if bank_id is None:
            rows = self._con().execute("SELECT * FROM jobs ORDER BY created_at DESC").fetchall()
        else:
            rows = self._con().execute(
                "SELECT * FROM jobs WHERE bank_id = ? ORDER BY created_at DESC", (bank_id,)
            ).fetchall()
        return [self._job(r) for r in rows]

    def page_jobs(self, bank_id: str, status: JobStatus | None = None, *, limit: int = 50,
                  offset: int = 0) -> list[Job]:
        """One page of a bank's jobs, newest first."""
        sql, args = "SELECT * FROM jobs WHERE bank_id = ?", list[Any]([bank_id])
        if status is not None:
            sql += " AND status = ?"
            args.append(JobStatus(status).value)
        rows = self._con().execute(sql + " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._job(r) for r in rows]

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        sql = "SELECT count(*) FROM jobs WHERE status IN (?, ?)"
        args: list[Any] = [JobStatus.QUEUED.value, JobStatus.RUNNING.value]
        if bank_id is not None:
            sql += " AND bank_id = ?"
            args.append(bank_id)
        return int(self._con().execute(sql, args).fetchone()[0])


class SQLiteLeases(SQLiteConnection):
    """Live processes and what they hold (``base.Leases``)."""

    def register_owner(self, owner: Owner) -> None:
        """Record a live process."""
        with self._tx() as con:
            con.execute(
                "INSERT OR REPLACE INTO owners (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
                (owner.id, owner.host, owner.pid, _ts(owner.started_at), _ts(owner.heartbeat_at)),
            )

    def heartbeat(self, owner_id: str, at: datetime) -> bool:
        """Renew a lease; False when the owner row is gone."""
        with self._tx() as con:
            return con.execute("UPDATE owners SET heartbeat_at = ? WHERE id = ?", (_ts(at), owner_id)).rowcount == 1

    def remove_owner(self, owner_id: str) -> None:
        """Forget an owner that closed cleanly: what it still held goes back to nobody (then to the next reaper)."""
        with self._tx() as con:
            con.execute("UPDATE jobs SET status = 'queued', owner = NULL WHERE status = 'running' AND owner = ?",
                        (owner_id,))
            con.execute("UPDATE documents SET owner = NULL WHERE owner = ?", (owner_id,))
            con.execute("UPDATE vector_marks SET owner = NULL WHERE owner = ?", (owner_id,))
            con.execute("DELETE FROM owners WHERE id = ?", (owner_id,))

    def list_owners(self) -> list[Owner]:
        """Every registered owner."""
        rows = self._con().execute("SELECT * FROM owners ORDER BY started_at, id").fetchall()
        return [Owner(id=r["id"], host=r["host"], pid=r["pid"], started_at=_at(r["started_at"]),
                      heartbeat_at=_at(r["heartbeat_at"])) for r in rows]

    def release_owners(self, dead: Sequence[str], reaper: str, now: datetime) -> Released:
        """Take back what dead owners held (see ``Leases.release_owners``)."""
        dead_ids = [d for d in dict.fromkeys(dead) if d != reaper]
        marks = ",".join("?" * len(dead_ids)) or "NULL"
        # Held by nobody, by a dead owner, or by an owner whose row is gone (removed, or never registered).
        gone = f"(owner IS NULL OR owner IN ({marks}) OR owner NOT IN (SELECT id FROM owners))"
        out = Released()
        with self._tx() as con:
            out.jobs = con.execute(
                f"UPDATE jobs SET status = 'queued', owner = NULL WHERE status = 'running' AND {gone}", dead_ids
            ).rowcount
            # Documents waiting for a job that is still queued or running are in hand (the job will extract
            # them); the rest pass to the reaper, which resumes them.
            doc_gone = f"(d.owner IS NULL OR d.owner IN ({marks}) OR d.owner NOT IN (SELECT id FROM owners))"
            has_job = "EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status IN ('queued', 'running'))"
            con.execute(
                f"UPDATE documents AS d SET status = 'pending', owner = NULL WHERE d.status IN (?, ?) AND {doc_gone} "
                f"AND {has_job}", [*_ACTIVE_DOCS, *dead_ids],
            )
            rows = con.execute(
                f"SELECT d.bank_id, d.id FROM documents d WHERE d.status IN (?, ?) AND {doc_gone} AND NOT {has_job}",
                [*_ACTIVE_DOCS, *dead_ids],
            ).fetchall()
            con.executemany("UPDATE documents SET owner = ? WHERE bank_id = ? AND id = ?",
                            [(reaper, r[0], r[1]) for r in rows])
            out.documents = [(r[0], r[1]) for r in rows]
            out.vector_marks = con.execute(f"UPDATE vector_marks SET owner = ? WHERE {gone}",
                                           [reaper, *dead_ids]).rowcount
            if dead_ids:
                out.owners = con.execute(f"DELETE FROM owners WHERE id IN ({marks})", dead_ids).rowcount
        return out
