"""Embedders: the ``Embedder`` seam and its implementations.

- ``base``: ``Embedder`` (documents), the optional ``QueryEmbedder`` capability with ``embed_queries`` (what
  recall calls), ``SplitEmbedder`` (documents and queries by two models of one vector space).
- ``sentence_transformer``: ``SentenceTransformerEmbedder`` on PyTorch (the bundled MiniLM in float32, or any
  sentence-transformers folder).
- ``onnx_minilm``: ``OnnxMiniLMEmbedder``, MiniLM with int8 weights on onnxruntime (queries in ~4 ms).
- ``mpnet``: all-mpnet-base-v2 assembled once from its chunk packages (``ensure_mpnet``, ``mpnet_embedder``).
- ``factory``: ``make_embedder("minilm" | "minilm-fp32" | "minilm-int8" | "mpnet")`` and ``HINDSIGHT_EMBEDDER``.

Importing this package loads no model and imports neither torch nor onnxruntime.
"""

from __future__ import annotations

from ..errors import EmbedderUnavailableError
from .base import Embedder, QueryEmbedder, SplitEmbedder, embed_queries
from .factory import DEFAULT_EMBEDDER, EMBEDDERS, ENV_EMBEDDER, make_embedder
from .mpnet import MPNET_DIMENSION, MPNET_NAME, MPNET_ZIP, ensure_mpnet, mpnet_embedder
from .onnx_minilm import INT8_PIP_COMMAND, MINILM_NAME, OnnxMiniLMEmbedder, int8_available
from .sentence_transformer import PRECISIONS, SentenceTransformerEmbedder, native_bf16

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "ENV_EMBEDDER",
    "INT8_PIP_COMMAND",
    "MINILM_NAME",
    "MPNET_DIMENSION",
    "MPNET_NAME",
    "MPNET_ZIP",
    "PRECISIONS",
    "Embedder",
    "EmbedderUnavailableError",
    "OnnxMiniLMEmbedder",
    "QueryEmbedder",
    "SentenceTransformerEmbedder",
    "SplitEmbedder",
    "embed_queries",
    "ensure_mpnet",
    "int8_available",
    "make_embedder",
    "mpnet_embedder",
    "native_bf16",
]
