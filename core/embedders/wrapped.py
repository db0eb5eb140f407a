"""A LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding`` as an ``Embedder``, duck-typed.

Users already hold their embedding model in one of these objects (``OpenAIEmbeddings``, ``HuggingFaceEmbeddings``,
``OllamaEmbedding``...). Neither framework is imported here: an object is recognised by its methods
(``embed_documents``/``embed_query`` for LangChain, ``get_text_embedding_batch``/``get_query_embedding`` for
LlamaIndex), so the core costs nothing where the frameworks are absent.

A bank records the embedder's ``name``; a wrapped object gets a stable one from its framework, class and model
(``langchain:OpenAIEmbeddings:text-embedding-3-small``) unless ``name=`` says otherwise, and its dimension is
learnt by embedding one probe text. Its own async methods serve ``aembed``/``aembed_query``; an object that has
only async methods is run to completion on a private event loop by the sync ones.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EmbeddingError, HindsightError, InvalidInputError
from ..llm.redact import scrub
from .base import Embedder
from .checks import ProbedDimension, as_vectors

_MODEL_ATTRS = ("model", "model_name", "model_id", "deployment", "deployment_name")


@dataclass(frozen=True)
class Kind:
    """One framework's method names: batch and single-query embedding, sync and async."""

    label: str
    documents: str
    query: str
    adocuments: str
    aquery: str


LANGCHAIN = Kind("langchain", "embed_documents", "embed_query", "aembed_documents", "aembed_query")
LLAMA_INDEX = Kind("llamaindex", "get_text_embedding_batch", "get_query_embedding", "aget_text_embedding_batch",
                   "aget_query_embedding")


def kind_of(obj: Any) -> Kind | None:
    """Which framework's embedding interface ``obj`` has (sync or async pair), or None."""
    for kind in (LANGCHAIN, LLAMA_INDEX):
        sync = all(callable(getattr(obj, m, None)) for m in (kind.documents, kind.query))
        asynchronous = all(callable(getattr(obj, m, None)) for m in (kind.adocuments, kind.aquery))
        if sync or asynchronous:
            return kind
    return None


def default_name(obj: Any, kind: Kind) -> str:
    """``framework:Class:model`` (the model from the usual attributes), or ``framework:Class`` without one."""
    base = f"{kind.label}:{type(obj).__name__}"
    for attr in _MODEL_ATTRS:
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip() and value != "unknown":  # LlamaIndex's placeholder
            return f"{base}:{value.strip()}"
    return base


def _run(coro: Awaitable[Any]) -> Any:
    """Run a coroutine to completion from sync code, on a private loop in another thread when this thread
    already runs one (``asyncio.run`` refuses to nest)."""
    async def main() -> Any:
        return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=target, name="hindsight-embed")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class FrameworkEmbedder(ProbedDimension):
    """A LangChain or LlamaIndex embedding object behind the ``Embedder`` protocol (plus async twins)."""

    def __init__(self, obj: Any, *, name: str | None = None, dimension: int | None = None) -> None:
        """Wrap ``obj``; ``name`` is what banks record (default ``framework:Class:model``), ``dimension`` the
        vector size when known (else one probe text is embedded on first need)."""
        kind = kind_of(obj)
        if kind is None:
            raise InvalidInputError(f"{type(obj).__name__} is neither a LangChain Embeddings nor a LlamaIndex "
                                    "BaseEmbedding")
        if dimension is not None and dimension < 1:
            raise InvalidInputError(f"dimension must be at least 1, not {dimension}")
        self.obj = obj
        self.kind = kind
        super().__init__(name.strip() if name and name.strip() else default_name(obj, kind), dimension)

    def __repr__(self) -> str:
        return f"FrameworkEmbedder({self._name!r})"

    def _call(self, method: str, amethod: str, arg: Any) -> Any:
        sync = getattr(self.obj, method, None)
        try:
            if callable(sync):
                return sync(arg)
            return _run(getattr(self.obj, amethod)(arg))
        except HindsightError:
            raise
        except Exception as exc:  # a framework's or provider's error: named, credentials masked
            raise self._error(exc) from exc

    async def _acall(self, method: str, amethod: str, arg: Any) -> Any:
        native = getattr(self.obj, amethod, None)
        try:
            if callable(native):
                return await native(arg)
            return await asyncio.to_thread(getattr(self.obj, method), arg)
        except HindsightError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc

    def _error(self, exc: Exception) -> EmbeddingError:
        return EmbeddingError(f"embedder {self._name} failed: {type(exc).__name__}: {scrub(str(exc))}")

    def _probe_embed(self, texts: Sequence[str]) -> np.ndarray:
        raw = self._call(self.kind.documents, self.kind.adocuments, list(texts))
        return as_vectors(raw, len(texts), f"embedder {self._name}")

    def _check(self, raw: Any, count: int) -> np.ndarray:
        return as_vectors(raw, count, f"embedder {self._name}", self.dimension)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (``embed_documents`` / ``get_text_embedding_batch``) into unit float32 rows."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._check(self._call(self.kind.documents, self.kind.adocuments, list(texts)), len(texts))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries one by one with the object's query method (some models prefix queries)."""
        rows = [self._call(self.kind.query, self.kind.aquery, text) for text in texts]
        return self._check(rows, len(texts)) if rows else np.zeros((0, self.dimension), dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of ``embed``: the object's own coroutine where it has one."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        raw = await self._acall(self.kind.documents, self.kind.adocuments, list(texts))
        return await asyncio.to_thread(self._check, raw, len(texts))  # a first call may probe the dimension

    async def aembed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of ``embed_query``."""
        rows = [await self._acall(self.kind.query, self.kind.aquery, text) for text in texts]
        return await asyncio.to_thread(self._check, rows, len(texts))


def embedder_from_object(obj: Any, *, name: str | None = None) -> Embedder:
    """``obj`` as an ``Embedder``: one already (it has ``embed``) is returned as is, a LangChain or LlamaIndex
    object is wrapped (``name`` overrides its recorded identity); anything else is an ``InvalidInputError``."""
    if kind_of(obj) is not None:
        return FrameworkEmbedder(obj, name=name)
    if callable(getattr(obj, "embed", None)):
        # An Embedder by its methods: a Protocol isinstance would read ``dimension``, which may load a model.
        return obj
    raise InvalidInputError(
        f"{type(obj).__name__} is not an embedder: pass an Embedder, a LangChain Embeddings, a LlamaIndex "
        "BaseEmbedding, or a name (minilm, st:FOLDER, openai:URL#MODEL, module:attr)"
    )
