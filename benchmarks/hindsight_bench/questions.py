"""Questions are not answers (issue 40): how often a question's top result is a message that only asks or only
acknowledges, and what the question rule (``RecallSettings.question_rule``) does to evidence recall.

The raw path of ``hindsight bench locomo`` (``extract=False``, no model call): each conversation goes into its own
bank, one memory per message, and every question is recalled with the conversation's last session as reference
time. For each question and each rule (``off`` first: today's order) the same bank is recalled once with an
unbounded budget in the same process; R@5, R@10 and R@1000tok are the LoCoMo metric (``locomo.question_metrics``:
the 1,000-token figure is exactly what ``recall(budget=1000)`` returns). The top-result shares: the first memory
is a pure question or acknowledgement by ``core/recall/questions.classify`` ("classified"), and, as a measure that
does not depend on that classifier, the first memory ends with ``?`` or is at most three words ("? or short").

Data: LoCoMo's dev or test half (``--split``) and, for the dev split, ``realtalk_dev.json`` (dev data only).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# The engine and the LoCoMo harness are imported when the benchmark runs: the command line stays light.
RULES = ("off", "demote", "pair")
METRICS = ("R@5", "R@10", "R@1000tok")


def _question_or_short(text: str) -> bool:
    from hindsight_core.recall.questions import message_text

    body = message_text(text)
    return body.rstrip().endswith("?") or len(body.split()) <= 3


def variant(base: Any, rule: str) -> Any:
    """The recall settings of one compared variant: a question rule ("off", "demote", "pair") or ``field=value`` of
    ``RecallSettings`` ("later_first_depth=0"), on top of ``base``."""
    if "=" not in rule:
        return base.model_copy(update={"question_rule": rule})
    name, value = (part.strip() for part in rule.split("=", 1))
    if name not in type(base).model_fields:
        raise ValueError(f"unknown recall setting {name!r}")
    return type(base).model_validate({**base.model_dump(), name: value})


def run_questions(
    datasets: dict[str, tuple[Path, str]],
    *,
    rules: Sequence[str] = RULES,
    workdir: str | Path | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """``datasets``: name -> (data file in LoCoMo's format, split). Returns, per dataset and rule, the mean
    metrics in percent, the top-result shares, and the questions whose top result changed. ``rules``: question
    rules ("off" is put first) or ``field=value`` variants of the recall settings (the first is the baseline)."""
    from tqdm import tqdm

    from hindsight_core.cli.formats import evidence_ids, locomo_sessions
    from hindsight_core.recall.questions import memory_kind

    from .backends import QueryEmbeddingCache, open_embedded
    from .locomo import question_metrics, split_samples
    from .metrics import mean_percent
    from .report import run_info

    if not any("=" in r for r in rules) and (not rules or rules[0] != "off"):
        rules = ("off", *[r for r in rules if r != "off"])
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-questions-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    out: dict[str, Any] = {"rules": list(rules), "datasets": {}, "run": run_info()}
    try:
        with open_embedded(root) as hs:
            out["embedder"] = hs.embedder.name
            recaller = hs.engine.recaller
            if not isinstance(recaller.embedder, QueryEmbeddingCache):  # one embedding per question, every rule
                recaller.embedder = QueryEmbeddingCache(recaller.embedder)
            base = recaller.settings
            settings = {r: variant(base, r) for r in rules}
            for name, (path, split) in datasets.items():
                samples = split_samples(json.loads(Path(path).read_text(encoding="utf-8")), split)
                if limit_conversations:
                    samples = samples[:limit_conversations]
                scores: dict[str, dict[str, list[float]]] = {r: {m: [] for m in METRICS} for r in rules}
                tops: dict[str, dict[str, int]] = {r: {"classified": 0, "question_or_short": 0} for r in rules}
                changed: list[dict[str, Any]] = []
                n_units = 0
                retain_s = 0.0
                total = sum(len(s["qa"][:limit_questions] if limit_questions else s["qa"]) for s in samples)
                bar = tqdm(total=total, desc=f"questions [{name}]", unit="q", disable=not progress)
                for sample in samples:
                    bank_id = f"q-{name}-{sample['sample_id']}"
                    if bank_id in {b.id for b in hs.banks()}:
                        hs.delete_bank(bank_id)
                    bank = hs.bank(bank_id)
                    sessions = locomo_sessions(sample)
                    t = time.perf_counter()
                    for s in sessions:
                        res = bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id,
                                          extract=False, background=False)
                        n_units += len(res.memories)
                    retain_s += time.perf_counter() - t
                    reference = max(s.timestamp for s in sessions if s.timestamp is not None)
                    for qa in sample["qa"][:limit_questions] if limit_questions else sample["qa"]:
                        bar.update(1)
                        evidence = evidence_ids(qa.get("evidence", []))
                        if not evidence:
                            continue
                        query = str(qa["question"])
                        firsts: dict[str, str] = {}
                        for rule in rules:
                            recaller.settings = settings[rule]
                            try:
                                mems = bank.recall(query, budget=10**9, reference_time=reference).memories
                            finally:
                                recaller.settings = base
                            metrics = question_metrics(mems, evidence, hs.count_tokens)
                            for m in METRICS:
                                scores[rule][m].append(metrics[m])
                            if mems:
                                tops[rule]["classified"] += memory_kind(mems[0]) is not None
                                tops[rule]["question_or_short"] += _question_or_short(mems[0].text)
                                firsts[rule] = mems[0].text
                        if len(set(firsts.values())) > 1:
                            changed.append({"sample_id": sample["sample_id"], "question": query,
                                            "evidence": sorted(evidence), "top": firsts})
                bar.close()
                n = len(scores[rules[0]]["R@5"])
                out["datasets"][name] = {
                    "split": split, "questions": n, "units": n_units,
                    "retain_units_per_s": round(n_units / retain_s, 1) if retain_s else None,
                    "rules": {r: {**{m: mean_percent(scores[r][m]) for m in METRICS},
                                  "top_classified": 100.0 * tops[r]["classified"] / n if n else 0.0,
                                  "top_question_or_short": 100.0 * tops[r]["question_or_short"] / n if n else 0.0}
                              for r in rules},
                    "changed_top": changed,
                }
                log(format_dataset(name, out["datasets"][name]))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return out


def format_dataset(name: str, result: dict[str, Any]) -> str:
    """One dataset's table: a row per rule, with the difference to ``off``."""
    from .report import md_table

    first = next(iter(result["rules"]))
    base = result["rules"][first]
    rows = []
    for rule, r in result["rules"].items():
        rows.append([rule, r["top_classified"], r["top_question_or_short"],
                     *(f"{r[m]:.1f}" + ("" if rule == first else f" ({r[m] - base[m]:+.1f})") for m in METRICS)])
    head = (f"{name} ({result['split']}, {result['questions']} questions, {result['units']} units): "
            "top result a pure question or acknowledgement, % (classified / ends with ? or <= 3 words)")
    return "\n".join([head, *md_table(["rule", "top classified %", "top ? or short %", *METRICS], rows)])


def format_questions(result: dict[str, Any]) -> str:
    """Every dataset's table."""
    return "\n\n".join(format_dataset(n, d) for n, d in result["datasets"].items())


def cmd_questions(args: Any) -> dict[str, Any] | None:
    """``questions``: the top-result share and evidence recall before and after the question rule."""
    from .commands import BenchError, find_locomo, stderr_print
    from .report import write_json, write_text

    locomo = Path(args.data) if args.data else find_locomo()
    realtalk = Path(args.realtalk) if args.realtalk else locomo.parent / "realtalk_dev.json"
    datasets: dict[str, tuple[Path, str]] = {"locomo": (locomo, args.split)}
    if args.split == "dev" and not args.no_realtalk:
        datasets["realtalk"] = (realtalk, "dev")
    for path, _ in datasets.values():
        if not path.is_file():
            raise BenchError(f"data not found: {path}")
    log = stderr_print if args.json else print
    rules = args.rules or list(RULES)
    unknown = {r for r in rules if "=" not in r} - set(RULES)
    if unknown:
        raise BenchError(f"unknown rule(s) {sorted(unknown)}; use {', '.join(RULES)}")
    try:
        result = run_questions(datasets, rules=rules, workdir=args.workdir, limit_conversations=args.conversations,
                               limit_questions=args.questions, progress=args.progress, log=log)
    except (ValueError, KeyError) as exc:
        raise BenchError(f"questions: {exc}") from None
    if args.out:
        out = Path(args.out)
        written = [write_json(out / "questions.json", result), write_text(out / "questions.md",
                                                                          format_questions(result))]
        log("wrote " + ", ".join(str(p) for p in written))
    return result if args.json else None
