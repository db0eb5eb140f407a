"""Reciprocal rank fusion of ranked channel lists (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..models import ChannelHit


def reciprocal_rank_fusion(
    channels: Mapping[str, Sequence[tuple[str, float]]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, dict[str, ChannelHit]]]:
    """Fuse ranked lists: ``score(d) = sum_c w_c / (k + rank_c(d))`` with 1-based ranks.

    Returns the fused (id, score) list best first (ties broken by first appearance) and, per id, its
    rank and raw score in every channel that returned it.
    """
    fused: dict[str, float] = {}
    hits: dict[str, dict[str, ChannelHit]] = {}
    for name, results in channels.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (item, score) in enumerate(results, start=1):
            if name in hits.get(item, {}):
                continue  # a channel lists each item once; keep its best rank
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
            hits.setdefault(item, {})[name] = ChannelHit(rank=rank, score=float(score))
    order = sorted(fused.items(), key=lambda kv: -kv[1])
    return order, hits
