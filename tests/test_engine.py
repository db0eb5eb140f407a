"""End-to-end tests of retain and recall on the embedded default (real SQLite, real Chroma, real embedder)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_core import (
    BankNotFoundError,
    EmbedderMismatchError,
    Hindsight,
    InvalidInputError,
    Network,
    StoreError,
    TimeRange,
)
from hindsight_core.config import RecallSettings, Settings
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.models import DocumentStatus, JobStatus
from hindsight_core.stores.base import VectorMeta
from hindsight_core.stores.chroma import ChromaVectorIndex
from hindsight_core.stores.sqlite import SQLiteGraphStore
from hindsight_core.text.tokens import count_tokens

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_raw_retain_keeps_provenance_entities_and_links(hs: Hindsight, conversation: list[dict]) -> None:
    bank = hs.bank("support")
    result = bank.retain(conversation, timestamp=T0, document_id="s1", extract=False)
    assert [m.sources for m in result.memories] == [[m["id"]] for m in conversation]
    assert all(m.document_id == "s1" for m in result.memories)
    assert result.memories[0].text.startswith("Caroline: I went to a LGBTQ support group")
    assert {"Caroline", "Melanie", "Oscar", "Boston"} <= set(result.entities)
    assert result.links > 0
    stats = bank.stats()
    assert stats["units"] == stats["vectors"] == len(conversation)
    assert stats["documents"] == {"done": 1}
    assert stats["links"].get("temporal", 0) > 0
    doc = bank.document("s1")
    assert "LGBTQ support group" in doc.content


def test_relative_dates_in_messages_become_occurrence_ranges(hs: Hindsight, conversation: list[dict]) -> None:
    result = hs.bank("b").retain(conversation, timestamp=T0, extract=False)
    yesterday = result.memories[0]
    assert yesterday.occurred_start is not None and yesterday.occurred_start.date().isoformat() == "2023-05-07"
    assert yesterday.mentioned_at == T0
    last_week = result.memories[1]
    # 8 May 2023 is a Monday: "last week" is Monday 1 to Sunday 7 May.
    assert last_week.occurred_start is not None and last_week.occurred_start.date().isoformat() == "2023-05-01"


def test_recall_finds_the_answer_with_sources_and_trace(hs: Hindsight, conversation: list[dict]) -> None:
    bank = hs.bank("b")
    bank.retain(conversation, timestamp=T0, extract=False)
    rec = bank.recall("What is the name of Melanie's dog?", trace=True)
    assert rec.memories, "recall returned nothing"
    top_sources = [s for m in rec.memories[:2] for s in m.sources]
    assert "D1:4" in top_sources
    assert rec.tokens == sum(count_tokens(m.text) for m in rec.memories)
    assert rec.trace is not None
    assert set(rec.trace.channel_sizes) >= {"semantic", "keyword"}
    first = next(i for i in rec.trace.items if i.memory_id == rec.memories[0].id)
    assert first.selected and first.channels
    assert {"embed_ms", "semantic_ms", "keyword_ms", "fusion_ms", "pack_ms", "total_ms"} <= set(rec.trace.timings_ms)
    assert all(m.score is not None for m in rec.memories)
    scores = [m.score for m in rec.memories]
    assert scores == sorted(scores, reverse=True)


def test_neighbours_of_the_best_hits_are_packed_after_the_head(tmp_path: Path, conversation: list[dict]) -> None:
    settings = Settings(recall=RecallSettings(context_after=2, context_hits=1))
    with Hindsight.open(tmp_path / "m", settings=settings) as h:
        bank = h.bank("b")
        doc = bank.retain(conversation, timestamp=T0, extract=False).document_id
        order = h.store.units_of_document("b", doc)
        query = "What is the name of Melanie's dog?"
        rec = bank.recall(query, budget=10_000, trace=True)
        got = [m.id for m in rec.memories]
        hit = order.index(got[0])
        expected = [order[j] for j in (hit - 1, hit + 1) if 0 <= j < len(order) and order[j] not in got[:2]]
        assert expected, "the test needs a neighbour outside the head"
        assert got[2 : 2 + len(expected)] == expected  # right after the first two, before the rest of the ranking
        assert rec.trace is not None
        items = {i.memory_id: i for i in rec.trace.items}
        assert all(items[i].context_of == got[0] and items[i].selected for i in expected)
        assert all(items[i].context_of is None for i in got if i not in expected)
        rest = [i for i in got[2:] if i not in expected]
        assert rest == sorted(rest, key=lambda i: items[i].fused_rank)  # the rest keeps the fusion's order
        # A result no longer than the head is the fusion's top as it was.
        assert [m.id for m in bank.recall(query, max_memories=2).memories] == got[:2]
    with Hindsight.open(tmp_path / "m", settings=Settings(recall=RecallSettings(context_hits=0))) as h:
        plain = h.bank("b").recall(query, budget=10_000, trace=True)
        assert plain.trace is not None
        ranks = {i.memory_id: i.fused_rank for i in plain.trace.items}
        assert [ranks[m.id] for m in plain.memories] == sorted(ranks[m.id] for m in plain.memories)
        assert all(i.context_of is None for i in plain.trace.items)


class _StoreWithoutNeighbours(SQLiteGraphStore):
    """A graph store written against the protocol before ``adjacent_units`` existed."""

    adjacent_units = None  # type: ignore[assignment]  # the method is missing


def test_a_store_without_adjacent_units_is_refused_before_any_recall(tmp_path: Path) -> None:
    # Hindsight.open checks the GraphStore protocol at its public edge; the constructor, which takes open stores,
    # refuses the store only when neighbouring context needs the method, and names it.
    store = _StoreWithoutNeighbours(tmp_path / "g.sqlite")
    with pytest.raises(InvalidInputError, match="GraphStore"):
        Hindsight.open(None, graph=store, vectors="memory", start_worker=False)
    index = ChromaVectorIndex.ephemeral()
    with pytest.raises(StoreError, match="adjacent_units"):
        Hindsight(store, index, settings=Settings(recall=RecallSettings(context_hits=5)), start_worker=False)
    with Hindsight(store, index, start_worker=False) as h:  # off by default: fine
        bank = h.bank("b")
        bank.retain("Melanie adopted a dog called Oscar.", timestamp=T0, extract=False)
        assert bank.recall("Melanie's dog").memories


def test_budget_limits_tokens_exactly(hs: Hindsight, conversation: list[dict]) -> None:
    bank = hs.bank("b")
    bank.retain(conversation, timestamp=T0, extract=False)
    full = bank.recall("Caroline and Melanie", budget=10_000)
    assert len(full.memories) == len(conversation)
    small = bank.recall("Caroline and Melanie", budget=40)
    assert 0 < small.tokens <= 40
    assert small.tokens == sum(count_tokens(m.text) for m in small.memories)
    assert len(small.memories) < len(full.memories)
    assert len(bank.recall("Caroline", budget=10_000, max_memories=2).memories) == 2


def test_time_constraint_in_query_uses_reference_time(hs: Hindsight) -> None:
    bank = hs.bank("b")
    alps = [{"speaker": "Ann", "text": "I went hiking in the Alps.", "id": "a"}]
    norway = [{"speaker": "Ann", "text": "I went hiking in Norway.", "id": "b"}]
    bank.retain(alps, timestamp="2024-06-03", extract=False)
    bank.retain(norway, timestamp="2024-07-10", extract=False)
    rec = bank.recall("Where did Ann go hiking last week?", reference_time="2024-07-15", trace=True)
    assert rec.trace is not None and rec.trace.time_range is not None
    assert rec.trace.time_range.start.date().isoformat() == "2024-07-08"
    assert rec.memories[0].sources == ["b"]
    assert rec.trace.channel_sizes.get("temporal") == 1


def test_filters_by_network_and_time_range(hs: Hindsight) -> None:
    bank = hs.bank("b")
    bank.retain([{"role": "assistant", "text": "I booked the flight to Rome for you."}], timestamp="2024-01-05",
                extract=False)
    bank.retain([{"role": "user", "text": "Please book a flight to Rome."}], timestamp="2024-01-04", extract=False)
    exp = bank.recall("flight to Rome", networks=["experience"])
    assert [m.network for m in exp.memories] == [Network.EXPERIENCE]
    world = bank.recall("flight to Rome", networks=[Network.WORLD])
    assert [m.network for m in world.memories] == [Network.WORLD]
    ranged = bank.recall("flight to Rome", time_range=("2024-01-05", "2024-01-06"))
    assert [m.text for m in ranged.memories] == ["assistant: I booked the flight to Rome for you."]
    assert bank.recall("flight", time_range=TimeRange(start=datetime(2030, 1, 1, tzinfo=UTC))).memories == []


def test_banks_are_isolated(hs: Hindsight) -> None:
    hs.bank("a").retain("The secret code of bank A is pineapple.", extract=False)
    hs.bank("b").retain("Bank B only knows about bananas.", extract=False)
    for query in ("secret code pineapple", "bananas"):
        texts = [m.text for m in hs.bank("b").recall(query).memories]
        assert all("pineapple" not in t for t in texts)
    assert [m.bank_id for m in hs.bank("a").recall("pineapple").memories] == ["a"]


def test_forget_by_memory_document_and_entity(hs: Hindsight, conversation: list[dict]) -> None:
    bank = hs.bank("b")
    r1 = bank.retain(conversation, timestamp=T0, document_id="d1", extract=False)
    r2 = bank.retain("Oscar the dog learned to sit in June.", document_id="d2", extract=False)
    assert bank.forget(memory_id=r1.memories[0].id) == 1
    assert bank.get(r1.memories[0].id) is None
    assert bank.forget(entity="Oscar") >= 2
    assert all("Oscar" not in m.text for m in bank.recall("Oscar", budget=5000).memories)
    assert bank.forget(document_id="d1") == len(conversation) - 1 - 2  # minus forgotten ones
    assert bank.stats()["units"] == bank.stats()["vectors"] == 0
    with pytest.raises(KeyError):
        bank.document("d1")
    assert r2.document_id == "d2"
    with pytest.raises(InvalidInputError):
        bank.forget()


def test_reretaining_a_document_replaces_its_units(hs: Hindsight) -> None:
    bank = hs.bank("b")
    bank.retain("First version about tulips.", document_id="doc", extract=False)
    bank.retain("Second version about roses.", document_id="doc", extract=False)
    texts = [m.text for m in bank.recall("flowers tulips roses", budget=5000).memories]
    assert texts == ["Second version about roses."]


def test_bad_input_is_rejected_clearly(hs: Hindsight) -> None:
    bank = hs.bank("b")
    for bad in ("", "   ", [], [{"text": ""}], None):
        with pytest.raises(InvalidInputError):
            bank.retain(bad, extract=False)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="timestamp"):
        bank.retain("hello", timestamp="the thirty-second of Smarch", extract=False)
    with pytest.raises(InvalidInputError):
        bank.retain("x" * (hs.settings.max_document_chars + 1), extract=False)
    with pytest.raises(InvalidInputError):
        bank.retain([{"text": "a", "id": "1"}, {"text": "b", "id": "1"}], extract=False)
    with pytest.raises(InvalidInputError):
        bank.recall("")
    with pytest.raises(InvalidInputError):
        bank.recall("x", budget=0)
    with pytest.raises(InvalidInputError):
        bank.recall("x", networks=["dreams"])
    with pytest.raises(InvalidInputError):
        bank.recall("x", time_range=("2024-02-01", "2024-01-01"))
    with pytest.raises(BankNotFoundError):
        hs.bank("nobody", create=False)
    assert "nobody" not in {b.id for b in hs.banks()}
    assert bank.stats()["units"] == 0


def test_broken_unicode_is_repaired_and_reported(hs: Hindsight) -> None:
    result = hs.bank("b").retain("caf\udce9 au lait\x00 please", extract=False)
    assert result.warnings and "unicode" in result.warnings[0]
    assert result.memories[0].text == "caf\ufffd au lait please"


def test_hostile_names_are_plain_data(hs: Hindsight) -> None:
    nasty = "x'); DROP TABLE units; -- \"` OR 1=1 NEAR(a b) *"
    bank = hs.bank(nasty)
    bank.retain([{"speaker": nasty, "text": f"{nasty} said hello to Robert'); DROP TABLE entities;--"}], extract=False)
    rec = bank.recall(nasty)
    assert rec.memories and rec.memories[0].bank_id == nasty
    assert hs.bank(nasty, create=False).stats()["units"] == 1
    assert any(b.id == nasty for b in hs.banks())


def test_large_document_is_split_into_units(hs: Hindsight) -> None:
    # Short paragraphs are packed into passages of at most passage_chars, each citing its character offsets.
    text = "\n\n".join(f"Paragraph {i} talks about topic number {i} in some detail." for i in range(50))
    result = hs.bank("b").retain(text, extract=False)
    fewest = -(-len(text) // hs.settings.passage_chars)
    assert fewest <= len(result.memories) <= fewest + 1
    assert all(len(m.text) <= hs.settings.passage_chars and m.sources[0].startswith("chars:")
               for m in result.memories)


def test_async_twins(hs: Hindsight, conversation: list[dict]) -> None:
    bank = hs.bank("b")

    async def main() -> tuple[int, list[str]]:
        res = await bank.aretain(conversation, timestamp=T0, extract=False)
        rec = await bank.arecall("puppy named Oscar")
        return len(res.memories), [s for m in rec.memories[:2] for s in m.sources]

    n, sources = asyncio.run(main())
    assert n == len(conversation)
    assert "D1:4" in sources


def test_reopen_persists_and_reconciles_missing_and_orphan_vectors(tmp_path: Path, conversation: list[dict]) -> None:
    path = tmp_path / "mem"
    with Hindsight.open(path) as hs:
        result = hs.bank("b").retain(conversation, timestamp=T0, extract=False)
        lost = result.memories[0].id
        hs.index.delete("b", [lost])  # simulate a crash between the graph write and the vector write
        hs.index.upsert("b", ["ghost"], hs.embedder.embed(["ghost"]), [VectorMeta(network=Network.WORLD)])
    with Hindsight.open(path) as hs:
        assert hs.reconciled["b"] == {"reindexed": 1, "dropped": 1}
        bank = hs.bank("b", create=False)
        assert bank.stats()["vectors"] == len(conversation)
        assert "D1:1" in [s for m in bank.recall("LGBTQ support group").memories[:1] for s in m.sources]


def test_embedder_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Hindsight.open(path) as hs:
        hs.bank("b").retain("hello", extract=False)

    class Other(SentenceTransformerEmbedder):
        @property
        def name(self) -> str:
            return "other-model"

    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        Hindsight.open(path, embedder=Other())


def test_a_failing_model_loses_nothing_the_raw_messages_are_memories_at_once(tmp_path: Path) -> None:
    class BrokenLLM:
        name = "broken"

        def generate(self, *a: object, **k: object) -> object:
            raise RuntimeError("model exploded")

        async def agenerate(self, *a: object, **k: object) -> object:
            raise RuntimeError("model exploded")

    with Hindsight.open(tmp_path / "memory", llm=BrokenLLM()) as hs:
        hs.worker.backoff_s = 0.01
        bank = hs.bank("b")
        result = bank.retain([{"speaker": "Ann", "text": "I adopted a cat named Miso.", "id": "m1"}])
        assert [m.sources for m in result.memories] == [["m1"]] and result.job_id
        assert bank.wait_idle(60)
        job = next(j for j in bank.jobs() if j.id == result.job_id)
        assert job.kind == "facts" and job.status == JobStatus.FAILED and "model exploded" in (job.error or "")
        doc = bank.document(result.document_id)
        assert doc.status == DocumentStatus.DONE and "Miso" in doc.content
        assert bank.stats()["units"] == 1
        assert [m.sources for m in bank.recall("What is Ann's cat called?").memories] == [["m1"]]


def test_sqlite_store_uses_wal_and_fts5(hs: Hindsight) -> None:
    hs.bank("b").retain("Quick brown foxes jump.", extract=False)
    con = sqlite3.connect(hs.store.path)  # type: ignore[attr-defined]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    hits = con.execute("SELECT count(*) FROM units_fts WHERE units_fts MATCH 'fox'").fetchone()[0]
    assert hits == 1  # porter stemming: "fox" matches "foxes"
