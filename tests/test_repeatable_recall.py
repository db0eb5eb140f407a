"""Recall is repeatable on the embedded store: the same store and query give the same memories in the same
order, also after a reopen, where Chroma's HNSW graph is rebuilt from its log with new random levels."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.embedding import SentenceTransformerEmbedder
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
