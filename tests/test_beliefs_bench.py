"""``hindsight bench beliefs``: the labelled belief set replays through today's extractor and checks, and is scored
as a reader would score it."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_bench.beliefs import DATA, LABELS, WRONG_KINDS, load, run_beliefs, score
from hindsight_bench.commands import find_locomo
from hindsight_core.extract.base import ExtractedFact
from hindsight_core.extract.grounding import GroundingReport, Rejection


def _files() -> dict[str, Path]:
    locomo = find_locomo()
    return {"locomo": locomo, "realtalk": locomo.parent / "realtalk_dev.json"}


def test_the_committed_set_is_labelled_facts_of_both_dev_sets_split_by_conversation() -> None:
    belief_set = load(DATA)
    labels = list(belief_set.labels.values())
    assert len(labels) >= 200
    assert all(label["label"] in LABELS for label in labels)
    assert all(label.get("wrong") in WRONG_KINDS for label in labels if label["label"] == "wrong")
    sessions = {row["session"]: row for row in belief_set.sessions}
    assert {row["dataset"] for row in sessions.values()} == {"locomo", "realtalk"}
    assert all(label["session"] in sessions for label in labels)
    # Split by conversation: no conversation has sessions in both parts.
    split_of: dict[str, set[str]] = {}
    for row in sessions.values():
        split_of.setdefault(row["session"].rsplit(":", 1)[0], set()).add(row["split"])
    assert all(len(splits) == 1 for splits in split_of.values())
    assert {s for splits in split_of.values() for s in splits} == {"dev", "test"}
    assert all(row["calls"] and all("answer" in call for call in row["calls"]) for row in sessions.values())


def test_replaying_a_session_makes_the_facts_that_were_labelled(tmp_path: Path) -> None:
    """Today's extractor turns the recorded answers into exactly the facts the labels name (the set is not stale),
    and the scorer accounts for every one of them."""
    belief_set = load(DATA)
    session = "conv-26:session_1"
    rows = [row for row in belief_set.sessions if row["session"] == session]
    labels = [label for label in belief_set.labels.values() if label["session"] == session]
    path = tmp_path / "one.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [{"_meta": {}}, *rows, *labels]) + "\n", encoding="utf-8")
    result = run_beliefs("all", data_files=_files(), path=path, log=lambda _: None)
    part = result["splits"]["dev"]
    assert part["facts_labelled"] == len(labels) and part["unlabelled_stored"] == 0
    stored = part["stored"]
    assert stored == round(stored * (part["precision"] + part["wrong_share"] + part["trivial_share"]))
    assert part["stored"] < len(labels)  # the checks rejected some of the model's facts


def _fact(text: str, *sources: str) -> ExtractedFact:
    return ExtractedFact(text=text, sources=list(sources), mentioned_at=datetime(2024, 1, 1, tzinfo=UTC))


def test_the_score_counts_a_repointed_citation_as_true_and_a_lost_true_fact() -> None:
    row: dict[str, Any] = {"session": "s:session_1"}
    labels = {("s:session_1", key): value for key, value in {
        "kevin plays basketball": {"label": "true", "says": ["D1"]},
        "kevin likes nadal": {"label": "wrong", "wrong": "speaker", "says": ["D2"]},
        "kevin is a juventus fan": {"label": "wrong", "wrong": "citation", "says": ["D1"]},
        "kevin greets paola": {"label": "trivial", "says": ["D1"]},
        "paola has a parrot": {"label": "true", "says": ["D3"]},
    }.items()}
    report = GroundingReport(
        kept=[_fact("Kevin plays basketball", "D1"), _fact("Kevin likes Nadal", "D2"),
              _fact("Kevin is a Juventus fan", "D1")],  # re-pointed to the message that says it
        rejected=[Rejection(text="Kevin greets Paola", reason="junk"),
                  Rejection(text="Paola has a parrot", reason="content")])
    facts = [*report.kept, _fact("Kevin greets Paola", "D1"), _fact("Paola has a parrot", "D3")]
    scored = score([(row, report, facts)], labels)
    assert scored["before_checks"] == dict(Counter(true=2, wrong=2, trivial=1))
    assert scored["stored"] == 3 and scored["precision"] == pytest.approx(2 / 3)
    assert scored["wrong_kinds"] == {"speaker": 1}
    assert scored["true_kept_share"] == pytest.approx(1 / 2)  # one of the two true facts was rejected
    assert scored["citation_accuracy"] == 1.0
