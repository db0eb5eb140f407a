"""Exact nearest-neighbour search over a bank's vectors held in memory: repeatable where HNSW is not.

Chroma's HNSW index is approximate and its graph depends on random levels drawn at insertion: two builds
of the same bank, and even one bank reopened (unsaved records are replayed into a fresh graph), return
slightly different neighbours (measured on a LoCoMo conversation: 74 of 150 queries had a different
semantic top-100 after a reopen, 94 after a rebuild). For banks up to ``max_bank`` vectors the index keeps
a copy of the vectors and ranks exactly (a matrix product: ~0.5 ms at 10k vectors), so the same store and
query always give the same neighbours in the same order (ties by id). Larger banks use HNSW.

Filters arrive as the Chroma ``where`` that ``chroma_filters.chroma_where`` builds from a typed ``VectorFilter``
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
        self._state: _State = (ids, matrix, [dict(m or {}) for m in metadatas], {})

    @property
    def ids(self) -> list[str]:
        """The bank's vector ids."""
        return self._state[0]

    def vectors_of(self, wanted: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent)."""
        state = self._state
        row = _rows(state)
        return {i: state[1][row[i]] for i in wanted if i in row}

    def upsert(self, new_ids: Sequence[str], new_vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any] | None]) -> None:
        """Add or replace rows."""
        ids, vectors, metas, _ = self._state
        merged: dict[str, tuple[np.ndarray, dict[str, Any]]] = {
            i: (vectors[n], metas[n]) for n, i in enumerate(ids)
        }
        for i, vec, meta in zip(new_ids, np.asarray(new_vectors, dtype=np.float32), metadatas, strict=True):
            merged[i] = (vec, dict(meta or {}))
        self._swap(merged)

    def delete(self, gone: Sequence[str]) -> None:
        """Remove rows."""
        ids, vectors, metas, _ = self._state
        drop = set(gone)
        self._swap({i: (vectors[n], metas[n]) for n, i in enumerate(ids) if i not in drop})

    def _swap(self, rows: dict[str, tuple[np.ndarray, dict[str, Any]]]) -> None:
        dim = self._state[1].shape[1]
        ids = list(rows)
        vectors = np.stack([v for v, _ in rows.values()]) if rows else np.zeros((0, dim), dtype=np.float32)
        self._state = (ids, vectors, [m for _, m in rows.values()], {})

    def search(
        self, queries: np.ndarray, k: int, where: dict[str, Any] | None = None, only: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """The ``k`` most similar rows per query as (id, cosine), best first, ties by id; ``where`` filters on
        metadata, ``only`` restricts to those ids."""
        state = self._state
        ids, vectors, metas, _ = state
        queries = np.asarray(queries, dtype=np.float32)
        queries = queries.reshape(1, -1) if queries.ndim == 1 else queries
        if not ids or k <= 0:
            return [[] for _ in range(len(queries))]
        if where is None and only is None:
            # Unfiltered: the matrix itself (indexing it by every row would copy it: 1.7 ms at 10k vectors).
            rows = np.arange(len(ids))
            sims = queries @ vectors.T
        else:
            passing = np.ones(len(ids), dtype=bool)
            if only is not None:
                row = _rows(state)
                passing[:] = False
                passing[[row[i] for i in only if i in row]] = True
            if where is not None:
                # Column by column with numpy; a filter form it does not cover is evaluated row by row.
                vectorised = _mask(state, where)
                passing &= vectorised if vectorised is not None else np.fromiter(
                    (matches(m, where) for m in metas), dtype=bool, count=len(metas))
            rows = np.flatnonzero(passing)
            if not len(rows):
                return [[] for _ in range(len(queries))]
            # A wide filter: one product with the whole matrix, then its columns (copying most of the matrix
            # would cost more than the product); a narrow one: only its rows.
            sims = (queries @ vectors.T)[:, rows] if 4 * len(rows) > len(ids) else queries @ vectors[rows].T
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


_State = tuple[list[str], np.ndarray, list[dict[str, Any]], dict[str, Any]]
"""ids, vectors, metadata and what is derived from them on first use (row numbers, metadata columns)."""


def _rows(state: _State) -> dict[str, int]:
    """Row number of each id (built once per state: a dict of 10k ids costs about 1 ms)."""
    derived = state[3]
    if "rows" not in derived:
        derived["rows"] = {i: n for n, i in enumerate(state[0])}
    rows: dict[str, int] = derived["rows"]
    return rows


def _column(state: _State, field: str, numeric: bool) -> np.ndarray | None:
    """A metadata field over all rows: floats with NaN where missing (``numeric``; None when a present value is
    not a number), else the values themselves (None where missing)."""
    key = ("num:" if numeric else "obj:") + field
    derived = state[3]
    if key not in derived:
        values = [m.get(field) for m in state[2]]
        if not numeric:
            objects = np.empty(len(values), dtype=object)
            objects[:] = values
            derived[key] = objects
        elif all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values):
            derived[key] = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
        else:
            derived[key] = None
    col: np.ndarray | None = derived[key]
    return col


_COMPARE = {"$lte": np.less_equal, "$gte": np.greater_equal, "$lt": np.less, "$gt": np.greater}


def _mask(state: _State, where: dict[str, Any]) -> np.ndarray | None:
    """The rows passing ``where`` exactly as ``matches`` decides, vectorised; None for a form it does not cover."""
    n = len(state[0])
    if "$and" in where:
        if len(where) != 1:
            return None
        out = np.ones(n, dtype=bool)
        for clause in where["$and"]:
            sub = _mask(state, clause) if isinstance(clause, dict) else None
            if sub is None:
                return None
            out &= sub
        return out
    if len(where) != 1:
        return None
    (field, cond), = where.items()
    if field.startswith("$"):
        return None
    if isinstance(cond, dict):
        if len(cond) != 1:
            return None
        (op, arg), = cond.items()
    else:
        op, arg = "$eq", cond
    if op in ("$eq", "$in"):
        wanted = [arg] if op == "$eq" else arg
        if not isinstance(wanted, list | tuple) or not all(isinstance(a, str) for a in wanted):
            return None
        values = _column(state, field, numeric=False)
        out = np.zeros(n, dtype=bool)
        for a in wanted:
            out |= np.asarray(values == a, dtype=bool)  # elementwise on an object array
        return out
    if op in _COMPARE and isinstance(arg, int | float) and not isinstance(arg, bool):
        col = _column(state, field, numeric=True)
        if col is None:
            return None
        with np.errstate(invalid="ignore"):
            return np.asarray(_COMPARE[op](col, float(arg)), dtype=bool)  # NaN (missing) never passes
    return None


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

    def holds(self, bank_id: str) -> bool:
        """Whether the bank's vectors are held (a write to it must then reach the copy too)."""
        with self._lock:
            return self._banks.get(bank_id) is not None

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
