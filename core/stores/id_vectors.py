"""In-memory copies of large banks' vectors, for ranking a chosen set of ids against a query.

The temporal channel ranks the units of a time window (ids from the graph store's time index) by similarity to
the query. In a bank too large for the exact copy (``exact_vectors``, up to 20k vectors), the vectors of those ids
had to come from Chroma: reading a few hundred back by id costs ~35 us each (15-25 ms for a month of a 100k-unit
bank), and Chroma's id-restricted query 25-40 ms for a year (5k ids). A copy of the bank's vectors in memory
ranks a month in under a millisecond and a year in about 3 ms (gather the rows, a matrix-vector product).

What it costs and where it stops:

- memory: float32, the values the index holds, so the ranking is exact: that of the vectors read back (Chroma's
  id-restricted query is HNSW's, approximate: on the 100k-unit bank it returned the exact top 100 for 9 of 20
  year-long windows, the copy for all 20). A 100k-unit bank takes 293 MB with mpnet's 768 dimensions, 147 MB with
  MiniLM's 384; ``max_bytes`` bounds all banks together (default 512 MB), and a bank that would not fit keeps the
  Chroma path. ``dtype=np.float16`` halves the memory but moves a
  cosine by up to ~4e-5, which reordered near-ties (the 100k synthetic bank: the same top 100 for 28 of 61 windows,
  overlap 0.997), and converting its rows costs about twice the product;
- loading: every vector is read from Chroma once per process and bank (~60 us a vector: about 6 s at 100k), in a
  background thread started by the first ranking asked of the bank; until it is ready the caller ranks as before.
  Reading a page holds the GIL most of the time, so the thread runs at the lowest priority, reads 500 vectors at a
  time and sleeps as long as each page took (measured at 100k under load 3: the ten recalls after the one that
  started the load took 169 ms median with the reads back to back, 60 ms with the pauses, 48 ms with no copy at
  all; the load then takes 12-20 s instead of 6).
  A load is not started again within ten times the last one's duration (another process writing makes this one
  reload its client and drop its copies, see ``process_guard``: at most a tenth of the time goes to reloading);
- correctness: this process's writes reach the copy (``upsert``/``delete``, under the index's write lock; while a
  copy loads they are queued and replayed in order once it is read); any doubt drops it (another process wrote,
  a write failed half way, a re-embed, a reset), and a copy is only used where no other client writes behind
  this one's back (the embedded and in-memory indexes, never a Chroma server). A loaded copy whose row count
  differs from the collection's (a delete moved Chroma's pages under the reader) is discarded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 512 * 2**20
"""Memory all banks' copies may take together (a 100k-unit mpnet bank takes 293 MB in float32)."""
ENV_BUDGET = "HINDSIGHT_VECTOR_COPY_MB"
"""Sets that budget in MiB (0 turns the copies off: recall at 100k then pays Chroma's id-restricted query)."""


def copy_budget_bytes() -> int:
    """The copies' memory budget: ``$HINDSIGHT_VECTOR_COPY_MB`` (whole MiB, 0 or more) if set, else
    ``DEFAULT_MAX_BYTES``; raises ``InvalidInputError`` naming the variable for anything else."""
    raw = os.environ.get(ENV_BUDGET, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        mib = int(raw)
    except ValueError:
        mib = -1
    if mib < 0:
        from ..errors import InvalidInputError

        raise InvalidInputError(f"{ENV_BUDGET}={raw!r}: give the in-memory vector copies' budget in whole MiB, "
                                "0 or more (0 turns them off)")
    return mib * 2**20

PAUSE = 1.0
"""A background load sleeps this many times each page's reading time after it (1.0: half the time loading)."""

_CHUNK = 512  # rows gathered at once: small buffers, no large temporary per query
_GROWTH = 1.25  # spare rows allocated when a copy grows (a retain batch then rarely copies the matrix)


class BankCopy:
    """One bank's vectors as a matrix with a row per id. Every read and write holds ``lock``: writes change rows
    in place, and a read gathers its rows under the lock (well under a millisecond per 1,000 rows)."""

    def __init__(self, dim: int, dtype: type[np.floating] = np.float32, capacity: int = 0) -> None:
        """An empty copy of ``dim``-dimensional vectors, stored as ``dtype``, with room for ``capacity`` rows (a
        load sized up front never copies the matrix to grow it)."""
        self.lock = threading.Lock()
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((capacity, dim), dtype=dtype)
        self.used = 0  # rows [0, used) were written; those of ids no longer in ``rows`` are dead
        self._single: np.ndarray | None = None
        self._half: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        """Bytes the matrix takes (spare rows included)."""
        return int(self.matrix.nbytes)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add or replace rows (``vectors`` as the index stores them: unit length)."""
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        with self.lock:
            fresh = [i for i in dict.fromkeys(ids) if i not in self.rows]
            if self.used + len(fresh) > len(self.matrix):
                self._resize(max(int(len(self.matrix) * _GROWTH), self.used + len(fresh)))
            for unit_id in fresh:
                self.rows[unit_id] = self.used
                self.used += 1
            # Last write wins for an id given twice (numpy's fancy assignment keeps the last value too).
            self.matrix[[self.rows[i] for i in ids]] = vectors.astype(self.matrix.dtype)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows (their space is reclaimed once dead rows are a quarter of the matrix)."""
        with self.lock:
            for unit_id in ids:
                self.rows.pop(unit_id, None)
            if self.used - len(self.rows) > max(1024, self.used // 4):
                self._compact()

    def _resize(self, capacity: int) -> None:
        grown = np.zeros((capacity, self.matrix.shape[1]), dtype=self.matrix.dtype)
        grown[: self.used] = self.matrix[: self.used]
        self.matrix = grown

    def _compact(self) -> None:
        order = list(self.rows)
        kept = self.matrix[[self.rows[i] for i in order]] if order else self.matrix[:0]
        self.matrix = np.ascontiguousarray(kept)
        self.rows = {unit_id: n for n, unit_id in enumerate(order)}
        self.used = len(order)

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The gather buffers, kept between reads (reads hold the lock): fresh ones page-fault on every query
        (a 16 MB temporary for a 5k-row window cost 8 ms, against 2 ms for the product itself)."""
        dim = self.matrix.shape[1]
        if self._single is None or self._single.shape[1] != dim:
            self._single = np.empty((_CHUNK, dim), dtype=np.float32)
            self._half = (self._single if self.matrix.dtype == np.float32
                          else np.empty((_CHUNK, dim), dtype=self.matrix.dtype))
        assert self._half is not None
        return self._single, self._half

    def similarities(self, query: np.ndarray, ids: Sequence[str]) -> tuple[list[str], np.ndarray, list[str]]:
        """Cosine of ``query`` with each held id: (held ids, their similarities, the ids not held)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self.lock:
            rows = self.rows
            index = np.fromiter((rows.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
            held, missing = list(ids), []
            if len(index) and index.min() < 0:  # some not held: usually none, so one pass over the ids suffices
                ok = index >= 0
                held = [i for i, hit in zip(ids, ok.tolist(), strict=True) if hit]
                missing = [i for i, hit in zip(ids, ok.tolist(), strict=True) if not hit]
                index = index[ok]
            sims = np.empty(len(held), dtype=np.float32)
            # In chunks through buffers kept between reads: a whole window at once allocates (and page-faults) MBs.
            single, half = self._buffers()
            for start in range(0, len(held), _CHUNK):
                part = index[start : start + _CHUNK]
                m = len(part)
                # mode="clip" (the rows are valid): the default "raise" copies through a temporary buffer.
                np.take(self.matrix, part, axis=0, out=half[:m], mode="clip")
                if half is not single:
                    single[:m] = half[:m]
                np.matmul(single[:m], q, out=sims[start : start + m])
        return held, sims, missing


def top_k(ids: Sequence[str], sims: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` best (id, similarity), best first, equal similarities ordered by id (as ``BankVectors.search``)."""
    if not len(ids) or k <= 0:
        return []
    cut = np.partition(sims, len(sims) - k)[len(sims) - k] if len(sims) > k else -np.inf
    ranked = sorted((-float(sims[c]), ids[int(c)]) for c in np.flatnonzero(sims >= cut))[:k]
    return [(unit_id, -neg) for neg, unit_id in ranked]


Pages = Callable[[], Iterator[tuple[list[str], np.ndarray]]]
"""Reads a bank's vectors from the index page by page (each page under its own read hold)."""


class _Entry:
    """A bank's copy: loading (writes queued in ``pending``) or ready."""

    def __init__(self, dim: int, dtype: type[np.floating], capacity: int) -> None:
        self.copy = BankCopy(dim, dtype, capacity)
        self.ready = False
        self.pending: list[tuple[str, list[str], np.ndarray | None]] = []
        self.done = threading.Event()


class IdVectorCopies:
    """Per-bank ``BankCopy`` for banks above the exact copy's size, loaded in the background on first use."""

    def __init__(self, max_bytes: int | None = None, min_vectors: int = 0, background: bool = True,
                 dtype: type[np.floating] = np.float32) -> None:
        """Copies of banks of more than ``min_vectors`` vectors, ``max_bytes`` in all (0 turns them off; None:
        ``copy_budget_bytes()``), stored as ``dtype``; ``background=False`` loads in the calling thread (tests)."""
        self.max_bytes = copy_budget_bytes() if max_bytes is None else max_bytes
        self.dtype = dtype
        self.pause = PAUSE
        self.min_vectors = min_vectors
        self.background = background
        self._lock = threading.Lock()
        self._banks: dict[str, _Entry] = {}
        self._refused: dict[str, float] = {}  # bank -> monotonic time before which no load starts
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.loads = 0
        self.last_load_seconds: float | None = None

    def _held(self) -> int:
        """Bytes all copies hold now (callers hold ``_lock``)."""
        return sum(e.copy.nbytes for e in self._banks.values())

    def ready(self, bank_id: str) -> BankCopy | None:
        """The bank's copy if loaded (never starts a load)."""
        with self._lock:
            entry = self._banks.get(bank_id)
            return entry.copy if entry is not None and entry.ready else None

    def get(self, bank_id: str, size: Callable[[], tuple[int, int]], pages: Pages,
            reading: Callable[[], AbstractContextManager[None]], count: Callable[[], int]) -> BankCopy | None:
        """The bank's copy when ready; otherwise None, after starting its load if the bank qualifies.

        ``size`` gives (vectors, dimension); ``pages`` reads the vectors; ``count`` is the collection's row
        count, compared with the copy's under ``reading`` before the copy is used.
        """
        if self.max_bytes <= 0:
            return None
        with self._lock:
            entry = self._banks.get(bank_id)
            if entry is not None:
                return entry.copy if entry.ready else None
            if self._closed or time.monotonic() < self._refused.get(bank_id, 0.0):
                return None
        n, dim = size()
        with self._lock:
            if bank_id in self._banks or self._closed:
                return None  # another thread started it meanwhile, or the index closed
            held = self._held()
            # Room for the bank and a few retain batches beyond it, counted in the budget as allocated.
            capacity = n + max(1024, n // 64)
            if n <= self.min_vectors or dim <= 0 or held + capacity * dim * np.dtype(self.dtype).itemsize \
                    > self.max_bytes:
                self._refused[bank_id] = time.monotonic() + 60.0  # decided again in a minute
                return None
            entry = self._banks[bank_id] = _Entry(dim, self.dtype, capacity)
            if self.background:
                # Registered and started under the lock that created the entry: a close() either sees the thread
                # (and joins it) or comes first (and the entry is never made).
                thread = threading.Thread(target=self._load, args=(bank_id, entry, pages, reading, count),
                                          name=f"hindsight-vector-copy-{bank_id[:20]}", daemon=True)
                try:
                    thread.start()
                except RuntimeError as exc:  # no thread to be had (at shutdown, or out of threads)
                    log.debug("vector copy of bank %s not loaded: %s", bank_id, exc)
                    del self._banks[bank_id]
                    self._refused[bank_id] = time.monotonic() + 60.0
                    entry.done.set()
                    return None
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
                return None
        self._load(bank_id, entry, pages, reading, count)
        return self.ready(bank_id)

    def wait(self, bank_id: str, timeout: float | None = None) -> bool:
        """Wait for a load of the bank in progress; whether its copy is ready."""
        with self._lock:
            entry = self._banks.get(bank_id)
        if entry is None:
            return False
        entry.done.wait(timeout)
        return self.ready(bank_id) is not None

    def _load(self, bank_id: str, entry: _Entry, pages: Pages,
              reading: Callable[[], AbstractContextManager[None]], count: Callable[[], int]) -> None:
        started = time.monotonic()
        ok = False
        if self.background:
            # The lowest CPU priority for this thread (Linux: a thread id is a process id for setpriority).
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            page_started = time.monotonic()
            for ids, vectors in pages():
                with self._lock:
                    if self._banks.get(bank_id) is not entry:
                        return  # dropped meanwhile
                if ids:
                    entry.copy.upsert(ids, vectors)
                if self.background and self.pause > 0:
                    # Reading a page holds the GIL most of the time: recalls meanwhile ran 3x slower. A pause after
                    # each page leaves them room.
                    time.sleep(self.pause * (time.monotonic() - page_started))
                page_started = time.monotonic()
            # Under a hold: no write of this process between the replay and the count check.
            with reading(), self._lock:
                if self._banks.get(bank_id) is not entry:
                    return
                for op, written, stored in entry.pending:
                    if op == "upsert" and stored is not None:
                        entry.copy.upsert(written, stored)
                    else:
                        entry.copy.delete(written)
                entry.pending.clear()
                if self._held() > self.max_bytes:
                    return  # the writes queued during the load outgrew the budget: the index's own path
                expected = count()
                if len(entry.copy) != expected:
                    log.debug("vector copy of bank %s holds %d rows, the index %d: discarded", bank_id,
                              len(entry.copy), expected)
                    return
                entry.ready = ok = True
        except Exception as exc:  # the index closed or failed mid-load: the caller keeps the index's own path
            log.debug("vector copy of bank %s not loaded: %s", bank_id, exc)
        finally:
            seconds = time.monotonic() - started
            with self._lock:
                if not ok and self._banks.get(bank_id) is entry:
                    del self._banks[bank_id]
                self._refused[bank_id] = time.monotonic() + 10 * seconds
                self.loads += 1
                self.last_load_seconds = seconds
            entry.done.set()

    def upsert(self, bank_id: str, ids: Sequence[str], vectors: Callable[[], np.ndarray | None]) -> None:
        """Apply this process's write (``vectors`` reads what the index now stores; None drops the copy)."""
        with self._lock:
            entry = self._banks.get(bank_id)
        if entry is None:
            return
        stored = vectors()
        with self._lock:
            if self._banks.get(bank_id) is not entry:
                return
            if stored is None:
                del self._banks[bank_id]
            elif not entry.ready:
                entry.pending.append(("upsert", list(ids), stored))
            else:
                try:
                    entry.copy.upsert(ids, stored)
                except BaseException:
                    del self._banks[bank_id]  # half applied: never ranked from again
                    raise
                if self._held() > self.max_bytes:
                    del self._banks[bank_id]  # outgrew the budget: the index's own path again

    def holds(self, bank_id: str) -> bool:
        """Whether a copy of the bank is loaded or loading (a write must then reach it)."""
        with self._lock:
            return bank_id in self._banks

    def delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Apply this process's delete."""
        with self._lock:
            entry = self._banks.get(bank_id)
            if entry is None:
                return
            if entry.ready:
                try:
                    entry.copy.delete(ids)
                except BaseException:
                    del self._banks[bank_id]
                    raise
            else:
                entry.pending.append(("delete", list(ids), None))

    def close(self, timeout: float = 30.0) -> None:
        """Drop every copy and wait for loads in progress to stop (each stops after the page it is reading), so
        that none reads from a client being closed."""
        with self._lock:
            self._closed = True
            self._banks.clear()
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def drop(self, bank_id: str | None = None) -> None:
        """Forget one bank's copy, or every one (a load in progress is discarded when it ends)."""
        with self._lock:
            if bank_id is None:
                self._banks.clear()
            else:
                self._banks.pop(bank_id, None)
