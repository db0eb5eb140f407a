"""The embedder seam: ``Embedder`` (documents), the optional ``QueryEmbedder`` capability, and ``SplitEmbedder``.

Recall embeds one short query per call and waits for it; retain embeds hundreds of units at a time. The two are
best served by different code paths (the bundled MiniLM embeds queries with an int8 ONNX model in about a third
of the time and documents with the float32 model), so an embedder may say how it embeds queries with
``embed_query``. Callers go through ``embed_queries``, which falls back to ``embed`` for embedders without it.
Async callers go through ``aembed_documents``/``aembed_queries``: an embedder's native coroutines (``aembed``,
``aembed_query``: the ``AsyncEmbedder`` capability) where it has them, else the sync path in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An ``Embedder`` with its own path for search queries (optional capability; see ``embed_queries``).

    ``embed_query`` must return vectors comparable with ``embed``'s (same space, same recorded ``name``): it may
    be faster or approximate, or add a query prompt, but a bank built with ``embed`` is searched with it.
    """

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; returns an array of shape (len(texts), dimension)."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed search queries with ``embedder.embed_query`` where it has one, else with ``embed``.

    The one entry point for query embedding: an embedder written against the plain ``Embedder`` protocol keeps
    working unchanged (a default method on the protocol would reach only classes that subclass it).
    """
    method = getattr(embedder, "embed_query", None)
    return method(texts) if callable(method) else embedder.embed(texts)


class SplitEmbedder:
    """Documents through one embedder, queries through another, under one recorded name.

    Both must produce vectors in the same space: the constructor insists on the same ``name`` and ``dimension``
    (what the vector index records per bank), so a bank built by ``documents`` opens and is searched as before.
    Whether two models really agree is a measured claim (``tests/test_embedders_int8.py`` and
    ``hindsight bench embedders`` for the int8 MiniLM), not something this class can check.
    """

    def __init__(self, documents: Embedder, queries: Embedder) -> None:
        if documents.name != queries.name or documents.dimension != queries.dimension:
            raise ValueError(
                f"a split embedder needs one vector space: documents {documents.name!r} ({documents.dimension}) "
                f"vs queries {queries.name!r} ({queries.dimension})"
            )
        self.documents = documents
        self.queries = queries

    def __repr__(self) -> str:
        return f"SplitEmbedder(documents={self.documents!r}, queries={self.queries!r})"

    @property
    def name(self) -> str:
        """The name both halves share (recorded on every vector collection)."""
        return self.documents.name

    @property
    def dimension(self) -> int:
        """Vector size."""
        return self.documents.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (retain, re-indexing): the ``documents`` embedder."""
        return self.documents.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries: the ``queries`` embedder (its own query path, if it has one)."""
        return embed_queries(self.queries, texts)


@runtime_checkable
class AsyncEmbedder(Embedder, Protocol):
    """An ``Embedder`` with native async twins (optional capability; see ``aembed_documents``/``aembed_queries``).

    Wrapped framework objects have them when the object does (a LangChain ``aembed_documents``, a LlamaIndex
    ``aget_text_embedding_batch``): an async caller then awaits the object's own coroutine instead of a thread.
    """

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of ``embed``."""
        ...

    async def aembed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of ``embed_query``."""
        ...


async def aembed_documents(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed documents from async code: ``embedder.aembed`` where it has one, else ``embed`` in a worker thread
    (so the event loop is never blocked by a model running on the CPU)."""
    method = getattr(embedder, "aembed", None)
    if callable(method):
        return await method(texts)
    return await asyncio.to_thread(embedder.embed, texts)


async def aembed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed search queries from async code: ``aembed_query``, else ``aembed``, else ``embed_queries`` in a
    worker thread (the async twin of ``embed_queries``)."""
    for attr in ("aembed_query", "aembed"):
        method = getattr(embedder, attr, None)
        if callable(method):
            return await method(texts)
    return await asyncio.to_thread(embed_queries, embedder, texts)
