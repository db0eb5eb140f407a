"""Link construction at retain time: temporal, semantic and causal links between units (paper 4.1.4).

Entity links are not materialised here: they go through entity nodes (the mentions table), so a common
entity costs one row per mention instead of a quadratic number of unit pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..config import LinkSettings
from ..extract.base import ExtractedFact
from ..models import Link, LinkType, Memory
from ..stores.base import UnitStore, VectorIndex

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
    """All links for a batch of new units, both directions for symmetric kinds, at most
    ``settings.max_links_per_unit`` added at any one unit (``cap_links``).

    Must run before the new vectors are upserted: the index is queried for *existing* neighbours, and
    neighbours inside the batch are found with one matrix product.
    """
    sigma = settings.temporal_sigma_hours * 3600.0
    # temporal: neighbours in the same document, then time-nearest units elsewhere in the bank
    adjacent = _adjacent_links(units, settings.adjacent_window, sigma)
    elsewhere = _time_nearest_links(bank_id, units, store, settings.temporal_neighbors, sigma)
    semantic = _semantic_links(bank_id, units, embeddings, store, index, settings)
    causal = _causal_links(units, facts)
    return cap_links([causal, adjacent, semantic, elsewhere], settings.max_links_per_unit)


def _adjacent_links(units: Sequence[Memory], window: int, sigma: float) -> list[Link]:
    """Temporal links between units of one document at most ``window`` apart in the batch, weaker with the
    time between them and with each unit in between."""
    adjacent: list[Link] = []
    for i, unit in enumerate(units):
        for j in range(i + 1, min(len(units), i + window + 1)):
            other = units[j]
            if unit.document_id != other.document_id:
                continue
            dt = _dt_seconds(unit, other)
            weight = math.exp(-dt / sigma) * (0.9 ** (j - i - 1))
            adjacent.extend(_both(unit.id, other.id, LinkType.TEMPORAL, weight))
    return adjacent


def _time_nearest_links(
    bank_id: str, units: Sequence[Memory], store: UnitStore, neighbors: int, sigma: float
) -> list[Link]:
    """Temporal links to the ``neighbors`` stored units nearest in time to each dated unit (none when 0)."""
    if neighbors <= 0:
        return []
    # The batch is not in the store yet, so every unit found here is an older one. Units of one time (the
    # passages of a text) ask once.
    elsewhere: list[Link] = []
    near_at: dict[datetime, list[tuple[str, datetime]]] = {}
    for unit in units:
        if unit.occurred_start is None:
            continue
        near = near_at.get(unit.occurred_start)
        if near is None:
            near = near_at[unit.occurred_start] = list(store.units_near_time(
                bank_id, unit.occurred_start, window_s=3 * sigma, limit=neighbors))
        for other_id, when in near:
            dt = abs((unit.occurred_start - when).total_seconds())
            elsewhere.extend(_both(unit.id, other_id, LinkType.TEMPORAL, math.exp(-dt / sigma)))
    return elsewhere


def _semantic_links(
    bank_id: str, units: Sequence[Memory], embeddings: np.ndarray, store: UnitStore, index: VectorIndex,
    settings: LinkSettings,
) -> list[Link]:
    """Semantic links: existing neighbours from the index, batch neighbours from the similarity matrix."""
    theta = settings.semantic_threshold
    k = settings.semantic_neighbors
    semantic: list[Link] = []
    if k <= 0 or not len(units):
        return semantic
    if index.count(bank_id) > 0:
        found = index.query_many(bank_id, embeddings, k)
        # A vector without a unit (a forget or a crashed writer not yet synced) is no neighbour.
        present = store.units_exist(bank_id, list({i for hits in found for i, sim in hits if sim >= theta}))
        for unit, hits in zip(units, found, strict=True):
            for other_id, sim in hits:
                if sim >= theta and other_id in present:
                    semantic.extend(_both(unit.id, other_id, LinkType.SEMANTIC, sim))
    if len(units) > 1:
        new_ids = [u.id for u in units]
        for i, j, sim in _batch_pairs(embeddings, k, theta):
            semantic.extend(_both(new_ids[i], new_ids[j], LinkType.SEMANTIC, sim))
    return semantic


def _causal_links(units: Sequence[Memory], facts: Sequence[ExtractedFact]) -> list[Link]:
    """Causal links from the extractor (targets are indices within the batch), with their inverses."""
    causal: list[Link] = []
    for fact, unit in zip(facts, units, strict=True):
        for rel in fact.causal:
            if 0 <= rel.target < len(units) and units[rel.target].id != unit.id:
                target = units[rel.target].id
                pair = [Link(source_id=unit.id, target_id=target, type=rel.type, weight=1.0)]
                inverse = _INVERSE.get(rel.type)
                if inverse is not None:
                    pair.append(Link(source_id=target, target_id=unit.id, type=inverse, weight=1.0))
                causal.extend(pair)
    return causal


def cap_links(groups: Sequence[Sequence[Link]], cap: int) -> list[Link]:
    """The links of ``groups`` (in order of precedence) with at most ``cap`` links leaving any one unit.

    A link and its reverse (the same kind both ways, or a causal link and its inverse) are kept or dropped
    together and count once at each end. Within a group the strongest
    pairs come first. Every unit gets its adjacent-in-document and strongest links; a unit near many others (an
    old unit time-nearest to every passage of a book, a semantic hub of the batch) stops collecting at ``cap``.
    """
    pairs: dict[tuple[str, str, str], list[Link]] = {}
    order: list[tuple[int, float, tuple[str, str, str]]] = []
    for rank, group in enumerate(groups):
        for link in group:
            kind = min(link.type.value, _INVERSE.get(link.type, link.type).value)
            key = (min(link.source_id, link.target_id), max(link.source_id, link.target_id), kind)
            if key not in pairs:
                pairs[key] = []
                order.append((rank, -link.weight, key))
            pairs[key].append(link)
    order.sort(key=lambda item: (item[0], item[1]))
    degree: dict[str, int] = {}
    kept: list[Link] = []
    for _, _, key in order:
        a, b, _ = key
        if degree.get(a, 0) >= cap or degree.get(b, 0) >= cap:
            continue
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
        kept.extend(pairs[key])
    return kept


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
