"""Link construction at retain time: temporal, semantic and causal links between units (paper 4.1.4).

Entity links are not materialised here: they go through entity nodes (the mentions table), so a common
entity costs one row per mention instead of a quadratic number of unit pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .config import LinkSettings
from .extract.base import ExtractedFact
from .models import Link, LinkType, Memory
from .stores.base import UnitStore, VectorIndex

_INVERSE: dict[LinkType, LinkType] = {
    LinkType.CAUSES: LinkType.CAUSED_BY,
    LinkType.CAUSED_BY: LinkType.CAUSES,
}


def _both(a: str, b: str, kind: LinkType, weight: float) -> list[Link]:
    weight = max(0.0, min(1.0, weight))
    return [Link(source_id=a, target_id=b, type=kind, weight=weight),
            Link(source_id=b, target_id=a, type=kind, weight=weight)]


def build_links(
    bank_id: str,
    units: Sequence[Memory],
    facts: Sequence[ExtractedFact],
    embeddings: np.ndarray,
    store: UnitStore,
    index: VectorIndex,
    settings: LinkSettings,
) -> list[Link]:
    """All links for a batch of new units, both directions for symmetric kinds.

    Must run before the new vectors are upserted: the index is queried for *existing* neighbours, and
    neighbours inside the batch are found with one matrix product.
    """
    links: list[Link] = []
    new_ids = [u.id for u in units]
    sigma = settings.temporal_sigma_hours * 3600.0

    # temporal: neighbours in the same document, then time-nearest units elsewhere in the bank
    w = settings.adjacent_window
    for i, unit in enumerate(units):
        for j in range(i + 1, min(len(units), i + w + 1)):
            other = units[j]
            if unit.document_id != other.document_id:
                continue
            dt = _dt_seconds(unit, other)
            weight = math.exp(-dt / sigma) * (0.9 ** (j - i - 1))
            links.extend(_both(unit.id, other.id, LinkType.TEMPORAL, weight))
    if settings.temporal_neighbors > 0:
        # The batch is not in the store yet, so every unit found here is an older one.
        for unit in units:
            if unit.occurred_start is None:
                continue
            near = store.units_near_time(
                bank_id, unit.occurred_start, window_s=3 * sigma, limit=settings.temporal_neighbors
            )
            for other_id, when in near:
                dt = abs((unit.occurred_start - when).total_seconds())
                links.extend(_both(unit.id, other_id, LinkType.TEMPORAL, math.exp(-dt / sigma)))

    # semantic: existing neighbours from the index, batch neighbours from the similarity matrix
    theta = settings.semantic_threshold
    k = settings.semantic_neighbors
    if k > 0 and len(units):
        if index.count(bank_id) > 0:
            found = index.query_many(bank_id, embeddings, k)
            # A vector without a unit (a forget or a crashed writer not yet synced) is no neighbour.
            present = store.units_exist(bank_id, list({i for hits in found for i, sim in hits if sim >= theta}))
            for unit, hits in zip(units, found, strict=True):
                for other_id, sim in hits:
                    if sim >= theta and other_id in present:
                        links.extend(_both(unit.id, other_id, LinkType.SEMANTIC, sim))
        if len(units) > 1:
            for i, j, sim in _batch_pairs(embeddings, k, theta):
                links.extend(_both(new_ids[i], new_ids[j], LinkType.SEMANTIC, sim))

    # causal: from the extractor, by index within the batch
    for fact, unit in zip(facts, units, strict=True):
        for rel in fact.causal:
            if 0 <= rel.target < len(units) and units[rel.target].id != unit.id:
                target = units[rel.target].id
                links.append(Link(source_id=unit.id, target_id=target, type=rel.type, weight=1.0))
                inverse = _INVERSE.get(rel.type)
                if inverse is not None:
                    links.append(Link(source_id=target, target_id=unit.id, type=inverse, weight=1.0))
    return links


def _dt_seconds(a: Memory, b: Memory) -> float:
    if a.occurred_start is None or b.occurred_start is None:
        return 0.0
    return abs((a.occurred_start - b.occurred_start).total_seconds())


def _batch_pairs(embeddings: np.ndarray, k: int, theta: float, block: int = 1024) -> list[tuple[int, int, float]]:
    """Pairs (i < j) where j is among i's k nearest in the batch (or vice versa) with cosine >= theta."""
    n = len(embeddings)
    kk = min(k, n - 1)
    pairs: dict[tuple[int, int], float] = {}
    for lo in range(0, n, block):  # blocks keep memory bounded for very large batches
        sims = embeddings[lo : lo + block] @ embeddings.T
        for r in range(sims.shape[0]):
            sims[r, lo + r] = -1.0
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        for r, row in enumerate(top):
            i = lo + r
            for j in row:
                sim = float(sims[r, j])
                if sim >= theta:
                    pairs[(min(i, int(j)), max(i, int(j)))] = sim
    return [(i, j, sim) for (i, j), sim in pairs.items()]
