"""``hindsight bench questions`` on a tiny conversation in LoCoMo's format (written here, not LoCoMo's data): each rule
in one process, the top-result shares and the metrics."""

from __future__ import annotations

import json
from pathlib import Path

from hindsight_bench.cli import main

SAMPLE = {
    "sample_id": "chat-1",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Bot",
        "session_1_date_time": "10:00 am on 20 April, 2026",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "When is my flight to Porto, and what's the occasion?"},
            {"speaker": "Bot", "dia_id": "D1:2",
             "text": "You leave on 3 May: your cousin Rita gets married that weekend."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Got it."},
            {"speaker": "Ana", "dia_id": "D1:4", "text": "My sister Ines is bringing her dog to the wedding."},
        ],
    },
    "qa": [
        {"question": "When am I flying to Porto and why?", "evidence": ["D1:2"], "category": 4},
        {"question": "Who is bringing a dog?", "evidence": ["D1:4"], "category": 4},
    ],
}


def test_bench_questions_compares_the_rules_in_one_process(tmp_path: Path, capsys: object) -> None:
    data = tmp_path / "chat.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["questions", "--data", str(data), "--no-realtalk", "--rules", "off,demote", "--no-progress",
                 "--out", str(out), "--json"])
    assert code == 0
    result = json.loads((out / "questions.json").read_text(encoding="utf-8"))
    chat = result["datasets"]["locomo"]
    assert chat["questions"] == 2 and chat["units"] == 4
    off, demote = chat["rules"]["off"], chat["rules"]["demote"]
    assert off["top_classified"] == 50.0  # the flight question's own text ranks first without the rule
    assert demote["top_classified"] == 0.0
    assert demote["R@5"] == off["R@5"] == 100.0
    assert [c["top"]["demote"] for c in chat["changed_top"]] == [
        "Bot: You leave on 3 May: your cousin Rita gets married that weekend."]
    assert "| demote |" in (out / "questions.md").read_text(encoding="utf-8")
