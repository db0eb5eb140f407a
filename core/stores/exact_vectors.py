"""Exact nearest-neighbour search over a bank's vectors held in memory: repeatable where HNSW is not.

Chroma's HNSW index is approximate and its graph depends on random levels drawn at insertion: two builds
of the same bank, and even one bank reopened (unsaved records are replayed into a fresh graph), return
slightly different neighbours (measured on a LoCoMo conversation: 74 of 150 queries had a different
semantic top-100 after a reopen, 94 after a rebuild). For banks up to ``max_bank`` vectors the index keeps
a copy of the vectors and ranks exactly (a matrix product: ~0.5 ms at 10k vectors), so the same store and
query always give the same neighbours in the same order (ties by id). Larger banks use HNSW.

Filters arrive as the Chroma ``where`` that ``chroma.chroma_where`` builds from a typed ``VectorFilter``
(``$and`` of ``$in``/``$lte``/``$gte``/equality on scalar fields) and are evaluated here the way Chroma does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class BankVectors:
    """One bank's vectors, ids and metadata as arrays. Writes build new arrays and swap them in one assignment,
    so a search running in another thread always sees one consistent state."""

    def __init__(self, ids: list[str], vectors: np.ndarray, metadatas: list[dict[str, Any]]) -> None:
        """Rows from Chroma (vectors as stored: normalised by the embedder)."""
        ids = list(ids)
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2:
            matrix = matrix.reshape(len(ids), -1) if len(ids) else np.zeros((0, 0), dtype=np.float32)
        self._state = (ids, matrix, [dict(m or {}) for m in metadatas])

    @property
    def ids(self) -> list[str]:
        """The bank's vector ids."""
        return self._state[0]

    def vectors_of(self, wanted: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent)."""
        ids, vectors, _ = self._state
        row = {i: n for n, i in enumerate(ids)}
        return {i: vectors[row[i]] for i in wanted if i in row}

    def upsert(self, new_ids: Sequence[str], new_vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any] | None]) -> None:
        """Add or replace rows."""
        ids, vectors, metas = self._state
        merged: dict[str, tuple[np.ndarray, dict[str, Any]]] = {
            i: (vectors[n], metas[n]) for n, i in enumerate(ids)
        }
        for i, vec, meta in zip(new_ids, np.asarray(new_vectors, dtype=np.float32), metadatas, strict=True):
            merged[i] = (vec, dict(meta or {}))
        self._swap(merged)

    def delete(self, gone: Sequence[str]) -> None:
        """Remove rows."""
        ids, vectors, metas = self._state
        drop = set(gone)
        self._swap({i: (vectors[n], metas[n]) for n, i in enumerate(ids) if i not in drop})

    def _swap(self, rows: dict[str, tuple[np.ndarray, dict[str, Any]]]) -> None:
        dim = self._state[1].shape[1]
        ids = list(rows)
        vectors = np.stack([v for v, _ in rows.values()]) if rows else np.zeros((0, dim), dtype=np.float32)
        self._state = (ids, vectors, [m for _, m in rows.values()])

    def search(
        self, queries: np.ndarray, k: int, where: dict[str, Any] | None = None, only: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """The ``k`` most similar rows per query as (id, cosine), best first, ties by id; ``where`` filters on
        metadata, ``only`` restricts to those ids."""
        ids, vectors, metas = self._state
        queries = np.asarray(queries, dtype=np.float32)
        queries = queries.reshape(1, -1) if queries.ndim == 1 else queries
        if not ids or k <= 0:
            return [[] for _ in range(len(queries))]
        wanted = set(only) if only is not None else None
        if where is None and wanted is None:
            # Unfiltered: the matrix itself (indexing it by every row would copy it: 1.7 ms at 10k vectors).
            rows = np.arange(len(ids))
            sims = queries @ vectors.T
        else:
            rows = np.flatnonzero([
                (wanted is None or i in wanted) and (where is None or matches(m, where))
                for i, m in zip(ids, metas, strict=True)
            ])
            if not len(rows):
                return [[] for _ in range(len(queries))]
            sims = queries @ vectors[rows].T
        out = []
        for q in range(len(queries)):
            s = sims[q]
            # Every row scoring at least the k-th best, so that equal scores at the cut are ordered by id too.
            cut = np.partition(s, len(s) - k)[len(s) - k] if len(s) > k else -np.inf
            cand = np.flatnonzero(s >= cut)
            ranked = sorted((-float(s[c]), ids[rows[c]]) for c in cand)[:k]
            out.append([(i, -neg) for neg, i in ranked])
        return out


class _Unsupported(ValueError):
    pass


def matches(meta: dict[str, Any], where: dict[str, Any]) -> bool:
    """Evaluate a Chroma ``where`` filter of the forms the recall channels build."""
    if "$and" in where:
        return all(matches(meta, clause) for clause in where["$and"])
    if len(where) != 1:
        raise _Unsupported(where)
    (field, cond), = where.items()
    if field.startswith("$"):
        raise _Unsupported(where)
    value = meta.get(field)
    if not isinstance(cond, dict):
        return value == cond
    if len(cond) != 1:
        raise _Unsupported(where)
    (op, arg), = cond.items()
    if op == "$in":
        return value in arg
    if op == "$eq":
        return value == arg
    if value is None:
        return False  # Chroma: a missing field never satisfies a comparison
    if op == "$lte":
        return value <= arg
    if op == "$gte":
        return value >= arg
    if op == "$lt":
        return value < arg
    if op == "$gt":
        return value > arg
    raise _Unsupported(where)


class ExactCache:
    """Per-bank ``BankVectors`` of the banks small enough to search exactly, least recently used dropped past
    ``max_total`` vectors in all."""

    def __init__(self, max_bank: int = 20_000, max_total: int = 200_000) -> None:
        """Banks of at most ``max_bank`` vectors are kept, ``max_total`` vectors at most across banks."""
        self.max_bank = max_bank
        self.max_total = max_total
        self._banks: OrderedDict[str, BankVectors | None] = OrderedDict()  # None: too large, use HNSW
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def get(self, bank_id: str, size: Callable[[], int], load: Callable[[], BankVectors]) -> BankVectors | None:
        """The bank's vectors (loaded on first use), or None when the bank is too large to keep.

        One load per bank: recall's channels ask concurrently, and two loads of the same bank would each read
        every vector (the first recall after opening a 10k bank took twice as long).
        """
        with self._lock:
            if bank_id in self._banks:
                self._banks.move_to_end(bank_id)
                return self._banks[bank_id]
            loading = self._loading.setdefault(bank_id, threading.Lock())
        with loading:
            with self._lock:
                if bank_id in self._banks:  # loaded by the thread this one waited for
                    self._banks.move_to_end(bank_id)
                    return self._banks[bank_id]
            try:
                return self._keep(bank_id, None if self.max_bank <= 0 or size() > self.max_bank else load())
            finally:
                with self._lock:
                    self._loading.pop(bank_id, None)

    def _keep(self, bank_id: str, found: BankVectors | None) -> BankVectors | None:
        with self._lock:
            self._banks[bank_id] = found
            self._banks.move_to_end(bank_id)
            total = sum(len(b.ids) for b in self._banks.values() if b is not None)
            while total > self.max_total and len(self._banks) > 1:
                _, dropped = self._banks.popitem(last=False)
                total -= len(dropped.ids) if dropped is not None else 0
        return found

    def upsert(self, bank_id: str, ids: Sequence[str], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any] | None]) -> None:
        """Apply this process's write to a cached bank (a bank that outgrows ``max_bank`` is dropped)."""
        with self._lock:
            cached = self._banks.get(bank_id)
            if cached is None:
                self._banks.pop(bank_id, None)  # unknown or too large: decided again on next use
                return
            cached.upsert(ids, vectors, metadatas)
            if len(cached.ids) > self.max_bank:
                self._banks.pop(bank_id, None)

    def delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Apply this process's delete to a cached bank."""
        with self._lock:
            cached = self._banks.get(bank_id)
            if cached is not None:
                cached.delete(ids)
            else:
                self._banks.pop(bank_id, None)  # a bank too large may fit now: decided again on next use

    def drop(self, bank_id: str | None = None) -> None:
        """Forget one bank, or every bank (another process wrote: the disk is the truth again)."""
        with self._lock:
            if bank_id is None:
                self._banks.clear()
            else:
                self._banks.pop(bank_id, None)
