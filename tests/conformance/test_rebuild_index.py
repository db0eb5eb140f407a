"""Re-embedding on every backend: the rebuild capability of the vector index (embedded Chroma and Chroma server),
and ``Hindsight.reembed`` over each graph store (SQLite, Neo4j over Bolt)."""

from __future__ import annotations

import numpy as np
import pytest
from conformance_support import Backend
from support.conversation import CONVERSATION
from support.small_embedder import NAME, TruncatedMiniLM

from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.errors import EmbedderMismatchError, StoreError
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.base import RebuildableIndex, VectorMeta


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_rebuild_is_invisible_until_the_swap_and_resumable(backend: Backend, bank_id: str) -> None:
    ix = backend.index()
    assert isinstance(ix, RebuildableIndex)
    ids = [f"u{i}" for i in range(10)]
    ix.ensure_collection(bank_id, "emb-a", 8)
    ix.upsert(bank_id, ids, _unit(10, 8, 0), [VectorMeta()] * 10)
    with pytest.raises(StoreError, match="no re-embed in progress"):
        ix.rebuild_ids(bank_id)
    assert ix.begin_rebuild(bank_id, "emb-b", 16) == set()
    ix.rebuild_upsert(bank_id, ids[:4], _unit(4, 16, 1), [VectorMeta()] * 4)
    other = backend.index()  # another client (process) sees the old collection only, until the swap
    other.ensure_collection(bank_id, "emb-a", 8)
    assert other.count(bank_id) == 10 and other.collection_embedder(bank_id) == ("emb-a", 8)  # type: ignore[attr-defined]
    resumed = backend.index()
    assert resumed.begin_rebuild(bank_id, "emb-b", 16) == set(ids[:4])  # type: ignore[attr-defined]
    resumed.rebuild_upsert(bank_id, ids[4:], _unit(6, 16, 2), [VectorMeta()] * 6)  # type: ignore[attr-defined]
    resumed.finish_rebuild(bank_id)  # type: ignore[attr-defined]
    assert resumed.count(bank_id) == 10 and resumed.query(bank_id, _unit(1, 16, 1)[0], 1)[0][0] in ids
    with pytest.raises(EmbedderMismatchError, match="emb-b"):  # this client too: it swapped the collection itself
        resumed.ensure_collection(bank_id, "emb-a", 8)
    fresh = backend.index()
    with pytest.raises(EmbedderMismatchError, match="emb-b"):
        fresh.ensure_collection(bank_id, "emb-a", 8)
    fresh.ensure_collection(bank_id, "emb-b", 16)
    assert fresh.ids(bank_id) == set(ids)
    fresh.drop_bank(bank_id)
    assert backend.index().collection_embedder(bank_id) is None  # type: ignore[attr-defined]


def test_reembed_through_the_facade(backend: Backend, bank_id: str, embedder: SentenceTransformerEmbedder) -> None:
    small = TruncatedMiniLM()
    with backend.open(embedder) as hs:
        hs.bank(bank_id).retain(CONVERSATION, extract=False)
        report = hs.reembed(bank_id, small)
        assert (report.units, report.embedded, report.embedder) == (6, 6, NAME)
    with pytest.raises(EmbedderMismatchError, match=NAME):
        backend.open(embedder).close()
    with backend.open(small) as hs:
        assert check(hs, [bank_id]).ok and hs.index.count(bank_id) == 6
        hits = hs.bank(bank_id).recall("What is the puppy called?", budget=200).memories
        assert any("Oscar" in m.text for m in hits[:2])
