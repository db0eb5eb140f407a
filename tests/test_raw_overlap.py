"""Raw ingest embeds while NER runs: the facts and vectors are exactly those of doing one after the other."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.extract.raw_extractor import RawExtractor
from hindsight_core.models import Document, Message
from hindsight_core.vectors.unit_text import embedding_texts

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
LINES = ["I moved to Lisbon last week with Ana.", "Ana starts at Google in Porto on Monday!", "ok", "   ",
         "Did you see Oscar at the marathon yesterday?", "We flew to Tokyo on 3 May 2023."]


def _messages(n: int) -> list[Message]:
    return [Message(id=f"m{i}", speaker=["Mel", "assistant", "Caroline"][i % 3], text=LINES[i % len(LINES)],
                    timestamp=T0 + timedelta(hours=i)) for i in range(n)]


@pytest.mark.parametrize("n", [2, 40])  # below and above the size from which NER gets its own thread
def test_extract_alongside_equals_extract(n: int) -> None:
    raw = RawExtractor()
    plain = raw.extract(_messages(n), document_time=T0)
    seen: list[int] = []
    facts, result = raw.extract_alongside(_messages(n), lambda fs: seen.append(len(fs)) or "done", document_time=T0)
    assert result == "done" and seen == [len(plain)]
    assert [f.model_dump() for f in facts] == [f.model_dump() for f in plain]
    assert any(e.name == "Lisbon" for f in facts for e in f.entities)  # NER's entities did arrive
    assert all(f.entities[0].name in {"Mel", "Caroline"} for f in facts if "assistant" not in f.participants)


def test_raw_retain_vectors_are_the_units_embedding_texts(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path, start_worker=False) as hs:
        doc = Document(id="d", bank_id="b", content="", timestamp=T0)
        facts, vectors = hs.engine.retainer.extract(doc, _messages(20))
        assert vectors is not None and vectors.shape == (len(facts), hs.embedder.dimension)
        units = [hs.engine.retainer._unit("b", doc, f, None) for f in facts]
        expected = hs.embedder.embed(embedding_texts(units))
        assert np.allclose(vectors, expected, atol=1e-6)
        res = hs.bank("b").retain(_messages(20), extract=False, background=False, document_id="d2")
        assert "extract_embed_ms" in res.timings_ms and "embed_ms" not in res.timings_ms
        assert res.memories and hs.bank("b").recall("Who starts at Google in Porto?").memories[0].text.endswith(
            "Ana starts at Google in Porto on Monday!")
