"""LongMemEval retrieval benchmark with the official metrics (Wu et al., ICLR 2025).

Input: the official JSON (a list of questions, each with ``question_id``, ``question_type``, ``question``,
``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (each a
list of turns ``{role, content, has_answer}``) and ``answer_session_ids``).

Protocol, as the official retrieval code (``src/retrieval/run_retrieval.py``) runs it at turn granularity:
one bank per question; only user turns are indexed, retained with ``extract=False`` (message id
``<session_id>:<turn number>``, the turn number counting every turn from 1 as the official turn ids do;
timestamp = the session date); the question is recalled with the question date as reference time.
Abstention questions (``question_id`` ending in ``_abs``) are skipped. The ranked memories become a ranked
list of turns; ``recall_any@k``, ``recall_all@k`` and ``ndcg_any@k`` are computed at turn level and, the
headline, at session level by ``evaluate_turn2session`` (see ``hindsight_bench.metrics``).

Official labelling, reproduced exactly: a turn is correct when it is a user turn marked ``has_answer`` in
an answer session; the other turns of an answer session count as a different ("noans") session. So a
question whose evidence lies only in assistant turns (most ``single-session-assistant`` questions) has no
correct turn: recall_any is 0 and recall_all vacuously 1 for it, in the official code as here.
Also reported: the share of answer sessions covered by the memories that fit in 1,000 and 2,000 tokens
(``recall(budget=B)``'s packing of the same ranking), which does not depend on ``has_answer``.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight_core.recall.packing import pack

from .backends import OpenHindsight, cache_query_embeddings, open_embedded, real_embeddings
from .metrics import coverage, evaluate_retrieval, evaluate_turn2session, latency_stats, mean_percent
from .report import line_plot, md_table, run_info, write_json, write_text

TINY_DATA = Path(__file__).resolve().parent / "data" / "longmemeval_tiny.json"
"""A hand-written 7-question sample in the official format (tests and smoke runs only)."""
KS = (1, 3, 5, 10, 30, 50)
TOKEN_BUDGETS = (1000, 2000)
BUDGET_CURVE = (250, 500, 1000, 2000, 4000, 8000)
LATENCY_BUDGET = 1000
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
         "knowledge-update", "temporal-reasoning")
_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?")


def parse_lme_date(text: str) -> datetime:
    """LongMemEval's ``"2023/05/20 (Sat) 02:21"`` as a UTC datetime (the weekday is ignored)."""
    m = _DATE.search(str(text))
    if not m:
        raise ValueError(f"not a LongMemEval date: {text!r}")
    year, month, day, hour, minute = m.groups()
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), tzinfo=UTC)


def turn_id(session_id: str, number: int) -> str:
    """Message id of a turn: ``<session_id>:<number>`` (1-based over all turns of the session)."""
    return f"{session_id}:{number}"


def session_of(tid: str) -> str:
    """The session id of a turn id."""
    return tid.rsplit(":", 1)[0]


def question_time(entry: Mapping[str, Any]) -> datetime:
    """The question's reference time: ``question_date``, else the latest haystack date."""
    if entry.get("question_date"):
        return parse_lme_date(entry["question_date"])
    return max(parse_lme_date(d) for d in entry["haystack_dates"])


def is_abstention(entry: Mapping[str, Any]) -> bool:
    """Abstention questions end in ``_abs``; the official retrieval metrics skip them."""
    return str(entry.get("question_id", "")).endswith("_abs")


class Corpus:
    """The indexed turns of one question and the official correctness labels."""

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self.answer_sessions: set[str] = {str(s) for s in entry.get("answer_session_ids", [])}
        self.turns: list[str] = []
        self.correct: set[str] = set()
        self.messages: list[tuple[str, datetime, list[dict[str, Any]]]] = []
        for sid, date, session in zip(entry["haystack_session_ids"], entry["haystack_dates"],
                                      entry["haystack_sessions"], strict=True):
            sid = str(sid)
            msgs = []
            for number, turn in enumerate(session, start=1):
                if turn.get("role") != "user":
                    continue
                tid = turn_id(sid, number)
                self.turns.append(tid)
                if turn.get("has_answer") and sid in self.answer_sessions:
                    self.correct.add(tid)
                msgs.append({"role": "user", "content": str(turn.get("content", "")), "id": tid})
            self.messages.append((sid, parse_lme_date(date), msgs))

    def session_key(self, tid: str) -> str:
        """Session-level id as the official code derives it: an answer session's turns without
        ``has_answer`` belong to a distinct "noans" session."""
        sid = session_of(tid)
        if sid in self.answer_sessions and tid not in self.correct:
            return f"{sid}#noans"
        return sid

    def ranked_turns(self, sources: Iterable[Iterable[str]]) -> list[str]:
        """Memories' sources (in rank order) as a ranked list of distinct indexed turns."""
        known = set(self.turns)
        seen: set[str] = set()
        out = []
        for srcs in sources:
            for s in srcs:
                if s in known and s not in seen:
                    seen.add(s)
                    out.append(s)
        return out


def question_metrics(corpus: Corpus, ranked: Sequence[str]) -> dict[str, float]:
    """Official metrics of one question at session and turn level, for every k in ``KS``."""
    out: dict[str, float] = {}
    for k in KS:
        s_any, s_all, s_ndcg = evaluate_turn2session(ranked, corpus.correct, corpus.turns, k, corpus.session_key)
        t_any, t_all, t_ndcg = evaluate_retrieval(ranked, corpus.correct, corpus.turns, k)
        out.update({f"session/recall_any@{k}": s_any, f"session/recall_all@{k}": s_all,
                    f"session/ndcg_any@{k}": s_ndcg, f"turn/recall_any@{k}": t_any,
                    f"turn/recall_all@{k}": t_all, f"turn/ndcg_any@{k}": t_ndcg})
    return out


def budget_coverage(
    corpus: Corpus, mems: Sequence[Any], count_tokens: Callable[[str], int], budgets: Iterable[int]
) -> dict[int, float]:
    """Share of answer sessions with at least one turn among the memories that fit in each budget."""
    out = {}
    for budget in budgets:
        chosen, _ = pack(((m, m.text) for m in mems), budget, count_tokens)
        out[budget] = coverage(corpus.answer_sessions, ([session_of(s) for s in m.sources] for m, _ in chosen))
    return out


def run_longmemeval(
    data_path: str | Path,
    *,
    open_hindsight: OpenHindsight = open_embedded,
    backend: str = "embedded",
    workdir: str | Path | None = None,
    limit_questions: int | None = None,
    keep_banks: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the retrieval benchmark on one backend; returns a JSON-able result (also logged as tables).

    Each question's bank is deleted after scoring unless ``keep_banks`` (LongMemEval_S holds ~500 banks of
    ~250 turns each).
    """
    from tqdm import tqdm

    data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    if limit_questions:
        data = data[:limit_questions]
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies: list[float] = []
    per_question: list[dict[str, Any]] = []
    skipped = 0
    n_units = 0
    retain_s = 0.0
    started = time.perf_counter()
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-longmemeval-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    try:
        with open_hindsight(root) as hs:
            count = hs.count_tokens
            cache = cache_query_embeddings(hs)  # the timed recall embeds the question; the scored one reuses it
            for entry in tqdm(data, desc=f"longmemeval [{backend}]", unit="q", disable=not progress):
                if is_abstention(entry):
                    skipped += 1
                    continue
                corpus = Corpus(entry)
                bank_id = f"longmemeval-{entry['question_id']}"
                if bank_id in {b.id for b in hs.banks()}:
                    hs.delete_bank(bank_id)
                bank = hs.bank(bank_id)
                t = time.perf_counter()
                for sid, when, msgs in corpus.messages:
                    if msgs:
                        res = bank.retain(msgs, timestamp=when, document_id=sid, extract=False, background=False)
                        n_units += len(res.memories)
                retain_s += time.perf_counter() - t
                reference = question_time(entry)
                question = str(entry["question"])
                with real_embeddings(cache):
                    t = time.perf_counter()
                    bank.recall(question, budget=LATENCY_BUDGET, reference_time=reference)
                    latencies.append((time.perf_counter() - t) * 1000)
                mems = bank.recall(question, budget=10**9, reference_time=reference).memories
                ranked = corpus.ranked_turns(m.sources for m in mems)
                metrics = question_metrics(corpus, ranked)
                for budget, value in budget_coverage(corpus, mems, count,
                                                     sorted(set(TOKEN_BUDGETS) | set(BUDGET_CURVE))).items():
                    metrics[f"coverage@{budget}tok"] = value
                qtype = str(entry.get("question_type", "other"))
                for name, value in metrics.items():
                    scores[name][qtype].append(value)
                    scores[name]["all"].append(value)
                first = next((i for i, tid in enumerate(ranked, start=1) if tid in corpus.correct), None)
                per_question.append({
                    "question_id": entry["question_id"], "question_type": qtype, "turns": len(corpus.turns),
                    "correct_turns": sorted(corpus.correct), "first_correct_turn_rank": first,
                    **{k: metrics[k] for k in ("session/recall_any@5", "session/recall_all@5",
                                               "session/ndcg_any@5", "coverage@1000tok")},
                })
                if not keep_banks:
                    hs.delete_bank(bank_id)
    finally:
        if tmp is not None:
            tmp.cleanup()
    counts = {t: len(v) for t, v in next(iter(scores.values()), {}).items()}
    result: dict[str, Any] = {
        "benchmark": "longmemeval",
        "backend": backend,
        "dataset": str(data_path),
        "questions": len(per_question),
        "skipped_abstention": skipped,
        "units": n_units,
        "retain_units_per_s": n_units / retain_s if retain_s else None,
        "seconds": time.perf_counter() - started,
        "questions_per_type": counts,
        "metrics": {name: {t: mean_percent(v) for t, v in by_type.items()} for name, by_type in scores.items()},
        "latency_ms": latency_stats(latencies),
        "latency_budget": LATENCY_BUDGET,
        "run": run_info(),
        "per_question": per_question,
    }
    log(format_longmemeval(result))
    return result


def _types(result: Mapping[str, Any]) -> list[str]:
    present = result["questions_per_type"]
    return [t for t in (*TYPES, *sorted(set(present) - set(TYPES) - {"all"}), "all") if t in present]


def format_longmemeval(result: Mapping[str, Any]) -> str:
    """Markdown: session-level recall_any / recall_all / ndcg_any @k per question type, turn level overall,
    and evidence coverage within token budgets."""
    m = result["metrics"]
    types = _types(result)
    n = result["questions_per_type"]
    lines = [f"LongMemEval retrieval ({result.get('backend', 'embedded')} backend): {result['questions']} questions "
             f"({result['skipped_abstention']} abstention skipped), {result['units']} user turns indexed, "
             f"recall median {result['latency_ms'].get('median', 0):.1f} ms / p95 "
             f"{result['latency_ms'].get('p95', 0):.1f} ms ({LATENCY_BUDGET}-token budget)"]
    if not types:
        return lines[0]
    for metric in ("recall_any", "recall_all", "ndcg_any"):
        lines += ["", f"Session level, {metric}@k (%):", ""]
        lines += md_table(["question type", "n", *(f"@{k}" for k in KS)],
                          [[t, n[t], *(m[f"session/{metric}@{k}"][t] for k in KS)] for t in types])
    lines += ["", "Turn level, all questions (%):", ""]
    lines += md_table(["metric", *(f"@{k}" for k in KS)],
                      [[metric, *(m[f"turn/{metric}@{k}"]["all"] for k in KS)]
                       for metric in ("recall_any", "recall_all", "ndcg_any")])
    lines += ["", "Answer sessions covered by the memories within a token budget (%):", ""]
    lines += md_table(["question type", "n", *(f"{b} tok" for b in TOKEN_BUDGETS)],
                      [[t, n[t], *(m[f"coverage@{b}tok"][t] for b in TOKEN_BUDGETS)] for t in types])
    return "\n".join(lines)


def write_longmemeval(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``longmemeval.json``, ``longmemeval.md`` and two plots; a ``{backend: result}`` mapping
    writes each backend under ``<out>/<backend>/``."""
    out = Path(out_dir)
    if "benchmark" not in result:
        return [p for name, run in result.items() for p in write_longmemeval(out / name, run)]
    paths = [write_json(out / "longmemeval.json", result),
             write_text(out / "longmemeval.md", "# LongMemEval retrieval\n\n" + format_longmemeval(result)
                        + "\n\nPlots: longmemeval_recall_at_k.png, longmemeval_budget_coverage.png\n")]
    types = _types(result)
    if not types:
        return paths
    m = result["metrics"]
    paths.append(line_plot(out / "longmemeval_recall_at_k.png",
                           {t: (list(KS), [m[f"session/recall_any@{k}"][t] for k in KS]) for t in types},
                           title="LongMemEval session recall_any@k by question type", xlabel="k",
                           ylabel="recall_any (%)", logx=True))
    paths.append(line_plot(out / "longmemeval_budget_coverage.png",
                           {t: (list(BUDGET_CURVE), [m[f"coverage@{b}tok"][t] for b in BUDGET_CURVE]) for t in types},
                           title="LongMemEval answer sessions covered vs token budget",
                           xlabel="recall budget (tokens)", ylabel="answer sessions covered (%)", logx=True))
    return paths
