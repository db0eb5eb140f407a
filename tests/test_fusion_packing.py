"""Unit and property-based tests of reciprocal rank fusion and token-budget packing."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hindsight_core.recall.fusion import reciprocal_rank_fusion
from hindsight_core.recall.packing import MAX_SKIPS, pack
from hindsight_core.text.tokens import count_tokens


def test_rrf_matches_the_formula() -> None:
    fused, hits = reciprocal_rank_fusion({"a": [("x", 0.9), ("y", 0.5)], "b": [("y", 3.0), ("z", 1.0)]}, k=60)
    scores = dict(fused)
    assert scores["y"] == 1 / 62 + 1 / 61
    assert scores["x"] == 1 / 61
    assert scores["z"] == 1 / 62
    assert [i for i, _ in fused] == ["y", "x", "z"]
    assert hits["y"]["a"].rank == 2 and hits["y"]["b"].rank == 1 and hits["y"]["b"].score == 3.0


def test_rrf_channel_weights() -> None:
    fused, _ = reciprocal_rank_fusion({"a": [("x", 1.0)], "b": [("y", 1.0)]}, k=60, weights={"a": 0.5})
    assert [i for i, _ in fused] == ["y", "x"]


@given(st.lists(st.lists(st.sampled_from("abcdefghij"), unique=True), min_size=1, max_size=4))
def test_rrf_properties(lists: list[list[str]]) -> None:
    channels = {f"c{i}": [(x, 1.0) for x in items] for i, items in enumerate(lists)}
    fused, hits = reciprocal_rank_fusion(channels, k=60)
    ids = [i for i, _ in fused]
    assert sorted(ids) == sorted({x for items in lists for x in items})
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    for item, score in fused:
        assert abs(score - sum(1 / (60 + h.rank) for h in hits[item].values())) < 1e-12


texts = st.lists(st.text(min_size=0, max_size=80), max_size=30)


@given(texts, st.integers(min_value=0, max_value=400))
def test_pack_never_exceeds_budget_and_counts_exactly(items: list[str], budget: int) -> None:
    chosen, used = pack(((i, t) for i, t in enumerate(items)), budget, count_tokens)
    assert used <= budget
    assert used == sum(count_tokens(items[i]) for i, _ in chosen)
    assert [tokens for _, tokens in chosen] == [count_tokens(items[i]) for i, _ in chosen]
    idx = [i for i, _ in chosen]
    assert idx == sorted(idx)  # rank order is kept


@given(texts, st.integers(min_value=0, max_value=400))
def test_pack_is_greedy(items: list[str], budget: int) -> None:
    chosen, _ = pack(((i, t) for i, t in enumerate(items)), budget, count_tokens)
    picked = {i for i, _ in chosen}
    # Every skipped item was too large for what was left when its turn came, until packing stopped
    # (budget exhausted or MAX_SKIPS consecutive misfits).
    running, skips = 0, 0
    for i, text in enumerate(items):
        if budget - running <= 0 or skips >= MAX_SKIPS:
            assert all(j < i for j in picked)
            break
        if i in picked:
            running += count_tokens(text)
            skips = 0
        else:
            assert running + count_tokens(text) > budget
            skips += 1


def test_pack_respects_max_items() -> None:
    chosen, _ = pack(((i, "word") for i in range(10)), 1000, count_tokens, max_items=3)
    assert [i for i, _ in chosen] == [0, 1, 2]


def test_pack_stops_after_consecutive_misfits() -> None:
    items = [(0, "one two three")] + [(i, "word " * 50) for i in range(1, 40)] + [(99, "tiny")]
    chosen, _ = pack(iter(items), 10, count_tokens, max_skips=5)
    assert [i for i, _ in chosen] == [0]
    chosen, _ = pack(iter(items), 10, count_tokens, max_skips=100)
    assert [i for i, _ in chosen] == [0, 99]


def test_semantic_weight_follows_the_embedder() -> None:
    from hindsight_core.config import DEFAULT_SEMANTIC_WEIGHT, SEMANTIC_WEIGHTS, RecallSettings

    s = RecallSettings()
    assert s.weights_for("all-MiniLM-L6-v2")["semantic"] == SEMANTIC_WEIGHTS["all-MiniLM-L6-v2"] == 0.3
    assert s.weights_for("all-mpnet-base-v2")["semantic"] == SEMANTIC_WEIGHTS["all-mpnet-base-v2"] > 0.3
    assert s.weights_for("my-own-embedder")["semantic"] == DEFAULT_SEMANTIC_WEIGHT
    assert s.weights_for("all-mpnet-base-v2")["keyword"] == 1.0
    # A weight the user sets wins over the embedder's.
    mine = RecallSettings(channel_weights={"semantic": 0.7, "keyword": 0.9})
    assert mine.weights_for("all-mpnet-base-v2") == {"semantic": 0.7, "keyword": 0.9}


def test_recall_pipeline_fuses_with_its_embedders_weight(tmp_path: Path) -> None:
    from hindsight_core import Hindsight

    with Hindsight.open(tmp_path, start_worker=False) as hs:
        assert hs.engine.recaller.weights["semantic"] == 0.3
        assert hs.engine.recaller.weights["graph"] == 0.8
