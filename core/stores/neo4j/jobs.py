"""``JobQueue`` and ``Leases`` on Neo4j: durable background jobs claimed under an owner's lease, and taking
back what dead owners held."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...models import Job, JobStatus
from ..common import from_epoch as _dt
from ..common import from_epoch_required as _at
from ..common import job_finished_at, job_outcome
from ..common import to_epoch as _ts
from ..records import Owner, Released
from .connection import Neo4jConnection
from .cypher import _ACTIVE_DOCS, _create_job_tx, _doc_key, _page


class Neo4jJobQueue(Neo4jConnection):
    """Durable background jobs (``base.JobQueue``)."""

    @staticmethod
    def _job(row: dict[str, Any]) -> Job:
        return Job(
            id=row["id"], bank_id=row["bank_id"], kind=row["kind"], payload=json.loads(row["payload"]),
            status=JobStatus(row["status"]), attempts=row["attempts"], error=row.get("error"),
            created_at=_dt(row["created_at"]), run_after=_dt(row["run_after"]), owner=row.get("owner"),
            result=json.loads(row["result"]) if row.get("result") else None,
            finished_at=_dt(row.get("finished_at")),
        )

    def enqueue_job(self, job: Job, *, document_id: str | None = None) -> None:
        """Durably queue a job; with ``document_id`` the document becomes pending on it in the same transaction."""
        def work(tx: Any) -> None:
            _create_job_tx(tx, job)
            if document_id is not None:
                tx.run("MATCH (d:Document {key: $key}) SET d.status = 'pending', d.owner = null, d.job_id = $job",
                       key=_doc_key(job.bank_id, document_id), job=job.id).consume()

        self._write(work)

    def claim_job(self, now: datetime, owner: str | None = None) -> Job | None:
        """Atomically take the oldest runnable job and mark it running under ``owner`` (attempts + 1).

        The claim writes a token first (taking the node's write lock on Neo4j; a conflicting commit on
        ArcadeDB is retried), then re-checks the status, so two workers never claim the same job.
        """
        token = uuid.uuid4().hex

        def work(tx: Any) -> dict[str, Any] | None:
            rec = tx.run(
                "MATCH (j:Job) WHERE j.status = $queued AND j.run_after <= $now "
                "WITH j ORDER BY j.run_after, j.created_at, j.id LIMIT 1 SET j.claim = $token "
                "WITH j WHERE j.status = $queued SET j.status = $running, j.attempts = j.attempts + 1, "
                "j.owner = $owner RETURN properties(j) AS j",
                queued=JobStatus.QUEUED.value, running=JobStatus.RUNNING.value, now=_ts(now), token=token,
                owner=owner,
            ).single()
            return rec["j"] if rec else None

        row = self._write(work)
        return self._job(row) if row else None

    def finish_job(self, job_id: str, error: str | None = None, retry_at: datetime | None = None,
                   result: dict[str, Any] | None = None) -> None:
        """Mark a job done (no error), re-queued for ``retry_at``, or failed for good; its lease is released.
        ``result`` is what a finished job reports (kept as it is given, None clears it); a job done or failed for
        good records when (``finished_at``), a re-queued one has not finished."""
        status, run_after = job_outcome(error, retry_at)
        encoded = None if result is None else json.dumps(result, default=str)
        self._write(lambda tx: tx.run(
            "MATCH (j:Job {id: $id}) SET j.status = $status, j.error = $error, "
            "j.run_after = coalesce($run_after, j.run_after), j.owner = null, j.result = $result, "
            "j.finished_at = $finished",
            id=job_id, status=status.value, error=error, run_after=run_after, result=encoded,
            finished=job_finished_at(status),
        ).consume())

    def list_jobs(self, bank_id: str | None = None) -> list[Job]:
        """Jobs, newest first."""
        rows = self._read(
            "MATCH (j:Job) WHERE $bank IS NULL OR j.bank_id = $bank RETURN properties(j) AS j "
            "ORDER BY j.created_at DESC",
            bank=bank_id,
        )
        return [self._job(r["j"]) for r in rows]

    def page_jobs(self, bank_id: str, status: JobStatus | None = None, *, limit: int = 50,
                  offset: int = 0) -> list[Job]:
        """One page of a bank's jobs, newest first."""
        rows = self._read(
            "MATCH (j:Job) WHERE j.bank_id = $bank AND ($status IS NULL OR j.status = $status) "
            "RETURN properties(j) AS j ORDER BY j.created_at DESC, j.id DESC SKIP $offset LIMIT $limit",
            bank=bank_id, status=JobStatus(status).value if status is not None else None, **_page(limit, offset),
        )
        return [self._job(r["j"]) for r in rows]

    def pending_jobs(self, bank_id: str | None = None) -> int:
        """Jobs queued or running (for the whole store, or one bank)."""
        rows = self._read(
            "MATCH (j:Job) WHERE j.status IN $statuses AND ($bank IS NULL OR j.bank_id = $bank) "
            "RETURN count(j) AS n",
            statuses=[JobStatus.QUEUED.value, JobStatus.RUNNING.value], bank=bank_id,
        )
        return int(rows[0]["n"]) if rows else 0


class Neo4jLeases(Neo4jConnection):
    """Live processes and what they hold (``base.Leases``)."""

    def register_owner(self, owner: Owner) -> None:
        """Record a live process."""
        self._write(lambda tx: tx.run(
            "MERGE (o:Owner {id: $id}) SET o.host = $host, o.pid = $pid, o.started_at = $started, "
            "o.heartbeat_at = $beat",
            id=owner.id, host=owner.host, pid=owner.pid, started=_ts(owner.started_at),
            beat=_ts(owner.heartbeat_at),
        ).consume(), retry_duplicates=True)

    def heartbeat(self, owner_id: str, at: datetime) -> bool:
        """Renew a lease; False when the owner node is gone."""
        rows = self._write(lambda tx: [r.data() for r in tx.run(
            "MATCH (o:Owner {id: $id}) SET o.heartbeat_at = $at RETURN o.id AS id", id=owner_id, at=_ts(at),
        )])
        return bool(rows)

    def remove_owner(self, owner_id: str) -> None:
        """Forget an owner that closed cleanly: what it still held goes back to nobody (then to the next reaper)."""
        def work(tx: Any) -> None:
            tx.run("MATCH (j:Job) WHERE j.status = 'running' AND j.owner = $id SET j.status = 'queued', j.owner = null",
                   id=owner_id).consume()
            tx.run("MATCH (d:Document) WHERE d.owner = $id SET d.owner = null", id=owner_id).consume()
            tx.run("MATCH (m:VectorMark) WHERE m.owner = $id SET m.owner = null", id=owner_id).consume()
            tx.run("MATCH (o:Owner {id: $id}) DELETE o", id=owner_id).consume()

        self._write(work)

    def list_owners(self) -> list[Owner]:
        """Every registered owner."""
        rows = self._read("MATCH (o:Owner) RETURN properties(o) AS o ORDER BY o.started_at, o.id")
        return [Owner(id=o["id"], host=o["host"], pid=int(o["pid"]), started_at=_at(o["started_at"]),
                      heartbeat_at=_at(o["heartbeat_at"])) for o in (r["o"] for r in rows)]

    def release_owners(self, dead: Sequence[str], reaper: str, now: datetime) -> Released:
        """Take back what dead owners held (see ``Leases.release_owners``)."""
        dead_ids = [d for d in dict.fromkeys(dead) if d != reaper]

        def work(tx: Any) -> Released:
            out = Released()
            # Held by nobody, by a dead owner, or by an owner whose node is gone (removed, or never registered).
            live = [r["id"] for r in tx.run("MATCH (o:Owner) WHERE NOT o.id IN $dead RETURN o.id AS id", dead=dead_ids)]
            gone = "(x.owner IS NULL OR NOT x.owner IN $live)"
            out.jobs = int(tx.run(
                f"MATCH (x:Job) WHERE x.status = 'running' AND {gone} "
                "SET x.status = 'queued', x.owner = null RETURN count(x) AS n", live=live,
            ).single()["n"])
            # Documents waiting for a job that is still queued or running are in hand; the rest pass to the reaper.
            tx.run(
                f"MATCH (x:Document) WHERE x.status IN $active AND {gone} "
                "MATCH (j:Job {id: x.job_id}) WHERE j.status IN ['queued', 'running'] "
                "SET x.status = 'pending', x.owner = null", active=_ACTIVE_DOCS, live=live,
            ).consume()
            out.documents = [(r["bank"], r["id"]) for r in tx.run(
                f"MATCH (x:Document) WHERE x.status IN $active AND {gone} "
                "OPTIONAL MATCH (j:Job {id: x.job_id}) WITH x, j "
                "WHERE j IS NULL OR NOT j.status IN ['queued', 'running'] "
                "SET x.owner = $reaper RETURN x.bank_id AS bank, x.id AS id",
                active=_ACTIVE_DOCS, live=live, reaper=reaper,
            )]
            out.vector_marks = int(tx.run(
                f"MATCH (x:VectorMark) WHERE {gone} SET x.owner = $reaper RETURN count(x) AS n",
                live=live, reaper=reaper,
            ).single()["n"])
            out.owners = int(tx.run(
                "MATCH (o:Owner) WHERE o.id IN $dead DELETE o RETURN count(o) AS n", dead=dead_ids,
            ).single()["n"])
            return out

        return self._write(work)
