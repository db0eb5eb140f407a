"""``hindsight bench updates --real-chat``: every supersession the rules make on real chat, judged against pairs
labelled by reading (``benchmarks/hindsight_bench/data/real_chat_supersessions.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

from hindsight_bench.real_chat_supersessions import LABELS, format_real_chat, judge, load_labels, supersessions_made


def test_the_bundled_labels_parse_and_hold_both_verdicts() -> None:
    labels = load_labels()
    assert len(labels) >= 20
    assert {x.source for x in labels} == {"realtalk", "locomo"}
    assert any(x.right for x in labels) and sum(not x.right for x in labels) >= 15
    assert all(x.why for x in labels)
    assert "_meta" in json.loads(LABELS.read_text(encoding="utf-8").splitlines()[0])


def test_judge_counts_right_wrong_and_unlabelled_per_source() -> None:
    labels = load_labels()
    right = next(x for x in labels if x.right)
    wrong = next(x for x in labels if not x.right)
    made = [{"source": right.source, "conversation": "c", "old": right.old + " and more", "new": right.new, "cue": "x"},
            {"source": wrong.source, "conversation": "c", "old": wrong.old, "new": wrong.new + "!", "cue": "y"},
            {"source": "realtalk", "conversation": "c", "old": "Ana: never read", "new": "Ana: nor this", "cue": "z"}]
    result = judge(made, labels)
    verdicts = [r["verdict"] for r in result["supersessions"]]
    assert verdicts == ["right", "wrong", "unlabelled"]
    total = {k: sum(m[k] for m in result["sources"].values()) for k in ("made", "right", "wrong", "unlabelled")}
    assert total == {"made": 3, "right": 1, "wrong": 1, "unlabelled": 1}
    text = format_real_chat(result)
    assert "UNLABELLED" in text and "Ana: never read" in text and "WRONG" in text


def test_a_real_retain_reports_the_change_and_not_the_idiom(tmp_path: Path) -> None:
    """Two sessions in LoCoMo's format, retained raw into a real store: "I left Amazon" supersedes the earlier
    statement of the job; "that trip left a lasting impression" supersedes nothing."""
    sample = {"sample_id": "mini", "conversation": {
        "speaker_a": "Jordan", "speaker_b": "Sam",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Jordan", "dia_id": "D1:1", "text": "I've been at Amazon for two years now."},
            {"speaker": "Jordan", "dia_id": "D1:2", "text": "The lake trip was lovely, so calm."},
            {"speaker": "Sam", "dia_id": "D1:3", "text": "Nice, how is work going?"}],
        "session_2_date_time": "1:00 pm on 8 November, 2023",
        "session_2": [
            {"speaker": "Jordan", "dia_id": "D2:1", "text": "I left Amazon in October. Starting at a startup soon."},
            {"speaker": "Jordan", "dia_id": "D2:2", "text": "That lake trip left a lasting impression on me."}],
    }}
    made = supersessions_made({"realtalk": [sample]}, tmp_path / "store", log=lambda _: None)
    assert [(m["old"].split(":")[1][:25], m["new"].split(":")[1][:20]) for m in made] == [
        (" I've been at Amazon for ", " I left Amazon in Oc")]
    labels_file = tmp_path / "labels.jsonl"
    labels_file.write_text(json.dumps({"_meta": {}}) + "\n" + json.dumps(
        {"source": "realtalk", "old": "Jordan: I've been at Amazon", "new": "Jordan: I left Amazon", "label": "right",
         "why": "left the job"}) + "\n", encoding="utf-8")
    result = judge(made, load_labels(labels_file))
    assert result["sources"]["realtalk"] == {"made": 1, "right": 1, "wrong": 0, "unlabelled": 0, "precision": 1.0}
