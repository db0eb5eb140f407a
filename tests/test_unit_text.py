"""What is embedded for a unit: the date first, and a reply together with the question it answers; a vector
rebuilt later from the stores (reconcile, vector sync) equals the one retain wrote."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.vectors.unit_text import REPLY_CONTEXT_CHARS, reply_context, timed_text

T0 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC)
CHAT = [
    {"speaker": "Maya", "text": "Morning! What do you usually drink before work?", "id": "c1"},
    {"speaker": "Leo", "text": "Green tea for me, always.", "id": "c2"},
    {"speaker": "Maya", "text": "Nice. I just got back from Porto.", "id": "c3"},
    {"speaker": "Leo", "text": "Lovely, Pepper missed you.", "id": "c4"},
]


def test_the_date_leads_and_a_reply_carries_its_question() -> None:
    assert timed_text("Leo: Green tea.", T0) == "[8 May 2023] Leo: Green tea."
    assert timed_text("Leo: Green tea.", None) == "Leo: Green tea."
    asked = timed_text("Leo: Green tea.", T0, previous="Maya: What do you drink?")
    assert asked == "[8 May 2023] Leo: Green tea. (reply to Maya: What do you drink?)"
    assert timed_text("Leo: Yes.", T0, previous="Maya: I drink coffee.") == "[8 May 2023] Leo: Yes."
    assert timed_text("Leo: Yes.", T0, with_time=False, previous="Maya: Tea?") == "Leo: Yes. (reply to Maya: Tea?)"
    long = "Maya: " + "word " * 200 + "?"
    assert len(reply_context(long) or "") <= REPLY_CONTEXT_CHARS and reply_context(None) is None


def test_the_reply_is_found_by_a_question_about_its_topic(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        bank.retain(CHAT, timestamp=T0, extract=False, background=False)
        top = bank.recall("What does Leo like to drink?", budget=200, channels=["semantic"]).memories
        assert top[0].sources == ["c2"]


def test_rebuilt_vectors_equal_the_ones_retain_wrote(tmp_path: Path) -> None:
    path = tmp_path / "m"
    with Hindsight.open(path, start_worker=False) as hs:
        units = hs.bank("b").retain(CHAT, timestamp=T0, extract=False, background=False).memories
        ids = [u.id for u in units]
        written = hs.index.get_embeddings("b", ids)
        hs.index.delete("b", ids)  # lost vectors: the next open re-embeds them from the graph store
    with Hindsight.open(path, start_worker=False) as hs:
        assert hs.reconciled["b"]["reindexed"] == len(ids)
        rebuilt = hs.index.get_embeddings("b", ids)
        assert all(np.allclose(rebuilt[i], written[i], atol=1e-5) for i in ids)
        assert hs.engine.vectors.reindex("b", ids) is not None
        again = hs.index.get_embeddings("b", ids)
        assert all(np.allclose(again[i], written[i], atol=1e-5) for i in ids)
