"""LoCoMo retrieval benchmark: evidence recall at top-k and within token budgets, with channel ablations.

Each conversation is retained into its own bank with ``extract=False`` (message id = dia_id, timestamp =
session date); every question is recalled with the conversation's last session as reference time. The
metric (LoCoMo paper, Table 3) is, per question, the share of its evidence dia_ids covered by the sources
of what recall returned, averaged. Every configuration (the full pipeline, each channel removed in turn,
single channels) is measured in the same process on the same banks.

The Hindsight instance comes from a factory (``open_hindsight``, see ``hindsight_bench.backends``) so the same run
can be made on any storage backend; ``run_locomo_backends`` runs several and compares them.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_core.cli.formats import evidence_ids, locomo_sessions
from hindsight_core.recall.packing import pack

from .backends import OpenHindsight, cache_query_embeddings, open_embedded, real_embeddings
from .metrics import coverage, latency_stats, mean_percent
from .report import bar_plot, line_plot, md_table, run_info, write_json, write_text

# The honest protocol: defaults are chosen on the dev half only; the test half is the headline.
SPLITS: dict[str, tuple[str, ...]] = {
    "dev": ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43"),
    "test": ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50"),
}
"""LoCoMo split by conversation: the first five are the dev half, the last five the test half."""


def split_samples(data: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """The conversations of ``split`` in a data file of LoCoMo's format. LoCoMo's own file splits by conversation
    (``SPLITS``); any other file (``realtalk_dev.json``: real chats kept for development) is dev data as a whole,
    so ``dev`` is all of it and ``test`` an error. ``all`` is the whole file."""
    if split == "all":
        return data
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use dev, test or all")
    locomo = {i for ids in SPLITS.values() for i in ids}
    if any(s.get("sample_id") in locomo for s in data):
        return [s for s in data if s["sample_id"] in SPLITS[split]]
    if split == "test":
        raise ValueError("this data file is dev data only (its conversations are not LoCoMo's): use --split dev")
    return data


def split_of(sample_id: str) -> str:
    """``dev`` or ``test`` for a LoCoMo conversation id (``other`` for one outside both halves)."""
    return next((name for name, ids in SPLITS.items() if sample_id in ids), "other")


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TOP_K = (5, 10, 25, 50)
BUDGETS = (500, 1000, 2000)
# Finer grids for the plots (cheap: computed from the same ranked list).
TOPK_CURVE = (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50)
BUDGET_CURVE = (100, 250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000)
LATENCY_BUDGET = 1000
ALL_CHANNELS = ("semantic", "keyword", "graph", "temporal")
CONFIGS: dict[str, tuple[str, ...] | None] = {
    "full": None,
    **{f"no-{c}": tuple(x for x in ALL_CHANNELS if x != c) for c in ALL_CHANNELS},
    "semantic-only": ("semantic",),
    "keyword-only": ("keyword",),
}
"""Configurations measured: name -> recall ``channels`` (None = all four)."""
# Published turn-level reference (DRAGON retriever, LoCoMo paper Table 3).
DRAGON = {"R@5": 56.7, "R@10": 66.2, "R@25": 76.7, "R@50": 82.7}


@dataclass
class ConfigResult:
    """Scores of one configuration: metric -> category -> per-question recalls (0..1), and latencies."""

    scores: dict[str, dict[str, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, category: str, metric: str, value: float, split: str | None = None) -> None:
        """Record one question's score under its category, overall, and (given) under ``split:<name>`` and
        ``<split>/<category>``."""
        self.scores[metric][category].append(value)
        self.scores[metric]["all"].append(value)
        if split is not None:
            self.scores[metric][f"split:{split}"].append(value)
            self.scores[metric][f"{split}/{category}"].append(value)

    def table(self) -> dict[str, dict[str, float]]:
        """metric -> category -> mean recall in percent."""
        return {m: {c: mean_percent(v) for c, v in cats.items()} for m, cats in self.scores.items()}

    def counts(self) -> dict[str, int]:
        """Questions per category."""
        first = next(iter(self.scores.values()), {})
        return {c: len(v) for c, v in first.items()}


def question_metrics(
    mems: Sequence[Any], evidence: set[str], count_tokens: Callable[[str], int]
) -> dict[str, float]:
    """Every metric of one question from one ranked list of memories (each with ``.sources``, ``.text``).

    ``R@k`` covers the first k memories; ``R@Btok`` the memories that ``recall(budget=B)`` would return
    (the same greedy packing over the same ranking); ``k=..``/``tok=..`` keys feed the plots.
    """
    out: dict[str, float] = {}
    for k in sorted(set(TOP_K) | set(TOPK_CURVE)):
        value = coverage(evidence, (m.sources for m in mems[:k]))
        if k in TOP_K:
            out[f"R@{k}"] = value
        if k in TOPK_CURVE:
            out[f"k={k}"] = value
    for budget in sorted(set(BUDGETS) | set(BUDGET_CURVE)):
        chosen, _ = pack(((m, m.text) for m in mems), budget, count_tokens)
        value = coverage(evidence, (m.sources for m, _ in chosen))
        if budget in BUDGETS:
            out[f"R@{budget}tok"] = value
        if budget in BUDGET_CURVE:
            out[f"tok={budget}"] = value
    return out


def first_evidence_rank(mems: Sequence[Any], evidence: set[str]) -> int | None:
    """1-based rank of the first memory citing an evidence id (None when none does)."""
    for rank, m in enumerate(mems, start=1):
        if evidence & set(m.sources):
            return rank
    return None


def run_locomo(
    data_path: str | Path,
    *,
    open_hindsight: OpenHindsight = open_embedded,
    backend: str = "embedded",
    workdir: str | Path | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    split: str = "all",
    reuse: bool = False,
    configs: dict[str, tuple[str, ...] | None] | None = None,
    latency_every: int = 10,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the benchmark on one backend and return a JSON-able result (also logged as tables).

    Latency is timed on a recall as a user makes it (``budget=1000``, query embedding included): for every
    question in the ``full`` configuration, for every ``latency_every``-th question in the others (they
    mostly show the cost of a channel). The metrics come from one recall per question and configuration
    with an unbounded budget: it returns every fused candidate in order, and packing that list reproduces
    exactly what ``recall(budget=B)`` returns for each budget B. Two shortcuts keep the run short without
    changing a score: a question is embedded once and the vector reused by every configuration
    (``QueryEmbeddingCache``), and a configuration that only removes channels which found nothing in the
    full recall (typically ``no-temporal`` for a question without a time expression) has, by construction,
    the full ranking, so its scores are copied instead of recomputed. With ``reuse`` (and a ``workdir`` kept
    from an earlier run with the same embedder), a conversation whose every session is already stored is not
    retained again; its retain time is then not measured.
    """
    from tqdm import tqdm

    data = split_samples(json.loads(Path(data_path).read_text(encoding="utf-8")), split)
    if limit_conversations:
        data = data[:limit_conversations]
    configs = configs or CONFIGS
    results = {name: ConfigResult() for name in configs}
    per_question: list[dict[str, Any]] = []
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-locomo-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    retain_s = 0.0
    n_units = 0
    n_questions = 0
    reused = 0
    started = time.perf_counter()
    try:
        with open_hindsight(root) as hs:
            count = hs.count_tokens
            embedder_name = hs.embedder.name
            cache = cache_query_embeddings(hs)  # one real embedding per question, reused by every configuration
            total_q = sum(len(s["qa"][:limit_questions] if limit_questions else s["qa"]) for s in data)
            bar = tqdm(total=total_q, desc=f"locomo [{backend}]", unit="q", disable=not progress)
            for sample in data:
                bank_id = f"locomo-{sample['sample_id']}"
                part = split_of(sample["sample_id"])
                sessions = locomo_sessions(sample)
                exists = bank_id in {b.id for b in hs.banks()}
                if exists and reuse and _fully_retained(hs.bank(bank_id, create=False), sessions):
                    bank = hs.bank(bank_id, create=False)
                    n_units += int(bank.stats().get("units", 0))
                    reused += 1
                else:
                    if exists:
                        hs.delete_bank(bank_id)
                    bank = hs.bank(bank_id)
                    t = time.perf_counter()
                    for s in sessions:
                        res = bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id,
                                          extract=False, background=False)
                        n_units += len(res.memories)
                    retain_s += time.perf_counter() - t
                reference = max(s.timestamp for s in sessions if s.timestamp is not None)
                questions = sample["qa"][:limit_questions] if limit_questions else sample["qa"]
                for qa in questions:
                    bar.update(1)
                    evidence = evidence_ids(qa.get("evidence", []))
                    if not evidence:
                        continue
                    n_questions += 1
                    category = CATEGORIES.get(int(qa.get("category", 0)), "other")
                    query = str(qa["question"])
                    empty_in_full: set[str] | None = None  # channels that found nothing in the full recall
                    full_metrics: dict[str, float] | None = None
                    for name, channels in configs.items():
                        enabled = set(channels or ALL_CHANNELS)
                        if (full_metrics is not None and empty_in_full is not None
                                and set(ALL_CHANNELS) - enabled <= empty_in_full):
                            # Removing only channels that returned nothing leaves fusion unchanged: same ranking.
                            for metric, value in full_metrics.items():
                                results[name].add(category, metric, value, part)
                            continue
                        if name == "full" or n_questions % max(1, latency_every) == 1 or latency_every <= 1:
                            with real_embeddings(cache):  # timed as a user's recall: embedding included
                                t = time.perf_counter()
                                bank.recall(query, budget=LATENCY_BUDGET, reference_time=reference,
                                            channels=channels)
                                results[name].latencies_ms.append((time.perf_counter() - t) * 1000)
                        rec = bank.recall(query, budget=10**9, reference_time=reference, channels=channels,
                                          trace=channels is None)
                        mems = rec.memories
                        metrics = question_metrics(mems, evidence, count)
                        for metric, value in metrics.items():
                            results[name].add(category, metric, value, part)
                        if channels is None and rec.trace is not None:
                            sizes = rec.trace.channel_sizes
                            empty_in_full = {c for c in ALL_CHANNELS if not sizes.get(c)}
                            full_metrics = metrics
                        if name == "full":
                            per_question.append({
                                "sample_id": sample["sample_id"], "split": part, "question": query,
                                "category": category,
                                "evidence": sorted(evidence),
                                "first_evidence_rank": first_evidence_rank(mems, evidence),
                                "R@10": coverage(evidence, (m.sources for m in mems[:10])),
                            })
            bar.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    out: dict[str, Any] = {
        "benchmark": "locomo",
        "backend": backend,
        "dataset": str(data_path),
        "split": split,
        "conversations": len(data),
        "questions": n_questions,
        "units": n_units,
        "embedder": embedder_name,
        "reused_banks": reused,
        "retain_units_per_s": (n_units / retain_s if retain_s else None) if not reused else None,
        "seconds": time.perf_counter() - started,
        "latency_budget": LATENCY_BUDGET,
        "reference": {"DRAGON (turn-level)": DRAGON},
        "run": run_info(),
        "configs": {},
        "per_question": per_question,
    }
    for name, res in results.items():
        out["configs"][name] = {
            "channels": list(configs[name]) if configs[name] is not None else list(ALL_CHANNELS),
            "recall": res.table(),
            "questions_per_category": res.counts(),
            "latency_ms": latency_stats(res.latencies_ms),
        }
    log(format_tables(out))
    return out


def _fully_retained(bank: Any, sessions: list[Any]) -> bool:
    """Whether every session of a conversation is stored in ``bank`` as a finished document."""
    done = {d.id for d in bank.documents(status="done")}
    return all(s.document_id in done for s in sessions)


def run_locomo_backends(
    data_path: str | Path,
    backends: dict[str, OpenHindsight],
    *,
    workdir: str | Path | None = None,
    log: Callable[[str], None] = print,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run ``run_locomo`` once per backend (each in its own sub-folder) and compare them side by side."""
    runs: dict[str, Any] = {}
    for name, factory in backends.items():
        sub = Path(workdir) / name if workdir is not None else None
        if sub is not None:
            sub.mkdir(parents=True, exist_ok=True)
        runs[name] = run_locomo(data_path, open_hindsight=factory, backend=name, workdir=sub, log=log, **kwargs)
    combined = {"benchmark": "locomo", "backends": runs, "comparison": compare_backends(runs)}
    log(format_comparison(combined))
    return combined


def compare_backends(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per backend: evidence recall of the full pipeline (top-k and budgets) and its recall latency."""
    out: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        full = run["configs"].get("full") or next(iter(run["configs"].values()))
        metrics = [f"R@{k}" for k in TOP_K] + [f"R@{b}tok" for b in BUDGETS]
        out[name] = {
            "recall": {m: full["recall"][m]["all"] for m in metrics if m in full["recall"]},
            "latency_ms": {k: full["latency_ms"].get(k) for k in ("median", "p95")},
            "retain_units_per_s": run.get("retain_units_per_s"),
        }
    return out


def _metric_names() -> list[str]:
    return [f"R@{k}" for k in TOP_K] + [f"R@{b}tok" for b in BUDGETS]


def format_tables(result: dict[str, Any]) -> str:
    """Markdown tables: overall per config (with latency), DRAGON reference, then the full pipeline and
    each ablation by category."""
    metrics = _metric_names()
    lines = [
        f"LoCoMo evidence recall ({result.get('backend', 'embedded')} backend): {result['questions']} questions, "
        f"{result['units']} units (single messages), retain {result['retain_units_per_s'] or 0:.0f} units/s",
        "",
    ]
    rows: list[list[Any]] = []
    for name, cfg in result["configs"].items():
        lat = cfg["latency_ms"]
        rows.append([name, *(cfg["recall"][m]["all"] for m in metrics),
                     lat.get("median"), lat.get("p95"), lat.get("n")])
    rows.append(["DRAGON (published)", *(DRAGON.get(m) for m in metrics), None, None, None])
    lines += md_table(["config", *metrics, f"median ms ({LATENCY_BUDGET} tok)", "p95 ms", "timed"], rows)
    splits = [s for s in (*SPLITS, "other") if f"split:{s}" in next(iter(result["configs"].values()))["recall"].get(
        metrics[0], {})]
    if splits:
        lines += ["", "By half (defaults are chosen on dev; test is the headline):", ""]
        split_rows = [[name, s, cfg.get("questions_per_category", {}).get(f"split:{s}"),
                       *(cfg["recall"][m].get(f"split:{s}") for m in metrics)]
                      for s in splits for name, cfg in result["configs"].items()]
        lines += md_table(["config", "half", "n", *metrics], split_rows)
        full = result["configs"].get("full")
        if full is not None:
            for s in splits:
                cats = [c for c in (*CATEGORIES.values(), "other") if f"{s}/{c}" in full["recall"][metrics[0]]]
                counts = full.get("questions_per_category", {})
                lines += ["", f"full, {s} half, by category:", ""]
                lines += md_table(["category", "n", *metrics],
                                  [[c, counts.get(f"{s}/{c}"), *(full["recall"][m][f"{s}/{c}"] for m in metrics)]
                                   for c in cats])
    for name, cfg in result["configs"].items():
        lines += ["", f"{name} by category:", ""]
        cats = [c for c in (*CATEGORIES.values(), "other", "all") if c in cfg["recall"][metrics[0]]]
        counts = cfg.get("questions_per_category", {})
        lines += md_table(["category", "n", *metrics],
                          [[c, counts.get(c), *(cfg["recall"][m][c] for m in metrics)] for c in cats])
    return "\n".join(lines)


def format_comparison(combined: dict[str, Any]) -> str:
    """Backends side by side: evidence recall of the full pipeline and recall latency (median, p95)."""
    comp = combined["comparison"]
    metrics = _metric_names()
    rows = [[name, *(c["recall"].get(m) for m in metrics), c["latency_ms"]["median"], c["latency_ms"]["p95"]]
            for name, c in comp.items()]
    return "\n".join(["LoCoMo, backends side by side (full pipeline):", "",
                      *md_table(["backend", *metrics, "median ms", "p95 ms"], rows)])


def write_locomo(out_dir: str | Path, result: dict[str, Any]) -> list[Path]:
    """Write ``locomo.json``, ``locomo.md`` and the plots. A multi-backend result (from
    ``run_locomo_backends``) writes each backend's files under ``<out>/<backend>/`` plus
    ``locomo-compare.json`` / ``.md`` at the top."""
    out = Path(out_dir)
    if "backends" in result:
        written: list[Path] = []
        for name, run in result["backends"].items():
            written += write_locomo(out / name, run)
        written.append(write_json(out / "locomo-compare.json", result["comparison"]))
        written.append(write_text(out / "locomo-compare.md", "# LoCoMo: backends compared\n\n"
                                  + format_comparison(result)))
        return written
    written = [
        write_json(out / "locomo.json", result),
        write_text(out / "locomo.md", "# LoCoMo retrieval\n\n" + format_tables(result)
                   + "\n\nPlots: locomo_budget_by_category.png, locomo_topk.png, locomo_ablations.png\n"),
    ]
    written += plot_locomo(out, result)
    return written


def plot_locomo(out: Path, result: dict[str, Any]) -> list[Path]:
    """Recall versus token budget per category, recall versus k (with DRAGON), and the ablations."""
    full = result["configs"].get("full") or next(iter(result["configs"].values()))
    rec = full["recall"]
    cats = [c for c in (*CATEGORIES.values(), "other", "all") if c in rec.get(f"tok={BUDGET_CURVE[0]}", {})]
    budget_series = {c: (list(BUDGET_CURVE), [rec[f"tok={b}"][c] for b in BUDGET_CURVE]) for c in cats}
    paths = [line_plot(out / "locomo_budget_by_category.png", budget_series,
                       title=f"LoCoMo evidence recall vs token budget ({result.get('backend', 'embedded')})",
                       xlabel="recall budget (tokens)", ylabel="evidence recall (%)", logx=True)]
    topk_series = {name: (list(TOPK_CURVE), [cfg["recall"][f"k={k}"]["all"] for k in TOPK_CURVE])
                   for name, cfg in result["configs"].items() if f"k={TOPK_CURVE[0]}" in cfg["recall"]}
    dragon = {"DRAGON (published)": ([5, 10, 25, 50], [DRAGON[f"R@{k}"] for k in (5, 10, 25, 50)])}
    paths.append(line_plot(out / "locomo_topk.png", topk_series, reference=dragon,
                           title="LoCoMo evidence recall vs top-k memories", xlabel="k (memories)",
                           ylabel="evidence recall (%)", logx=True))
    metrics = ["R@5", "R@10", "R@1000tok"]
    names = list(result["configs"])
    bars = {m: [result["configs"][n]["recall"][m]["all"] for n in names] for m in metrics
            if all(m in result["configs"][n]["recall"] for n in names)}
    paths.append(bar_plot(out / "locomo_ablations.png", names, bars,
                          title="LoCoMo: channel ablations", ylabel="evidence recall (%)"))
    return paths
