"""The opinion rule has one home (``hindsight_core.opinions``): the production path moves an opinion with
``opinions.confidence`` (one ceiling, one default), and the store writes what it is handed, re-checking in its
transaction that it was computed from the confidence still stored (compare-and-set, retried by the job)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, assessment

from hindsight_core import Disposition, Hindsight
from hindsight_core.models import Memory, Network
from hindsight_core.opinions.confidence import (
    CEILING,
    DEFAULT_CONFIDENCE,
    grounded_confidence,
    moved,
    opinion_step,
    update_confidence,
)
from hindsight_core.opinions.reinforce import OpinionReinforcer
from hindsight_core.stores.base import OpinionUpdate
from hindsight_core.stores.records import StaleConfidenceError

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
NEWS = [{"speaker": "Jonah", "text": "Maya walked Pepper every day while I was away.", "id": "n1"}]


def test_a_move_starts_from_the_default_and_stops_at_the_one_ceiling() -> None:
    assert moved(None, "neutral", 0.1) == (DEFAULT_CONFIDENCE, DEFAULT_CONFIDENCE)
    assert moved(None, "reinforce", 0.1).new == pytest.approx(DEFAULT_CONFIDENCE + 0.1)
    assert moved(0.9, "reinforce", 0.3) == (0.9, CEILING)  # the same ceiling as formation's
    many = [Memory(id=f"m{i}", bank_id="b", text=f"fact {i}", network=Network.WORLD, document_id=f"d{i}",
                   mentioned_at=T0) for i in range(30)]
    assert grounded_confidence(many, [], Disposition(skepticism=1), T0) == CEILING
    assert moved(1.0, "reinforce", 0.1).new == 1.0  # a value a caller set above it is not lowered by support
    assert moved(1.0, "weaken", 0.1).new == pytest.approx(0.9)
    assert moved(0.05, "contradict", 0.1).new == 0.0


class RacingStore:
    """A store where another writer moves the opinion right after the job read it, ``races`` times."""

    def __init__(self, store: Any, races: int, to: float) -> None:
        self._store = store
        self.races = races
        self.to = to
        self.updates: list[OpinionUpdate] = []
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def apply_opinion_update(self, bank_id: str, update: OpinionUpdate, owner: str | None = None) -> Any:
        self.updates.append(update)
        if self.races:
            self.races -= 1
            self._store.update_unit(bank_id, update.opinion_id, confidence=self.to)
            self.to = round(self.to - 0.05, 2)
        try:
            return self._store.apply_opinion_update(bank_id, update, owner)
        except StaleConfidenceError:
            self.refused += 1
            raise


def _bank_with_opinion(hs: Hindsight, confidence: float) -> tuple[str, str, list[str]]:
    bank = hs.bank("pets", disposition=Disposition(skepticism=3))
    opinion = bank.add_opinion("Maya is a good person to ask for help with a dog", confidence, entities=["Maya"])
    news = bank.retain(NEWS, timestamp=T0, extract=False)
    return bank.id, opinion.id, news.memory_ids


@pytest.mark.parametrize("races", [0, 1, 3])
def test_the_job_moves_from_what_is_stored_when_another_writer_got_there_first(tmp_path: Path, races: int) -> None:
    llm = ScriptedLLM([assessment("reinforce", shows="she walked the dog")] * 3)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank_id, opinion_id, news = _bank_with_opinion(hs, 0.6)
        store = RacingStore(hs.store, races, to=0.4)
        reinforcer = OpinionReinforcer(store, hs.index, lambda *_: None, lambda: llm, hs.settings.cara)
        events = reinforcer.apply(bank_id, news)
        step = opinion_step(hs.settings.cara.opinion_step, Disposition(skepticism=3))
        stored = hs.store.get_units(bank_id, [opinion_id])[0].confidence
        history = hs.store.opinion_history(bank_id, opinion_id)
    assert len(llm.calls) == 1  # the model is asked once however often the write is retried
    assert store.refused == races and len(store.updates) == races + 1
    start = 0.6 if races == 0 else round(0.4 - 0.05 * (races - 1), 2)  # the last value the other writer left
    assert [(e.old_confidence, e.new_confidence) for e in events] == [(start, update_confidence(start, "reinforce",
                                                                                                step))]
    assert stored == events[0].new_confidence
    assert [e.label for e in history] == ["formed", "reinforce"]  # one step, however many refusals


def test_the_production_path_holds_an_update_at_the_ceiling(tmp_path: Path) -> None:
    llm = ScriptedLLM([assessment("reinforce", shows="she walked the dog")])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank_id, opinion_id, news = _bank_with_opinion(hs, 0.93)
        reinforcer = OpinionReinforcer(hs.store, hs.index, lambda *_: None, lambda: llm, hs.settings.cara)
        [event] = reinforcer.apply(bank_id, news)
        assert (event.old_confidence, event.new_confidence) == (0.93, CEILING)
        assert hs.store.get_units(bank_id, [opinion_id])[0].confidence == CEILING


def test_a_job_that_keeps_losing_the_race_gives_up_loudly(tmp_path: Path) -> None:
    llm = ScriptedLLM([assessment("weaken", shows="late")])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank_id, opinion_id, news = _bank_with_opinion(hs, 0.6)
        store = RacingStore(hs.store, races=1000, to=0.9)
        reinforcer = OpinionReinforcer(store, hs.index, lambda *_: None, lambda: llm, hs.settings.cara)
        with pytest.raises(StaleConfidenceError):
            reinforcer.apply(bank_id, news)
        assert [e.label for e in hs.store.opinion_history(bank_id, opinion_id)] == ["formed"]
        assert hs.store.applied_evidence(bank_id, opinion_id) == set()  # the job's retry will ask again
