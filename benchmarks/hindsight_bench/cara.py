"""``hindsight bench cara``: do dispositions change reasoning, do opinions follow evidence, are answers stable?

The scenarios (``data/cara_scenarios.json``, written for this project) each hold a few dated chat messages with
evidence for and against a judgement, a yes/no question, the judgement as a claim, and three later messages
labelled with how each should move an opinion holding the claim (reinforce, weaken, contradict, neutral).

For every scenario:

1. the messages are retained raw into a fresh bank per disposition and run, and reflect answers the question
   under two contrasting dispositions (``open``: skepticism 1, literalism 1, empathy 5; ``strict``: 5, 5, 1;
   bias 0.8 both), each ``repeats`` times, at a fixed reference time (the day after the last message), so
   the figures do not depend on the day the benchmark runs;
2. for each later message, one more bank holds the messages and the claim as an opinion (``Bank.add_opinion``,
   confidence 0.5, citing the supporting messages); the message is retained and let move it
   (``Bank.update_opinions``, the background opinion job's code); the label recorded in the opinion's history,
   or neutral when no event names the message, is compared with the gold label.

The set is split by position into a dev half (the first 22 scenarios) and a test half (the last 22): the
rules and constants that act on dispositions were set looking at dev results only; test is the headline.

Metrics:

- sensitivity: share of scenarios where the two dispositions' first runs give a different stance (yes / no /
  unsure / unknown) or opinion confidences at least 0.15 apart (no opinion counts 0);
- consistency: share of (scenario, disposition) pairs whose runs all give the same stance;
- evidence responsiveness: accuracy of the recorded labels against the gold ones (and per label, and the
  confusion matrix);
- groundedness: share of the model's citations that name a memory it was shown (numbers out of range are
  dropped by reflect and counted here), and share of the stored citations that exist in the bank and were
  recalled (must be 1).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from .report import bar_plot, md_table, run_info, write_json, write_text

DATA = Path(__file__).resolve().parent / "data" / "cara_scenarios.json"
BALANCE = Path(__file__).resolve().parent / "data" / "cara_balance.json"
"""Evidence-balance pairs (``--set balance``): the same question and people, 3 for / 1 against and 1 for / 3
against; each scenario names its half (``split``) and its twin (``pair``)."""
SETS = {"judgement": DATA, "balance": BALANCE}
LABELS = ("reinforce", "weaken", "contradict", "neutral")
CONFIDENCE_GAP = 0.15
"""Two opinion confidences this far apart count as a different outcome (the issue's definition)."""
SEED_CONFIDENCE = 0.5
SPLITS = ("dev", "test", "all")
PARTS = ("reflect", "evidence", "verdicts")
"""The parts of a run: reflect under the dispositions, the labelled later messages, and (alone, no bank) each
message's verdict as reflect's per-memory judgement gives it, against its gold side."""
DEV_SCENARIOS = 22
"""The first 22 scenarios of the bundled set are the dev half, the rest the test half."""


def dispositions() -> dict[str, Any]:
    """The two contrasting dispositions (the demo's extremes, literalism pushed to 1 for the open one)."""
    from hindsight_core import Disposition

    return {"open": Disposition(skepticism=1, literalism=1, empathy=5, bias=0.8),
            "strict": Disposition(skepticism=5, literalism=5, empathy=1, bias=0.8)}


class Message(BaseModel):
    """One remembered chat message."""

    speaker: str = Field(min_length=1)
    text: str = Field(min_length=1)
    date: str


class LaterMessage(Message):
    """A message that arrives after the opinion is formed, with how it should move the opinion."""

    label: Literal["reinforce", "weaken", "contradict", "neutral"]


class Evidence(BaseModel):
    """Indices of the messages for and against the claim."""

    for_: list[int] = Field(alias="for")
    against: list[int]


class Scenario(BaseModel):
    """A bank of messages, a judgement question, the claim it would hold, and labelled later messages."""

    id: str
    question: str
    claim: str
    subject: str
    messages: list[Message] = Field(min_length=1)
    evidence: Evidence
    later: list[LaterMessage] = Field(min_length=1)
    split: Literal["dev", "test"] | None = None
    """The half the scenario belongs to, when its file says (the balance set); else its position decides."""
    pair: str | None = None

    @model_validator(mode="after")
    def _indices(self) -> Scenario:
        for i in [*self.evidence.for_, *self.evidence.against]:
            if not 0 <= i < len(self.messages):
                raise ValueError(f"scenario {self.id}: evidence index {i} out of range")
        return self

    def reference_time(self) -> datetime:
        """The day after the last message, at noon UTC: "now" for reflect."""
        return _day(max(m.date for m in self.messages)) + timedelta(days=1)

    def expected_stance(self) -> str:
        """yes when more messages support the claim than oppose it, no when fewer, unsure when as many."""
        n_for, n_against = len(self.evidence.for_), len(self.evidence.against)
        return "yes" if n_for > n_against else "no" if n_for < n_against else "unsure"


def load_scenarios(path: str | Path | None = None) -> list[Scenario]:
    """The scenarios of a ``hindsight-cara-scenarios`` file (default: the bundled set), validated."""
    raw = json.loads(Path(path or DATA).read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or raw.get("format") != "hindsight-cara-scenarios":
        raise ValueError(f"{path or DATA}: not a hindsight-cara-scenarios file")
    scenarios = [Scenario.model_validate(s) for s in raw["scenarios"]]
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise ValueError("scenario ids repeat")
    return scenarios


def split_of(index: int, scenario: Scenario | None = None) -> str:
    """``dev`` or ``test``: the half the scenario names, else the one its position in the file puts it in."""
    if scenario is not None and scenario.split is not None:
        return scenario.split
    return "dev" if index < DEV_SCENARIOS else "test"


def select_split(scenarios: Sequence[Scenario], split: str) -> list[Scenario]:
    """The scenarios of one half (``dev``, ``test``) or ``all``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    return [s for i, s in enumerate(scenarios) if split in ("all", split_of(i, s))]


def _day(date: str) -> datetime:
    return datetime.fromisoformat(date).replace(hour=12, tzinfo=UTC)


def _retain_messages(bank: Any, scenario_id: str, messages: Sequence[Message]) -> list[Any]:
    """Retain raw, one document per day (each day a source); returns the memories in message order."""
    by_day: dict[str, list[tuple[int, Message]]] = {}
    for i, m in enumerate(messages):
        by_day.setdefault(m.date, []).append((i, m))
    memories: list[Any] = [None] * len(messages)
    for date, items in sorted(by_day.items()):
        result = bank.retain([{"speaker": m.speaker, "text": m.text, "id": f"{scenario_id}-m{i}"} for i, m in items],
                             timestamp=_day(date), document_id=f"{scenario_id}-{date}", extract=False,
                             background=False)
        for (i, _), memory in zip(items, result.memories, strict=True):
            memories[i] = memory
    return memories


def _stance(reflection: Any) -> str:
    return (reflection.stance or "unsure") if reflection.known else "unknown"


def side_of(text: str, question: str) -> str:
    """The side of the yes/no ``question`` a written answer or opinion takes, read from its words: "unsure" when it
    says the evidence is mixed or it is not sure or does not know, else ``statement_side`` (a leading yes or no, else
    the negations it adds to the question's)."""
    from hindsight_core.opinions.coherence import statement_side

    lead = text.strip().lower()
    if lead.startswith(("the evidence is mixed", "the evidence on", "i am not sure", "i'm not sure", "i don't know",
                        "i do not know")):
        return "unsure"
    return statement_side(text, question)


def reflect_run(hs: Any, scenario: Scenario, name: str, disposition: Any, run: int) -> dict[str, Any]:
    """One reflect of ``scenario``'s question in a fresh bank under ``disposition``; what it said and cited, the
    sides its answer and its opinion take (read from their words), and its seconds and tokens."""
    bank = hs.bank(f"{scenario.id}-{name}-{run}")
    _retain_messages(bank, scenario.id, scenario.messages)
    meter = getattr(getattr(hs, "llm", None), "meter", None)  # the benchmark's models count tokens (qa.UsageMeter)
    before = meter.snapshot() if meter is not None else (0, 0, 0)
    t0 = time.perf_counter()
    r = bank.reflect(scenario.question, disposition=disposition, reference_time=scenario.reference_time())
    seconds = time.perf_counter() - t0
    after = meter.snapshot() if meter is not None else None
    usage = None if after is None else {"prompt_tokens": after[0] - before[0],
                                        "completion_tokens": after[1] - before[1], "calls": after[2] - before[2]}
    recalled = {m.id for m in r.memories}
    cited = [*r.based_on, *r.against]
    existing = {c for c in cited if bank.get(c) is not None}
    return {
        "stance": _stance(r), "known": r.known, "answer": r.answer,
        "confidence": max((o.confidence or 0.0 for o in r.opinions), default=0.0),
        "opinions": [{"text": o.text, "confidence": o.confidence,
                      "model_confidence": o.metadata.get("model_confidence")} for o in r.opinions],
        "based_on": len(r.based_on), "against": len(r.against), "citations_dropped": r.citations_dropped,
        "cited_existing_and_recalled": sum(1 for c in cited if c in existing and c in recalled),
        "cited": len(cited), "recalled": len(recalled), "seconds": round(seconds, 2),
        "verdicts": dict(Counter(r.verdicts.values())),
        "answer_side": side_of(r.answer, scenario.question) if r.known else "unknown",
        "opinion_side": side_of(r.opinions[0].text, scenario.question) if r.opinions else None,
        "completion_tokens": (usage or {}).get("completion_tokens"),
        "prompt_tokens": (usage or {}).get("prompt_tokens"),
        "model_calls": (usage or {}).get("calls"),
    }


def responsiveness_run(hs: Any, scenario: Scenario) -> list[dict[str, Any]]:
    """Each later message on its own: a bank with the messages and the claim as an opinion, then the message
    retained and let move it; the recorded label against the gold one. Each message is judged against the
    claim as written (the gold labels' reference), not against an opinion an earlier message rewrote."""
    out = []
    for j, later in enumerate(scenario.later):
        bank = hs.bank(f"{scenario.id}-evidence-{j}")
        memories = _retain_messages(bank, scenario.id, scenario.messages)
        opinion = bank.add_opinion(scenario.claim, SEED_CONFIDENCE, entities=[scenario.subject],
                                   based_on=[memories[i].id for i in scenario.evidence.for_])
        result = bank.retain([{"speaker": later.speaker, "text": later.text, "id": f"{scenario.id}-l{j}"}],
                             timestamp=_day(later.date), document_id=f"{scenario.id}-later-{j}", extract=False,
                             background=False)
        ids = set(result.memory_ids)
        t0 = time.perf_counter()
        events = [e for e in bank.update_opinions(sorted(ids)) if e.opinion_id == opinion.id and ids & set(e.evidence)]
        after = bank.get(opinion.id)
        out.append({"gold": later.label, "predicted": events[0].label if events else "neutral", "text": later.text,
                    "confidence_before": SEED_CONFIDENCE, "confidence_after": after.confidence if after else None,
                    "rationale": events[0].rationale if events else None,
                    "seconds": round(time.perf_counter() - t0, 2)})
    return out


def verdict_run(llm: Any, scenario: Scenario) -> dict[str, Any]:
    """Each message of ``scenario`` judged as reflect judges a memory of a yes/no question (one call each, no bank),
    beside its gold side: yes for the evidence for, no against, neither for the filler."""
    from hindsight_core.models import Memory, Network
    from hindsight_core.opinions.verdicts import judge_memories

    memories = [Memory(id=f"m{i}", bank_id="cara", text=f"{m.speaker}: {m.text}", network=Network.WORLD)
                for i, m in enumerate(scenario.messages)]
    t0 = time.perf_counter()
    got = judge_memories(llm, scenario.question, memories)
    gold = ["yes" if i in scenario.evidence.for_ else "no" if i in scenario.evidence.against else "neither"
            for i in range(len(memories))]
    said = [got.get(m.id, "neither") for m in memories]
    n_yes, n_no = said.count("yes"), said.count("no")
    return {"gold": gold, "said": said, "seconds": round(time.perf_counter() - t0, 2),
            "majority": "yes" if n_yes > n_no else "no" if n_no > n_yes else "unsure"}


def run_cara(
    llm: Any,
    scenarios: Sequence[Scenario],
    *,
    repeats: int = 2,
    parts: Sequence[str] = ("reflect", "evidence"),
    splits: Mapping[str, str] | None = None,
    workdir: str | Path | None = None,
    llm_name: str | None = None,
    log: Callable[..., None] = print,
    judgement: str | None = None,
) -> dict[str, Any]:
    """Run every scenario (see the module) with ``llm``; returns per-scenario records and the metrics, overall
    and per half (``splits``: scenario id -> dev / test, default by position in the bundled set)."""
    from hindsight_core import Hindsight

    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValueError(f"parts must be among {', '.join(PARTS)}, got {list(parts)}")
    tmp = tempfile.mkdtemp(prefix="hindsight-cara-") if workdir is None else None
    root = Path(tmp or str(workdir))
    disps = dispositions()
    records: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    try:
        settings = None
        if judgement is not None:  # how reflect judges a yes/no question (default: the engine's, per memory)
            from hindsight_core.config import CaraSettings, Settings

            settings = Settings(cara=CaraSettings(reflect_judgement=judgement))
        with Hindsight.open(root, llm=llm, settings=settings) as hs:
            for n, scenario in enumerate(scenarios, start=1):
                split = (splits or {}).get(scenario.id, "")
                record: dict[str, Any] = {"id": scenario.id, "split": split, "question": scenario.question,
                                          "expected_stance": scenario.expected_stance(), "runs": {}}
                if "reflect" in parts:
                    for name, disposition in disps.items():
                        record["runs"][name] = [reflect_run(hs, scenario, name, disposition, k)
                                                for k in range(repeats)]
                record["later"] = responsiveness_run(hs, scenario) if "evidence" in parts else []
                if "verdicts" in parts:
                    record["verdicts"] = verdict_run(llm, scenario)
                records.append(record)
                first = {name: runs[0] for name, runs in record["runs"].items()}
                log(f"[{n}/{len(scenarios)}] {scenario.id}: "
                    + ", ".join(f"{k} {v['stance']} {v['confidence']:.2f}" for k, v in first.items())
                    + "; later " + " ".join(f"{x['gold'][:4]}->{x['predicted'][:4]}" for x in record["later"])
                    + f" ({time.perf_counter() - t_start:.0f} s)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"benchmark": "cara", "model": llm_name or getattr(llm, "name", str(llm)), "repeats": repeats,
            "judgement": judgement or "per_memory",
            "parts": list(parts),
            "dispositions": {k: v.model_dump() for k, v in disps.items()}, "scenarios": len(records),
            "metrics": cara_metrics(records),
            "metrics_by_split": {k: cara_metrics([r for r in records if r["split"] == k])
                                 for k in ("dev", "test") if any(r["split"] == k for r in records)},
            "records": records, "seconds": round(time.perf_counter() - t_start, 1),
            "run": run_info()}


def cara_metrics(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sensitivity, consistency, evidence responsiveness and groundedness of scenario records (see the module)."""
    sensitive = compared = 0
    consistent = pairs = 0
    cited = valid = stored = stored_ok = 0
    stances: dict[str, Counter[str]] = {}
    agrees: dict[str, int] = {}
    confidences: dict[str, list[float]] = {}
    for r in records:
        runs = r["runs"]
        names = list(runs)
        if len(names) >= 2:
            compared += 1
            a, b = runs[names[0]][0], runs[names[1]][0]
            if a["stance"] != b["stance"] or abs(a["confidence"] - b["confidence"]) >= CONFIDENCE_GAP:
                sensitive += 1
        for name, rs in runs.items():
            stances.setdefault(name, Counter()).update(x["stance"] for x in rs[:1])
            agrees[name] = agrees.get(name, 0) + (rs[0]["stance"] == r["expected_stance"])
            confidences.setdefault(name, []).append(rs[0]["confidence"])
            if len(rs) >= 2:
                pairs += 1
                consistent += len({x["stance"] for x in rs}) == 1
            for x in rs:
                cited += x["cited"] + x["citations_dropped"]
                valid += x["cited"]
                stored += x["cited"]
                stored_ok += x["cited_existing_and_recalled"]
    with_opinion = [x for r in records for rs in r["runs"].values() for x in rs if x.get("opinion_side")]
    coherent = sum(1 for x in with_opinion if x["opinion_side"] == x.get("answer_side"))
    all_runs = [x for r in records for rs in r["runs"].values() for x in rs]
    tokens = sorted(x["completion_tokens"] for x in all_runs if x.get("completion_tokens") is not None)
    seconds = sorted(x["seconds"] for x in all_runs if x.get("seconds") is not None)
    judged = [r["verdicts"] for r in records if r.get("verdicts")]
    pairs_judged = [(g, p) for v in judged for g, p in zip(v["gold"], v["said"], strict=True)]
    later = [x for r in records for x in r.get("later", [])]
    confusion = {g: {p: sum(1 for x in later if x["gold"] == g and x["predicted"] == p) for p in LABELS}
                 for g in LABELS}
    per_label = {g: _share(confusion[g][g], sum(confusion[g].values())) for g in LABELS}
    n = len(records)
    return {
        "scenarios": n,
        "sensitivity": _share(sensitive, compared),
        "consistency": _share(consistent, pairs),
        "consistency_pairs": pairs,
        "responsiveness": _share(sum(confusion[g][g] for g in LABELS), len(later)),
        "responsiveness_messages": len(later),
        "responsiveness_per_label": per_label,
        "confusion": confusion,
        "groundedness_citations": _share(valid, cited),
        "groundedness_stored": _share(stored_ok, stored),
        "stances": {k: dict(v) for k, v in stances.items()},
        "stance_matches_evidence": {k: _share(v, sum(stances[k].values())) for k, v in agrees.items()},
        "mean_confidence": {k: round(sum(v) / len(v), 3) if v else None for k, v in confidences.items()},
        "stance_follows_majority": _share(sum(agrees.values()), sum(sum(c.values()) for c in stances.values())),
        "coherence": _share(coherent, len(with_opinion)),
        "coherence_runs": len(with_opinion),
        "verdict_accuracy": _share(sum(1 for g, p in pairs_judged if g == p), len(pairs_judged)),
        "verdict_messages": len(pairs_judged),
        "verdict_confusion": {g: {p: sum(1 for x in pairs_judged if x == (g, p)) for p in ("yes", "no", "neither")}
                              for g in ("yes", "no", "neither")},
        "verdict_majority": _share(sum(1 for r in records if r.get("verdicts")
                                       and r["verdicts"]["majority"] == r["expected_stance"]), len(judged)),
        "reflects": len(all_runs),
        "reflect_seconds_median": seconds[len(seconds) // 2] if seconds else None,
        "reflect_tokens_median": tokens[len(tokens) // 2] if tokens else None,
    }


def _share(k: int, n: int) -> float | None:
    return round(k / n, 3) if n else None


def format_cara(result: Mapping[str, Any]) -> str:
    """Markdown: the four metrics per half, stances and confidence per disposition, the confusion matrix."""
    parts = [f"CARA with {result.get('model')} ({result.get('repeats')} runs per disposition, "
             f"{result.get('seconds')} s)"]
    halves = dict(result.get("metrics_by_split") or {})
    if len(halves) > 1:
        halves["all"] = result["metrics"]
    for name, m in (halves or {"all": result["metrics"]}).items():
        parts += ["", f"## {name} ({m['scenarios']} scenarios)", "", _format_metrics(m)]
    return "\n".join(parts)


def _format_metrics(m: Mapping[str, Any]) -> str:
    rows = [["sensitivity", m["sensitivity"], "different stance or confidence >= 0.15 apart"],
            ["consistency", m["consistency"], f"same stance on every run ({m['consistency_pairs']} pairs)"],
            ["evidence responsiveness", m["responsiveness"],
             f"recorded label = gold ({m['responsiveness_messages']} messages)"],
            ["groundedness (model citations)", m["groundedness_citations"], "cited numbers naming a shown memory"],
            ["groundedness (stored)", m["groundedness_stored"], "stored citations that exist and were recalled"],
            ["stance follows the evidence majority", m.get("stance_follows_majority"),
             "first runs, both dispositions (an even split expects unsure)"],
            ["coherence", m.get("coherence"),
             f"answer and stored opinion take the same side, read from their words ({m.get('coherence_runs')} runs)"],
            ["per-memory verdicts right", m.get("verdict_accuracy"),
             f"each message judged alone against its gold side ({m.get('verdict_messages')} messages)"],
            ["verdict majority = evidence majority", m.get("verdict_majority"), "scenarios, counting verdicts"],
            ["seconds per reflect (median)", m.get("reflect_seconds_median"), f"{m.get('reflects')} reflects"],
            ["completion tokens per reflect (median)", m.get("reflect_tokens_median"), "the reflect call's answer"]]
    disp_rows = [[k, json.dumps(m["stances"].get(k, {})), m["mean_confidence"].get(k),
                  m["stance_matches_evidence"].get(k)] for k in m["stances"]]
    conf_rows = [[g, *(m["confusion"][g][p] for p in LABELS), m["responsiveness_per_label"][g]] for g in LABELS]
    lines = [*md_table(["metric", "value", "what"], _fmt(rows)), "",
             *md_table(["disposition", "stances (first run)", "mean confidence", "stance = evidence majority"],
                       _fmt(disp_rows)), "",
             "Recorded label (columns) against gold (rows):", "",
             *md_table(["gold \\ recorded", *LABELS, "recall"], _fmt(conf_rows))]
    return "\n".join(lines)


def _fmt(rows: list[list[Any]]) -> list[list[Any]]:
    return [[f"{v:.3f}" if isinstance(v, float) else v for v in row] for row in rows]


def write_cara(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``cara.json``, ``cara.md`` and ``cara_metrics.png``."""
    out = Path(out_dir)
    m = result["metrics"]
    paths = [write_json(out / "cara.json", result),
             write_text(out / "cara.md", "# CARA: dispositions and opinion dynamics\n\n" + format_cara(result)
                        + "\n\nPlot: cara_metrics.png\n")]
    names = ["sensitivity", "consistency", "responsiveness", "groundedness_citations"]
    paths.append(bar_plot(out / "cara_metrics.png", names, {"measured": [m[k] or 0.0 for k in names],
                                                            "target": [0.8, 0.9, 0.85, 1.0]},
                          title=f"CARA ({result.get('model')}, {m['scenarios']} scenarios)", ylabel="share"))
    return paths
