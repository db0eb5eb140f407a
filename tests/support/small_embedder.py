"""A second, cheap vector space for re-embed tests: the int8 MiniLM's first 192 dimensions, renormalised.

A real embedder (MiniLM's leading dimensions keep most of its ranking), but another space with its own name and
dimension, so a bank switched to it refuses MiniLM and the reverse, at a fraction of mpnet's cost.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hindsight_core.embedders import make_embedder

NAME = "minilm-192-test"
DIMENSION = 192


class TruncatedMiniLM:
    """MiniLM (int8) cut to ``DIMENSION`` dimensions and renormalised, recorded as ``NAME``."""

    def __init__(self) -> None:
        self._inner = make_embedder("minilm-int8")
        self.calls = 0
        self.texts = 0

    @property
    def name(self) -> str:
        """Recorded on the bank's collection."""
        return NAME

    @property
    def dimension(self) -> int:
        """Vector size."""
        return DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors (counted, so a test can tell how much a resumed run embedded)."""
        self.calls += 1
        self.texts += len(texts)
        full = np.asarray(self._inner.embed(list(texts)), dtype=np.float32)[:, :DIMENSION]
        return full / np.linalg.norm(full, axis=1, keepdims=True)
