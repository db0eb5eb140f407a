"""all-mpnet-base-v2 on onnxruntime: the int8 graph is built once from the cached mpnet folder (with a record of
its sha256 and the exporter versions), reused, and gives the PyTorch model's vectors, so a bank built by mpnet
opens and is searched with it. One real export per session (20-60 s on 2 cores): the slow tier."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.assets.onnx_export import ensure_transformer_onnx, read_build_record
from hindsight_core.cli.demo import load_conversation
from hindsight_core.cli.formats import locomo_sessions
from hindsight_core.embedders import EMBEDDERS, MPNET_NAME, MPNET_ZIP, ensure_mpnet, mpnet_embedder
from hindsight_core.embedders.onnx_mpnet import OnnxMpnetEmbedder

pytestmark = pytest.mark.slow

TEXTS = ["green tea for me", "I drink coffee in the morning", "the vet was closed on Sunday",
         "What does Maya like to drink?", "Ünïcödé 東京 🎨", "",
         "Maya walked Pepper along the river before work and then met Jonah for coffee. " * 40]  # > 384 tokens


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The int8 graph built into a fresh cache by a new process's first ``make_embedder("mpnet-int8")``, and what
    that process printed on stderr (the weights folder is shared with the real cache: only the graph is new)."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    folder = ensure_mpnet()
    (cache / folder.name).symlink_to(folder, target_is_directory=True)
    for marker in folder.parent.glob(f"{folder.name}.*.json"):
        shutil.copy(marker, cache / marker.name)
    code = "from hindsight_core.embedders import make_embedder; make_embedder('mpnet-int8')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "HINDSIGHT_CACHE_DIR": str(cache)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return cache / "all-mpnet-base-v2.int8.onnx", proc.stderr.splitlines()


def test_the_graph_is_built_once_recorded_and_reused(built: tuple[Path, list[str]]) -> None:
    path, lines = built
    # One line on stderr, begun when the build starts and ended when it ends; no progress bars, no traceback.
    assert len(lines) == 1 and lines[0].startswith("hindsight: building the ONNX graph of all-mpnet-base-v2"), lines
    assert " built in " in lines[0] and path.is_file()
    record = read_build_record(path)
    assert record is not None
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["identity"]["source_sha256"] == MPNET_ZIP.sha256
    assert {"torch", "transformers", "onnx", "onnxruntime", "onnx_ir"} <= set(record["versions"])
    assert record["quantization"]["bits"] == 8
    assert not (path.parent / "all-mpnet-base-v2.fp32.onnx").exists()  # the float32 step is not kept
    again: list[str] = []
    assert ensure_transformer_onnx(ensure_mpnet(), name=MPNET_NAME, source_sha256=MPNET_ZIP.sha256,
                                   variant="int8", cache_dir=path.parent, announce=again.append) == path
    assert again == []


def test_int8_vectors_are_the_pytorch_vectors(built: tuple[Path, list[str]]) -> None:
    onnx = OnnxMpnetEmbedder("int8", model_path=built[0])
    assert (onnx.name, onnx.dimension) == ("all-mpnet-base-v2", 768)
    reference = mpnet_embedder(precision="float32").embed(TEXTS)
    batch = onnx.embed(TEXTS)
    single = np.vstack([onnx.embed_query([t]) for t in TEXTS])
    assert batch.shape == (len(TEXTS), 768) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert float((batch * reference).sum(axis=1).min()) > 0.998  # measured 0.9995+ on LoCoMo turns
    assert float((batch * single).sum(axis=1).min()) > 0.9999  # padding and batch order change nothing
    assert float(batch[-1] @ onnx.embed([TEXTS[-1] + " A different ending.", "x"])[0]) > 0.9999  # cut at 384


def test_a_bank_built_by_mpnet_is_searched_with_the_int8_graph(tmp_path: Path,
                                                               built: tuple[Path, list[str]]) -> None:
    assert {"mpnet-int8", "mpnet-onnx"} <= set(EMBEDDERS)
    messages = locomo_sessions(load_conversation())[-1].messages
    with Hindsight.open(tmp_path / "memory", embedder="mpnet") as hs:
        hs.bank("maya").retain(messages, extract=False)
    with Hindsight.open(tmp_path / "memory", embedder=OnnxMpnetEmbedder("int8", model_path=built[0])) as hs:
        rec = hs.bank("maya", create=False).recall("Who looked after Pepper?", budget=300)
        assert rec.memories and hs.embedder.name == "all-mpnet-base-v2"
