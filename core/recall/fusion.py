"""Reciprocal rank fusion of ranked channel lists (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..models import ChannelHit


def reciprocal_rank_fusion(
    channels: Mapping[str, Sequence[tuple[str, float]]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    *,
    with_hits: bool = True,
) -> tuple[list[tuple[str, float]], dict[str, dict[str, ChannelHit]]]:
    """Fuse ranked lists: ``score(d) = sum_c w_c / (k + rank_c(d))`` with 1-based ranks.

    Returns the fused (id, score) list best first (ties broken by first appearance) and, per id, its
    rank and raw score in every channel that returned it (empty when ``with_hits`` is False: building
    those objects costs more than the fusion itself, and only traces need them).
    """
    fused: dict[str, float] = {}
    raw: dict[str, dict[str, tuple[int, float]]] = {}
    for name, results in channels.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        seen: set[str] = set()
        for rank, (item, score) in enumerate(results, start=1):
            if item in seen:
                continue  # a channel lists each item once; keep its best rank
            seen.add(item)
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
            if with_hits:
                raw.setdefault(item, {})[name] = (rank, score)
    order = sorted(fused.items(), key=lambda kv: -kv[1])
    hits = {
        item: {name: ChannelHit(rank=rank, score=float(score)) for name, (rank, score) in per.items()}
        for item, per in raw.items()
    }
    return order, hits
