"""The in-memory vector copy of a large bank (``stores/id_vectors.py``, ``ChromaVectorIndex.rank_ids``): the temporal
channel ranks a window from it exactly as it did through Chroma, and the copy never answers with a vector the index
no longer holds (a forget, an update, a new retain, writes while it loads, another process's write).

Real SQLite and Chroma stores on temporary paths; the size thresholds are lowered so that a bank of 1,200 units
takes the large-bank path (above the exact copy's limit, below the copy's memory budget)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_core.models import BankProfile, Memory, Network, TimeRange
from hindsight_core.recall import channels as ch
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.id_vectors import BankCopy, IdVectorCopies, top_k
from hindsight_core.stores.records import UnitBatch, VectorMeta
from hindsight_core.stores.sqlite.store import SQLiteGraphStore

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 16
N = 1200


def _units(n: int, seed: int = 3) -> list[Memory]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = T0 + timedelta(hours=rng.randint(0, 24 * 400))
        end = start + timedelta(days=rng.randint(30, 300)) if i % 10 == 0 else None  # a few long occurrences
        out.append(Memory(id=f"u{i:04d}", bank_id="b", text=f"unit {i}", occurred_start=start, occurred_end=end,
                          mentioned_at=start, network=Network.WORLD))
    return out


def _vectors(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), dtype=np.float32)


def _metas(units: list[Memory]) -> list[Any]:
    return [VectorMeta(network=u.network, start=u.occurred_start or u.mentioned_at,
                       end=u.occurred_end or u.occurred_start or u.mentioned_at) for u in units]


@pytest.fixture()
def store(tmp_path: Path) -> SQLiteGraphStore:
    s = SQLiteGraphStore(tmp_path / "g.sqlite")
    s.create_bank(BankProfile(id="b", name="b"))
    s.add_units("b", UnitBatch(units=_units(N)))
    return s


@pytest.fixture()
def index(tmp_path: Path, store: SQLiteGraphStore) -> Iterator[ChromaVectorIndex]:
    """The bank's vectors in a persistent index whose exact copy is off (as for a bank over 20k vectors) and whose
    large-bank copy takes banks over 100 vectors, loaded in the calling thread (no waiting in tests)."""
    idx = ChromaVectorIndex.persistent(tmp_path / "vectors")
    idx._exact.max_bank = 0
    idx._copies.min_vectors = 100
    idx._copies.background = False
    units = store.get_units("b", sorted(store.unit_ids("b")))
    idx.ensure_collection("b", "test-embedder", DIM)
    idx.upsert("b", [u.id for u in units], _vectors(len(units)), _metas(units))
    try:
        yield idx
    finally:
        idx.close()


class _WithoutCopy:
    """The same index without ``rank_ids``: the channel's path before the copy (vectors read back up to its exact
    limit, Chroma's id-restricted query above)."""

    def __init__(self, index: ChromaVectorIndex) -> None:
        self._index = index

    def __getattr__(self, name: str) -> Any:
        if name == "rank_ids":
            raise AttributeError(name)
        return getattr(self._index, name)


WINDOWS = [  # a week, a month, four months, a year, everything
    TimeRange(start=T0 + timedelta(days=40), end=T0 + timedelta(days=47)),
    TimeRange(start=T0 + timedelta(days=100), end=T0 + timedelta(days=130)),
    TimeRange(start=T0 + timedelta(days=100), end=T0 + timedelta(days=220)),
    TimeRange(start=T0, end=T0 + timedelta(days=365)),
    TimeRange(start=None, end=None),
]


def _exact(index: ChromaVectorIndex, store: SQLiteGraphStore, window: TimeRange, query: np.ndarray,
           k: int) -> list[str]:
    """The window's top ``k`` from every vector read back from Chroma, in float32, equal similarities by id."""
    inside = store.temporal_ids("b", window, 10**6, ordered=False)
    vectors = index.get_embeddings("b", inside)
    order = sorted(vectors)
    sims = np.stack([vectors[i] for i in order]) @ query
    return [order[j] for j in np.argsort(-sims, kind="stable")[:k]]


def test_the_copy_ranks_every_window_as_the_exact_path_does(
    index: ChromaVectorIndex, store: SQLiteGraphStore
) -> None:
    old = _WithoutCopy(index)
    assert index.rank_ids("b", _vectors(1)[0], ["u0001"], 5) is not None  # loaded at first use (in this thread)
    for seed in range(5):
        query = _vectors(1, seed=100 + seed)[0]
        for window in WINDOWS:
            n = len(store.temporal_ids("b", window, 10**6, ordered=False))
            new = ch.temporal(index, "b", query, window, 20, None, None, store, exact_limit=200)
            before = ch.temporal(old, "b", query, window, 20, None, None, store, exact_limit=200)
            exact = _exact(index, store, window, query, 20)
            assert [i for i, _ in new] == exact
            if n <= 200:  # the old path was exact there too: the same ranking, scores to float32's last bits
                assert [i for i, _ in new] == [i for i, _ in before]
                assert [s for _, s in new] == pytest.approx([s for _, s in before], abs=1e-6)
            else:  # Chroma's id-restricted query (HNSW) is approximate: the same units all but always
                assert len({i for i, _ in new} & {i for i, _ in before}) >= 18
            got = index.get_embeddings("b", [i for i, _ in new])
            assert all(s == pytest.approx(float(got[i] @ query), abs=1e-6) for i, s in new)


def test_no_copy_is_used_before_it_is_loaded_or_where_none_is_kept(
    tmp_path: Path, index: ChromaVectorIndex
) -> None:
    query = _vectors(1, seed=7)[0]
    index._copies.background = True
    assert index.rank_ids("b", query, ["u0001", "u0002"], 2) is None  # starts the load, answers from nothing
    assert index.wait_for_copy("b", timeout=30)
    assert [i for i, _ in index.rank_ids("b", query, ["u0001", "u0002"], 2) or []] != []
    # Too small for the copy (the exact copy's job), or a budget too small: the caller's own path.
    small = IdVectorCopies(max_bytes=10**9, min_vectors=N, background=False)
    assert small.get("b", size=lambda: (N, DIM), pages=iter, reading=_nothing, count=lambda: N) is None
    tight = IdVectorCopies(max_bytes=N * DIM * 4 - 1, background=False)
    assert tight.get("b", size=lambda: (N, DIM), pages=iter, reading=_nothing, count=lambda: N) is None
    # A server's index keeps none: other clients write to it unseen.
    server_like = ChromaVectorIndex(index.client, exact_limit=0)
    assert server_like.rank_ids("b", query, ["u0001"], 1) is None


def test_a_forgotten_unit_never_comes_back_from_the_copy(
    index: ChromaVectorIndex, store: SQLiteGraphStore
) -> None:
    window = WINDOWS[3]
    ids = store.temporal_ids("b", window, 10**6, ordered=False)
    query = _vectors(1, seed=11)[0]
    first = index.rank_ids("b", query, ids, 10)
    assert first is not None
    gone = [i for i, _ in first[:3]]
    index.delete("b", gone)
    # Asked for the same ids (a window listed before the forget): the forgotten ones are not ranked.
    after = index.rank_ids("b", query, ids, 10)
    assert after is not None and not set(gone) & {i for i, _ in after}
    assert [i for i, _ in after] == [i for i, _ in first[3:]] + [i for i, _ in after[7:]]
    # The vector forgotten, the unit still listed (a forget half done): the channel leaves it out too.
    assert not set(gone) & {i for i, _ in ch.temporal(index, "b", query, window, 10, None, None, store)}
    # Both forgotten: neither listed nor ranked, and the channel's ranking is the exact one without them.
    store.delete_units("b", gone)
    ranked = ch.temporal(index, "b", query, window, 10, None, None, store)
    assert not set(gone) & {i for i, _ in ranked} and [i for i, _ in ranked] == _exact(index, store, window, query, 10)


def test_an_updated_vector_and_a_new_retain_reach_the_copy(
    index: ChromaVectorIndex, store: SQLiteGraphStore
) -> None:
    ids = store.temporal_ids("b", WINDOWS[3], 10**6, ordered=False)
    query = _vectors(1, seed=13)[0]
    assert index.rank_ids("b", query, ids, 5) is not None
    # Updated: a unit's vector becomes the query's own; it must rank first, at similarity 1.
    moved = ids[len(ids) // 2]
    index.upsert("b", [moved], query.reshape(1, -1), _metas(store.get_units("b", [moved])))
    top = index.rank_ids("b", query, ids, 5)
    assert top is not None and top[0][0] == moved and top[0][1] == pytest.approx(1.0, abs=1e-6)
    # New units retained after the copy loaded are ranked from it too (not left out as unknown).
    new = [Memory(id=f"n{i}", bank_id="b", text=f"new {i}", occurred_start=T0 + timedelta(days=10),
                  mentioned_at=T0 + timedelta(days=10), network=Network.WORLD) for i in range(3)]
    store.add_units("b", UnitBatch(units=new))
    near = _vectors(3, seed=17) * 0.2 + query
    near = near / np.linalg.norm(near, axis=1, keepdims=True)
    index.upsert("b", [u.id for u in new], near, _metas(new))
    copy = index._copies.ready("b")
    assert copy is not None and all(u.id in copy.rows for u in new)
    ranked = ch.temporal(index, "b", query, WINDOWS[3], 10, None, None, store)
    assert [i for i, _ in ranked] == _exact(index, store, WINDOWS[3], query, 10)
    assert {u.id for u in new} <= {i for i, _ in ranked[:4]}


def test_writes_while_the_copy_loads_are_replayed_in_order(
    index: ChromaVectorIndex, store: SQLiteGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = _vectors(1, seed=19)[0]
    all_ids = sorted(store.unit_ids("b"))
    pages = index._pages

    def with_writes(bank_id: str) -> Iterator[tuple[list[str], np.ndarray]]:
        for n, page in enumerate(pages(bank_id, page=300)):
            yield page
            if n == 0:  # between two pages, as another thread of this process would write
                read, unread = page[0][0], all_ids[-1]  # a row already read, one not read yet
                index.upsert("b", [read, unread], np.stack([query, -query]),
                             _metas(store.get_units("b", [read, unread])))
                index.delete("b", [all_ids[-2]])  # a row not read yet: no page shifts under the reader
                index.upsert("b", [read], query.reshape(1, -1) * -1, _metas(store.get_units("b", [read])))

    monkeypatch.setattr(index, "_pages", with_writes)
    got = index.rank_ids("b", query, all_ids, N)
    assert got is not None
    scores = dict(got)
    assert all_ids[-2] not in scores  # deleted while loading
    assert scores[all_ids[-1]] == pytest.approx(-1.0, abs=1e-6)  # the unread row: its new vector
    first_read = next(i for i in all_ids if i in scores and scores[i] == pytest.approx(-1.0, abs=1e-6)
                      and i != all_ids[-1])
    assert first_read < all_ids[-1]  # the read row: its last write (-query), not the one before it (query)
    assert not [i for i, s in got if s == pytest.approx(1.0, abs=1e-6)]
    truth = index.get_embeddings("b", all_ids)
    assert len(got) == len(truth) and all(s == pytest.approx(float(truth[i] @ query), abs=1e-6) for i, s in got)


def test_a_delete_that_moves_the_pages_under_the_reader_discards_the_copy(
    index: ChromaVectorIndex, store: SQLiteGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    all_ids = sorted(store.unit_ids("b"))
    pages = index._pages

    def with_delete(bank_id: str) -> Iterator[tuple[list[str], np.ndarray]]:
        for n, page in enumerate(pages(bank_id, page=300)):
            yield page
            if n == 0:
                index.delete("b", page[0][:5])  # rows already read: the next page starts five rows later

    monkeypatch.setattr(index, "_pages", with_delete)
    got = index.rank_ids("b", _vectors(1)[0], all_ids, 10)
    copy = index._copies.ready("b")
    # Either the reader missed rows and the copy was discarded (the caller ranks as before), or it holds exactly
    # what the index holds: never a row short, never a deleted one.
    if copy is not None:
        assert set(copy.rows) == index.ids("b") and got is not None
    else:
        assert got is None


def test_another_process_writing_drops_the_copy(index: ChromaVectorIndex) -> None:
    query = _vectors(1, seed=23)[0]
    assert index.rank_ids("b", query, ["u0001"], 1) is not None
    guard = index._guard
    assert guard is not None
    gen, _ = guard._read_gen()
    guard._write_gen(gen + 1, dirty=False)  # what another process's write leaves behind
    index._copies._refused["b"] = float("inf")  # no new load: show that the old copy is gone
    assert index.rank_ids("b", query, ["u0001"], 1) is None
    assert index._copies.ready("b") is None


def test_bank_copy_rows_survive_growth_and_compaction() -> None:
    copy = BankCopy(DIM, capacity=2)
    vectors = _vectors(3000)
    ids = [f"v{i}" for i in range(3000)]
    copy.upsert(ids, vectors)
    copy.delete(ids[: 2000])  # dead rows beyond a quarter: compacted
    assert len(copy) == 1000 and copy.used == 1000
    copy.upsert(["v2500", "fresh"], vectors[:2])
    query = vectors[7]
    held, sims, missing = copy.similarities(query, ["v2500", "fresh", "v10", "v2999"])
    assert held == ["v2500", "fresh", "v2999"] and missing == ["v10"]
    np.testing.assert_allclose(sims, [vectors[0] @ query, vectors[1] @ query, vectors[2999] @ query], atol=1e-6)
    assert top_k(held, np.array([0.5, 0.5, 0.9], dtype=np.float32), 2) == [("v2999", pytest.approx(0.9)),
                                                                           ("fresh", 0.5)]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_the_copies_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_core.errors import InvalidInputError
    from hindsight_core.stores.id_vectors import DEFAULT_MAX_BYTES, ENV_BUDGET

    monkeypatch.delenv(ENV_BUDGET, raising=False)
    assert IdVectorCopies().max_bytes == DEFAULT_MAX_BYTES
    monkeypatch.setenv(ENV_BUDGET, "64")
    assert IdVectorCopies().max_bytes == 64 * 2**20
    assert IdVectorCopies(max_bytes=5).max_bytes == 5  # a value given in code wins
    monkeypatch.setenv(ENV_BUDGET, "0")
    index = ChromaVectorIndex.ephemeral()
    assert index.rank_ids("b", np.ones(4, dtype=np.float32), ["x"], 1) is None  # off: the caller asks Chroma
    for bad in ("lots", "-1", "1.5"):
        monkeypatch.setenv(ENV_BUDGET, bad)
        with pytest.raises(InvalidInputError, match=ENV_BUDGET):
            IdVectorCopies()


# Found by review (2026-12-06): each of these failed before its fix.
def _filled_ephemeral(n: int) -> tuple[ChromaVectorIndex, list[str]]:
    index = ChromaVectorIndex.ephemeral()
    index._copies.min_vectors = 100  # a copy for this small bank, as for one above 20k vectors
    index.ensure_collection("b", "e", DIM)
    ids = [f"u{i:05d}" for i in range(n)]
    t = datetime(2024, 1, 1, tzinfo=UTC)
    index.upsert("b", ids, _vectors(n), [VectorMeta(network=Network.WORLD, start=t, end=t)] * n)
    return index, ids


def test_an_in_process_index_lets_one_write_at_a_time() -> None:
    """A write reads back what it stored and then updates the copies: a delete in between left the deleted vector
    in the copy, so writes without a process guard take turns."""
    import threading
    import time

    index, ids = _filled_ephemeral(200)
    done = threading.Event()

    def delete() -> None:
        index.delete("b", ids[:1])
        done.set()

    with index._writing():
        worker = threading.Thread(target=delete)
        worker.start()
        time.sleep(0.3)
        assert not done.is_set()  # waits for the write in progress
    worker.join(10)
    assert done.is_set()
    index.close()


def test_resetting_an_in_process_index_takes_the_write_turn_and_leaves_no_copy() -> None:
    """A reset drops the copies and deletes the collections in one write turn: dropped before the turn, a load
    settling in between could keep a copy of the vectors the reset deletes."""
    import threading
    import time

    index, ids = _filled_ephemeral(200)
    index._copies.min_vectors = 100
    index._copies.background = False
    assert index.rank_ids("b", _vectors(1, 9)[0], ids[:50], 5) is not None  # a loaded copy
    done = threading.Event()

    def reset() -> None:
        index.reset()
        done.set()

    with index._writing():
        worker = threading.Thread(target=reset)
        worker.start()
        time.sleep(0.3)
        assert not done.is_set() and index._copies.ready("b") is not None  # waits for the write in progress
    worker.join(10)
    assert done.is_set() and index._copies.ready("b") is None and not index._copies.holds("b")
    index.close()


def test_closing_an_in_process_index_stops_its_loads_and_drops_its_copies() -> None:
    import threading

    index, ids = _filled_ephemeral(3000)
    index._copies.pause = 300.0  # a slow load: close() lands in the middle of it
    assert index.rank_ids("b", _vectors(1, 9)[0], ids[:50], 5) is None  # starts the load
    index.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("hindsight-vector-copy") and t.is_alive()]
    assert index._copies.ready("b") is None and not index._copies.holds("b")


def test_the_budget_counts_the_rows_a_copy_allocates_and_the_writes_queued_while_it_loaded() -> None:
    import contextlib

    n = 1200
    vectors = np.ones((n, DIM), np.float32) / 4
    ids = [f"u{i}" for i in range(n)]
    tight = IdVectorCopies(max_bytes=n * DIM * 4, background=False)  # the vectors fit, the spare rows do not
    assert tight.get("b", lambda: (n, DIM), lambda: iter([(ids, vectors)]), contextlib.nullcontext,
                     lambda: n) is None
    copies = IdVectorCopies(max_bytes=n * DIM * 4 * 2, background=False)
    extra = [f"x{i}" for i in range(3000)]

    def pages() -> Iterator[tuple[list[str], np.ndarray]]:
        yield ids, vectors
        copies.upsert("b", extra, lambda: np.ones((len(extra), DIM), np.float32) / 4)  # a retain while loading

    assert copies.get("b", lambda: (n, DIM), pages, contextlib.nullcontext, lambda: n + len(extra)) is None
    assert not copies.holds("b")  # the replay outgrew the budget: no copy, the index's own path


def test_a_load_that_cannot_start_its_thread_falls_back_and_leaves_nothing_stuck(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    index, ids = _filled_ephemeral(2000)
    real = threading.Thread.start

    def refuse(self: threading.Thread) -> None:
        if self.name.startswith("hindsight-vector-copy"):
            raise RuntimeError("can't start new thread")
        real(self)

    monkeypatch.setattr(threading.Thread, "start", refuse)
    assert index.rank_ids("b", _vectors(1, 9)[0], ids[:5], 5) is None  # the caller ranks as before
    assert not index._copies.holds("b")  # no entry left loading: writes are not queued for ever
    index.close()
