"""The four recall channels (paper 4.2.1). Each returns a ranked list of (unit id, score), best first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..config import RecallSettings
from ..models import Network, TimeRange
from ..stores.base import SearchStore, SpreadingActivation, UnitStore, VectorFilter, VectorIndex


def semantic(
    index: VectorIndex,
    bank_id: str,
    query_vector: np.ndarray,
    k: int,
    networks: Sequence[Network] | None,
    time_range: TimeRange | None,
) -> list[tuple[str, float]]:
    """Nearest units by cosine similarity."""
    return index.query(bank_id, query_vector, k, VectorFilter.of(networks, time_range))


class RecallStore(SearchStore, UnitStore, Protocol):
    """What recall reads from the graph store: keyword and time search, units, their links and which exist."""


MIN_KEYWORD_SCORE = 1e-3
"""A BM25 score below this comes from floored IDFs only (each such word adds at most 1e-6 * (k1 + 1))."""


def keyword(
    store: SearchStore,
    bank_id: str,
    query: str,
    k: int,
    networks: Sequence[Network] | None,
    time_range: TimeRange | None,
    context_weight: float = 0.5,
) -> list[tuple[str, float]]:
    """BM25 over unit text and its neighbours' text (down-weighted).

    Hits scoring (nearly) zero are dropped: they matched only words that half the bank contains (BM25 floors such
    words' IDF at 1e-6, e.g. the speaker's name in every other message), so their order says nothing, yet in the
    fusion they would outrank the semantic channel's good hits ("What does Maya like to drink?" matched only
    "Maya").
    """
    hits = store.keyword_search(
        bank_id, query, k, networks=networks, time_range=time_range, context_weight=context_weight
    )
    return [(i, score) for i, score in hits if score > MIN_KEYWORD_SCORE]


WINDOW_LIMIT = 10_000
"""Most units of a time window the temporal channel ranks (the most recent ones of a wider window)."""


def temporal(
    index: VectorIndex,
    bank_id: str,
    query_vector: np.ndarray,
    constraint: TimeRange,
    k: int,
    networks: Sequence[Network] | None,
    time_range: TimeRange | None,
    store: RecallStore | None = None,
    exact_limit: int = 600,
    window_limit: int = WINDOW_LIMIT,
) -> list[tuple[str, float]]:
    """Units whose occurrence overlaps the query's time constraint, ranked by semantic similarity.

    A caller's explicit ``time_range`` narrows the constraint further. With ``store``, the units in the window
    are listed by the store's time index and the vector query is restricted to them: a window of at most
    ``exact_limit`` units is ranked exactly over their stored vectors, a wider one by an id-restricted index
    query. A window of more than ``window_limit`` units is capped to its ``window_limit`` most recent ones (the
    ranking then covers the latest part of a very wide window, e.g. "before 2030" in a bank of decades).
    """
    window = constraint
    if time_range is not None:
        start = max((t for t in (constraint.start, time_range.start) if t is not None), default=None)
        end = min((t for t in (constraint.end, time_range.end) if t is not None), default=None)
        if start is not None and end is not None and start > end:
            return []
        window = TimeRange(start=start, end=end)
    if store is not None and exact_limit > 0:
        # Chroma's metadata filter costs about as much as scanning the whole bank (15 ms at 10k units, 150-350 ms
        # at 100k): the window's units come from the store's time index instead, and only their vectors are
        # compared with the query.
        listing = getattr(store, "temporal_ids", None)
        cap = max(window_limit, exact_limit)
        ids = (listing(bank_id, window, cap, networks=networks, ordered=False) if listing is not None
               else [i for i, _ in store.temporal_search(bank_id, window, cap, networks=networks)])
        # An index holding the bank's vectors in memory ranks any window there (a large bank's month: 15-25 ms
        # reading its vectors back from Chroma, a year 25-40 ms in Chroma's id-restricted query; from memory 1-5 ms).
        rank_ids = getattr(index, "rank_ids", None)
        ranked = rank_ids(bank_id, query_vector, ids, k) if rank_ids is not None and ids else None
        if ranked is not None:
            hits = ranked
        elif len(ids) <= exact_limit:
            vectors = index.get_embeddings(bank_id, ids)
            if not vectors:
                return []
            order = sorted(vectors)  # a fixed order: equal similarities are ranked by id
            sims = np.stack([vectors[i] for i in order]) @ np.asarray(query_vector, dtype=np.float32)
            top = np.argsort(-sims, kind="stable")[:k]
            return [(order[j], float(sims[j])) for j in top]
        else:
            hits = index.query(bank_id, query_vector, k, VectorFilter.of(None, None, ids=ids))
    else:
        hits = index.query(bank_id, query_vector, k, VectorFilter.of(networks, window))
    if store is None or not hits:
        return hits
    # Only the index path can return a vector whose unit is gone (a forget not yet synced): drop those.
    present = store.units_exist(bank_id, [i for i, _ in hits])
    return [(i, v) for i, v in hits if i in present]


def graph(
    store: UnitStore,
    bank_id: str,
    seeds: Sequence[tuple[str, float]],
    settings: RecallSettings,
) -> list[tuple[str, float]]:
    """Spreading activation from seed units: ``A(v) = max over edges of A(u) * w * delta * mu(type)``.

    Seeds start with their (normalised) retrieval score. The seeds stay in the ranking: leaving them out would hand
    their neighbours an extra vote in the fusion and push the best direct hits below them.
    """
    if isinstance(store, SpreadingActivation):
        # A server store computes the same activation in its own query language (one round trip per hop,
        # one row per reached unit) instead of shipping every edge here.
        return store.spread_activation(bank_id, seeds, hops=settings.graph_hops, decay=settings.graph_decay,
                                       multipliers=settings.link_multipliers, entity_fanout=settings.entity_fanout,
                                       k=settings.graph_k)
    return spread_over_neighbors(store, bank_id, seeds, settings)


def spread_over_neighbors(
    store: UnitStore,
    bank_id: str,
    seeds: Sequence[tuple[str, float]],
    settings: RecallSettings,
) -> list[tuple[str, float]]:
    """The reference spreading activation, hop by hop over ``UnitStore.neighbors`` (any ``UnitStore``)."""
    activation: dict[str, float] = {sid: max(score, 0.0) for sid, score in seeds}
    frontier = dict(activation)
    mu = settings.link_multipliers
    for _ in range(settings.graph_hops):
        if not frontier:
            break
        edges = store.neighbors(bank_id, list(frontier), entity_fanout=settings.entity_fanout)
        nxt: dict[str, float] = {}
        for edge in edges:
            a = frontier.get(edge.source_id)
            if a is None:
                continue
            value = a * edge.weight * settings.graph_decay * mu.get(edge.type, 0.5)
            if value > activation.get(edge.target_id, 0.0):
                activation[edge.target_id] = value
                nxt[edge.target_id] = value
        # Only the strongest part of the frontier spreads further: bounds the work per hop.
        frontier = dict(sorted(nxt.items(), key=_by_value)[: settings.graph_k])
    ranked = sorted(activation.items(), key=_by_value)
    return ranked[: settings.graph_k]


def _by_value(kv: tuple[str, float]) -> tuple[float, str]:
    # Equal activations are common (same link weights): ordered by id, never by the order rows came back in.
    return -kv[1], kv[0]
