"""Embedders: the ``Embedder`` seam and its implementations.

- ``base``: ``Embedder`` (documents), the optional ``QueryEmbedder`` capability with ``embed_queries`` (what
  recall calls), ``SplitEmbedder`` (documents and queries by two models of one vector space).
- ``sentence_transformer``: ``SentenceTransformerEmbedder`` on PyTorch (the bundled MiniLM in float32, or any
  sentence-transformers folder).
- ``onnx_minilm``: ``OnnxMiniLMEmbedder``, MiniLM with int8 weights on onnxruntime (queries in ~4 ms).
- ``mpnet``: all-mpnet-base-v2 assembled once from its chunk packages (``ensure_mpnet``, ``mpnet_embedder``).
- ``onnx_base``: what the ONNX embedders share (tokenizer, length-sorted batches, mean pooling, sessions);
  ``onnx_mpnet``: mpnet's ONNX graphs (``mpnet-onnx``, ``mpnet-int8``), built once by ``assets/onnx_export.py``.
- ``wrapped``: ``FrameworkEmbedder``, a LangChain ``Embeddings`` or LlamaIndex ``BaseEmbedding`` (duck-typed).
- ``st_model``: any sentence-transformers model on this machine (``st:FOLDER``); ``openai_compat``: an
  OpenAI-compatible ``/embeddings`` endpoint (``openai:URL#MODEL``); ``spec``: those strings and ``module:attr``.
- ``factory``: ``make_embedder("minilm" | "minilm-int8" | "mpnet" | "mpnet-int8" | ...)``, ``HINDSIGHT_EMBEDDER``.

Importing this package loads no model and imports neither torch nor onnxruntime.
"""

from __future__ import annotations

from ..errors import EmbedderUnavailableError
from .base import AsyncEmbedder, Embedder, QueryEmbedder, SplitEmbedder, aembed_documents, aembed_queries, embed_queries
from .factory import DEFAULT_EMBEDDER, EMBEDDERS, ENV_EMBEDDER, FALLBACK_EMBEDDER, default_embedder, make_embedder
from .mpnet import MPNET_DIMENSION, MPNET_NAME, MPNET_ZIP, ensure_mpnet, mpnet_embedder
from .onnx_minilm import INT8_PIP_COMMAND, MINILM_NAME, OnnxMiniLMEmbedder, int8_available
from .sentence_transformer import PRECISIONS, SentenceTransformerEmbedder, native_bf16

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "ENV_EMBEDDER",
    "FALLBACK_EMBEDDER",
    "INT8_PIP_COMMAND",
    "MINILM_NAME",
    "MPNET_DIMENSION",
    "MPNET_NAME",
    "MPNET_ZIP",
    "PRECISIONS",
    "AsyncEmbedder",
    "Embedder",
    "EmbedderUnavailableError",
    "OnnxMiniLMEmbedder",
    "QueryEmbedder",
    "SentenceTransformerEmbedder",
    "SplitEmbedder",
    "aembed_documents",
    "aembed_queries",
    "default_embedder",
    "embed_queries",
    "ensure_mpnet",
    "int8_available",
    "make_embedder",
    "mpnet_embedder",
    "native_bf16",
]
