"""The channels recall runs, behind one signature: ``(ChannelQuery) -> ranked hits``, or None when the channel
has nothing to say for this query (no time expression, no seeds).

Adding a channel is a function (in ``channels.py``) plus an entry in ``REGISTRY`` and a weight in
``RecallSettings.channel_weights``; ``RecallPipeline.recall`` runs whatever is registered, in parallel where the
entries allow, and ablations and traces pick the name up from ``CHANNELS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..config import RecallSettings
from ..models import Network, TimeRange
from ..stores.base import VectorIndex
from ..temporal import TemporalConstraint
from . import channels as ch
from .fusion import reciprocal_rank_fusion

Hits = list[tuple[str, float]]
"""A channel's ranking: (unit id, score), best first."""


@dataclass(frozen=True)
class ChannelQuery:
    """Everything a channel may read for one recall: the query, its filters, the stores, and the rankings of
    the channels it runs after (``earlier``)."""

    bank_id: str
    text: str
    vector: np.ndarray | None
    networks: Sequence[Network] | None
    window: TimeRange | None
    constraint: TemporalConstraint | None
    settings: RecallSettings
    weights: Mapping[str, float]
    store: ch.RecallStore
    index: VectorIndex
    earlier: Mapping[str, Hits]


@dataclass(frozen=True)
class Channel:
    """A registered channel: its function, whether it needs the query vector (a channel that does not starts
    before the embedding), the channels whose rankings it takes, and whether it runs on the calling thread."""

    run: Callable[[ChannelQuery], Hits | None]
    needs_vector: bool = True
    after: tuple[str, ...] = ()
    inline: bool = False


def trusted(store: ch.RecallStore, bank_id: str, hits: Hits) -> Hits:
    """Vector hits whose unit exists: a vector can outlive its unit for a moment (a forget half done, a crashed
    writer) until its mark is synced, and must never take a rank from a real memory."""
    if not hits:
        return hits
    present = store.units_exist(bank_id, [i for i, _ in hits])
    return hits if len(present) == len(hits) else [(i, v) for i, v in hits if i in present]


def _semantic(q: ChannelQuery) -> Hits:
    assert q.vector is not None  # registered with needs_vector
    return trusted(q.store, q.bank_id, ch.semantic(q.index, q.bank_id, q.vector, q.settings.semantic_k,
                                                    q.networks, q.window))


def _keyword(q: ChannelQuery) -> Hits:
    s = q.settings
    return ch.keyword(q.store, q.bank_id, q.text, s.keyword_k, q.networks, q.window, s.keyword_context_weight)


def _temporal(q: ChannelQuery) -> Hits | None:
    if q.constraint is None or q.constraint.range is None or q.vector is None:
        return None
    s = q.settings
    return ch.temporal(q.index, q.bank_id, q.vector, q.constraint.range, s.temporal_k, q.networks, q.window,
                       q.store)


def _graph(q: ChannelQuery) -> Hits | None:
    # Spreading activation starts from the best direct hits of semantic and keyword together.
    s = q.settings
    seeds, _ = reciprocal_rank_fusion(dict(q.earlier), k=s.rrf_k, weights=q.weights, with_hits=False)
    seeds = seeds[: s.graph_seeds]
    if not seeds:
        return None
    top = seeds[0][1]
    return ch.graph(q.store, q.bank_id, [(i, v / top) for i, v in seeds], s)


REGISTRY: dict[str, Channel] = {
    "semantic": Channel(_semantic, inline=True),
    "keyword": Channel(_keyword, needs_vector=False),
    "graph": Channel(_graph, after=("semantic", "keyword")),
    "temporal": Channel(_temporal),
}
"""The channels by name, in fusion order (paper 4.2.1)."""

CHANNELS: tuple[str, ...] = tuple(REGISTRY)


def needed(enabled: Sequence[str]) -> list[str]:
    """The enabled channels and those they run after, in registry order."""
    out: set[str] = set()
    todo = list(enabled)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(REGISTRY[name].after)
    return [n for n in REGISTRY if n in out]
