"""Retrieval metrics shared by the benchmarks, each small enough to check by hand.

``coverage`` is LoCoMo's evidence recall (paper Table 3). ``dcg``, ``ndcg``, ``evaluate_retrieval`` and
``evaluate_turn2session`` follow LongMemEval's official ``src/retrieval/eval_utils.py`` line by line, with
one change of representation: a ranking is given as the list of ranked corpus ids (in rank order) instead of
indices into the corpus, so that a retriever returning only part of the corpus can be scored. Ids that were
not retrieved simply do not appear in the ranking (they count as misses).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Sequence


def coverage(evidence: Collection[str], sources: Iterable[Iterable[str]]) -> float:
    """Share of ``evidence`` ids found among the sources of the returned memories (0 when none is expected)."""
    if not evidence:
        return 0.0
    found = {s for srcs in sources for s in srcs}
    return len(set(evidence) & found) / len(set(evidence))


def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` relevances: ``r1 + sum_{i>=2} r_i / log2(i)``.

    As in LongMemEval's ``eval_utils.dcg`` (the first item is not discounted).
    """
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg(ranked_ids: Sequence[str], correct: Collection[str], corpus_ids: Sequence[str], k: int) -> float:
    """Normalised DCG at ``k`` with binary relevance (1 when an id is in ``correct``).

    The ideal ranking is built from the relevances of the whole corpus, as in the official code; every
    corpus entry counts, so a corpus holding the same correct id twice has an ideal DCG of two hits.
    """
    wanted = set(correct)
    ideal = sorted((1.0 if c in wanted else 0.0 for c in corpus_ids), reverse=True)
    ideal_dcg = dcg(ideal, k)
    if ideal_dcg == 0:
        return 0.0
    actual = [1.0 if r in wanted else 0.0 for r in ranked_ids[:k]]
    return dcg(actual, k) / ideal_dcg


def evaluate_retrieval(
    ranked_ids: Sequence[str], correct: Collection[str], corpus_ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    """``(recall_any@k, recall_all@k, ndcg_any@k)`` as in LongMemEval's ``evaluate_retrieval``.

    recall_any: 1 if any correct id is among the first ``k`` ranked ids; recall_all: 1 if all of them are
    (vacuously 1 when ``correct`` is empty, as ``all([])`` is in the official code).
    """
    recalled = set(ranked_ids[:k])
    recall_any = float(any(c in recalled for c in correct))
    recall_all = float(all(c in recalled for c in correct))
    return recall_any, recall_all, ndcg(ranked_ids, correct, corpus_ids, k)


def evaluate_turn2session(
    ranked_turns: Sequence[str],
    correct_turns: Collection[str],
    corpus_turns: Sequence[str],
    k: int,
    session_of: Callable[[str], str],
) -> tuple[float, float, float]:
    """Session-level metrics of a turn-level ranking, as LongMemEval's ``evaluate_retrieval_turn2session``.

    Turn ids are mapped to session ids with ``session_of``; ``k`` is then widened until the first
    ``effective_k`` ranked turns hold ``k`` distinct sessions (or the corpus is exhausted), and
    ``evaluate_retrieval`` runs on the mapped lists with that ``effective_k``.
    """
    correct = {session_of(t) for t in correct_turns}
    corpus = [session_of(t) for t in corpus_turns]
    ranked = [session_of(t) for t in ranked_turns]
    effective_k = k
    unique = set(ranked[:effective_k])
    while effective_k <= len(corpus) and len(unique) < k:
        effective_k += 1
        unique = set(ranked[:effective_k])
    return evaluate_retrieval(ranked, correct, corpus, effective_k)


def latency_stats(values_ms: Sequence[float]) -> dict[str, float]:
    """Median, p95 (nearest-rank: the smallest value with at least 95% of the values at or below it), mean
    and count of latencies in milliseconds; empty dict for none."""
    if not values_ms:
        return {}
    ordered = sorted(values_ms)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)],
        "mean": statistics.fmean(ordered),
        "n": len(ordered),
    }


def mean_percent(values: Sequence[float]) -> float:
    """Mean of 0..1 scores in percent (0 for an empty list)."""
    return 100.0 * statistics.fmean(values) if values else 0.0
