"""What every brought-in embedder's output goes through before the engine trusts it.

A LangChain or LlamaIndex object, or an HTTP endpoint, answers with lists of floats of whatever shape and scale
it likes. The engine needs one float32 row per text, all of the bank's dimension, finite and L2-normalised
(Chroma's cosine space and the semantic-link threshold assume unit vectors). ``as_vectors`` checks that and
says which embedder broke it; ``probe_dimension`` learns a dimension by embedding one text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError

PROBE_TEXT = "dimension probe"
"""The text embedded once to learn an embedder's dimension when it is not given."""


def as_vectors(raw: Any, count: int, source: str, dimension: int | None = None) -> np.ndarray:
    """``raw`` (a list of vectors or an array) as a (count, d) float32 array of unit rows.

    Raises ``EmbeddingError`` naming ``source`` for a wrong number of rows, ragged or empty rows, another
    dimension than ``dimension`` (when given) or values that are not finite. A zero row stays zero (it matches
    nothing rather than everything).
    """
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged lists, strings, None
        raise EmbeddingError(f"{source} returned something that is not a list of equal-length vectors: "
                             f"{type(exc).__name__}: {exc}") from exc
    if count == 0 and arr.size == 0:
        return np.zeros((0, dimension or 0), dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != count or arr.shape[1] == 0:
        raise EmbeddingError(f"{source} returned vectors of shape {arr.shape} for {count} text(s)")
    if dimension is not None and arr.shape[1] != dimension:
        raise EmbeddingError(f"{source} returned {arr.shape[1]}-dimensional vectors, expected {dimension}")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned vectors with NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)


def probe_dimension(embed: Callable[[Sequence[str]], np.ndarray], source: str) -> int:
    """The dimension of ``embed``'s vectors, from embedding ``PROBE_TEXT`` once."""
    vecs = embed([PROBE_TEXT])
    if vecs.ndim != 2 or vecs.shape[0] != 1 or vecs.shape[1] == 0:
        raise EmbeddingError(f"{source} returned no usable vector for a probe text (shape {vecs.shape})")
    return int(vecs.shape[1])


class ProbedDimension:
    """The ``name`` and ``dimension`` of an embedder that may not know its vector size: given, or learnt from one
    probe text on first use (once, under a lock). Subclasses set ``_name`` and ``_dimension`` through ``__init__``
    and define ``_probe_embed`` (the raw call, without the size check that needs the dimension)."""

    def __init__(self, name: str, dimension: int | None) -> None:
        self._name = name
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The identity banks record."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector size (given, or learnt from one probe text on first use)."""
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = probe_dimension(self._probe_embed, self._name)
        return self._dimension

    def _probe_embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError
