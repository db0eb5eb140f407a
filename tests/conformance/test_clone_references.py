"""A bank imported under a new id, beside its original, keeps every reference between its memories: a fact's
citations (its own and those lent by restating facts), what superseded a memory and how, and what a correction
corrects; on every backend, with the real embedder and no model (facts are stored as the facts job stores them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from conformance_support import Backend

from hindsight_core import Hindsight
from hindsight_core.extract.base import ExtractedFact
from hindsight_core.models import FACT_CITES_KEY, FACT_LENT_KEY, SUPERSEDED_BY_KEY, Document, Memory, Network
from hindsight_core.runtime.integrity import check

T0 = datetime(2023, 1, 10, 9, 0, tzinfo=UTC)


def _say(speaker: str, text: str, mid: str, days: int) -> dict[str, Any]:
    return {"speaker": speaker, "text": text, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


def _raw(hs: Hindsight, bank_id: str, document_id: str) -> Memory:
    return hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, document_id))[0]


def _build(hs: Hindsight, bank_id: str) -> dict[str, str]:
    """Two documents say the same (a fact of the first is lent the second's citation), a later one supersedes it
    (the change rules), and another memory is corrected. Returns the ids the test follows."""
    bank = hs.bank(bank_id)
    bank.retain([_say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0)], document_id="d0",
                extract=False, background=False)
    bank.retain([_say("Ana", "I live in Lisbon, in a small flat near the river.", "a2", 40)], document_id="d1",
                extract=False, background=False)
    first, second = _raw(hs, bank_id, "d0"), _raw(hs, bank_id, "d1")
    text = "Ana lives in Lisbon in a small flat near the river."
    held = hs.engine.retainer.store_facts(
        Document(id="d0", bank_id=bank_id, content="", timestamp=first.mentioned_at),
        [ExtractedFact(text=text, network=Network.WORLD, sources=list(first.sources),
                       mentioned_at=first.mentioned_at)], cites=[[first.id]]).memories[0]
    again = ExtractedFact(text=text, network=Network.WORLD, sources=list(second.sources),
                          mentioned_at=second.mentioned_at)
    assert hs.engine.retainer.store_facts(Document(id="d1", bank_id=bank_id, content="",
                                                   timestamp=second.mentioned_at),
                                          [again], cites=[[second.id]]).restated == 1
    bank.retain([_say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300)],
                document_id="d2", extract=False, background=False)
    porto = _raw(hs, bank_id, "d2")
    assert bank.get(first.id).superseded_by == porto.id  # type: ignore[union-attr]
    bank.retain([_say("Rui", "I work as a nurse at the Santa Maria hospital.", "r1", 5)], document_id="d3",
                extract=False, background=False)
    nurse = _raw(hs, bank_id, "d3")
    fixed = bank.correct(nurse.id, "Rui works as a paramedic at the Santa Maria hospital.")
    return {"first": first.id, "second": second.id, "held": held.id, "porto": porto.id, "nurse": nurse.id,
            "fixed": fixed.id}


def test_a_clone_keeps_citations_supersessions_and_corrections(backend: Backend, embedder: Any, bank_id: str,
                                                                 tmp_path: Path) -> None:
    from hindsight_core.portability.ids import new_id

    clone = f"{bank_id}-clone"
    with backend.open(embedder) as hs:
        ids = _build(hs, bank_id)
        assert check(hs).ok
        path = tmp_path / "bank.jsonl"
        hs.bank(bank_id).export(path)
        hs.import_bank(path, bank_id=clone)
        assert check(hs).ok, check(hs)
        new = {k: new_id(clone, v) for k, v in ids.items()}
        bank = hs.bank(clone, create=False)
        held = bank.get(new["held"])
        assert held is not None
        assert held.metadata[FACT_CITES_KEY] == [new["first"], new["second"]]
        assert held.metadata[FACT_LENT_KEY] == [new["second"]]
        old = bank.get(new["first"])
        assert old is not None and old.superseded_by == new["porto"]
        assert old.metadata[SUPERSEDED_BY_KEY] == new["porto"]
        assert hs.store.superseded_by_ids(clone, [new["porto"]]) == {new["porto"]: [new["first"]]}
        nurse = bank.get(new["nurse"])
        fixed = bank.get(new["fixed"])
        assert nurse is not None and fixed is not None and nurse.superseded_by == new["fixed"]
        assert fixed.metadata["correction"]["of"] == new["nurse"]
        # What rests on what still holds in the clone: forgetting the lending message keeps the fact, forgetting
        # the corrected memory takes its correction, forgetting what superseded a memory makes it current again.
        bank.forget(document_id="d1")
        kept = bank.get(new["held"])
        assert kept is not None and kept.metadata[FACT_CITES_KEY] == [new["first"]]
        bank.forget(memory_id=new["nurse"])
        assert bank.get(new["fixed"]) is None
        bank.forget(memory_id=new["porto"])
        again = bank.get(new["first"])
        assert again is not None and again.superseded_by is None
        assert check(hs).ok
        # The original bank is untouched by all of it.
        original = hs.bank(bank_id, create=False)
        assert original.get(ids["held"]).metadata[FACT_CITES_KEY] == [ids["first"], ids["second"]]  # type: ignore[union-attr]
        assert original.get(ids["first"]).superseded_by == ids["porto"]  # type: ignore[union-attr]
