"""Recall is repeatable on the embedded store: the same store and query give the same memories in the same
order, also after a reopen, where Chroma's HNSW graph is rebuilt from its log with new random levels."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hindsight_core import Hindsight
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.stores.exact_vectors import BankVectors

PEOPLE = ["Maya", "Ana", "Oscar", "Lena", "Tom", "Ravi", "Jun", "Ines"]
PLACES = ["Porto", "Lisbon", "Boston", "Kyoto", "Oslo", "Lima", "Cairo", "Quito"]
THINGS = ["violin", "green tea", "marathon", "garden", "pottery", "chess", "sourdough", "kayak", "novel", "puppy"]
VERBS = ["talked about", "tried", "loved", "planned", "remembered", "worried about", "practised", "bought"]


def sentences(n: int) -> list[dict[str, str]]:
    rnd = random.Random(7)
    out = []
    for i in range(n):
        who, where = rnd.choice(PEOPLE), rnd.choice(PLACES)
        out.append({"speaker": who, "text": f"In {where} I {rnd.choice(VERBS)} the {rnd.choice(THINGS)} with "
                                             f"{rnd.choice(PEOPLE)}.", "id": f"S:{i}"})
    return out


def test_recall_repeats_after_reopen_on_a_bank_of_hundreds(tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder()
    msgs = sentences(600)
    t0 = datetime(2024, 3, 1, tzinfo=UTC)
    queries = [f"What did {p} do with the {t}?" for p, t in zip(PEOPLE * 3, THINGS * 3, strict=False)][:24]

    def run(hs: Hindsight) -> list[list[str]]:
        bank = hs.bank("r")
        return [[m.id for m in bank.recall(q, budget=800, reference_time=t0).memories] for q in queries]

    with Hindsight.open(tmp_path / "memory", embedder=embedder, start_worker=False) as hs:
        bank = hs.bank("r")
        for i in range(0, len(msgs), 100):
            bank.retain(msgs[i : i + 100], timestamp=t0 + timedelta(days=i), document_id=f"d{i}", extract=False,
                        background=False)
        first = run(hs)
        semantic = [[i for i, _ in hs.index.query("r", embedder.embed([q])[0], 100)] for q in queries]
    with Hindsight.open(tmp_path / "memory", embedder=embedder, start_worker=False) as hs:
        assert run(hs) == first
        again = [[i for i, _ in hs.index.query("r", embedder.embed([q])[0], 100)] for q in queries]
        assert again == semantic
        # And the semantic channel is the exact ranking, not an approximation of it.
        vectors = hs.index.get_embeddings("r", sorted(hs.store.unit_ids("r")))
    ids = sorted(vectors)
    matrix = np.stack([vectors[i] for i in ids])
    for q, got in zip(queries, semantic, strict=True):
        sims = matrix @ embedder.embed([q])[0]
        want = [ids[j] for j in sorted(range(len(ids)), key=lambda j: (-float(sims[j]), ids[j]))[:100]]
        assert got == want


def test_exact_search_orders_ties_by_id_and_filters() -> None:
    vecs = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    bank = BankVectors(["b", "a", "c", "d"], vecs, [{"network": "world", "t0": 5.0}, {"network": "opinion"},
                                                     {"network": "world", "t0": 1.0}, {"network": "world"}])
    assert [i for i, _ in bank.search(np.array([1.0, 0.0]), 3)[0]] == ["a", "b", "d"]
    assert [i for i, _ in bank.search(np.array([1.0, 0.0]), 1)[0]] == ["a"]  # the tie at the cut, by id
    world = bank.search(np.array([1.0, 0.0]), 5, {"network": {"$in": ["world"]}})[0]
    assert [i for i, _ in world] == ["b", "d", "c"]
    dated = bank.search(np.array([1.0, 0.0]), 5, {"$and": [{"network": {"$in": ["world"]}}, {"t0": {"$lte": 3.0}}]})
    assert [i for i, _ in dated[0]] == ["c"]  # a missing field never satisfies a comparison
    bank.upsert(["a", "e"], np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32), [{}, {}])
    bank.delete(["b"])
    assert [i for i, _ in bank.search(np.array([1.0, 0.0]), 2)[0]] == ["e", "d"]
    assert sorted(bank.vectors_of(["a", "zz", "e"])) == ["a", "e"]


def test_concurrent_first_use_loads_a_bank_once() -> None:
    """Recall's channels ask for the same bank at once: the vectors are read once, and every caller gets them."""
    import threading
    import time

    from hindsight_core.stores.exact_vectors import BankVectors, ExactCache

    cache = ExactCache()
    loads = []

    def load() -> BankVectors:
        loads.append(1)
        time.sleep(0.2)  # a slow read, during which the other callers arrive
        return BankVectors(["a"], np.array([[1.0, 0.0]], dtype=np.float32), [{}])

    got: list[BankVectors | None] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("b", lambda: 1, load))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and len(got) == 4 and all(g is got[0] and g is not None for g in got)
    assert cache.get("b", lambda: 1, load) is got[0] and len(loads) == 1


def _held_bank(path: Path, n: int, seed: int) -> tuple[Any, list[str], np.ndarray]:
    """An embedded index at ``path`` whose bank "b" holds the first half of ``n`` unit vectors, held in memory."""
    from hindsight_core.stores.base import VectorMeta
    from hindsight_core.stores.chroma import ChromaVectorIndex

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"u{i:02d}" for i in range(n)]
    index = ChromaVectorIndex.persistent(path)
    index.ensure_collection("b", "test-embedder", 32)
    index.upsert("b", ids[: n // 2], vectors[: n // 2], [VectorMeta() for _ in range(n // 2)])
    assert index.query("b", vectors[0], 1)[0][0] == "u00"  # the bank is now held in memory
    return index, ids, vectors


def _reopened(path: Path) -> Any:
    from hindsight_core.stores.chroma import ChromaVectorIndex

    index = ChromaVectorIndex.persistent(path)
    index.ensure_collection("b", "test-embedder", 32)
    return index


def test_the_in_memory_copy_holds_what_the_index_stored(tmp_path: Path) -> None:
    """A cosine collection normalises each vector it stores, which moves the last bit of some floats. After a
    write to a bank held in memory, the copy must hold what a reopened index will load, not the vectors given:
    else scores (and near ties) differ between a long-running process and the same store reopened."""
    from hindsight_core.stores.base import VectorMeta

    index, ids, vectors = _held_bank(tmp_path / "v", 60, seed=7)
    index.upsert("b", ids[30:], vectors[30:], [VectorMeta() for _ in range(30)])
    index.upsert("b", ids[:5], vectors[:5], [VectorMeta() for _ in range(5)])  # rewritten, as a reindex does
    held = index.get_embeddings("b", ids)
    query = np.random.default_rng(8).standard_normal(32).astype(np.float32)
    before = index.query("b", query, 60)
    index.close()
    reopened = _reopened(tmp_path / "v")
    loaded = reopened.get_embeddings("b", ids)
    assert held.keys() == loaded.keys() and all(np.array_equal(held[i], loaded[i]) for i in ids)
    assert reopened.query("b", query, 60) == before  # the same scores to the bit, not just the same order
    reopened.close()


def test_a_failed_read_back_keeps_the_write_and_reloads_the_copy(tmp_path: Path) -> None:
    """The write has landed when the copy reads it back: if that read fails, the write is not reported as failed,
    and the copy is reloaded from the index (what a reopen would load), not left holding the vectors given."""
    from hindsight_core.stores.base import VectorMeta

    class FailingGet:
        def __init__(self, col: Any) -> None:
            self.col = col

        def __getattr__(self, name: str) -> Any:
            if name == "get":
                raise_once.pop()  # IndexError when the read already failed once: the test is then wrong
                raise ConnectionError("read failed")
            return getattr(self.col, name)

    index, ids, vectors = _held_bank(tmp_path / "v", 40, seed=3)
    real = index._collections["b"]
    raise_once = [True]
    index._collections["b"] = FailingGet(real)
    index.upsert("b", ids[20:], vectors[20:], [VectorMeta() for _ in range(20)])  # no error: the write landed
    assert raise_once == []
    index._collections["b"] = real
    held = index.get_embeddings("b", ids)
    index.close()
    reopened = _reopened(tmp_path / "v")
    loaded = reopened.get_embeddings("b", ids)
    assert held.keys() == loaded.keys() == set(ids) and all(np.array_equal(held[i], loaded[i]) for i in ids)
    reopened.close()


_META_VALUE = st.one_of(st.none(), st.sampled_from(["world", "opinion", "experience"]),
                        st.floats(-5, 5, allow_nan=False), st.integers(-5, 5))
_FIELDS = st.sampled_from(["network", "t0", "t1"])
_CLAUSE = st.one_of(
    st.builds(lambda f, v: {f: v}, _FIELDS, st.sampled_from(["world", "opinion"])),
    st.builds(lambda f, v: {f: {"$in": v}}, _FIELDS, st.lists(st.sampled_from(["world", "opinion", "x"]), max_size=3)),
    st.builds(lambda f, op, v: {f: {op: v}}, _FIELDS, st.sampled_from(["$lte", "$gte", "$lt", "$gt"]),
              st.one_of(st.floats(-5, 5, allow_nan=False), st.integers(-5, 5))),
)
_WHERE = st.one_of(_CLAUSE, st.builds(lambda cs: {"$and": cs}, st.lists(_CLAUSE, min_size=1, max_size=3)))


@given(st.lists(st.dictionaries(_FIELDS, _META_VALUE, max_size=3), min_size=1, max_size=25), _WHERE,
       st.lists(st.integers(0, 30), max_size=6) | st.none())
def test_vectorised_filters_pass_exactly_the_rows_chroma_would(
    metas: list[dict[str, Any]], where: dict[str, Any], only: list[int] | None,
) -> None:
    """Metadata filters run column by column with numpy; they must pass exactly what ``matches`` (Chroma's rules:
    a missing field never satisfies a comparison) passes row by row, whatever the mix of types in a field."""
    from hindsight_core.stores.exact_vectors import matches

    ids = [f"u{n:02d}" for n in range(len(metas))]
    rng = np.random.default_rng(len(metas))
    vecs = rng.normal(size=(len(metas), 4)).astype(np.float32)
    bank = BankVectors(ids, vecs, metas)
    wanted = None if only is None else [f"u{n:02d}" for n in only]
    try:
        expected = {i for i, m in zip(ids, metas, strict=True)
                    if matches(m, where) and (wanted is None or i in wanted)}
    except TypeError:  # a string compared with a number: Chroma refuses it too; the search must not pass it silently
        expected = None
    query = rng.normal(size=4).astype(np.float32)
    if expected is None:
        with pytest.raises(TypeError):
            bank.search(query, 100, where, wanted)
        return
    got = bank.search(query, 100, where, wanted)[0]
    assert {i for i, _ in got} == expected
