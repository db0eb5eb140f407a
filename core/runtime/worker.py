"""Durable background worker: runs jobs stored in the graph store, with retries and exponential backoff.

Jobs outlive the process: a job is claimed under this process's lease (``leases``), and one left
``running`` by a process that died is queued again by the next live process (never one a live process is
still running). A job that keeps failing is retried with growing delays and finally marked ``failed`` with
its error; nothing is dropped silently. A job may run more than once (a crash after its effects, before it
was marked done), so every handler's effects are idempotent: retains replace their document's memories,
observations replace the entity's, opinion updates apply once per (opinion, evidence).

Closing never waits for a job (``gate``): every write of the worker (claiming, recording an outcome) and of the
handlers passes the ``CommitGate``; once it is closed, a job still inside a model call is dropped unrecorded and
the closing process's lease hands it back to the queue.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..errors import ClosedError, LLMUnavailableError
from ..llm.logsafe import describe_exception, safe_text
from ..models import Job, utcnow
from ..stores.base import JobQueue
from .gate import CommitGate

log = logging.getLogger(__name__)

Handler = Callable[[Job], object]
"""A job kind's handler; a dict it returns is stored as the finished job's ``Job.result``."""


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
        gate: CommitGate | None = None,
    ) -> None:
        """``gate`` is shared with the handlers' writes (``Hindsight.close`` closes it); ``owner`` is the lease
        that claimed jobs are held under."""
        self.store = store
        self.owner = owner
        self.gate = gate or CommitGate()
        self._closed = False
        # Jobs this worker finished, by outcome (``hindsight worker`` reports them).
        self.counts = {"done": 0, "retried": 0, "failed": 0}
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
        """Ask the thread to exit after its current job and wait up to ``timeout`` seconds (None: for good) for it.

        ``Hindsight.close`` closes the gate first and waits no time: a job inside a model call then ends unrecorded
        when the call returns (its answer dropped, ``GatedLLM``), and queued jobs stay queued.
        """
        with self._lock:
            self._closed = True  # a notify racing with stop must not start a new thread
        self._stop.set()
        self._wake.set()
        if self._thread is not None and timeout != 0:
            self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the thread to exit (after ``stop`` or a close); True once it has."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def run_once(self) -> bool:
        """Run the next runnable job, if any; returns whether one ran (never once the gate is closed)."""
        try:
            with self.gate.commit():
                job = self.store.claim_job(utcnow(), owner=self.owner)
        except ClosedError:
            return False
        if job is None:
            return False
        handler = self.handlers.get(job.kind)
        started = time.monotonic()
        outcome: object = None
        try:
            if handler is None:
                raise LookupError(f"no handler for job kind {job.kind!r}")
            outcome = handler(job)
        except Exception as exc:
            if self.gate.closed:  # closed under it (a model call cut short, a write refused): released, not failed
                log.debug("job %s (%s) left to the next process: closed during it (%s)", job.id, job.kind,
                          type(exc).__name__)
                return True
            self._failed(job, exc)
        else:
            if self._record(job, result=outcome if isinstance(outcome, dict) else None):
                self.counts["done"] += 1
                log.info("job %s (%s) done in %.1f s", job.id, job.kind, time.monotonic() - started)
        return True

    def _failed(self, job: Job, exc: Exception) -> None:
        """Record a failed attempt: retried later with a growing delay, or failed for good."""
        detail = f"{type(exc).__name__}: {exc}"
        # Logged scrubbed, the traceback too: its chain holds the original exceptions (an upstream's error echoing
        # the Authorization header), which the library's own errors were scrubbed of.
        shown = safe_text(detail[:2000])
        # A missing handler or a model that is not installed will not appear by retrying.
        if job.attempts >= self.max_attempts or isinstance(exc, (LookupError, LLMUnavailableError)):
            if self._record(job, error=detail[:2000]):
                self.counts["failed"] += 1
                log.error("job %s (%s) failed for good after %d attempts: %s", job.id, job.kind, job.attempts,
                          shown)
        else:
            delay = self.backoff_s * 2 ** (job.attempts - 1)
            if self._record(job, error=detail[:2000], retry_at=utcnow() + timedelta(seconds=delay)):
                self.counts["retried"] += 1
                log.warning("job %s (%s) failed (attempt %d), retrying in %.0f s: %s", job.id, job.kind,
                            job.attempts, delay, shown)
                log.debug("job %s (%s) traceback:\n%s", job.id, job.kind, describe_exception(exc))

    def _record(self, job: Job, **outcome: Any) -> bool:
        """Store a job's outcome as a gated write; False once the gate is closed (the lease hands the job back)."""
        try:
            with self.gate.commit():
                self.store.finish_job(job.id, **outcome)
        except ClosedError:
            log.debug("job %s (%s) left to the next process: closed before its outcome was stored", job.id, job.kind)
            return False
        return True

    def _loop(self) -> None:
        while not self._stop.is_set() and not self.gate.closed:
            try:
                ran = self.run_once()
            except Exception as exc:  # a store failure must not kill the worker thread
                if self._stop.is_set() or self.gate.closed:
                    break  # the stores closed under it: nothing to report, the lease hands the job back
                log.error("background worker error: %s", describe_exception(exc))
                ran = False
            if not ran:
                with self._idle:
                    self._idle.notify_all()
                self._wake.wait(self.poll_s)
                self._wake.clear()
        with self._idle:
            self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None, bank_id: str | None = None) -> bool:
        """Block until no job is queued or running (for ``bank_id``, or at all); False on timeout.

        Jobs waiting for a retry count as pending: waiting covers their backoff too. False at once when closed
        (nothing more runs here).
        """
        if self.gate.closed:
            return False
        self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.store.pending_jobs(bank_id) > 0:
            if self.gate.closed:
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._wake.set()
            with self._idle:
                self._idle.wait(0.2)
        return True
