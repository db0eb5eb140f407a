"""Chroma vector index: one cosine collection per bank, always fed our own embeddings.

Chroma's default embedding function downloads a model (and fails offline), so collections are created
with ``embedding_function=None`` and every call passes vectors. A collection records the embedder's name
and dimension; opening it with another embedder is an error rather than silently mixing vector spaces.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbedderMismatchError, StoreError
from .base import translate_errors


def collection_name(bank_id: str) -> str:
    """A Chroma-safe collection name for any bank id (names are restricted; bank ids are not)."""
    return "hs_" + hashlib.sha256(bank_id.encode("utf-8")).hexdigest()[:40]


# chromadb raises many unrelated types (ValueError, its ChromaError tree, RuntimeError from the Rust core,
# httpx errors from a server): every one leaves a public method as a StoreError.
@translate_errors((Exception,), lambda self: "Chroma vector index")
class ChromaVectorIndex:
    """Vector index over a Chroma client (persistent, http or ephemeral)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def persistent(cls, path: str | Path) -> ChromaVectorIndex:
        """Embedded on-disk index (the default next to the SQLite graph store)."""
        import chromadb
        from chromadb.config import Settings

        return cls(chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False)))

    @classmethod
    def http(cls, host: str = "127.0.0.1", port: int = 8000, **kwargs: Any) -> ChromaVectorIndex:
        """A Chroma server (``chroma run``); fails fast with the address tried when unreachable."""
        import chromadb
        from chromadb.config import Settings

        try:
            client = chromadb.HttpClient(
                host=host, port=port, settings=Settings(anonymized_telemetry=False), **kwargs
            )
            client.heartbeat()
        except Exception as exc:  # chromadb raises several unrelated types for connection failures
            raise StoreError(f"cannot reach Chroma server at http://{host}:{port}: {exc}") from exc
        return cls(client)

    @classmethod
    def ephemeral(cls) -> ChromaVectorIndex:
        """In-memory index for tests and throwaway use."""
        import chromadb
        from chromadb.config import Settings

        return cls(chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False, allow_reset=True)))

    def _collection(self, bank_id: str) -> Any:
        col = self._collections.get(bank_id)
        if col is None:
            raise StoreError(f"vector collection for bank {bank_id!r} is not open; call ensure_collection first")
        return col

    def ensure_collection(self, bank_id: str, embedder_name: str, dimension: int) -> None:
        """Create the bank's collection or check that it was built with the same embedder."""
        with self._lock:
            if bank_id in self._collections:
                return
            col = self.client.get_or_create_collection(
                collection_name(bank_id),
                metadata={"bank_id": bank_id[:1000], "embedder": embedder_name, "dimension": dimension},
                configuration={"hnsw": {"space": "cosine", "ef_search": 100, "ef_construction": 100}},
                embedding_function=None,
            )
            meta = col.metadata or {}
            if meta.get("embedder") != embedder_name or int(meta.get("dimension", -1)) != dimension:
                raise EmbedderMismatchError(
                    f"bank {bank_id!r} was indexed with embedder {meta.get('embedder')!r} "
                    f"(dimension {meta.get('dimension')}), not {embedder_name!r} (dimension {dimension}); "
                    "re-index the bank or open it with the original embedder"
                )
            self._collections[bank_id] = col

    def upsert(
        self,
        bank_id: str,
        ids: Sequence[str],
        embeddings: np.ndarray,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """Add or replace vectors (in batches Chroma accepts)."""
        if not len(ids):
            return
        col = self._collection(bank_id)
        max_batch = 5000
        for i in range(0, len(ids), max_batch):
            col.upsert(
                ids=list(ids[i : i + max_batch]),
                embeddings=np.asarray(embeddings[i : i + max_batch], dtype=np.float32),
                metadatas=[_clean_meta(m) for m in metadatas[i : i + max_batch]],
            )

    def query(
        self, bank_id: str, embedding: np.ndarray, k: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest units as (id, cosine similarity), best first."""
        col = self._collection(bank_id)
        if k <= 0:
            return []
        res = col.query(
            query_embeddings=np.asarray(embedding, dtype=np.float32).reshape(1, -1),
            n_results=k,
            where=where,
            include=["distances"],
        )
        ids = res["ids"][0] if res["ids"] else []
        dists = res["distances"][0] if res["distances"] else []
        return [(i, 1.0 - float(d)) for i, d in zip(ids, dists, strict=True)]

    def query_many(self, bank_id: str, embeddings: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """``query`` for each row of ``embeddings`` in one call per 500 rows."""
        col = self._collection(bank_id)
        out: list[list[tuple[str, float]]] = []
        for i in range(0, len(embeddings), 500):
            res = col.query(
                query_embeddings=np.asarray(embeddings[i : i + 500], dtype=np.float32),
                n_results=k,
                include=["distances"],
            )
            for ids, dists in zip(res["ids"], res["distances"], strict=True):
                out.append([(j, 1.0 - float(d)) for j, d in zip(ids, dists, strict=True)])
        return out

    def get_embeddings(self, bank_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent)."""
        if not ids:
            return {}
        res = self._collection(bank_id).get(ids=list(ids), include=["embeddings"])
        embs = res["embeddings"]
        if embs is None:
            return {}
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(res["ids"], embs, strict=True)}

    def ids(self, bank_id: str) -> set[str]:
        """Every id in the bank's collection."""
        col = self._collection(bank_id)
        out: set[str] = set()
        offset, page = 0, 10000
        while True:
            res = col.get(include=[], limit=page, offset=offset)
            out.update(res["ids"])
            if len(res["ids"]) < page:
                return out
            offset += page

    def delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Remove vectors."""
        if ids:
            self._collection(bank_id).delete(ids=list(ids))

    def drop_bank(self, bank_id: str) -> None:
        """Remove the bank's collection (no error if it never existed; any other failure is raised)."""
        from chromadb.errors import NotFoundError

        with self._lock:
            self._collections.pop(bank_id, None)
            try:
                self.client.delete_collection(collection_name(bank_id))
            except NotFoundError:
                return
            except ValueError as exc:  # older clients report a missing collection as ValueError
                if "does not exist" not in str(exc):
                    raise

    def count(self, bank_id: str) -> int:
        """Number of vectors in the bank's collection."""
        return int(self._collection(bank_id).count())


def _clean_meta(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    # Chroma rejects None values and nested types in metadata, and an empty dict: that one is sent as None.
    clean = {k: v for k, v in (meta or {}).items() if isinstance(v, str | int | float | bool)}
    return clean or None
