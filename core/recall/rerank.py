"""The reranker seam. None is used by default: no cross-encoder weights can be had offline here."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import EmbedderUnavailableError


@runtime_checkable
class Reranker(Protocol):
    """Rescores (query, text) pairs; higher is more relevant."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` (for users who have such a model locally)."""

    def __init__(self, model: str, *, max_pairs: int = 100) -> None:
        self.model_name = model
        self.max_pairs = max_pairs
        self._model: Any = None
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cross-encoder scores for each (query, text) pair."""
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError as exc:  # the plain install has no PyTorch
                    raise EmbedderUnavailableError(
                        f"the cross-encoder reranker needs sentence-transformers and torch ({exc.name} is not "
                        f"installed); install with: pip install 'hindsight-memory[st]'") from exc
                self._model = CrossEncoder(self.model_name, device="cpu", local_files_only=True)
        scores = self._model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [float(s) for s in scores]
