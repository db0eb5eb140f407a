"""``hindsight bench embedders`` on a small LoCoMo-shaped file (the bundled demo conversation with questions)."""

from __future__ import annotations

import json
from pathlib import Path

from hindsight_bench.cli import main
from hindsight_bench.embedders import format_embedders, load_conversations, run_embedders
from hindsight_core.cli.demo import load_conversation

QA = [
    {"question": "What is the name of Maya's dog?", "evidence": ["D1:3"], "category": 4},
    {"question": "What does Maya like to drink?", "evidence": ["D1:9"], "category": 4},
    {"question": "Which city did Maya and Clara go to in June?", "evidence": ["D3:9"], "category": 1},
    {"question": "A question without evidence", "evidence": [], "category": 5},
]


def _data(tmp_path: Path) -> Path:
    sample = {**load_conversation(), "sample_id": "conv-26", "qa": QA}  # conv-26: a dev-half id
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_turns_are_embedded_with_their_session_date_and_speaker(tmp_path: Path) -> None:
    (conv,) = load_conversations(_data(tmp_path))
    assert conv.split == "dev" and len(conv.questions) == 3  # the question without evidence is left out
    first_dated, first_text = conv.texts["dated"][0][0], conv.texts["text"][0][0]
    assert first_dated == "[10:15 am on 3 March, 2025] Maya: " + first_text
    assert conv.turn_ids[0] == "D1:1" and len(conv.turn_ids) == sum(len(s) for s in conv.texts["text"])


def test_run_reports_cost_recall_and_agreement(tmp_path: Path) -> None:
    result = run_embedders(_data(tmp_path), variants=["minilm-fp32", "minilm"], latency_queries=3, progress=False,
                           log=lambda _: None)
    fp32, default = result["variants"]["minilm-fp32"], result["variants"]["minilm"]
    assert (default["documents"], default["queries"]) == ("minilm", "minilm-int8")
    assert default["recorded_name"] == fp32["recorded_name"] == "all-MiniLM-L6-v2"
    assert fp32["query_ms"]["n"] == 3 and fp32["ingest_units_per_s"]["dated"] > 0
    for variant in (fp32, default):
        recall = variant["R@10"]["dated"]
        assert recall["questions"] == 3 and "test" not in recall
        assert recall["all"] == recall["dev"] >= 200 / 3  # at least two of the three evidence turns in the top 10
    agreement = result["agreement_with_minilm_fp32"]["minilm"]
    assert agreement["query_cosine"]["min"] >= 0.999 and agreement["top10_overlap_dated"] >= 0.9
    # The default's documents: float32, or bfloat16 batches on CPUs with native bf16 (within 0.9999 of float32).
    assert agreement["document_cosine"]["min"] >= 0.9999
    table = format_embedders(result)
    assert "| minilm | minilm / minilm-int8 | 384 |" in table


def test_command_line_writes_json_and_markdown(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["embedders", "--data", str(_data(tmp_path)), "--embedders", "minilm-int8", "--queries", "2",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    written = json.loads((out / "embedders.json").read_text())
    assert written["benchmark"] == "embedders" and list(written["variants"]) == ["minilm-int8"]
    assert (out / "embedders.md").read_text().startswith("# Embedders")
    assert main(["embedders", "--data", str(_data(tmp_path)), "--embedders", "bert", "--out", str(out)]) == 2
