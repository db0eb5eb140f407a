"""Which storage backend a benchmark runs on: a name -> factory registry.

A factory takes a working folder (and keyword arguments for the ``Hindsight`` constructor, such as
``llm=``) and returns a context manager yielding an open ``Hindsight`` (a ``Hindsight`` itself is one:
leaving the ``with`` block closes it). A server backend (Neo4j/Bolt graph
store + Chroma server) registers itself here with ``register_backend("server", factory)``; its factory
starts or connects to its servers and stops them on exit. Benchmarks take such a factory as their
``open_hindsight`` argument and key their results by backend name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_core.hindsight import Hindsight

OpenHindsight = Callable[..., "AbstractContextManager[Hindsight]"]
"""A factory: ``factory(root, **kwargs)`` -> context manager yielding an open Hindsight. ``root`` is a working
folder; keyword arguments (``llm=``, ``embedder=``, ``settings=``) go to the ``Hindsight`` constructor."""


def open_embedded(root: Path, **kwargs: Any) -> Hindsight:
    """The embedded default: SQLite graph store + persistent Chroma under ``root``."""
    from hindsight_core.hindsight import Hindsight

    return Hindsight.open(root, **kwargs)


def open_server(root: Path, **kwargs: Any) -> AbstractContextManager[Hindsight]:
    """The server backend: Neo4j graph store over Bolt + Chroma server. Uses the servers named by
    ``NEO4J_URI``/``CHROMA_PORT`` (and friends) when set; from a checkout it otherwise starts throwaway
    servers under ``root`` with the test suite's launcher (see ``hindsight_bench.servers``)."""
    from .servers import open_server_backend

    return open_server_backend(root, **kwargs)


BACKENDS: dict[str, OpenHindsight] = {"embedded": open_embedded, "server": open_server}
"""Known backends by name; ``embedded`` always exists."""


def register_backend(name: str, factory: OpenHindsight) -> None:
    """Make ``factory`` available to the benchmarks (and to ``--backend NAME``) under ``name``."""
    if not name or name == "both":
        raise ValueError(f"invalid backend name {name!r}")
    BACKENDS[name] = factory


def resolve_backends(choice: str | None) -> dict[str, OpenHindsight]:
    """``None``/``"embedded"`` -> the embedded backend; a name -> that backend; ``"both"`` -> every
    registered backend (embedded first). Raises ``KeyError`` naming the known backends."""
    if choice is None:
        choice = "embedded"
    if choice in ("both", "all"):
        return dict(BACKENDS)
    if choice not in BACKENDS:
        raise KeyError(f"unknown backend {choice!r}; known: {', '.join(BACKENDS)}")
    return {choice: BACKENDS[choice]}


class QueryEmbeddingCache:
    """Wraps an embedder and remembers single-text embeddings (queries), so a benchmark that recalls the
    same question under several configurations embeds it once. Batches (retain) pass straight through.

    The first recall of a question still pays the real embedding, so latency timed on it is genuine; the
    vectors are deterministic, so reusing them changes no score.
    """

    def __init__(self, inner: Any, max_items: int = 4096) -> None:
        self.inner = inner
        self.max_items = max_items
        self.fresh = False  # True: always embed for real (and refresh the cache), e.g. while timing a recall
        self._cache: dict[tuple[str, str], Any] = {}

    @property
    def name(self) -> str:
        """The wrapped embedder's name."""
        return str(self.inner.name)

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.inner.dimension)

    def embed(self, texts: Any) -> Any:
        """Embeddings of ``texts``; a single text is served from (and stored in) the cache."""
        return self._cached("embed", texts, self.inner.embed)

    def embed_query(self, texts: Any) -> Any:
        """Query embeddings by the wrapped embedder's query path (``embed_queries``), cached like ``embed``."""
        from hindsight_core.embedders import embed_queries

        return self._cached("query", texts, lambda t: embed_queries(self.inner, t))

    def _cached(self, path: str, texts: Any, compute: Callable[[Any], Any]) -> Any:
        if len(texts) != 1:
            return compute(texts)
        key = (path, texts[0])  # the two paths may give (slightly) different vectors for one text
        hit = None if self.fresh else self._cache.get(key)
        if hit is None:
            hit = compute(texts)
            if len(self._cache) >= self.max_items:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = hit
        return hit


def cache_query_embeddings(hs: Hindsight) -> QueryEmbeddingCache | None:
    """Give ``hs``'s recall pipeline a ``QueryEmbeddingCache`` (benchmarks only); None if it has none."""
    recaller = getattr(hs, "recaller", None)
    if recaller is None or not hasattr(recaller, "embedder"):
        return None
    if not isinstance(recaller.embedder, QueryEmbeddingCache):
        recaller.embedder = QueryEmbeddingCache(recaller.embedder)
    return recaller.embedder


@contextmanager
def real_embeddings(cache: QueryEmbeddingCache | None) -> Iterator[None]:
    """Within the block the cache embeds for real (a timed recall pays the full cost)."""
    if cache is None:
        yield
        return
    cache.fresh = True
    try:
        yield
    finally:
        cache.fresh = False
