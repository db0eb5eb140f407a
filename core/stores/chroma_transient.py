"""Retries for Chroma reads that fail while the server swaps an HNSW segment.

Chroma's single-node server (1.x) compacts a collection's write log into HNSW segment files in the background.
A query or get can fail with ``InternalError: Error executing plan: Internal error: Error creating hnsw segment
reader: Nothing found on disk``: seen once here, with three processes retaining into one bank at once on a loaded
machine, and not again in five reruns, so most likely a read that raced the compaction. Reads that fail this way
are retried a few times with a short backoff. Only "Nothing found on disk" counts: the same reader also fails
with "Error loading hnsw index" on a damaged segment, which waiting does not mend. Any other error, and a race
that outlasts the retries, is raised as before. Writes are not retried here: they go to the log, not the segment
reader, and retrying a write that may have landed is the caller's decision.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

TRANSIENT_MARKER = "Nothing found on disk"
"""Text of the server's error for a read that raced a segment swap."""

READS = frozenset({"query", "get", "count", "peek"})
"""The collection methods that only read."""

ATTEMPTS = 5
FIRST_WAIT_S = 0.05  # doubled after each failed attempt: 0.75 s of waiting at most


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is the segment-swap race (worth retrying) rather than a real failure."""
    return TRANSIENT_MARKER in str(exc)


class RetryingReads:
    """A Chroma collection whose reads are retried on the segment-swap race; everything else passes through."""

    def __init__(self, collection: Any, attempts: int = ATTEMPTS, first_wait_s: float = FIRST_WAIT_S) -> None:
        """Wrap ``collection`` (a ``chromadb`` Collection, or anything with the same methods)."""
        self._collection = collection
        self._attempts = max(1, attempts)
        self._first_wait_s = first_wait_s

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_collection":
            # Not the collection's: also keeps a half-built copy (copy/pickle skip __init__) from recursing here.
            raise AttributeError(name)
        attr = getattr(self._collection, name)
        if name not in READS:
            return attr

        def read(*args: Any, **kwargs: Any) -> Any:
            return self._retry(attr, *args, **kwargs)

        return read

    def _retry(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        wait = self._first_wait_s
        attempt = 1
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if attempt >= self._attempts or not is_transient(exc):
                    raise
                log.info("Chroma read %s failed with the segment-swap error (attempt %d of %d), retrying in "
                         "%.2f s: %s",
                         getattr(fn, "__name__", "?"), attempt, self._attempts, wait, exc)
                time.sleep(wait)
                wait *= 2
                attempt += 1
