"""Recall's deadline: ``recall(..., deadline_ms=...)`` returns what finished in time.

A channel still running at the deadline is left out of the fusion (a queued one is cancelled; a running one is
left to finish in its worker thread, its result ignored), a reranker is skipped once the deadline has passed or
while it would run past it, and packing always runs. What was cut is named in ``Recall.cut`` (and the trace's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from ..errors import InvalidInputError

MAX_DEADLINE_MS = 600_000
"""The longest deadline accepted (ten minutes): a larger one is a mistake (seconds given as milliseconds?)."""

T = TypeVar("T")


def check_deadline_ms(value: object) -> int | None:
    """``value`` if it is None or a whole number of milliseconds in 1..``MAX_DEADLINE_MS``; else InvalidInputError."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInputError(f"deadline_ms must be a whole number of milliseconds or None, not "
                                f"{type(value).__name__} {value!r}")
    if not 1 <= value <= MAX_DEADLINE_MS:
        raise InvalidInputError(f"deadline_ms must be between 1 and {MAX_DEADLINE_MS:,} milliseconds, not {value!r}")
    return value


class Deadline:
    """A point in time (``time.perf_counter``) that recall's stages must not wait past; ``ms=None``: none."""

    def __init__(self, ms: int | None, start: float | None = None) -> None:
        self.ms = ms
        self.at = None if ms is None else (time.perf_counter() if start is None else start) + ms / 1000
        self.cut: list[str] = []
        """The channels and stages the deadline cut, in the order they were cut."""

    @property
    def set(self) -> bool:
        """Whether there is a deadline at all."""
        return self.at is not None

    def remaining(self) -> float | None:
        """Seconds left (0 when passed), or None without a deadline."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def passed(self) -> bool:
        """Whether the deadline has passed (never, without one)."""
        return self.at is not None and time.perf_counter() >= self.at

    def wait(self, name: str, future: Future[T]) -> tuple[bool, T | None]:
        """``(True, result)`` once ``future`` is done, waiting at most until the deadline; ``(False, None)`` and
        ``name`` recorded as cut when it is not done by then (cancelled if it had not started)."""
        try:
            return True, future.result(timeout=self.remaining())
        except FutureTimeout:
            future.cancel()
            self.skip(name)
            return False, None

    def skip(self, name: str) -> None:
        """Record ``name`` as cut by the deadline."""
        if name not in self.cut:
            self.cut.append(name)

    def run(self, executor: ThreadPoolExecutor, name: str, fn: Callable[..., T], *args: Any) -> tuple[bool, T | None]:
        """``fn(*args)`` here without a deadline; with one, in ``executor`` and waited for until the deadline (not
        started at all when it has passed already)."""
        if self.at is None:
            return True, fn(*args)
        if self.passed():
            self.skip(name)
            return False, None
        return self.wait(name, executor.submit(fn, *args))
