"""Every ``VectorIndex`` method, embedded Chroma and Chroma server alike."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from conformance_support import Backend

from hindsight_core.errors import EmbedderMismatchError, StoreError
from hindsight_core.models import Network, TimeRange
from hindsight_core.stores.base import VectorFilter, VectorMeta
from hindsight_core.stores.chroma import ChromaVectorIndex

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def _vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_collection_and_embedder_check(backend: Backend, bank_id: str) -> None:
    ix = backend.index()
    with pytest.raises(StoreError):
        ix.count(bank_id)  # not opened yet
    ix.ensure_collection(bank_id, "emb-a", 8)
    ix.ensure_collection(bank_id, "emb-a", 8)  # idempotent
    assert ix.count(bank_id) == 0 and ix.ids(bank_id) == set()
    other = backend.index()  # a new client sees the recorded embedder
    with pytest.raises(EmbedderMismatchError, match="emb-a"):
        other.ensure_collection(bank_id, "emb-b", 8)
    with pytest.raises(EmbedderMismatchError):
        backend.index().ensure_collection(bank_id, "emb-a", 16)


def test_collections_search_wide_enough_for_recall(backend: Backend, bank_id: str) -> None:
    """HNSW explores HNSW_EF_SEARCH candidates per query; a collection made with Chroma's narrower setting (by an
    older version) is widened when a writer opens it."""
    from hindsight_core.stores.chroma import HNSW_EF_SEARCH, collection_name

    ix = backend.index()
    ix.ensure_collection(bank_id, "emb-a", 8)
    assert ix.client.get_collection(collection_name(bank_id)).configuration["hnsw"]["ef_search"] == HNSW_EF_SEARCH
    old = bank_id + "-old"
    ix.client.create_collection(collection_name(old), metadata={"bank_id": old, "embedder": "emb-a", "dimension": 8},
                                configuration={"hnsw": {"space": "cosine", "ef_search": 100}}, embedding_function=None)
    opened = backend.index()
    opened.ensure_collection(old, "emb-a", 8)
    assert opened.client.get_collection(collection_name(old)).configuration["hnsw"]["ef_search"] == HNSW_EF_SEARCH
    opened.drop_bank(old)


def test_a_failed_widening_opens_the_bank_and_is_retried(
    backend: Backend, bank_id: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Widening an older collection's search is a setting change: when Chroma refuses it half way through an
    open, the bank still opens with its vectors intact and searchable, and the next open widens it."""
    from chromadb.api.models.Collection import Collection

    from hindsight_core.stores.chroma import HNSW_EF_SEARCH, collection_name

    ix = backend.index()
    ix.ensure_collection(bank_id + "-other", "emb-a", 8)  # connects the client
    ix.client.create_collection(collection_name(bank_id),
                                metadata={"bank_id": bank_id, "embedder": "emb-a", "dimension": 8},
                                configuration={"hnsw": {"space": "cosine", "ef_search": 100}},
                                embedding_function=None)
    v = _vectors(5)
    ix.client.get_collection(collection_name(bank_id)).add(ids=[f"m{i}" for i in range(5)], embeddings=v)

    def refuse(self: Collection, **_: object) -> None:
        raise ConnectionError("server went away")

    with monkeypatch.context() as m:
        m.setattr(Collection, "modify", refuse)
        failing = backend.index()
        failing.ensure_collection(bank_id, "emb-a", 8)  # no error: the search setting is not the data
    assert "could not widen" in caplog.text
    assert failing.client.get_collection(collection_name(bank_id)).configuration["hnsw"]["ef_search"] == 100
    assert failing.count(bank_id) == 5 and failing.query(bank_id, v[3], 1)[0][0] == "m3"
    retried = backend.index()
    retried.ensure_collection(bank_id, "emb-a", 8)
    assert retried.client.get_collection(collection_name(bank_id)).configuration["hnsw"]["ef_search"] == HNSW_EF_SEARCH
    assert retried.count(bank_id) == 5
    retried.drop_bank(bank_id + "-other")


def test_a_locked_database_while_widening_is_waited_out(
    backend: Backend, bank_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "database is locked" (another client of the folder writing) passes: the widening is tried again
    at once, a few times, rather than left to the next open (it failed a clean-clone run that way)."""
    from chromadb.api.models.Collection import Collection

    from hindsight_core.stores import chroma
    from hindsight_core.stores.chroma import HNSW_EF_SEARCH, collection_name

    ix = backend.index()
    ix.ensure_collection(bank_id + "-other", "emb-a", 8)
    ix.client.create_collection(collection_name(bank_id),
                                metadata={"bank_id": bank_id, "embedder": "emb-a", "dimension": 8},
                                configuration={"hnsw": {"space": "cosine", "ef_search": 100}},
                                embedding_function=None)
    real_modify, refusals = Collection.modify, []

    def locked_twice(self: Collection, **kwargs: object) -> None:
        if len(refusals) < 2:
            refusals.append(1)
            raise RuntimeError("Database error: error returned from database: (code: 5) database is locked")
        real_modify(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(chroma.time, "sleep", lambda _s: None)
    with monkeypatch.context() as m:
        m.setattr(Collection, "modify", locked_twice)
        opened = backend.index()
        opened.ensure_collection(bank_id, "emb-a", 8)
    assert len(refusals) == 2
    assert opened.client.get_collection(collection_name(bank_id)).configuration["hnsw"]["ef_search"] == HNSW_EF_SEARCH
    opened.drop_bank(bank_id + "-other")


SEGMENT_RACE = "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"


def test_a_read_that_races_a_segment_swap_is_retried(
    backend: Backend, bank_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Chroma server can fail a read with "Nothing found on disk" while it swaps an HNSW segment (seen once with
    three processes retaining into one bank): such reads are retried. A damaged segment's error is not retried, and
    a race that outlasts the retries still ends as a StoreError."""
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    ix = backend.index()
    ix.ensure_collection(bank_id, "emb", 8)
    v = _vectors(5)
    metas = [VectorMeta(network=Network.WORLD, start=_day(i)) for i in range(5)]
    ix.upsert(bank_id, [f"m{i}" for i in range(5)], v, metas)
    calls = {"count": 0, "query": 0}

    def racing(name: str, real: Any, failures: int) -> Any:
        def call(self: Collection, *args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            if calls[name] <= failures:
                raise InternalError(SEGMENT_RACE)
            return real(self, *args, **kwargs)

        return call

    real_count = Collection.count
    monkeypatch.setattr(Collection, "count", racing("count", real_count, 2))
    monkeypatch.setattr(Collection, "query", racing("query", Collection.query, 2))
    assert ix.count(bank_id) == 5 and calls["count"] == 3
    assert ix.query(bank_id, v[2], 1)[0][0] == "m2"
    assert ix.query_many(bank_id, v[:2], 1)[1][0][0] == "m1"
    if backend.name == "server":  # the embedded index answers small banks from its exact copy, not Chroma's query
        assert calls["query"] == 4  # two races, then the query, then query_many

    def broken(self: Collection, *args: Any, **kwargs: Any) -> Any:
        calls["count"] += 1
        raise InternalError("Error executing plan: Error creating hnsw segment reader: Error loading hnsw index")

    calls["count"] = 0
    monkeypatch.setattr(Collection, "count", broken)
    with pytest.raises(StoreError, match="Error loading hnsw index"):
        ix.count(bank_id)
    assert calls["count"] == 1  # a damaged segment: not retried

    calls["count"] = 0
    monkeypatch.setattr(Collection, "count", racing("count", real_count, 100))
    with pytest.raises(StoreError, match="Nothing found on disk"):
        ix.count(bank_id)
    assert calls["count"] == 5


def test_upsert_query_get_delete(backend: Backend, bank_id: str) -> None:
    ix = backend.index()
    ix.ensure_collection(bank_id, "emb", 8)
    v = _vectors(20)
    ids = [f"m{i}" for i in range(20)]
    # Unit i occurred on day i (days 10-19 last two days); half the units are opinions.
    metas = [VectorMeta(network=Network.WORLD if i % 2 == 0 else Network.OPINION, start=_day(i),
                        end=_day(i + 1) if i >= 10 else None) for i in range(20)]
    ix.upsert(bank_id, ids, v, metas)
    assert ix.count(bank_id) == 20 and ix.ids(bank_id) == set(ids)
    hits = ix.query(bank_id, v[3], 5)
    assert hits[0][0] == "m3" and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    assert len(hits) == 5 and all(a[1] >= b[1] for a, b in itertools.pairwise(hits))
    expected = np.argsort(-(v @ v[3]))[:5]
    assert [h[0] for h in hits] == [f"m{i}" for i in expected]
    for (_, sim), i in zip(hits, expected, strict=True):
        assert sim == pytest.approx(float(v[i] @ v[3]), abs=1e-4)
    world = ix.query(bank_id, v[3], 5, VectorFilter(networks=(Network.WORLD,)))
    assert len(world) == 5 and all(int(h[0][1:]) % 2 == 0 for h in world)
    # Overlap: a unit matches when its [start, end] meets the range (an end of None is the start itself).
    ranged = ix.query(bank_id, v[3], 20, VectorFilter(time_range=TimeRange(start=_day(5), end=_day(7))))
    assert {h[0] for h in ranged} == {"m5", "m6", "m7"}
    overlap = ix.query(bank_id, v[3], 20, VectorFilter(time_range=TimeRange(start=_day(14.5), end=_day(14.6))))
    assert {h[0] for h in overlap} == {"m14"}
    open_ended = ix.query(bank_id, v[3], 20, VectorFilter(time_range=TimeRange(start=_day(18.5))))
    assert {h[0] for h in open_ended} == {"m18", "m19"}
    both = ix.query(bank_id, v[3], 20, VectorFilter(networks=(Network.OPINION,),
                                                    time_range=TimeRange(start=_day(5), end=_day(7))))
    assert {h[0] for h in both} == {"m5", "m7"}
    chosen = ix.query(bank_id, v[3], 2, VectorFilter(ids=("m1", "m3", "m8", "gone")))
    assert [h[0] for h in chosen] == [f"m{i}" for i in sorted((1, 3, 8), key=lambda i: -float(v[i] @ v[3]))[:2]]
    assert ix.query(bank_id, v[3], 5, VectorFilter(ids=())) == []
    assert VectorFilter.of() is None and VectorFilter.of(networks=["world"]) == VectorFilter(networks=(Network.WORLD,))
    assert ix.query(bank_id, v[3], 0) == []
    assert len(ix.query(bank_id, v[3], 100)) == 20  # k above the count returns everything
    many = ix.query_many(bank_id, v[:3], 2)
    assert [m[0][0] for m in many] == ["m0", "m1", "m2"] and all(len(m) == 2 for m in many)
    got = ix.get_embeddings(bank_id, ["m1", "nope", "m2"])
    assert set(got) == {"m1", "m2"} and np.allclose(got["m1"], v[1], atol=1e-6)
    assert ix.get_embeddings(bank_id, []) == {}
    # upsert replaces
    ix.upsert(bank_id, ["m1"], v[5:6], [VectorMeta(network=Network.WORLD)])
    assert ix.count(bank_id) == 20 and np.allclose(ix.get_embeddings(bank_id, ["m1"])["m1"], v[5], atol=1e-6)
    ix.delete(bank_id, ["m1", "m2", "never-there"])
    ix.delete(bank_id, [])
    assert ix.count(bank_id) == 18 and "m1" not in ix.ids(bank_id)


def test_bank_isolation_and_drop(backend: Backend, bank_id: str) -> None:
    ix = backend.index()
    a, b = bank_id + "-a", bank_id + "-b"
    for bank in (a, b):
        ix.ensure_collection(bank, "emb", 8)
    v = _vectors(4)
    ix.upsert(a, ["x1", "x2"], v[:2], [VectorMeta(), VectorMeta()])
    ix.upsert(b, ["y1"], v[2:3], [VectorMeta()])
    assert {h[0] for h in ix.query(a, v[2], 10)} == {"x1", "x2"}
    assert ix.ids(b) == {"y1"}
    ix.drop_bank(a)
    ix.drop_bank(a)  # twice is fine
    with pytest.raises(StoreError):
        ix.count(a)
    ix.ensure_collection(a, "other-embedder", 4)  # a dropped bank starts over
    assert ix.count(a) == 0 and ix.count(b) == 1


def test_large_upsert_and_paged_ids(backend: Backend, bank_id: str) -> None:
    """More ids than one page of ``ids()`` (10,000) and a batch spanning Chroma's upsert limit."""
    ix = backend.index()
    ix.ensure_collection(bank_id, "emb", 4)
    n = 10_050
    v = _vectors(n, dim=4, seed=1)
    ix.upsert(bank_id, [f"i{k}" for k in range(n)], v, [VectorMeta(start=_day(k)) for k in range(n)])
    assert ix.count(bank_id) == n and len(ix.ids(bank_id)) == n


def test_http_unreachable_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match=r"http://127\.0\.0\.1:9"):
        ChromaVectorIndex.http("127.0.0.1", 9)
