"""The temporal channel at scale: the window's units listed through the time index (the same units as the
whole-bank filter, long occurrence intervals and units without an occurrence time included), and the vector
query restricted to them (the same ranking as Chroma's metadata filter, on real stores)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight_core.models import BankProfile, Memory, Network, TimeRange
from hindsight_core.recall import channels as ch
from hindsight_core.stores.base import VectorFilter
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.records import UnitBatch, VectorMeta
from hindsight_core.stores.sqlite.store import SQLiteGraphStore

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 16


def _units(n: int, seed: int = 3) -> list[Memory]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = T0 + timedelta(hours=rng.randint(0, 24 * 400))
        kind = i % 10
        if kind == 0:  # a long occurrence ("during 2024"): starts long before windows it overlaps
            end: datetime | None = start + timedelta(days=rng.randint(30, 300))
        elif kind == 1:  # no occurrence time: matched on when it was said
            start, end = None, None  # type: ignore[assignment]
        else:
            end = start if kind % 2 else None
        said = T0 + timedelta(hours=rng.randint(0, 24 * 400))
        out.append(Memory(id=f"u{i:04d}", bank_id="b", text=f"unit {i}", occurred_start=start, occurred_end=end,
                          mentioned_at=said, network=Network.EXPERIENCE if i % 7 == 0 else Network.WORLD))
    return out


@pytest.fixture()
def store(tmp_path: Path) -> SQLiteGraphStore:
    s = SQLiteGraphStore(tmp_path / "g.sqlite")
    s.create_bank(BankProfile(id="b", name="b"))
    s.add_units("b", UnitBatch(units=_units(1200)))
    return s


def _whole_bank(store: SQLiteGraphStore, window: TimeRange, networks: list[Network] | None) -> set[str]:
    """The window's units by the filter over every unit of the bank (what temporal_search read before)."""
    extra, args = store._filters(networks, window)
    rows = store._con().execute(f"SELECT u.id FROM units u WHERE u.bank_id = ?{extra}", ["b", *args]).fetchall()
    return {r[0] for r in rows}


WINDOWS = [
    TimeRange(start=T0 + timedelta(days=40), end=T0 + timedelta(days=47)),
    TimeRange(start=T0 + timedelta(days=100), end=T0 + timedelta(days=220)),
    TimeRange(start=None, end=T0 + timedelta(days=30)),
    TimeRange(start=T0 + timedelta(days=390), end=None),
    TimeRange(start=T0 - timedelta(days=900), end=T0 + timedelta(days=900)),
]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("networks", [None, [Network.EXPERIENCE]])
def test_the_time_index_lists_the_same_units_as_the_whole_bank_filter(
    store: SQLiteGraphStore, window: TimeRange, networks: list[Network] | None
) -> None:
    want = _whole_bank(store, window, networks)
    assert want  # each window holds some units
    got = store.temporal_ids("b", window, 10**6, networks, ordered=False)
    assert sorted(got) == sorted(want) and len(got) == len(set(got))
    ranked = store.temporal_search("b", window, 10**6, networks)
    assert {i for i, _ in ranked} == want
    # Most recent first (occurrence start, else when said), equal times by id; a limit keeps the most recent.
    times = [t for _, t in ranked]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(times))
    top = store.temporal_ids("b", window, 5, networks)
    assert top == [i for i, _ in ranked[:5]]
    assert store.temporal_ids("b", window, 5, networks, ordered=False) == top or len(want) <= 5


def test_a_longer_occurrence_written_later_is_found(store: SQLiteGraphStore) -> None:
    window = TimeRange(start=T0 + timedelta(days=1000), end=T0 + timedelta(days=1001))
    assert store.temporal_ids("b", window, 100) == []  # reads (and keeps) the longest interval so far
    long = Memory(id="long", bank_id="b", text="a decade", occurred_start=T0,
                  occurred_end=T0 + timedelta(days=3650))
    store.add_units("b", UnitBatch(units=[long]))
    assert store.temporal_ids("b", window, 100) == ["long"]


def _vectors(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), dtype=np.float32)


@pytest.mark.parametrize("exact_limit", [0, 20_000])  # Chroma's own query (HNSW, id-restricted) / numpy copy
def test_the_temporal_channel_ranks_the_window_as_the_metadata_filter_did(
    tmp_path: Path, store: SQLiteGraphStore, monkeypatch: pytest.MonkeyPatch, exact_limit: int
) -> None:
    import hindsight_core.stores.chroma as chroma_module

    monkeypatch.setattr(chroma_module, "ID_QUERY_MIN", 50)  # id lists this long go to Chroma's query
    index = ChromaVectorIndex.persistent(tmp_path / "vectors")
    index._exact.max_bank = exact_limit
    units = store.get_units("b", sorted(store.unit_ids("b")))
    vectors = _vectors(len(units))
    index.ensure_collection("b", "test-embedder", DIM)
    metas: list[Any] = [VectorMeta(network=u.network, start=u.occurred_start or u.mentioned_at,
                                   end=u.occurred_end or u.occurred_start or u.mentioned_at) for u in units]
    index.upsert("b", [u.id for u in units], vectors, metas)
    try:
        query = _vectors(1, seed=9)[0]
        row = {u.id: n for n, u in enumerate(units)}
        for window in WINDOWS[:2]:
            inside = sorted(_whole_bank(store, window, None))
            assert len(inside) > 10  # wide enough for the id-restricted query, not the exact path's 10
            sims = vectors[[row[i] for i in inside]] @ query
            exact = [inside[j] for j in np.argsort(-sims, kind="stable")[:20]]
            want = index.query("b", query, 20, VectorFilter.of(None, window))  # the metadata filter
            got = ch.temporal(index, "b", query, window, 20, None, None, store, exact_limit=10)
            if exact_limit:  # the in-memory copy: exact, as the metadata filter there
                assert [i for i, _ in got] == exact == [i for i, _ in want]
            else:  # Chroma's HNSW both ways: approximate, the same units all but always
                assert len({i for i, _ in got} & set(exact)) >= 18
                assert len({i for i, _ in got} & {i for i, _ in want}) >= 18
            assert all(s == pytest.approx(float(vectors[row[i]] @ query), abs=1e-4) for i, s in got)
            # Capped: the window's most recent units only.
            capped = ch.temporal(index, "b", query, window, 20, None, None, store, exact_limit=10, window_limit=60)
            recent = set(store.temporal_ids("b", window, 60))
            assert capped and {i for i, _ in capped} <= recent
    finally:
        index.close()
