"""HindsightRetriever: the standard LangChain retriever suite (sync and async) plus metadata and overrides."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hindsight_core import Bank, Hindsight
from langchain_hindsight import HindsightRetriever

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
FACTS = [
    {"speaker": "Ana", "text": "I adopted a grey cat called Miso.", "id": "D1:1"},
    {"speaker": "Ana", "text": "Miso likes to sleep on my keyboard.", "id": "D1:2"},
    {"speaker": "Ana", "text": "I feed my cat twice a day.", "id": "D1:3"},
    {"speaker": "Ben", "text": "My dog Rex chases every cat in the street.", "id": "D1:4"},
    {"speaker": "Ben", "text": "I moved to Berlin for a job in robotics.", "id": "D1:5"},
]


@pytest.fixture(scope="module")
def pets_bank(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bank]:
    with Hindsight.open(tmp_path_factory.mktemp("retriever") / "m") as hs:
        bank = hs.bank("pets")
        bank.retain(FACTS, timestamp=T0, extract=False, background=False)
        yield bank


class TestHindsightRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's own retriever contract: k in the constructor and in invoke, sync and async."""

    @pytest.fixture(autouse=True)
    def _bank(self, pets_bank: Bank) -> None:
        self.bank = pets_bank

    @property
    def retriever_constructor(self) -> type[HindsightRetriever]:
        return HindsightRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"bank": self.bank}

    @property
    def retriever_query_example(self) -> str:
        return "What is the cat called?"


def test_documents_carry_memory_text_id_and_provenance(pets_bank: Bank) -> None:
    docs = HindsightRetriever(bank=pets_bank, k=2).invoke("What is the cat called?")
    assert len(docs) == 2
    top = docs[0]
    assert top.page_content == "Ana: I adopted a grey cat called Miso."
    assert top.id == top.metadata["id"] and pets_bank.get(top.id) is not None
    meta = top.metadata
    assert meta["sources"] == ["D1:1"] and meta["network"] == "world"
    assert meta["mentioned_at"] == T0.isoformat() and isinstance(meta["occurred_start"], str)
    assert meta["document_id"] and meta["confidence"] is None and "Ana" in meta["entities"]
    assert meta["score"] > docs[1].metadata["score"] > 0
    assert set(meta) == {"id", "network", "occurred_start", "occurred_end", "mentioned_at", "confidence",
                         "entities", "sources", "document_id", "score"}


async def test_async_matches_sync_and_invoke_overrides_fields(pets_bank: Bank) -> None:
    retriever = HindsightRetriever(bank=pets_bank, k=5)
    sync_ids = [d.id for d in retriever.invoke("Where did Ben move?", k=3)]
    async_ids = [d.id for d in await retriever.ainvoke("Where did Ben move?", k=3)]
    assert sync_ids == async_ids and len(sync_ids) == 3
    # a tiny token budget keeps only the best memory, whatever k says
    assert len(retriever.invoke("Where did Ben move?", budget=15)) == 1
    # filters: nothing is an opinion; a time range before everything excludes all
    assert retriever.invoke("cat", networks=["opinion"]) == []
    assert await retriever.ainvoke("cat", time_range=(datetime(2000, 1, 1, tzinfo=UTC),
                                                       datetime(2000, 1, 2, tzinfo=UTC))) == []


def test_constructor_rejects_a_non_bank(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        HindsightRetriever(bank="pets")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HindsightRetriever(bank=None, k=0)  # type: ignore[arg-type]
