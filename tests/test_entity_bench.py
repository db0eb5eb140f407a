"""The entity-resolution benchmark: its labelled set, its split, and the figures the resolver must reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight_bench.cli import main
from hindsight_bench.entities import (
    DATA,
    format_entity_bench,
    load_scenarios,
    metrics,
    parse_offset,
    run_entity_bench,
    split_of,
)

LOCOMO_SPEAKERS = {"Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey",
                   "Andrew", "James", "Deborah", "Jolene", "Evan", "Sam", "Calvin", "Dave"}


def test_labelled_set_is_well_formed() -> None:
    scenarios = load_scenarios()
    ids = [s["id"] for s in scenarios]
    assert len(scenarios) >= 300 and len(ids) == len(set(ids))
    names: set[str] = set()
    for s in scenarios:
        scored = 0
        for r in s["retains"]:
            parse_offset(r["at"])
            for mentions in r["facts"]:
                for m in mentions:
                    assert len(m) in (2, 3) and m[1] in {"PERSON", "LOCATION", "ORGANIZATION", "PRODUCT", "CONCEPT",
                                                          "OTHER"}
                    names.add(m[0])
                    scored += len(m) == 3
        assert scored >= 2, s["id"]
    assert names >= LOCOMO_SPEAKERS
    categories = {s["category"] for s in scenarios}
    assert {"confusable", "nickname", "variant", "partial", "place-org", "cross-bank", "locomo"} <= categories
    # The split is fixed by id and roughly halves the set.
    dev = [i for i in ids if split_of(i) == "dev"]
    assert split_of("confusable-emma-emmanuel-alone") == split_of("confusable-emma-emmanuel-alone")
    assert 0.4 < len(dev) / len(ids) < 0.6


def test_metrics_count_pairs() -> None:
    pairs = [{"expected": e, "got": g} for e, g in (("same", "same"), ("same", "different"),
                                                    ("different", "same"), ("different", "different"))]
    m = metrics(pairs)
    assert (m["precision"], m["recall"], m["merges"], m["gold_same"], m["false_merges"]) == (0.5, 0.5, 2, 2, 1)
    assert metrics([])["precision"] == 1.0


def test_test_half_precision_and_recall() -> None:
    result = run_entity_bench("test", mentions=False)
    m = result["metrics"]
    assert m["precision"] >= 0.98, format_entity_bench(result)
    assert m["recall"] >= 0.9, format_entity_bench(result)
    assert m["gold_same"] > 100 and m["pairs"] > 250
    # The pairs are never merged.
    assert not [e for e in result["errors"] if e["category"] in ("confusable", "cross-bank")]


def test_dev_half_runs_and_is_reported_separately() -> None:
    result = run_entity_bench("dev", mentions=False)
    assert set(result["by_split"]) == {"dev"} and result["metrics"]["precision"] >= 0.98


def test_unknown_split_is_refused() -> None:
    with pytest.raises(ValueError):
        run_entity_bench("train")


def test_cli_prints_the_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = tmp_path / "s.jsonl"
    small.write_text("\n".join(line for line in DATA.read_text(encoding="utf-8").splitlines()
                               if json.loads(line)["id"].startswith("confusable-emma-")) + "\n", encoding="utf-8")
    assert main(["entities", "--data", str(small), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["false_merges"] == 0 and out["scenarios"] >= 2
    assert main(["entities", "--data", str(small), "--split", "test"]) == 0
    assert "precision" in capsys.readouterr().out
    assert main(["entities", "--data", str(tmp_path / "missing.jsonl")]) == 2


# --------------------------------------------------------------------------------------------------
# the chat-mention set: is each kept mention a name, and of the right type
# --------------------------------------------------------------------------------------------------
def test_mention_set_is_well_formed() -> None:
    from hindsight_bench.mentions import MENTIONS_DATA, load_conversations, parse_label

    convs = load_conversations(MENTIONS_DATA)
    types = {"PERSON", "LOCATION", "ORGANIZATION", "PRODUCT", "CONCEPT", "OTHER"}
    counts = {"dev": [0, 0], "test": [0, 0]}
    for conv in convs:
        for speaker, text, names, not_names in conv["messages"]:
            assert speaker in conv["speakers"]
            for label in names:
                name, etype = parse_label(label)
                assert etype in types and name.casefold() in text.casefold(), (conv["id"], label)
            assert all(n.casefold() in text.casefold() for n in not_names), conv["id"]
            counts[conv["split"]][0] += len(names)
            counts[conv["split"]][1] += len(not_names)
    assert len({c["id"] for c in convs}) == len(convs) >= 20
    # Several hundred candidate mentions, both kinds in both halves.
    assert all(n >= 140 and x >= 140 for n, x in counts.values()), counts


def test_mention_metrics_count() -> None:
    from hindsight_bench.mentions import mention_metrics

    rows = [{"kept": {"mel": ("Mel", "PERSON"), "glad": ("Glad", "PERSON"), "porto": ("Porto", "PERSON")},
             "gold": {"mel": ("Mel", "PERSON"), "porto": ("Porto", "LOCATION"), "ruth": ("Ruth", "PERSON")},
             "not_names": {"glad"}}]
    m = mention_metrics(rows)
    assert (m["precision"], m["recall"], m["type_accuracy"], m["not_names_kept"]) == (0.6667, 0.6667, 0.5, 1)


def test_mention_bench_test_half() -> None:
    from hindsight_bench.mentions import format_mention_bench, run_mention_bench

    result = run_mention_bench("test")
    m = result["metrics"]
    assert set(result["by_split"]) == {"test"} and m["gold"] > 150
    # Floors that guard today's figures (test: precision 0.89, recall 0.86). The target precision
    # of 0.95 is not reached yet: the small model's remaining false names are capitalised common nouns.
    assert m["recall"] >= 0.85 and m["precision"] >= 0.85, format_mention_bench(result)
    assert m["not_names_kept"] <= 0.1 * m["not_names"]


def test_entities_command_reports_mentions_with_the_bundled_set(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_entity_bench("dev")
    assert "mentions" in result and result["mentions"]["split"] == "dev"
    assert "entity mentions" in format_entity_bench(result)
