"""``hindsight bench cara``: the bundled scenario set, the run and its metrics with a scripted model.

The scripted model makes outcomes exact, so each metric is checked against what it must be; the benchmark with
the real bundled model is run by hand (docs/BENCHMARKS.md), it takes about an hour and a half on 2 cores.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, assessment

from hindsight_bench.cara import (
    CONFIDENCE_GAP,
    DATA,
    LABELS,
    cara_metrics,
    format_cara,
    load_scenarios,
    run_cara,
    write_cara,
)
from hindsight_core.cli.commands import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_bundled_scenarios_are_valid_and_balanced() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 40
    assert len({s.id for s in scenarios}) == len(scenarios) == len({s.subject for s in scenarios})
    labels = Counter(later.label for s in scenarios for later in s.later)
    assert set(labels) == set(LABELS) and max(labels.values()) - min(labels.values()) <= 1
    for s in scenarios:
        assert s.subject in s.claim and s.subject in s.question
        assert s.evidence.for_ or s.evidence.against
        last = max(m.date for m in s.messages)
        assert all(later.date > last for later in s.later)
        assert all(s.subject in later.text for later in s.later if later.label != "neutral")
    stances = Counter(s.expected_stance() for s in scenarios)
    assert stances["no"] >= 5 and stances["yes"] >= 5  # evidence that points both ways across the set


def test_load_scenarios_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": "something-else", "scenarios": []}))
    with pytest.raises(ValueError, match="not a hindsight-cara-scenarios"):
        load_scenarios(bad)
    raw = json.loads(DATA.read_text())
    raw["scenarios"][0]["evidence"]["for"] = [99]
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="out of range"):
        load_scenarios(bad)


def scripted(first_label: dict[str, str]) -> ScriptedLLM:
    """Open minds say yes citing everything; strict ones say no on the first run and yes after (inconsistent);
    the assessor answers from a lookup of the later message's text."""
    seen: Counter[str] = Counter()

    def respond(messages: Any, schema: Any) -> dict[str, Any]:
        system, user = messages[0]["content"], messages[-1]["content"]
        if schema.__name__ == "_Answer":
            n = user.count("\n[")
            strict = "Skepticism 5/5" in system
            key = f"{strict}{user[-80:]}"
            seen[key] += 1
            stance = "yes" if not strict else ("no" if seen[key] == 1 else "yes")
            op = {"text": "My judgment.", "rationale": "r", "confidence": 0.9, "entities": []}
            return {"known": True, "based_on": [*list(range(1, n + 1)), 42], "against": [], "stance": stance,
                    "answer": "Judged.", "opinions": [op]}
        text = next(t for t in first_label if t in user)
        return assessment(first_label[text], shows="r")

    return ScriptedLLM([respond] * 200)


def test_run_cara_with_a_scripted_model(tmp_path: Path) -> None:
    scenarios = load_scenarios()[:2]
    # the scripted assessor is right on every message but the first
    labels = {later.text: later.label for s in scenarios for later in s.later}
    wrong = scenarios[0].later[0]
    labels[wrong.text] = next(lbl for lbl in LABELS if lbl not in (wrong.label, "neutral"))
    # reflect's one call, scripted (the per-memory judgement is measured by the verdicts part and its own tests)
    result = run_cara(scripted(labels), scenarios, repeats=2, workdir=tmp_path / "w", log=lambda *a: None,
                      judgement="in_call")
    m = result["metrics"]
    assert m["scenarios"] == 2 and m["consistency_pairs"] == 4
    # strict said no then yes: its pairs are inconsistent, the open ones consistent
    assert m["consistency"] == 0.5
    assert m["sensitivity"] == 1.0  # yes against no on the first runs
    later = [x for r in result["records"] for x in r["later"]]
    assert len(later) == 6
    # a neutral message the opinion job does not relate to the opinion is recorded neutral without a model call
    expected = sum(1 for s in scenarios for x in s.later if labels[x.text] == x.label) / 6
    assert m["responsiveness"] == pytest.approx(round(expected, 3))
    assert m["responsiveness"] < 1.0
    # every run cited one invented number (42): dropped by reflect, counted against groundedness
    runs = [x for r in result["records"] for rs in r["runs"].values() for x in rs]
    assert all(x["citations_dropped"] == 1 for x in runs)
    assert m["groundedness_citations"] == pytest.approx(round(sum(x["cited"] for x in runs)
                                                              / sum(x["cited"] + 1 for x in runs), 3))
    assert m["groundedness_stored"] == 1.0
    open_conf = result["records"][0]["runs"]["open"][0]["confidence"]
    strict_conf = result["records"][0]["runs"]["strict"][0]["confidence"]
    assert open_conf > strict_conf  # the same citations weigh less to a skeptic
    paths = write_cara(tmp_path / "out", result)
    assert [p.name for p in paths] == ["cara.json", "cara.md", "cara_metrics.png"]
    assert paths[2].read_bytes().startswith(PNG_MAGIC)
    assert json.loads(paths[0].read_text())["metrics"] == m
    assert "| sensitivity | 1.000 |" in format_cara(result)


def _record(stances: dict[str, list[str]], confidences: dict[str, float], later: list[tuple[str, str]]) -> dict:
    runs = {k: [{"stance": s, "confidence": confidences[k], "cited": 2, "citations_dropped": 0,
                 "cited_existing_and_recalled": 2} for s in v] for k, v in stances.items()}
    return {"runs": runs, "expected_stance": "yes", "later": [{"gold": g, "predicted": p} for g, p in later]}


def test_metrics_definitions_at_their_edges() -> None:
    same = _record({"open": ["yes", "yes"], "strict": ["yes", "yes"]}, {"open": 0.8, "strict": 0.8 - CONFIDENCE_GAP
                                                                          + 0.01}, [("reinforce", "reinforce")])
    gap = _record({"open": ["yes", "yes"], "strict": ["yes", "no"]}, {"open": 0.9, "strict": 0.9 - CONFIDENCE_GAP},
                  [("weaken", "contradict"), ("neutral", "neutral")])
    m = cara_metrics([same, gap])
    assert m["sensitivity"] == 0.5  # only the second pair is 0.15 apart
    assert m["consistency"] == 0.75
    assert m["responsiveness"] == round(2 / 3, 3)
    assert m["confusion"]["weaken"]["contradict"] == 1 and m["responsiveness_per_label"]["contradict"] is None
    assert cara_metrics([])["sensitivity"] is None


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "cara", "--data", str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 2
    assert "CARA scenarios not found" in capsys.readouterr().err
    assert main(["bench", "cara", "--llm-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path)]) == 2
    assert "needs a model name" in capsys.readouterr().err


def test_dev_and_test_halves_are_fixed_by_position() -> None:
    from hindsight_bench.cara import DEV_SCENARIOS, select_split

    scenarios = load_scenarios()
    dev, test = select_split(scenarios, "dev"), select_split(scenarios, "test")
    assert len(dev) == DEV_SCENARIOS and dev + test == scenarios == select_split(scenarios, "all")
    with pytest.raises(ValueError, match="unknown split"):
        select_split(scenarios, "train")


def test_evidence_part_alone(tmp_path: Path) -> None:
    scenarios = load_scenarios()[:1]
    labels = {later.text: later.label for later in scenarios[0].later}
    result = run_cara(scripted(labels), scenarios, parts=("evidence",), workdir=tmp_path / "w", log=lambda *a: None)
    m = result["metrics"]
    assert result["records"][0]["runs"] == {} and m["sensitivity"] is None and m["consistency"] is None
    assert m["responsiveness"] == 1.0 and m["responsiveness_messages"] == 3
    with pytest.raises(ValueError, match="parts must be"):
        run_cara(scripted(labels), scenarios, parts=("dream",), log=lambda *a: None)


def test_the_balance_set_is_pairs_with_opposite_majorities() -> None:
    from hindsight_bench.cara import BALANCE, select_split

    scenarios = load_scenarios(BALANCE)
    pairs: dict[str, list[Any]] = {}
    for s in scenarios:
        assert s.pair and s.split in ("dev", "test") and len(s.messages) == 5
        pairs.setdefault(s.pair, []).append(s)
    assert len(pairs) == 16 and all(len(p) == 2 for p in pairs.values())
    for a, b in pairs.values():
        assert (a.question, a.claim, a.subject, a.split) == (b.question, b.claim, b.subject, b.split)
        assert {a.expected_stance(), b.expected_stance()} == {"yes", "no"}
        assert {m.speaker for m in a.messages} == {m.speaker for m in b.messages}
    assert len(select_split(scenarios, "dev")) == len(select_split(scenarios, "test")) == 16


def test_verdicts_part_scores_each_message_against_its_gold_side(tmp_path: Path) -> None:
    from hindsight_bench.cara import BALANCE

    scenario = load_scenarios(BALANCE)[0]  # 3 for, 1 against, 1 filler
    gold = ["yes" if i in scenario.evidence.for_ else "no" if i in scenario.evidence.against else "neither"
            for i in range(len(scenario.messages))]
    news = {"yes": "good", "no": "bad", "neither": "unrelated"}
    # The scripted model gets every message right but the filler, which it calls good news.
    script = [{"about": "x", "news": news[g] if g != "neither" else "good"} for g in gold]
    result = run_cara(ScriptedLLM(script), [scenario], parts=("verdicts",), workdir=tmp_path)
    m = result["metrics"]
    assert m["verdict_messages"] == 5 and m["verdict_accuracy"] == 0.8
    assert m["verdict_confusion"]["neither"]["yes"] == 1 and m["verdict_majority"] == 1.0
    assert "per-memory verdicts right" in format_cara(result)
