"""Both stores together through the ``Hindsight`` facade: forget, bank isolation, reconcile after a crash,
and the same recall from the embedded and the server backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conformance_support import Backend, ServerEnv

from hindsight_core import Hindsight
from hindsight_core.errors import StoreError
from hindsight_core.models import Memory, Network
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.base import UnitBatch

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

def msg(speaker: str, text: str, mid: str) -> dict[str, str]:
    """One chat message with its id."""
    return {"speaker": speaker, "text": text, "id": mid}


SESSIONS: list[list[dict[str, str]]] = [
    [
        msg("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", "D1:1"),
        msg("Melanie", "That's great! I painted a sunrise by the lake last week.", "D1:2"),
        msg("Caroline", "I'm thinking of becoming a counselor in Boston next year.", "D1:3"),
        msg("Melanie", "My kids love the new puppy, we named him Oscar.", "D1:4"),
    ],
    [
        msg("Caroline", "Oscar is a lovely name! Is he a golden retriever?", "D2:1"),
        msg("Melanie", "Yes, and he already chewed my favourite running shoes.", "D2:2"),
        msg("Caroline", "I signed up for a pottery class on Saturdays with my friend Jon.", "D2:3"),
        msg("Melanie", "We went camping at the beach in July, the kids loved the campfire.", "D2:4"),
    ],
    [
        msg("Caroline", "The adoption agency called me back about the interview.", "D3:1"),
        msg("Melanie", "I finished reading Charlotte's Web with my daughter.", "D3:2"),
        msg("Caroline", "Jon and I are planning a road trip to Oregon in August.", "D3:3"),
        msg("Melanie", "I started playing the violin again after ten years.", "D3:4"),
    ],
]

QUERIES = [
    "What did Melanie paint?",
    "What is the name of Melanie's puppy?",
    "Where does Caroline want to work as a counselor?",
    "When did Melanie go camping?",
    "Who is going to Oregon with Caroline?",
    "What instrument does Melanie play?",
]


def fill(hs: Hindsight, bank_id: str) -> list[str]:
    """Retain the three sessions (no LLM) and return every memory id."""
    bank = hs.bank(bank_id)
    ids: list[str] = []
    for i, session in enumerate(SESSIONS):
        res = bank.retain(session, timestamp=T0 + timedelta(days=7 * i), document_id=f"session-{i + 1}",
                          extract=False, background=False)
        ids += [m.id for m in res.memories]
    return ids


def key(m: Memory) -> tuple[str, tuple[str, ...]]:
    """A memory's identity across backends (ids are random uuids): its document and sources."""
    return (m.document_id or "", tuple(m.sources))


def keyword_hits(hs: Hindsight, bank_id: str, query: str) -> list[tuple[tuple[str, tuple[str, ...]], float]]:
    """The keyword channel's hits as (memory identity, score), best first."""
    hits = hs.store.keyword_search(bank_id, query, 100)
    by_id = {m.id: m for m in hs.store.get_units(bank_id, [i for i, _ in hits])}
    return [(key(by_id[i]), score) for i, score in hits]


def test_forget_across_stores(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        ids = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        assert hs.index.count(bank_id) == len(ids) == len(hs.store.unit_ids(bank_id))
        victim = ids[0]
        assert bank.forget(memory_id=victim) == 1
        assert bank.get(victim) is None and victim not in hs.index.ids(bank_id)
        session2 = hs.store.units_of_document(bank_id, "session-2")
        assert session2 and bank.forget(document_id="session-2") == len(session2)
        assert not set(session2) & hs.index.ids(bank_id) and not set(session2) & hs.store.unit_ids(bank_id)
        assert [d.id for d in bank.documents()] == ["session-1", "session-3"]
        jon = hs.store.find_entity(bank_id, "Oregon")
        assert jon is not None
        jon_units = hs.store.units_of_entity(bank_id, jon.id)
        assert bank.forget(entity="oregon") == len(jon_units) > 0
        left = hs.store.unit_ids(bank_id)
        assert hs.index.ids(bank_id) == left and len(left) == len(ids) - 1 - len(session2) - len(jon_units)
        recalled = {m.id for m in bank.recall("Jon road trip Oregon", budget=4000).memories}
        assert not recalled & {victim, *session2, *jon_units}


def test_bank_isolation(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        a_ids = set(fill(hs, bank_id + "-a"))
        b_ids = set(fill(hs, bank_id + "-b"))
        assert not a_ids & b_ids
        a, b = hs.bank(bank_id + "-a"), hs.bank(bank_id + "-b")
        for q in QUERIES:
            got = {m.id for m in a.recall(q, budget=4000).memories}
            assert got and got <= a_ids
        assert a.get(next(iter(b_ids))) is None and a.memories(list(b_ids)) == []
        assert a.forget(memory_id=next(iter(b_ids))) == 0  # another bank's memory cannot be forgotten from here
        assert hs.store.unit_ids(bank_id + "-b") == b_ids
        hs.delete_bank(bank_id + "-a")
        assert {p.id for p in hs.banks()} == {bank_id + "-b"}
        assert {m.id for m in b.recall(QUERIES[0], budget=4000).memories} <= b_ids


def test_reconcile_after_crash(backend: Backend, embedder: Any, bank_id: str) -> None:
    """A crash between the two stores: units without vectors are re-indexed, orphan vectors dropped.

    A forget marks its vectors in the graph transaction, so the vectors it left behind are removed by the
    mark sync at open (``recovered``); the full reconcile then finds only what no mark covered."""
    with backend.open(embedder) as hs:
        ids = fill(hs, bank_id)
        # crash 1: the graph commit of a retain landed, the vector upsert did not
        extra = Memory(id="crashed-unit", bank_id=bank_id, text="Caroline adopted a kitten named Biscuit.",
                       network=Network.WORLD, occurred_start=T0, sources=["D9:1"], document_id="session-9")
        hs.store.add_units(bank_id, UnitBatch(units=[extra]))
        # crash 2: a forget deleted units from the graph but died before the vector delete
        hs.store.delete_units(bank_id, ids[:2])
        # crash 3: vectors lost (index rebuilt from an old backup)
        hs.index.delete(bank_id, ids[5:7])
    with backend.open(embedder) as hs:
        assert hs.recovered["vectors_deleted"] == 2
        assert hs.reconciled[bank_id] == {"reindexed": 3, "dropped": 0}
        assert hs.index.ids(bank_id) == hs.store.unit_ids(bank_id)
        top = hs.bank(bank_id).recall("kitten Biscuit", budget=500).memories
        assert top and top[0].id == "crashed-unit"
    with backend.open(embedder) as hs:
        assert hs.reconciled[bank_id] == {"reindexed": 0, "dropped": 0}
        assert hs.recovered["vectors_deleted"] == 0 and hs.store.vector_marks(None) == []


def test_documents_and_metadata_through_facade(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain(SESSIONS[0], timestamp=T0, document_id="chat/1", extract=False, background=False,
                    document_metadata={"channel": "slack"}, metadata={"topic": "life"})
        doc = bank.document("chat/1")
        assert doc.metadata == {"channel": "slack"} and doc.status.value == "done"
        assert [d.id for d in bank.documents(prefix="chat/")] == ["chat/1"]
        mems = bank.recall("sunrise painting", budget=2000).memories
        assert mems and mems[0].metadata.get("topic") == "life" and mems[0].document_id == "chat/1"
        assert bank.stats()["units"] == len(hs.store.unit_ids(bank_id))


def test_server_recall_equals_embedded(servers: ServerEnv, embedder: Any, tmp_path: Path, bank_id: str) -> None:
    """``Hindsight.open(graph="bolt://...", vectors="http://...")`` ranks the same memories as the embedded
    backend on the same data."""
    from conformance_support import server_store

    wipe = server_store(servers)
    wipe.clear_all()
    wipe.close()
    with Hindsight.open(tmp_path / "embedded", embedder=embedder, start_worker=False) as local, Hindsight.open(
        None, graph=servers.uri, vectors=servers.chroma_url, embedder=embedder, start_worker=False,
        neo4j_user=servers.user, neo4j_password=servers.password, neo4j_database=servers.database,
    ) as remote:
        assert type(remote.store).__name__ == "Neo4jGraphStore"
        fill(local, bank_id)
        fill(remote, bank_id)
        ref = datetime(2023, 9, 1, tzinfo=UTC)
        for q in [*QUERIES, "What happened last week?"]:
            a = local.bank(bank_id).recall(q, budget=1000, reference_time=ref, trace=True)
            b = remote.bank(bank_id).recall(q, budget=1000, reference_time=ref, trace=True)
            ka, kb = [key(m) for m in a.memories], [key(m) for m in b.memories]
            # Every channel agrees: both stores score keyword hits with FTS5's bm25 on the bank's own
            # statistics, hence the same memories in the same order.
            kw_a, kw_b = keyword_hits(local, bank_id, q), keyword_hits(remote, bank_id, q)
            assert [k for k, _ in kw_a] == [k for k, _ in kw_b], q
            assert [s for _, s in kw_a] == pytest.approx([s for _, s in kw_b], rel=1e-9), q
            assert ka == kb, q
            assert a.memories[0].text == b.memories[0].text
            assert a.trace is not None and b.trace is not None
            sem_a = [key(m) for m in local.store.get_units(bank_id, [i.memory_id for i in a.trace.items
                                                                     if "semantic" in i.channels])]
            sem_b = [key(m) for m in remote.store.get_units(bank_id, [i.memory_id for i in b.trace.items
                                                                      if "semantic" in i.channels])]
            assert sorted(sem_a) == sorted(sem_b), q  # the vector channel finds exactly the same memories


def test_open_errors_name_what_was_tried(servers: ServerEnv, embedder: Any) -> None:
    with pytest.raises(StoreError, match=r"bolt://127\.0\.0\.1:9"):
        Hindsight.open(None, graph="bolt://127.0.0.1:9", vectors="memory", embedder=embedder)
    with pytest.raises(StoreError, match="rejected the credentials"):
        Hindsight.open(None, graph=servers.uri, vectors="memory", embedder=embedder, neo4j_user=servers.user,
                       neo4j_password="wrong-password", neo4j_database=servers.database)
    with pytest.raises(StoreError, match=r"http://127\.0\.0\.1:9"):
        Hindsight.open(None, graph=servers.uri, vectors="http://127.0.0.1:9", embedder=embedder)


def test_open_from_environment(servers: ServerEnv, embedder: Any, monkeypatch: pytest.MonkeyPatch,
                               bank_id: str) -> None:
    """``graph="env"`` / ``vectors="env"`` and ``open_server_hindsight`` read the documented variables."""
    from support.servers import open_server_hindsight

    for k, v in servers.env().items():
        monkeypatch.setenv(k, v)
    with Hindsight.open(None, graph="env", vectors="env", embedder=embedder, start_worker=False) as hs:
        assert hs.store.database == servers.database  # type: ignore[attr-defined]
        hs.bank(bank_id).retain("Melanie plays the violin.", extract=False, background=False)
    with open_server_hindsight(embedder=embedder, start_worker=False) as hs:
        mems = hs.bank(bank_id).recall("violin", budget=500).memories
        assert mems and "violin" in mems[0].text
        vec = hs.index.get_embeddings(bank_id, [mems[0].id])[mems[0].id]
        assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-3)


def test_recall_is_repeatable_and_survives_reopen(backend: Backend, embedder: Any, bank_id: str) -> None:
    """The same store and query give the same memories in the same order: again, from several threads at once,
    and after the store is closed and reopened (HNSW replays unsaved records into a new graph on reopen, so the
    embedded index ranks small banks exactly; the server's index is the same one across client reopens)."""
    from concurrent.futures import ThreadPoolExecutor

    def run(hs: Hindsight) -> list[list[tuple[str, float | None]]]:
        bank = hs.bank(bank_id)
        return [[(m.id, m.score) for m in bank.recall(q, budget=600, reference_time=T0).memories] for q in QUERIES]

    with backend.open(embedder) as hs:
        fill(hs, bank_id)
        first = run(hs)
        assert first == run(hs)
        with ThreadPoolExecutor(4) as pool:
            assert all(r == first for r in pool.map(lambda _: run(hs), range(4)))
    with backend.open(embedder) as hs:
        assert run(hs) == first


def test_a_half_done_forget_does_not_break_the_next_retain(backend: Backend, embedder: Any, bank_id: str) -> None:
    """The graph half of a forget landed and the vector half did not: the next retain of similar text must not
    link to the leftover vector (it used to fail with a foreign-key error on SQLite and silently drop the link
    on Bolt), and recall must not rank it."""
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        first = bank.retain([msg("Ana", "I adopted a kitten named Biscuit.", "k1")], timestamp=T0, extract=False,
                            background=False)
        hs.store.delete_units(bank_id, first.memory_ids)  # the vector stays behind
        assert hs.index.ids(bank_id) == set(first.memory_ids)
        again = bank.retain([msg("Ana", "I adopted a kitten called Biscuit!", "k2")], timestamp=T0, extract=False,
                            background=False)
        assert again.memories and again.links == 0  # no link to the forgotten unit's vector
        got = bank.recall("kitten Biscuit", budget=500, trace=True)
        assert [m.id for m in got.memories] == again.memory_ids
        assert all(item.memory_id not in first.memory_ids for item in got.trace.items)  # type: ignore[union-attr]
        assert hs.recover()["vectors_deleted"] == 1  # the mark is finished by the next sync
        assert check(hs, [bank_id]).ok


def test_a_bank_deletion_whose_vector_drop_fails_is_finished_later(
    backend: Backend, embedder: Any, bank_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph half of ``delete_bank`` commits; the collection drop fails (a Chroma hiccup): the failure is
    kept as a mark, not swallowed, and the next sync drops the collection."""
    with backend.open(embedder) as hs:
        fill(hs, bank_id)
        real_drop = hs.index.drop_bank

        def hiccup(bid: str) -> None:
            raise StoreError("Chroma hiccup")

        monkeypatch.setattr(hs.index, "drop_bank", hiccup)
        hs.delete_bank(bank_id)
        assert hs.store.get_bank(bank_id) is None
        assert (bank_id, "") in hs.store.vector_marks(hs.lease.id)
        monkeypatch.setattr(hs.index, "drop_bank", real_drop)
        assert hs.recover()["vectors_dropped"] == 1
        assert hs.store.vector_marks(hs.lease.id) == []
        hs.bank(bank_id)  # a new bank of that id starts empty on both stores
        assert hs.index.count(bank_id) == 0 and hs.store.unit_ids(bank_id) == set()
