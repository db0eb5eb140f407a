"""Keeping the vector index in step with the graph store across crashes, through vector marks (an outbox).

Every write path marks the unit ids whose vectors it is about to change, in the graph store, before it
touches the index, and clears the marks once the index matches. A process that dies or fails in between
leaves marks behind; ``VectorSync.sync`` makes each marked vector follow the graph (re-embedded when the
unit exists, deleted when it does not) and clears the mark. Marks of a dead process pass to a live one
(``Leases.release_owners``). Ids an operation of this process is still working on are never synced under it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

import numpy as np

from ..config import Settings
from ..embedders import Embedder
from ..stores.base import BankStore, UnitStore, VectorIndex, VectorMarks
from .unit_text import stored_embedding_texts, vector_metadata

log = logging.getLogger(__name__)


class SyncStore(VectorMarks, BankStore, UnitStore, Protocol):
    """What vector sync reads: the marks, whether a bank still exists, and the units to re-embed."""


class VectorSync:
    """Vector writes of one process that survive failures: upsert, delete, re-embed, drop a bank."""

    def __init__(
        self, store: SyncStore, index: VectorIndex, embedder: Embedder, settings: Settings, owner: str | None
    ) -> None:
        """Writes through ``index`` holding marks in ``store`` under ``owner`` (this process's lease id)."""
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.owner = owner
        self._inflight: dict[tuple[str, str], int] = {}
        self._guard = threading.Lock()
        self._sync_lock = threading.Lock()

    @contextmanager
    def hold(self, bank_id: str, ids: Sequence[str]) -> Iterator[None]:
        """Keep ``sync`` away from these ids while an operation of this process works on them."""
        keys = [(bank_id, i) for i in dict.fromkeys(ids)]
        with self._guard:
            for k in keys:
                self._inflight[k] = self._inflight.get(k, 0) + 1
        try:
            yield
        finally:
            with self._guard:
                for k in keys:
                    left = self._inflight[k] - 1
                    if left:
                        self._inflight[k] = left
                    else:
                        del self._inflight[k]

    def finish_delete(self, bank_id: str, ids: Sequence[str]) -> bool:
        """Delete vectors whose units the graph already dropped (and marked); clear the marks. On failure the
        marks stay for ``sync`` and False is returned: the graph is the truth and no lookup trusts a vector
        without a unit, so the caller's operation still stands."""
        if not ids:
            return True
        try:
            self.index.delete(bank_id, list(ids))
            self.store.clear_vector_marks(bank_id, list(ids))
        except Exception as exc:
            log.warning("vector removal in bank %r deferred (%d ids, left marked for sync): %s", bank_id, len(ids),
                        exc)
            return False
        return True

    def undo_upsert(self, bank_id: str, ids: Sequence[str]) -> None:
        """Best effort after a failed write: drop vectors written for units that were never committed."""
        try:
            self.index.delete(bank_id, list(ids))
            self.store.clear_vector_marks(bank_id, list(ids))
        except Exception as exc:
            log.warning("could not undo %d vectors in bank %r (left marked for sync): %s", len(ids), bank_id, exc)

    def reindex(self, bank_id: str, ids: Sequence[str]) -> bool:
        """Re-embed units whose text changed (already marked by the store) and clear the marks."""
        with self.hold(bank_id, ids):
            try:
                self._follow_graph(bank_id, list(ids))
            except Exception as exc:
                log.warning("re-embedding %d units of bank %r deferred (left marked for sync): %s", len(ids), bank_id,
                            exc)
                return False
        return True

    def sync(self, limit: int = 10_000) -> dict[str, int]:
        """Make every vector marked under this owner (and not in flight here) follow the graph; clear the marks.

        Returns how many vectors were re-indexed, deleted and collections dropped. Failures leave their
        marks for the next run.
        """
        out = {"reindexed": 0, "deleted": 0, "dropped": 0}
        with self._sync_lock:
            marks = self.store.vector_marks(self.owner, limit)
            with self._guard:
                todo = [m for m in marks if m not in self._inflight]
            by_bank: dict[str, list[str]] = {}
            for bank_id, unit_id in todo:
                by_bank.setdefault(bank_id, []).append(unit_id)
            for bank_id, ids in by_bank.items():
                try:
                    if "" in ids:
                        out["dropped"] += self._drop(bank_id)
                        ids = [i for i in ids if i]
                    if ids:
                        reindexed, deleted = self._follow_graph(bank_id, ids)
                        out["reindexed"] += reindexed
                        out["deleted"] += deleted
                except Exception as exc:
                    log.warning("vector sync of bank %r failed (marks kept): %s", bank_id, exc)
        return out

    def _drop(self, bank_id: str) -> int:
        """A deleted bank's collection: dropped, unless the bank exists again (then its units are reconciled
        by the per-id marks and the open-time reconcile)."""
        dropped = 0
        if self.store.get_bank(bank_id) is None:
            self.index.drop_bank(bank_id)
            dropped = 1
        self.store.clear_vector_marks(bank_id, [""])
        return dropped

    def _follow_graph(self, bank_id: str, ids: list[str]) -> tuple[int, int]:
        """Upsert the vectors of ``ids`` that are units, delete the others; clear their marks."""
        self.index.ensure_collection(bank_id, self.embedder.name, self.embedder.dimension)
        units = self.store.get_units(bank_id, ids)
        present = {u.id for u in units}
        gone = [i for i in ids if i not in present]
        with_time, reply = self.settings.embed_time_reference, self.settings.embed_reply_context
        for i in range(0, len(units), 256):
            chunk = units[i : i + 256]
            vectors = np.asarray(self.embedder.embed(stored_embedding_texts(self.store, bank_id, chunk, with_time,
                                                                            reply)))
            self.index.upsert(bank_id, [u.id for u in chunk], vectors, [vector_metadata(u) for u in chunk])
        if units:
            # A forget that deleted one of these units while it was being embedded may have removed its vector
            # before the upsert above wrote it back: read the graph again after writing, so whichever of the two
            # finishes last deletes it (a forget committed after this read removes the vector itself).
            still = self.store.units_exist(bank_id, list(present))
            gone += [i for i in present if i not in still]
        if gone:
            self.index.delete(bank_id, gone)
        self.store.clear_vector_marks(bank_id, ids)
        return len(units), len(gone)
