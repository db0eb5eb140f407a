"""The embedder seam, kept importable under its first name: everything lives in ``hindsight_core.embedders``.

``from hindsight_core.embedding import Embedder, SentenceTransformerEmbedder`` keeps working; new code imports
from ``hindsight_core.embedders`` (which also has the int8 MiniLM, mpnet and the factory).
"""

from __future__ import annotations

from .embedders.base import Embedder, QueryEmbedder, SplitEmbedder, embed_queries
from .embedders.factory import make_embedder
from .embedders.sentence_transformer import PRECISIONS, SentenceTransformerEmbedder, native_bf16
from .embedders.sentence_transformer import _plain_mean_pooling as _plain_mean_pooling  # tests use it
from .errors import EmbedderUnavailableError

__all__ = [
    "PRECISIONS",
    "Embedder",
    "EmbedderUnavailableError",
    "QueryEmbedder",
    "SentenceTransformerEmbedder",
    "SplitEmbedder",
    "embed_queries",
    "make_embedder",
    "native_bf16",
]
