"""Later first (``core/recall/current.later_first``): for a question about how things are now, a speaker's later
plain statement on the same subject comes before their earlier one, when no supersession was recorded; plans,
additions, visits, stories and news of others never move, nor does anything for a question about the past."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from hindsight_core.config import RecallSettings, Settings, SupersessionSettings
from hindsight_core.hindsight import Hindsight
from hindsight_core.models import FACT_CITES_KEY, Memory, Network, TraceItem
from hindsight_core.recall.current import (
    MAX_HEAD_FACTOR,
    CurrentNotes,
    asks_how_things_are,
    head_of,
    later_first,
)
from hindsight_core.retain.supersede import plain_statement, subject_of


def said(mid: str, text: str, year: int) -> Memory:
    at = datetime(year, 3, 1, tzinfo=UTC)
    return Memory(id=mid, bank_id="b", text=text, mentioned_at=at, occurred_start=at)


def vectors(same: set[str]) -> object:
    """Unit vectors: the ids in ``same`` point one way, every other id its own way."""
    def get(ids: Sequence[str]) -> dict[str, np.ndarray]:
        out = {}
        for n, i in enumerate(ids):
            v = np.zeros(16)
            v[0 if i in same else 1 + n] = 1.0
            out[i] = v
        return out
    return get


def order(memories: list[Memory], same: set[str], depth: int = 10) -> tuple[list[str], CurrentNotes]:
    notes = CurrentNotes()
    out = later_first(iter(memories), vectors(same), plain_statement,  # type: ignore[arg-type]
                      subject_of, notes, depth, 0.3)
    return [m.id for m in out], notes


def test_a_later_plain_statement_of_the_same_speaker_on_the_same_subject_comes_first() -> None:
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith, long shifts but fun.", 2023)
    other = said("other", "Sam: The ferry was late again.", 2024)
    chef = said("chef", "Priya: Week two as a junior sous chef at the hotel by the docks, my feet are killing me.",
                2024)
    ids, notes = order([cook, other, chef], {"cook", "chef"})
    assert ids == ["chef", "cook", "other"]
    assert notes.later_first == {"chef": "cook"}


def test_a_facts_subject_is_the_person_it_opens_with_and_it_moves_like_a_message() -> None:
    def fact(mid: str, text: str, entities: list[str]) -> Memory:
        at = datetime(2024, 3, 1, tzinfo=UTC)
        return Memory(id=mid, bank_id="b", text=text, entities=entities, mentioned_at=at, occurred_start=at,
                      metadata={FACT_CITES_KEY: ["m1"]})

    chef = fact("chef", "Priya started as a junior sous chef at the hotel by the docks.", ["Priya"])
    assert subject_of(chef) == "Priya" and plain_statement(chef)
    assert subject_of(fact("x", "Priya's brother got a job as a chef.", ["Priya"])) is None
    assert subject_of(fact("x", "Priya started a job.", ["Sam"])) is None  # not one of its entities
    assert not plain_statement(fact("x", "Priya is thinking about a job as a chef.", ["Priya"]))
    assert plain_statement(fact("x", "Priya moved in with her partner Sam.", ["Priya", "Sam"]))  # "her" is fine
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith, long shifts but fun.", 2023)
    assert order([cook, chef], {"cook", "chef"})[0] == ["chef", "cook"]


@pytest.mark.parametrize("later", [
    "Priya: Thinking about applying for a sous chef job at the hotel.",  # a plan
    "Priya: I also do Sunday brunch shifts at a café, just for extra money.",  # an addition
    "Priya: Picked up a catering gig too, for the cash.",  # an addition at the clause's end
    "Priya: Spent the weekend in Glasgow, ate at three noodle bars.",  # a visit
    "Priya: At nineteen I washed dishes in a hotel kitchen.",  # a story of the past
    "Priya: My brother got a job as a sous chef at the hotel.",  # news of someone else
    "Priya: Our neighbours opened a noodle bar by the docks.",  # news of someone else
    "Priya: Anyone know a good knife sharpener?",  # only asks
    "Priya: Hey have you ever eaten at the hotel by the docks",  # asks, without its mark
    "Priya: The noodle bars in this city are full of talented cooks.",  # a remark about the world, not about her
    "Priya: Talk to you tomorrow! Good night",  # small talk
])
def test_plans_additions_visits_stories_news_and_questions_never_move(later: str) -> None:
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith, long shifts but fun.", 2023)
    ids, notes = order([cook, said("later", later, 2024)], {"cook", "later"})
    assert ids == ["cook", "later"] and not notes.later_first


def test_only_the_same_speaker_a_later_day_a_close_subject_and_the_first_ranks_move() -> None:
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith.", 2023)
    chef = said("chef", "Priya: Week two as a junior sous chef at the hotel by the docks.", 2024)
    assert order([cook, chef], set())[0] == ["cook", "chef"]  # not on the same subject
    sam = said("sam", "Sam: Week two as a junior sous chef at the hotel by the docks.", 2024)
    assert order([cook, sam], {"cook", "sam"})[0] == ["cook", "sam"]  # another speaker
    same_day = said("chef", chef.text, 2023)
    assert order([cook, same_day], {"cook", "chef"})[0] == ["cook", "chef"]  # said the same day
    filler = [said(f"f{n}", f"Sam: Line {n}.", 2024) for n in range(10)]
    assert order([cook, *filler, chef], {"cook", "chef"})[0][0] == "cook"  # beyond the depth: untouched
    superseded = chef.model_copy(update={"metadata": {"superseded_by": "x", "valid_until": "2025-01-01T00:00:00"}})
    assert order([cook, superseded], {"cook", "chef"})[0] == ["cook", "chef"]
    replaced = cook.model_copy(update={"metadata": {"superseded_by": "x", "valid_until": "2025-01-01T00:00:00"}})
    assert order([replaced, chef], {"cook", "chef"})[0] == ["cook", "chef"]  # supersession already placed it
    assert not plain_statement(said("thanks", "Priya: Thanks, Sam!", 2024))  # an acknowledgement states nothing


def test_the_depth_counts_messages_so_a_messages_facts_and_observations_take_no_place_of_their_own() -> None:
    # The default path ranks a message, facts made of it and an observation of its speaker side by side: counted as
    # memories, they filled the first five and kept the later statement out of reach.
    at = datetime(2023, 3, 1, tzinfo=UTC)
    # Counted by raw unit (a fact by the messages it cites), not by the labels a caller gave the messages: none here.
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith.", 2023)
    facts = [Memory(id=f"fact{n}", bank_id="b", text=text, entities=["Priya"], mentioned_at=at, occurred_start=at,
                    metadata={FACT_CITES_KEY: ["cook"]})
             for n, text in enumerate(["Priya is a line cook at a noodle bar.", "Priya works in Leith."])]
    summary = Memory(id="obs", bank_id="b", text="Priya is a line cook in Leith.", network=Network.OBSERVATION,
                     entities=["Priya"], mentioned_at=at, metadata={"facts": ["fact0"]})
    filler = [said(f"f{n}", f"Sam: Line {n}.", 2024).model_copy(update={"sources": ["0"]}) for n in range(4)]
    chef = said("chef", "Priya: Week two as a junior sous chef at the hotel by the docks, my feet are killing me.",
                2024)
    ranked = [cook, *facts, summary, *filler[:3], chef]  # the chef is the ninth memory but the fifth message
    assert [m.id for m in head_of(iter(ranked), 5)][-1] == "chef"
    assert order(ranked, {"cook", "chef"}, depth=5)[0][:2] == ["chef", "cook"]
    beyond = [cook, *facts, summary, *filler, chef]  # now the sixth message: untouched
    assert order(beyond, {"cook", "chef"}, depth=5)[0][0] == "cook"
    many = [cook, *(m.model_copy(update={"id": f"obs{n}"}) for n in range(30) for m in [summary]), chef]
    assert len(head_of(iter(many), 5)) == MAX_HEAD_FACTOR * 5  # observations alone never make the head unbounded


@pytest.mark.parametrize(("question", "now"), [
    ("What is Priya's job now?", True), ("Is Priya still cooking?", True), ("Where does Priya work these days?", True),
    ("Does Priya currently have a dog?", True), ("Where does Priya work?", False),
    ("What did Priya do in 2023?", False), ("What job had Priya before?", False),
])
def test_only_questions_about_how_things_are_now(question: str, now: bool) -> None:
    assert asks_how_things_are(question) is now


def _bank(hs: Hindsight) -> None:
    bank = hs.bank("later-first")
    bank.retain([{"speaker": "Priya", "text": "I'm a line cook at a noodle bar in Leith, long shifts but fun."},
                 {"speaker": "Sam", "text": "Did you see the match on Saturday?"}],
                timestamp=datetime(2023, 3, 1, tzinfo=UTC), extract=False)
    bank.retain([{"speaker": "Sam", "text": "The ferry was late again, forty minutes in the rain."},
                 {"speaker": "Priya", "text": "Week two as a junior sous chef at the hotel by the docks, my "
                                              "feet are killing me."}],
                timestamp=datetime(2024, 3, 1, tzinfo=UTC), extract=False)


def test_real_recall_puts_the_later_statement_first_and_the_trace_says_why(tmp_path: Path) -> None:
    def recall(depth: int, question: str) -> tuple[list[str], dict[str, TraceItem], dict[str, str]]:
        """The first two results as "cook" / "chef", the trace items, and which id is which."""
        settings = Settings(supersession=SupersessionSettings(enabled=False),  # no change cue here anyway
                            recall=RecallSettings(later_first_depth=depth))
        with Hindsight.open(tmp_path / f"d{depth}", settings=settings) as hs:
            if not hs.banks():
                _bank(hs)
            rec = hs.bank("later-first").recall(question, trace=True)
        assert rec.trace is not None
        kind = {m.id: "chef" if "sous chef" in m.text else "cook" for m in rec.memories if "Priya" in m.text}
        return [kind.get(m.id, "other") for m in rec.memories[:2]], {i.memory_id: i for i in rec.trace.items}, \
            {v: k for k, v in kind.items()}

    question = "What is Priya's job at the noodle bar now?"
    fused, items, _ = recall(0, question)
    assert fused == ["cook", "chef"]  # fusion alone puts the first job first (the question names the noodle bar)
    assert not any(i.later_statement for i in items.values())
    ordered, items, ids = recall(10, question)
    assert ordered == ["chef", "cook"]
    assert items[ids["cook"]].later_statement == ids["chef"] and items[ids["cook"]].demoted_as == "said_earlier"
    _, items, _ = recall(10, "What was Priya's job at the noodle bar in 2023?")
    assert not any(i.later_statement for i in items.values())
    _, items, _ = recall(10, "What is Priya's job at the noodle bar?")  # not asked of the present in so many words
    assert not any(i.later_statement for i in items.values())


@pytest.mark.parametrize("later", [
    "Priya: Signed off by the physio, the wrist is healed and I'm back on the line again.",  # "again": a return
    "Priya: Sous chef at the hotel now, and I'm still not used to the early starts.",  # "still" of something else
    "Priya: Allowed back in the kitchen from Monday, the burn has healed.",  # "back in" without a time
])
def test_still_again_and_back_in_do_not_keep_a_statement_from_standing_for_now(later: str) -> None:
    m = said("later", later, 2024)
    assert plain_statement(m), later
    cook = said("cook", "Priya: I'm a line cook at a noodle bar in Leith, long shifts but fun.", 2023)
    assert order([cook, m], {"cook", "later"})[0] == ["later", "cook"]
