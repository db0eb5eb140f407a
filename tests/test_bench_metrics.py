"""The benchmark metric functions against hand-computed values (no stores, no models)."""

from __future__ import annotations

import math
from datetime import timedelta
from types import SimpleNamespace

import pytest

from hindsight_bench.longmemeval import Corpus, parse_lme_date, question_metrics
from hindsight_bench.metrics import (
    coverage,
    dcg,
    evaluate_retrieval,
    evaluate_turn2session,
    latency_stats,
    ndcg,
)


def test_coverage_is_the_share_of_evidence_found() -> None:
    assert coverage({"D1:1", "D1:2"}, [["D1:1"], ["D9:9"]]) == 0.5
    assert coverage({"D1:1", "D1:2"}, [["D1:2", "D1:1"]]) == 1.0
    assert coverage({"D1:1"}, []) == 0.0
    assert coverage(set(), [["D1:1"]]) == 0.0  # nothing to find scores 0, never a division by zero


def test_dcg_discounts_from_the_second_position() -> None:
    assert dcg([1, 1, 1], 3) == pytest.approx(1 + 1 / math.log2(2) + 1 / math.log2(3))
    assert dcg([0, 1], 2) == pytest.approx(1.0)  # position 2 is divided by log2(2) = 1
    assert dcg([0, 0, 1], 3) == pytest.approx(1 / math.log2(3))
    assert dcg([1, 1, 1], 1) == 1.0
    assert dcg([], 5) == 0.0


def test_ndcg_uses_the_whole_corpus_for_the_ideal() -> None:
    corpus = ["a", "b", "c", "d"]
    # One correct doc ranked second: dcg = 1/log2(2) = 1; ideal = 1.
    assert ndcg(["b", "a"], {"a"}, corpus, 10) == pytest.approx(1.0)
    # ranked third: 1/log2(3).
    assert ndcg(["b", "c", "a"], {"a"}, corpus, 10) == pytest.approx(1 / math.log2(3))
    # Two correct docs, only one retrieved first: dcg 1, ideal 1 + 1 = 2.
    assert ndcg(["a", "b"], {"a", "c"}, corpus, 2) == pytest.approx(0.5)
    # Cut-off: the correct doc at rank 3 does not count at k = 2.
    assert ndcg(["b", "c", "a"], {"a"}, corpus, 2) == 0.0
    assert ndcg(["a"], set(), corpus, 5) == 0.0


def test_recall_any_and_all_at_k() -> None:
    corpus = ["s1", "s2", "s3", "s4", "s5"]
    ranked = ["s3", "s1", "s5", "s2"]
    assert evaluate_retrieval(ranked, {"s1", "s2"}, corpus, 1)[:2] == (0.0, 0.0)
    assert evaluate_retrieval(ranked, {"s1", "s2"}, corpus, 2)[:2] == (1.0, 0.0)
    any4, all4, ndcg4 = evaluate_retrieval(ranked, {"s1", "s2"}, corpus, 4)
    assert (any4, all4) == (1.0, 1.0)
    # ranks 2 and 4 relevant: (1/log2(2) + 1/log2(4)) / (1 + 1/log2(2)) = 1.5 / 2
    assert ndcg4 == pytest.approx(0.75)
    # No correct document: any is 0, all is vacuously 1 (as in LongMemEval's code).
    assert evaluate_retrieval(ranked, set(), corpus, 3)[:2] == (0.0, 1.0)


def test_turn2session_widens_k_until_k_distinct_sessions() -> None:
    corpus = ["A:1", "A:2", "B:1", "B:2", "C:1"]

    def session(t: str) -> str:
        return t.split(":")[0]

    ranked = ["A:1", "A:2", "B:1", "C:1"]
    # k = 2 sessions: the first two turns are both A, so effective k grows to 3 (A, A, B).
    any2, all2, _ = evaluate_turn2session(ranked, {"B:1"}, corpus, 2, session)
    assert (any2, all2) == (1.0, 1.0)
    # Without widening B would be missed at turn level k = 2.
    assert evaluate_retrieval(ranked, {"B:1"}, corpus, 2)[0] == 0.0
    # k = 1: only A.
    assert evaluate_turn2session(ranked, {"B:1"}, corpus, 1, session)[0] == 0.0
    # Session-level ndcg counts each relevant turn (official behaviour): correct session A, turns A:1, A:2
    # ranked 1 and 2 -> dcg 2, ideal 2.
    assert evaluate_turn2session(ranked, {"A:1", "A:2"}, corpus, 1, session)[2] == pytest.approx(1.0)


def test_latency_stats_median_and_nearest_rank_p95() -> None:
    stats = latency_stats([float(x) for x in range(1, 101)])
    assert stats["median"] == 50.5 and stats["p95"] == 95.0 and stats["n"] == 100
    assert latency_stats([]) == {}
    # Few values: p95 is the largest, never below the median.
    assert latency_stats([1.0, 9.0])["p95"] == 9.0 and latency_stats([3.0])["p95"] == 3.0
    assert latency_stats([float(x) for x in range(1, 11)])["p95"] == 10.0


def test_parse_longmemeval_dates() -> None:
    d = parse_lme_date("2023/05/20 (Sat) 02:21")
    assert (d.year, d.month, d.day, d.hour, d.minute) == (2023, 5, 20, 2, 21)
    assert d.tzinfo is not None and d.utcoffset() == timedelta(0)
    assert parse_lme_date("2023/1/5").hour == 0
    with pytest.raises(ValueError):
        parse_lme_date("yesterday")


def lme_entry() -> dict[str, object]:
    """One question: the answer is in user turn 1 of answer_x; answer_x turn 3 has no answer."""
    return {
        "question_id": "q1", "question_type": "single-session-user", "question": "?", "answer": "!",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s_a", "answer_x", "s_b"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00", "2023/05/03 (Wed) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "a1", "has_answer": False}, {"role": "assistant", "content": "r"}],
            [{"role": "user", "content": "x1", "has_answer": True}, {"role": "assistant", "content": "r"},
             {"role": "user", "content": "x3", "has_answer": False}],
            [{"role": "user", "content": "b1", "has_answer": False}],
        ],
        "answer_session_ids": ["answer_x"],
    }


def test_corpus_indexes_user_turns_with_official_labels() -> None:
    corpus = Corpus(lme_entry())
    assert corpus.turns == ["s_a:1", "answer_x:1", "answer_x:3", "s_b:1"]
    assert corpus.correct == {"answer_x:1"}
    assert corpus.session_key("answer_x:1") == "answer_x"
    assert corpus.session_key("answer_x:3") == "answer_x#noans"  # the official "noans" relabelling
    assert corpus.session_key("s_a:1") == "s_a"
    assert [m["id"] for m in corpus.messages[1][2]] == ["answer_x:1", "answer_x:3"]
    assert corpus.messages[1][1] == parse_lme_date("2023/05/02 (Tue) 10:00")
    # Sources in rank order become distinct known turns; unknown ids are ignored.
    assert corpus.ranked_turns([["s_b:1"], ["answer_x:3", "s_b:1"], ["nope:1"], ["answer_x:1"]]) == [
        "s_b:1", "answer_x:3", "answer_x:1"]


def test_question_metrics_by_hand() -> None:
    corpus = Corpus(lme_entry())
    # The no-answer turn of the answer session ranks first: it is a different ("noans") session.
    m = question_metrics(corpus, ["answer_x:3", "answer_x:1", "s_a:1", "s_b:1"])
    assert m["session/recall_any@1"] == 0.0
    assert m["session/recall_any@3"] == 1.0 and m["session/recall_all@3"] == 1.0
    assert m["turn/recall_any@1"] == 0.0 and m["turn/recall_any@3"] == 1.0
    # Relevant at rank 2 out of one relevant turn: 1/log2(2) / 1 = 1.0 at k >= 2.
    assert m["session/ndcg_any@3"] == pytest.approx(1.0)
    assert m["turn/ndcg_any@1"] == 0.0
    top = question_metrics(corpus, ["answer_x:1"])
    assert top["session/recall_any@1"] == 1.0 and top["session/ndcg_any@50"] == 1.0


def test_locomo_question_metrics_pack_like_recall() -> None:
    from hindsight_bench.locomo import question_metrics as locomo_metrics

    mems = [SimpleNamespace(sources=["D1:1"], text="x " * 300), SimpleNamespace(sources=["D1:2"], text="short"),
            SimpleNamespace(sources=["D1:3"], text="tiny")]

    def count(text: str) -> int:
        return len(text.split())

    m = locomo_metrics(mems, {"D1:2", "D1:3"}, count)
    assert m["R@5"] == 1.0 and m["k=1"] == 0.0 and m["k=2"] == 0.5
    # 250 tokens: the first memory (300 tokens) does not fit and is skipped; the other two fit.
    assert m["tok=250"] == 1.0
    assert m["R@500tok"] == 1.0


def test_backend_registry() -> None:
    from hindsight_bench.backends import BACKENDS, open_embedded, register_backend, resolve_backends

    assert resolve_backends(None) == {"embedded": open_embedded}
    assert list(resolve_backends("both")) == list(BACKENDS)
    with pytest.raises(KeyError):
        resolve_backends("nope")
    with pytest.raises(ValueError):
        register_backend("both", open_embedded)


def test_question_time_falls_back_to_the_latest_session() -> None:
    from hindsight_bench.longmemeval import question_time

    assert question_time(lme_entry()) == parse_lme_date("2023/06/01 (Thu) 10:00")
    entry = {**lme_entry(), "question_date": None}
    assert question_time(entry) == parse_lme_date("2023/05/03 (Wed) 10:00")
