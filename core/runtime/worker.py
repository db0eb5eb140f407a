"""Durable background worker: runs jobs stored in the graph store, with retries and exponential backoff.

Jobs outlive the process: a job is claimed under this process's lease (``leases``), and one left
``running`` by a process that died is queued again by the next live process (never one a live process is
still running). A job that keeps failing is retried with growing delays and finally marked ``failed`` with
its error; nothing is dropped silently. A job may run more than once (a crash after its effects, before it
was marked done), so every handler's effects are idempotent: retains replace their document's memories,
observations replace the entity's, opinion updates apply once per (opinion, evidence).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta

from ..errors import LLMUnavailableError
from ..models import Job, utcnow
from ..stores.base import JobQueue

log = logging.getLogger(__name__)

Handler = Callable[[Job], None]


class Worker:
    """One daemon thread executing queued jobs one at a time (model calls are the bottleneck anyway)."""

    def __init__(
        self,
        store: JobQueue,
        handlers: dict[str, Handler],
        *,
        max_attempts: int = 4,
        backoff_s: float = 2.0,
        poll_s: float = 1.0,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.owner = owner
        self._closed = False
        self.handlers = handlers
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        with self._lock:
            if self.running or self._closed:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="hindsight-worker", daemon=True)
            self._thread.start()

    def notify(self) -> None:
        """Wake the worker: a job was queued."""
        self.start()
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to finish its current job and exit; waits for that job (queued ones stay queued).

        Waiting matters: abandoning a job mid model call would leave a request in flight while the caller
        may already be shutting the model server down.
        """
        with self._lock:
            self._closed = True  # a notify racing with stop must not start a new thread
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self) -> bool:
        """Run the next runnable job, if any; returns whether one ran."""
        job = self.store.claim_job(utcnow(), owner=self.owner)
        if job is None:
            return False
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for job kind {job.kind!r}")
            handler(job)
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            # A missing handler or a model that is not installed will not appear by retrying.
            if job.attempts >= self.max_attempts or isinstance(exc, (LookupError, LLMUnavailableError)):
                log.error("job %s (%s) failed for good after %d attempts: %s", job.id, job.kind, job.attempts, detail)
                self.store.finish_job(job.id, error=detail[:2000])
            else:
                delay = self.backoff_s * 2 ** (job.attempts - 1)
                log.warning("job %s (%s) failed (attempt %d), retrying in %.0f s: %s\n%s", job.id, job.kind,
                            job.attempts, delay, detail, traceback.format_exc(limit=3))
                self.store.finish_job(job.id, error=detail[:2000], retry_at=utcnow() + timedelta(seconds=delay))
        else:
            self.store.finish_job(job.id)
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_once()
            except Exception:  # a store failure must not kill the worker thread
                log.exception("background worker error")
                ran = False
            if not ran:
                with self._idle:
                    self._idle.notify_all()
                self._wake.wait(self.poll_s)
                self._wake.clear()

    def wait_idle(self, timeout: float | None = None, bank_id: str | None = None) -> bool:
        """Block until no job is queued or running (for ``bank_id``, or at all); False on timeout.

        Jobs waiting for a retry count as pending: waiting covers their backoff too.
        """
        self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.store.pending_jobs(bank_id) > 0:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._wake.set()
            with self._idle:
                self._idle.wait(0.2)
        return True
