"""Reconcile the derived vector index with the graph store (run on open, after crashes).

The graph store is the truth: units without vectors are re-embedded and indexed, vectors whose unit is
gone are dropped.
"""

from __future__ import annotations

import logging

from ..config import Settings
from ..embedders import Embedder
from ..stores.base import UnitStore, VectorIndex
from .unit_text import index_units

log = logging.getLogger(__name__)


def reconcile_bank(
    bank_id: str, store: UnitStore, index: VectorIndex, embedder: Embedder, settings: Settings
) -> dict[str, int]:
    """Make the bank's vectors match its units; returns how many were re-indexed and dropped."""
    unit_ids = store.unit_ids(bank_id)
    vector_ids = index.ids(bank_id)
    missing = sorted(unit_ids - vector_ids)
    orphans = sorted(vector_ids - unit_ids)
    for i in range(0, len(missing), 512):
        units = store.get_units(bank_id, missing[i : i + 512])
        index_units(store, index, embedder, bank_id, units, settings.embed_time_reference, settings.embed_reply_context)
    if orphans:
        index.delete(bank_id, orphans)
    if missing or orphans:
        log.warning("bank %r reconciled: %d units re-indexed, %d orphan vectors dropped",
                    bank_id, len(missing), len(orphans))
    return {"reindexed": len(missing), "dropped": len(orphans)}
