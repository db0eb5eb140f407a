"""Retain with the real local LLM (Qwen2.5-Coder-1.5B via llama.cpp): the whole pipeline, end to end.

About a minute on 2 CPU cores. A missing runtime or missing weights is a failure, not a skip: the test
command installs both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from hindsight_core.models import DocumentStatus, Network

pytestmark = pytest.mark.llm

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
EXCHANGE = [
    {"speaker": "Caroline", "id": "D1:1",
     "text": "Hey Mel! I went to an LGBTQ support group yesterday and it was so powerful."},
    {"speaker": "Melanie", "id": "D1:2", "text": "That's amazing, Caroline! What happened there?"},
    {"speaker": "Caroline", "id": "D1:3",
     "text": "People shared their transgender stories. It inspired me to study counseling next year."},
    {"speaker": "Melanie", "id": "D1:4",
     "text": "You'd be a great counselor. I'm painting a lake sunrise for my kids."},
]


def test_llm_retain_yields_sourced_narrative_facts_entities_and_links(tmp_path: Path, qwen: LocalLLM) -> None:
    with Hindsight.open(tmp_path / "mem", llm=qwen) as hs:
        bank = hs.bank("caroline")
        result = bank.retain(EXCHANGE, timestamp=T0, document_id="session-1", background=False)
        ids = {m["id"] for m in EXCHANGE}
        assert [m.sources for m in result.memories] == [[m["id"]] for m in EXCHANGE]  # the messages, at once
        assert bank.wait_idle(900)  # the facts job
        units = bank.memories(hs.store.units_of_document("caroline", "session-1"))
        facts = [m for m in units if m.cites is not None]
        raw_ids = {m.id for m in result.memories}
        assert 2 <= len(facts) <= 12 and {m.id for m in units} >= raw_ids  # added beside every raw message
        for memory in facts:
            assert set(memory.cites or []) <= raw_ids
            assert memory.sources and set(memory.sources) <= ids, memory
            assert memory.document_id == "session-1"
            assert memory.network in (Network.WORLD, Network.EXPERIENCE, Network.OPINION)
            assert memory.mentioned_at is not None
        # Narrative facts name who they are about instead of "I"/"you".
        assert any("Caroline" in m.text for m in facts)
        assert "Caroline" in result.entities
        assert result.links > 0
        assert bank.document("session-1").status == DocumentStatus.DONE
        rec = bank.recall("What did Caroline go to?", budget=300)
        assert rec.memories and any("D1:1" in m.sources for m in rec.memories[:3])
