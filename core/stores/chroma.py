"""Chroma vector index: one cosine collection per bank, always fed our own embeddings.

Chroma's default embedding function downloads a model (and fails offline), so collections are created
with ``embedding_function=None`` and every call passes vectors. A collection records the embedder's name
and dimension; opening it with another embedder is an error rather than silently mixing vector spaces.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbedderMismatchError, StoreError
from .base import VectorFilter, VectorMeta, translate_errors
from .chroma_filters import chroma_metadata, chroma_where
from .chroma_generations import (
    Generation,
    delete_collection,
    forget_generation,
    new_collection_name,
    read_generation,
    without_retired,
    write_generation,
)
from .chroma_transient import RetryingReads
from .exact_vectors import BankVectors, ExactCache
from .id_vectors import IdVectorCopies, top_k
from .process_guard import ProcessGuard

log = logging.getLogger(__name__)

_OPEN: dict[str, ChromaVectorIndex] = {}  # embedded indexes open in this process, by real path
_OPEN_LOCK = threading.Lock()


HNSW_EF_SEARCH = 200
"""Candidates HNSW explores per query: twice recall's 100 per channel. At Chroma's 100 a server's semantic top 100
matched the exact one at 98.7-99.0% on a LoCoMo bank (a rank-9 hit went missing), and the server backend drifted
0.2 points from the exact embedded one at R@2000tok; at 200, 99.97%, at 400 100%."""


ID_QUERY_MIN = 1000
"""An id-restricted query over more ids than this is Chroma's own (``query(ids=...)``); fewer are read back and
ranked here (Chroma's get costs about 45 us an id, its id-restricted query about 10-40 ms whatever the count)."""


def collection_name(bank_id: str) -> str:
    """A Chroma-safe collection name for any bank id (names are restricted; bank ids are not): the bank's base
    collection. After a re-embed the bank's vectors live in another one, recorded by ``chroma_generations``."""
    return "hs_" + hashlib.sha256(bank_id.encode("utf-8")).hexdigest()[:40]


# chromadb raises many unrelated types (ValueError, its ChromaError tree, RuntimeError from the Rust core,
# httpx errors from a server): every one leaves a public method as a StoreError.
@translate_errors((Exception,), lambda self: f"Chroma vector index{' at ' + self.path if self.path else ''}")
class ChromaVectorIndex:
    """Vector index over a Chroma client (persistent, http or ephemeral).

    The persistent (embedded) index is shared safely by several processes: every call goes through a
    ``ProcessGuard`` (a file lock taken in turn, and a reload of this process's client when another process
    wrote since); see ``process_guard``. Server and in-memory clients need no guard.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        make_client: Callable[[], Any] | None = None,
        guard_path: str | None = None,
        lock_timeout: float = 30.0,
        exact_limit: int = 20_000,
        copy_max_bytes: int | None = None,
    ) -> None:
        """Wrap ``client``; or, with ``guard_path``, clients made by ``make_client`` under a process guard.

        Banks of at most ``exact_limit`` vectors are searched exactly from an in-memory copy (see
        ``exact_vectors``; 0 turns it off). Larger banks get a copy for ``rank_ids``, up to
        ``copy_max_bytes`` in all (see ``id_vectors``; 0 turns it off; None: ``$HINDSIGHT_VECTOR_COPY_MB`` or
        512 MiB). Only a client that no other process
        writes to behind this one's back may keep such copies: the server client does not.
        """
        self.client = client
        self._exact = ExactCache(max_bank=exact_limit)
        self._copies = IdVectorCopies(max_bytes=copy_max_bytes if exact_limit > 0 else 0, min_vectors=exact_limit)
        self.path = guard_path
        self._make_client = make_client
        self._collections: dict[str, Any] = {}
        self._known: dict[str, tuple[str, int]] = {}  # banks ensured by this process: embedder name, dimension
        self._lock = threading.Lock()
        self._guard = (
            ProcessGuard(guard_path, reload=self._reload, probe=self._probe, timeout=lock_timeout)
            if guard_path is not None else None
        )
        self._opened = 1
        # Without a guard (the in-process index), this process's writes still take turns when copies are kept: a
        # write reads back what it stored and then updates the copies, and a delete in between would leave the
        # deleted vector in a copy. A server client keeps no copies and writes freely.
        self._local_writes: threading.RLock | None = (
            threading.RLock() if self._guard is None and (exact_limit > 0 or self._copies.max_bytes > 0) else None)

    @classmethod
    def persistent(cls, path: str | Path, *, lock_timeout: float = 30.0) -> ChromaVectorIndex:
        """Embedded on-disk index (the default next to the SQLite graph store), safe to share between processes
        (they take turns; ``StoreLockedError`` after waiting ``lock_timeout`` seconds for another one)."""
        import chromadb
        from chromadb.config import Settings

        # Chroma keeps one client system per exact path string in a process, so this process keeps one index
        # (one client, one guard) per real path too: a second open shares it, and the last close releases it.
        real = os.path.realpath(path)
        with _OPEN_LOCK:
            shared = _OPEN.get(real)
            if shared is not None:
                shared._opened += 1
                return shared
            Path(real).mkdir(parents=True, exist_ok=True)
            index = cls(
                make_client=lambda: chromadb.PersistentClient(path=real,
                                                              settings=Settings(anonymized_telemetry=False)),
                guard_path=real, lock_timeout=lock_timeout,
            )
            _OPEN[real] = index
            return index

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
        # Other clients write to the server unseen: no in-memory copy, the server's HNSW answers every query.
        return cls(client, exact_limit=0, copy_max_bytes=0)

    @classmethod
    def ephemeral(cls) -> ChromaVectorIndex:
        """In-memory index for tests and throwaway use; each is its own (Chroma keeps one in-memory system per process,
        so every ephemeral index gets a database of its own in it: two ``vectors="memory"`` stores in one process
        never see each other's vectors)."""
        import uuid

        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=True)
        database = f"hindsight-{uuid.uuid4().hex}"
        chromadb.AdminClient(Settings(anonymized_telemetry=False, allow_reset=True, is_persistent=False)
                             ).create_database(database)
        return cls(chromadb.EphemeralClient(settings=settings, database=database))

    # guarded access ------------------------------------------------------------------------------
    def _reading(self) -> contextlib.AbstractContextManager[None]:
        return self._guard.reading() if self._guard is not None else contextlib.nullcontext()

    def _writing(self) -> contextlib.AbstractContextManager[Any]:
        if self._guard is not None:
            return self._guard.writing()
        return self._local_writes if self._local_writes is not None else contextlib.nullcontext()

    def _settling(self) -> contextlib.AbstractContextManager[Any]:
        """What a copy's load holds for its last step (replaying the writes queued meanwhile, then comparing row
        counts): a read hold across processes, this process's write turn without a guard."""
        return self._reading() if self._guard is not None else self._writing()

    def _reload(self) -> None:
        """A fresh client that reads the index from disk (another process wrote since this one loaded it)."""
        from chromadb.api.shared_system_client import SharedSystemClient

        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
        # close() stops the cached system only when no other client of this process uses the path.
        SharedSystemClient._identifier_to_system.pop(self.path or "", None)
        SharedSystemClient._identifier_to_refcount.pop(self.path or "", None)
        self._collections.clear()  # Collection objects of a closed client are dead
        self._exact.drop()  # another process wrote: the disk is the truth again
        self._copies.drop()
        assert self._make_client is not None
        self.client = self._make_client()

    def _probe(self) -> None:
        """Touch every collection (count, one query): replays the write-ahead log; raises if unusable."""
        try:
            for col in self.client.list_collections():
                n = col.count()
                dim = int((col.metadata or {}).get("dimension", 0))
                if n and dim:
                    col.query(query_embeddings=np.ones((1, dim), dtype=np.float32), n_results=1, include=[])
        except Exception as exc:
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    def _cached(self, bank_id: str) -> BankVectors | None:
        """The bank's in-memory copy for exact search (loaded on first use), or None (too large, or off)."""
        if self._exact.max_bank <= 0:
            return None
        col = self._collection(bank_id)

        def load() -> BankVectors:
            ids: list[str] = []
            vectors: list[Any] = []
            metas: list[dict[str, Any]] = []
            offset, page = 0, 5000
            while True:
                res = col.get(include=["embeddings", "metadatas"], limit=page, offset=offset)
                ids += res["ids"]
                if res["embeddings"] is not None:
                    vectors += list(res["embeddings"])
                metas += [m or {} for m in (res["metadatas"] or [{}] * len(res["ids"]))]
                if len(res["ids"]) < page:
                    break
                offset += page
            dim = int((col.metadata or {}).get("dimension", 0)) or (len(vectors[0]) if vectors else 0)
            matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), dim)
            return BankVectors(ids, matrix, metas)

        return self._exact.get(bank_id, size=lambda: int(col.count()), load=load)

    def _collection(self, bank_id: str) -> Any:
        col = self._collections.get(bank_id)
        if col is not None:
            return col
        if bank_id in self._known:  # ensured before a reload replaced the client
            try:
                col = self.client.get_collection(self._active_name(bank_id), embedding_function=None)
            except Exception as exc:
                raise StoreError(f"the vector collection of bank {bank_id!r} is gone (bank deleted by another "
                                 f"process?): {exc}") from exc
            name, dimension = self._known[bank_id]
            self._check_embedder(bank_id, col, name, dimension)  # another process may have re-embedded the bank
            return self._collections[bank_id]
        raise StoreError(f"vector collection for bank {bank_id!r} is not open; call ensure_collection first")

    def _active_name(self, bank_id: str) -> str:
        """The collection that holds the bank's vectors now (its base one unless a re-embed swapped it)."""
        return read_generation(self.client, collection_name(bank_id)).active

    def _create(self, name: str, bank_id: str, embedder_name: str, dimension: int) -> Any:
        return self.client.get_or_create_collection(
            name,
            metadata={"bank_id": bank_id[:1000], "embedder": embedder_name, "dimension": dimension},
            configuration={"hnsw": {"space": "cosine", "ef_search": HNSW_EF_SEARCH, "ef_construction": 100}},
            embedding_function=None,
        )

    # VectorIndex ---------------------------------------------------------------------------------
    def ensure_collection(self, bank_id: str, embedder_name: str, dimension: int) -> None:
        """Create the bank's collection or check that it was built with the same embedder."""
        if self._known.get(bank_id) == (embedder_name, dimension) and bank_id in self._collections:
            return  # checked already; a reload since then re-fetches it on the next guarded access
        if self._guard is not None:
            with self._reading():  # the common case, an existing collection, must not make others reload
                try:
                    col = self.client.get_collection(self._active_name(bank_id), embedding_function=None)
                except Exception:
                    col = None
                if col is not None:
                    self._check_embedder(bank_id, col, embedder_name, dimension)
                    if _wide_enough(col):
                        return  # else widened below, under the write lock
        with self._writing(), self._lock:
            same = self._known.get(bank_id) == (embedder_name, dimension)  # else checked below, even if cached
            if bank_id in self._collections and self._guard is None and same:
                return
            col = self._create(self._active_name(bank_id), bank_id, embedder_name, dimension)
            self._check_embedder(bank_id, col, embedder_name, dimension)
            if not _search_wider(col):
                self._known.pop(bank_id, None)  # so that the next ensure_collection tries again

    def _check_embedder(self, bank_id: str, col: Any, embedder_name: str, dimension: int) -> None:
        meta = col.metadata or {}
        if meta.get("embedder") != embedder_name or int(meta.get("dimension", -1)) != dimension:
            raise EmbedderMismatchError(
                f"bank {bank_id!r} was indexed with embedder {meta.get('embedder')!r} "
                f"(dimension {meta.get('dimension')}), not {embedder_name!r} (dimension {dimension}); "
                f"open it with {meta.get('embedder')!r}, or switch it with: hindsight reembed BANK --embedder NAME"
            )
        self._collections[bank_id] = RetryingReads(col)
        self._known[bank_id] = (embedder_name, dimension)

    def upsert(
        self,
        bank_id: str,
        ids: Sequence[str],
        embeddings: np.ndarray,
        metadatas: Sequence[VectorMeta],
    ) -> None:
        """Add or replace vectors (in batches Chroma accepts, all under one hold of the index)."""
        if not len(ids):
            return
        with self._writing():
            col = self._collection(bank_id)
            max_batch = 5000
            metas = [chroma_metadata(m) for m in metadatas]
            try:
                for i in range(0, len(ids), max_batch):
                    col.upsert(
                        ids=list(ids[i : i + max_batch]),
                        embeddings=np.asarray(embeddings[i : i + max_batch], dtype=np.float32),
                        metadatas=metas[i : i + max_batch],
                    )
            except BaseException:
                self._exact.drop(bank_id)  # partly written: the copy is reloaded from the index
                self._copies.drop(bank_id)
                raise
            stored = self._stored(col, ids) if self._exact.holds(bank_id) or self._copies.holds(bank_id) else None
            if stored is not None and self._exact.holds(bank_id):
                self._exact.upsert(bank_id, list(ids), stored, metas)
            else:
                self._exact.drop(bank_id)  # not held, or read back incompletely: reloaded on next use
            self._copies.upsert(bank_id, list(ids), lambda: stored)  # None (not read back) drops it

    @staticmethod
    def _stored(col: Any, ids: Sequence[str]) -> np.ndarray | None:
        """The vectors of ``ids`` as the collection now holds them, in that order; None if they cannot be read.

        A cosine collection normalises every vector it stores, which can move the last bit of a float32 (about
        a quarter of unit-length vectors here); the in-memory copy takes what the index holds, so that it ranks
        exactly as the copy loaded after a reopen will (repeatable recall), not as the vectors given. The write
        has landed by then: a failed read only costs the copy, which is reloaded from the index.
        """
        rows: dict[str, Any] = {}
        try:
            for start in range(0, len(ids), 5000):
                res = col.get(ids=list(ids[start : start + 5000]), include=["embeddings"])
                rows.update(zip(res["ids"], res["embeddings"] if res["embeddings"] is not None else [], strict=True))
        except Exception:
            return None
        if any(unit_id not in rows for unit_id in ids):
            return None
        return np.asarray([rows[unit_id] for unit_id in ids], dtype=np.float32)

    def query(
        self, bank_id: str, embedding: np.ndarray, k: int, filter: VectorFilter | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest units passing ``filter`` as (id, cosine similarity), best first (ties by id)."""
        ids = list(dict.fromkeys(filter.ids)) if filter is not None and filter.ids is not None else None
        if k <= 0 or ids == []:
            return []
        where = chroma_where(filter)
        with self._reading():
            cached = self._cached(bank_id)
            if cached is not None:
                return cached.search(np.asarray(embedding, dtype=np.float32).reshape(1, -1), k, where, ids)[0]
            if ids is not None and len(ids) > ID_QUERY_MIN:
                # Many ids (a wide time window): Chroma ranks them itself, restricted to those ids (a year of a
                # 100k-unit bank, 5k ids: about 10 ms, against 230 ms to read their vectors back here). It fails
                # on an id it does not hold (a vector not written yet): then they are read back as below.
                try:
                    res = self._collection(bank_id).query(
                        query_embeddings=np.asarray(embedding, dtype=np.float32).reshape(1, -1),
                        n_results=min(k, len(ids)), ids=ids, where=where, include=["distances"])
                    return _ranked(res["ids"][0] if res["ids"] else [],
                                   res["distances"][0] if res["distances"] else [])
                except Exception as exc:  # chromadb raises its InternalError for a missing id
                    log.debug("id-restricted query of bank %s failed (%s): ranking its vectors here", bank_id, exc)
            if ids is not None:
                # Chroma's query fails on an id it does not hold: the few chosen vectors are ranked here instead.
                got = self._collection(bank_id).get(ids=ids, where=where, include=["embeddings"])
                if not got["ids"]:
                    return []
                rows = BankVectors(got["ids"], np.asarray(got["embeddings"], dtype=np.float32), [{}] * len(got["ids"]))
                return rows.search(np.asarray(embedding, dtype=np.float32).reshape(1, -1), k)[0]
            res = self._collection(bank_id).query(
                query_embeddings=np.asarray(embedding, dtype=np.float32).reshape(1, -1),
                n_results=k,
                where=where,
                include=["distances"],
            )
        ids = res["ids"][0] if res["ids"] else []
        dists = res["distances"][0] if res["distances"] else []
        return _ranked(ids, dists)

    def query_many(self, bank_id: str, embeddings: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """``query`` for each row of ``embeddings`` in one call per 500 rows."""
        out: list[list[tuple[str, float]]] = []
        with self._reading():
            cached = self._cached(bank_id)
            if cached is not None:
                return cached.search(np.asarray(embeddings, dtype=np.float32), k)
            col = self._collection(bank_id)
            for i in range(0, len(embeddings), 500):
                res = col.query(
                    query_embeddings=np.asarray(embeddings[i : i + 500], dtype=np.float32),
                    n_results=k,
                    include=["distances"],
                )
                for ids, dists in zip(res["ids"], res["distances"], strict=True):
                    out.append(_ranked(ids, dists))
        return out

    def get_embeddings(self, bank_id: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent)."""
        if not ids:
            return {}
        with self._reading():
            cached = self._cached(bank_id)
            if cached is not None:
                return cached.vectors_of(ids)
            res = self._collection(bank_id).get(ids=list(ids), include=["embeddings"])
        embs = res["embeddings"]
        if embs is None:
            return {}
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(res["ids"], embs, strict=True)}

    def rank_ids(
        self, bank_id: str, embedding: np.ndarray, ids: Sequence[str], k: int
    ) -> list[tuple[str, float]] | None:
        """The ``k`` of ``ids`` most similar to ``embedding`` as (id, cosine), best first (ties by id), from the
        bank's in-memory copy (``id_vectors``); None when the bank has none ready (too small: the exact copy serves it;
        too large for the budget; a server; still loading, whose load the first call starts), and the caller
        ranks by ``get_embeddings`` or ``query`` as before. Ids the index does not hold are left out."""
        if k <= 0 or not ids or self._copies.max_bytes <= 0:
            return None
        wanted = list(dict.fromkeys(ids))
        found = self._from_copy(bank_id, embedding, wanted)
        if found is None:
            # Not ready: start the load (in the background) for a bank too large for the exact copy.
            loaded = self._copies.get(bank_id, size=lambda: self._size(bank_id), pages=lambda: self._pages(bank_id),
                                      reading=self._settling,
                                      count=lambda: int(self._collection(bank_id).count()))  # under a hold
            found = self._from_copy(bank_id, embedding, wanted) if loaded is not None else None
            if found is None:
                return None
        held, sims, missing = found
        if missing:
            # Not in the copy, so not in the index either (this process's writes reach the copy, another's drop
            # it): checked all the same (outside the copy's hold: holds do not nest), as the index's own path
            # would rank any it holds.
            extra = self.get_embeddings(bank_id, missing)
            if extra:
                order = sorted(extra)
                held = held + order
                sims = np.concatenate([sims, np.stack([extra[i] for i in order])
                                       @ np.asarray(embedding, dtype=np.float32).reshape(-1)])
        return top_k(held, sims, k)

    def _from_copy(self, bank_id: str, embedding: np.ndarray,
                   ids: list[str]) -> tuple[list[str], np.ndarray, list[str]] | None:
        with self._reading():  # another process's write makes this reload and drop the copy first
            copy = self._copies.ready(bank_id)
            return copy.similarities(embedding, ids) if copy is not None else None

    def wait_for_copy(self, bank_id: str, timeout: float | None = None) -> bool:
        """Wait until the bank's in-memory copy (``rank_ids``) has loaded, if a load is in progress; whether it is
        ready (benchmarks warm it before timing)."""
        return self._copies.wait(bank_id, timeout)

    def _size(self, bank_id: str) -> tuple[int, int]:
        with self._reading():
            col = self._collection(bank_id)
            return int(col.count()), int((col.metadata or {}).get("dimension", 0))

    def _pages(self, bank_id: str, page: int = 500) -> Iterator[tuple[list[str], np.ndarray]]:
        """The bank's vectors in pages, each read under its own hold so that writers wait at most one page."""
        offset = 0
        while True:
            with self._reading():
                res = self._collection(bank_id).get(include=["embeddings"], limit=page, offset=offset)
            ids = list(res["ids"])
            embs = res["embeddings"]
            if ids and embs is not None:
                yield ids, np.asarray(embs, dtype=np.float32).reshape(len(ids), -1)
            if len(ids) < page:
                return
            offset += page

    def ids(self, bank_id: str) -> set[str]:
        """Every id in the bank's collection."""
        with self._reading():
            return _all_ids(self._collection(bank_id))

    def delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Remove vectors."""
        if ids:
            with self._writing():
                try:
                    self._collection(bank_id).delete(ids=list(ids))
                finally:
                    self._exact.delete(bank_id, list(ids))
                    self._copies.delete(bank_id, list(ids))

    def drop_bank(self, bank_id: str) -> None:
        """Remove the bank's collection (no error if it never existed; any other failure is raised)."""
        with self._writing(), self._lock:
            self._collections.pop(bank_id, None)
            self._known.pop(bank_id, None)
            self._exact.drop(bank_id)
            self._copies.drop(bank_id)
            base = collection_name(bank_id)
            generation = read_generation(self.client, base)
            for name in dict.fromkeys([generation.pending, generation.retired, generation.active, base]):
                delete_collection(self.client, name)
            forget_generation(self.client, base)

    def count(self, bank_id: str) -> int:
        """Number of vectors in the bank's collection."""
        with self._reading():
            return int(self._collection(bank_id).count())

    # RebuildableIndex: a re-embed fills a pending collection, then one registry write swaps it in --------------
    def collection_embedder(self, bank_id: str) -> tuple[str, int] | None:
        """The embedder name and dimension the bank's collection in use records (None when it has none yet)."""
        with self._reading():
            try:
                col = self.client.get_collection(self._active_name(bank_id), embedding_function=None)
            except Exception:
                return None
        meta = col.metadata or {}
        return str(meta.get("embedder")), int(meta.get("dimension", 0))

    def begin_rebuild(self, bank_id: str, embedder_name: str, dimension: int) -> set[str]:
        """Open the bank's pending collection for this embedder (resumed when one is there, else new: a pending one
        of another embedder is dropped) and return the ids it already holds."""
        base = collection_name(bank_id)
        with self._writing(), self._lock:
            generation = read_generation(self.client, base)
            self.client.get_collection(generation.active, embedding_function=None)  # a rebuild replaces something
            if generation.retired:  # a swap whose process died before deleting the old collection
                delete_collection(self.client, generation.retired)
                generation = without_retired(generation)
                write_generation(self.client, base, generation)
            pending = self._pending(generation)
            if pending is not None:
                meta = pending.metadata or {}
                if meta.get("embedder") == embedder_name and int(meta.get("dimension", -1)) == dimension:
                    return _all_ids(pending)
                delete_collection(self.client, generation.pending)
            name = new_collection_name(base)
            # Recorded before it exists: a crash in between leaves a name the next run finds missing and replaces.
            write_generation(self.client, base, Generation(active=generation.active, pending=name))
            self._create(name, bank_id, embedder_name, dimension)
            return set()

    def _pending(self, generation: Generation) -> Any | None:
        if not generation.pending:
            return None
        try:
            return RetryingReads(self.client.get_collection(generation.pending, embedding_function=None))
        except Exception:
            return None

    def _pending_of(self, bank_id: str) -> Any:
        pending = self._pending(read_generation(self.client, collection_name(bank_id)))
        if pending is None:
            raise StoreError(f"bank {bank_id!r} has no re-embed in progress (begin_rebuild first)")
        return pending

    def rebuild_upsert(
        self, bank_id: str, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[VectorMeta]
    ) -> None:
        """Write vectors to the pending collection (``begin_rebuild`` first)."""
        if len(ids):
            with self._writing():
                self._pending_of(bank_id).upsert(ids=list(ids), embeddings=np.asarray(embeddings, dtype=np.float32),
                                                 metadatas=[chroma_metadata(m) for m in metadatas])

    def rebuild_delete(self, bank_id: str, ids: Sequence[str]) -> None:
        """Remove vectors from the pending collection."""
        if ids:
            with self._writing():
                self._pending_of(bank_id).delete(ids=list(ids))

    def rebuild_ids(self, bank_id: str) -> set[str]:
        """Every id in the pending collection."""
        with self._reading():
            return _all_ids(self._pending_of(bank_id))

    def finish_rebuild(self, bank_id: str) -> None:
        """Make the pending collection the bank's collection in one atomic write, then drop the old one."""
        base = collection_name(bank_id)
        with self._writing(), self._lock:
            generation = read_generation(self.client, base)
            col = self._pending_of(bank_id)
            swapped = Generation(active=generation.pending, retired=generation.active)
            write_generation(self.client, base, swapped)  # the swap: readers see the new collection from here on
            meta = col.metadata or {}
            self._collections[bank_id] = col
            self._known[bank_id] = (str(meta.get("embedder")), int(meta.get("dimension", 0)))
            self._exact.drop(bank_id)
            self._copies.drop(bank_id)
            delete_collection(self.client, generation.active)
            write_generation(self.client, base, without_retired(swapped))

    def verify(self) -> None:
        """Raise ``VectorIndexDamagedError`` (embedded) or ``StoreError`` when the index cannot be read."""
        with self._reading():
            self._probe()

    def reset(self) -> None:
        """Discard the whole embedded index and start empty (it is rebuilt from the graph store by reconcile).

        For a damaged index: nothing in it is trusted, so the directory is removed under the exclusive lock
        and every process reloads on its next access. Other clients are reset through Chroma's own API.
        """
        if self._guard is None:
            # The caches are dropped inside the write turn: a load settling before it could otherwise keep a copy
            # of what this reset deletes.
            with self._writing():
                self._exact.drop()
                self._copies.drop()
                for col in self.client.list_collections():
                    self.client.delete_collection(col.name)
                self._collections.clear()
            return
        with self._guard.writing(sync=False), self._lock:
            self._exact.drop()
            self._copies.drop()
            from chromadb.api.shared_system_client import SharedSystemClient

            if self.client is not None:
                with contextlib.suppress(Exception):
                    self.client.close()
            SharedSystemClient._identifier_to_system.pop(self.path or "", None)
            SharedSystemClient._identifier_to_refcount.pop(self.path or "", None)
            assert self.path is not None and self._make_client is not None
            shutil.rmtree(self.path, ignore_errors=True)
            Path(self.path).mkdir(parents=True, exist_ok=True)
            self._collections.clear()
            self.client = self._make_client()

    def close(self) -> None:
        """Release the client and the lock file (embedded, once the last opener closed); other clients drop their
        in-memory copies and stop loading them."""
        if self._guard is None:
            self._copies.close()
            self._exact.drop()
            return
        with _OPEN_LOCK:
            self._opened -= 1
            if self._opened > 0:
                return
            if _OPEN.get(self.path or "") is self:
                del _OPEN[self.path or ""]
        self._copies.close()  # no load may read from the client closed below
        with self._lock:
            if self.client is not None:
                with contextlib.suppress(Exception):
                    self.client.close()
                self.client = None
            self._collections.clear()
        self._guard.forget_client()
        self._guard.close()


def _all_ids(col: Any) -> set[str]:
    """Every id in a collection, read in pages."""
    out: set[str] = set()
    offset, page = 0, 10000
    while True:
        res = col.get(include=[], limit=page, offset=offset)
        out.update(res["ids"])
        if len(res["ids"]) < page:
            return out
        offset += page


_WIDEN_ATTEMPTS = 5


def _wide_enough(col: Any) -> bool:
    """Whether a collection searches at least ``HNSW_EF_SEARCH`` candidates."""
    hnsw = (getattr(col, "configuration", None) or {}).get("hnsw") or {}
    return int(hnsw.get("ef_search") or 0) >= HNSW_EF_SEARCH


def _search_wider(col: Any) -> bool:
    """Raise an older collection's ``ef_search`` to ``HNSW_EF_SEARCH`` (a search setting: no data changes).

    Returns whether the collection now searches that wide. A failure is logged, not raised: the bank opens and
    searches as before (only less widely), and the next ``ensure_collection`` tries again.
    """
    if _wide_enough(col):
        return True
    for attempt in range(1, _WIDEN_ATTEMPTS + 1):
        try:
            col.modify(configuration={"hnsw": {"ef_search": HNSW_EF_SEARCH}})
            return True
        except Exception as exc:  # any Chroma or transport error: the data is untouched either way
            # SQLite's "database is locked" while another client of the folder writes passes in a moment.
            if "locked" in str(exc).lower() and attempt < _WIDEN_ATTEMPTS:
                time.sleep(0.2 * attempt)
                continue
            log.warning("could not widen the search of collection %s to ef_search=%d (tried again at the next "
                        "open): %s", getattr(col, "name", "?"), HNSW_EF_SEARCH, exc)
            return False
    return False


def _ranked(ids: Sequence[str], dists: Sequence[float]) -> list[tuple[str, float]]:
    """(id, similarity) best first; equal distances are ordered by id so that results repeat exactly."""
    pairs = sorted(zip(ids, dists, strict=True), key=lambda p: (float(p[1]), p[0]))
    return [(i, 1.0 - float(d)) for i, d in pairs]
