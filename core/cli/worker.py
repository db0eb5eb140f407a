"""``hindsight worker``: run a store's queued background jobs (the LLM's facts of retained messages, entity
observations, opinion updates, deferred retains, scheduled reflects) in a process of their own.

No other command runs jobs that other processes queued: a read never waits for a model, and ``retain`` waits only
for its own facts (not at all with ``--no-wait``). A long-lived application or ``hindsight mcp`` runs the jobs it
queues itself; this command runs the rest, for good as a service or once with ``--until-idle`` in a script.
SIGINT or SIGTERM stops it gracefully: a commit in progress finishes, a job inside a model call is handed back to
the queue (the next worker runs it again; its effects replace what an earlier attempt wrote).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .options import location, open_store
from .run import cli_write

if TYPE_CHECKING:
    from typing import TypeAlias

    _Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

POLL_S = 0.5  # how often the command looks for a stop signal or an empty queue


def add_commands(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``worker [--until-idle]``."""
    p = sub.add_parser(
        "worker", parents=[common], help="run queued background jobs (the LLM's facts ...) until stopped",
        description="Runs the jobs queued in the store: the LLM's facts of retained messages, entity observations, "
                    "opinion updates, deferred retains and scheduled reflects. Other commands never run queued jobs "
                    "(retain waits for its own facts unless --no-wait). Runs until SIGINT or SIGTERM, which stop it "
                    "gracefully: a commit in progress finishes, a job inside a model call goes back to the queue.",
    )
    p.add_argument("--until-idle", action="store_true",
                   help="exit (status 0) once no job is queued or running, for scripts; jobs waiting to be retried "
                        "are waited for")
    p.set_defaults(func=cmd_worker)


@cli_write
def cmd_worker(args: argparse.Namespace) -> dict[str, Any] | None:
    """``worker``: run queued jobs until a signal (or, with ``--until-idle``, until the queue is empty)."""
    where = location(args)
    with _stop_on_signals() as stopping, open_store(args, must_exist=True) as hs:
        worker = hs.worker
        print(f"running the queued jobs of {where.describe()} ({hs.store.pending_jobs()} pending)"
              + ("" if args.until_idle else "; Ctrl-C stops"), file=sys.stderr)
        worker.start()
        idle = False
        while not stopping.is_set():
            if args.until_idle:
                idle = worker.wait_idle(POLL_S)
                if idle:
                    break
            else:
                stopping.wait(POLL_S)
        pending = hs.store.pending_jobs()  # a job in flight counts: it is handed back to the queue on close
        counts = dict(worker.counts)
    report = {"stopped_by": "idle" if idle else "signal", "pending": pending, **counts}
    if args.json:
        return report
    print(f"{'idle' if idle else 'stopped'}: {counts['done']} jobs done, {counts['failed']} failed, "
          f"{counts['retried']} retries; {pending} pending")
    return None


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event that SIGINT and SIGTERM set (instead of interrupting whatever runs); the handlers are restored on
    exit. Outside the main thread signals cannot be caught, and Ctrl-C interrupts as usual."""
    stopping = threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def stop(signum: int, frame: object) -> None:
        stopping.set()

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, stop)
    except ValueError:  # not the main thread
        pass
    try:
        yield stopping
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
