"""Issue 25, "opinions hear bad news": every assessed (opinion, evidence) pair records a step, neutral included,
and evidence that names the opinion's subject only in its text (no entity list on the opinion, a name the
recogniser missed, a vector under the threshold) is still assessed.

The pairing and recording logic runs with a scripted model; the demo's case runs once with the real local model.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, assessment

from hindsight_core import Disposition, Hindsight
from hindsight_core.llm import LocalLLM
from hindsight_core.models import Entity, Memory, Network
from hindsight_core.opinions.candidates import known_names, name_pattern, opinion_names, related_opinions
from hindsight_core.opinions.confidence import opinion_step
from hindsight_core.runtime.jobs import OPINIONS

T0 = datetime(2025, 3, 16, 12, 0, tzinfo=UTC)
OPINION = "Maya is a good person to ask for help with a dog"
HISTORY = [
    {"speaker": "Maya", "text": "We adopted a rescue dog last week, his name is Pepper.", "id": "h1"},
    {"speaker": "Jonah", "text": "Congrats! Pepper looks adorable in the photos.", "id": "h2"},
]
BAD_NEWS = {"speaker": "Jonah", "text": "Maya forgot to feed Pepper twice while I was away, and he was hungry all day.",
            "id": "n1"}


def _by_claim(labels: dict[str, str]) -> Any:
    """A responder: the assessment label chosen by a word of the claim shown to the model."""
    def respond(messages: Any, schema: Any) -> Any:
        user = messages[-1]["content"]
        label = next(v for k, v in labels.items() if k in user)
        return assessment(label, revised="Maya is not always reliable with a dog.")
    return respond


def _opinion(entities: list[str] | None = None, text: str = OPINION) -> Memory:
    return Memory(id="o1", bank_id="b", text=text, network=Network.OPINION, entities=entities or [])


# ---------------------------------------------------------------------------------------------------------------
# Names: which opinions a fact bears on
# ---------------------------------------------------------------------------------------------------------------


def test_an_opinion_names_the_bank_entities_its_text_mentions() -> None:
    known = known_names([Entity(id="1", bank_id="b", name="Maya", aliases=["Maya R."]),
                         Entity(id="2", bank_id="b", name="Gloucester Road"),
                         Entity(id="3", bank_id="b", name="Pepper")])
    assert opinion_names(_opinion(), known) == ["Maya", "Maya R."]
    # a possessive, a multi-word name, and the opinion's own entity list kept first
    names = opinion_names(_opinion(["dog"], "Maya's dog loves the park on Gloucester Road."), known)
    assert names == ["dog", "Maya", "Maya R.", "Gloucester Road"]
    # capitalised words that are no entity of the bank are not names ("She", "Additionally")
    assert opinion_names(_opinion(text="Additionally, She is kind."), known) == []


def test_the_name_pattern_matches_whole_words_as_written_and_skips_short_names() -> None:
    pattern = name_pattern(["Maya", "Bo", "Gloucester Road"])
    assert pattern is not None
    assert pattern.search("Jonah: Maya forgot to feed Pepper")
    assert pattern.search("Maya's dog")
    assert pattern.search("a flat on Gloucester Road.")
    assert not pattern.search("Mayans built pyramids")  # whole words only
    assert not pattern.search("Bo said hi")  # two letters: too many false hits as a bare word
    assert name_pattern(["Al", " "]) is None


def test_a_fact_whose_names_the_recogniser_missed_is_paired_by_the_opinions_text(tmp_path: Path) -> None:
    """The issue's case without help from the recogniser or vectors: the opinion has no entity list, the fact
    has no entities, and no vector is close enough; the name in both texts pairs them."""
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM(), start_worker=False) as hs:
        bank = hs.bank("demo")
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        opinion = bank.add_opinion(OPINION, 0.7)
        unrelated = bank.add_opinion("Jonah makes excellent coffee.", 0.6, entities=["Jonah"])
        news = bank.retain([{"text": BAD_NEWS["text"], "id": "n1"}], timestamp=T0 + timedelta(days=90),
                           extract=False, background=False)
        blind = news.memories[0].model_copy(update={"entities": []})  # as if the recogniser found nothing
        pairs = related_opinions(hs.engine.store, hs.engine.reinforcer.index, "demo", [blind], similarity=1.01)
        assert pairs == {opinion.id: {blind.id}}
        assert unrelated.id not in pairs


# ---------------------------------------------------------------------------------------------------------------
# Recording: every assessed pair leaves a step
# ---------------------------------------------------------------------------------------------------------------


def test_bad_news_about_an_opinion_without_entities_lowers_it(tmp_path: Path) -> None:
    llm = ScriptedLLM([assessment("weaken", shows="forgetting to feed the dog")])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("demo", disposition=Disposition(skepticism=3))
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        opinion = bank.add_opinion(OPINION, 0.7)
        news = bank.retain([BAD_NEWS], timestamp=T0 + timedelta(days=90), extract=False, background=False)
        events = bank.update_opinions(news.memory_ids)
        step = opinion_step(hs.settings.cara.opinion_step, Disposition(skepticism=3))
        assert [(e.opinion_id, e.label, e.evidence) for e in events] == [(opinion.id, "weaken", news.memory_ids)]
        assert events[0].old_confidence == 0.7
        assert events[0].new_confidence == pytest.approx(0.7 - step)
        assert "Evidence: Maya forgot to feed Pepper twice" in llm.calls[0].user  # the text, without "Jonah: "


def test_each_assessed_pair_records_a_step_neutral_included(tmp_path: Path) -> None:
    llm = ScriptedLLM([_by_claim({"dog": "neutral", "coffee": "weaken"})] * 2)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("demo")
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        dog = bank.add_opinion(OPINION, 0.7)
        coffee = bank.add_opinion("Jonah makes excellent coffee.", 0.6, entities=["Jonah"])
        news = bank.retain([{"speaker": "Jonah", "text": "Maya and I tried the new coffee place on Friday.",
                             "id": "n2"}], timestamp=T0 + timedelta(days=3), extract=False, background=False)
        events = bank.update_opinions(news.memory_ids)
        assert len(llm.calls) == 2 and len(events) == 2  # one step per assessed pair
        by_opinion = {e.opinion_id: e for e in events}
        neutral = by_opinion[dog.id]
        assert (neutral.label, neutral.old_confidence, neutral.new_confidence) == ("neutral", 0.7, 0.7)
        assert neutral.evidence == news.memory_ids
        assert by_opinion[coffee.id].label == "weaken" and (by_opinion[coffee.id].new_confidence or 1) < 0.6
        assert [e.label for e in bank.opinion_history(dog.id)] == ["formed", "neutral"]
        assert bank.get(dog.id).confidence == 0.7
        # a neutral verdict counts as applied: asking again changes nothing and asks the model nothing
        assert bank.update_opinions(news.memory_ids) == [] and len(llm.calls) == 2


def test_second_hand_neutral_news_is_recorded_without_the_hearsay_note(tmp_path: Path) -> None:
    llm = ScriptedLLM([assessment("neutral", shows="nothing about dogs")])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("demo", disposition=Disposition(skepticism=5))
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        opinion = bank.add_opinion(OPINION, 0.7)
        rumour = bank.retain([{"speaker": "Jonah", "text": "I heard that Maya bought a new bike.", "id": "r1"}],
                             timestamp=T0 + timedelta(days=3), extract=False, background=False)
        [event] = bank.update_opinions(rumour.memory_ids)
        assert (event.opinion_id, event.label, event.new_confidence) == (opinion.id, "neutral", 0.7)
        assert "second-hand" not in (event.rationale or "")


def test_the_background_job_after_a_retain_records_the_step(tmp_path: Path) -> None:
    """The demo's path: ``retain(background=True)`` queues the opinion job; run it, and the step is there."""
    llm = ScriptedLLM([assessment("contradict", revised="Maya sometimes forgets her dog.", shows="hungry dog")] * 2)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("demo")
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        opinion = bank.add_opinion(OPINION, 0.7)
        news = bank.retain([BAD_NEWS], timestamp=T0 + timedelta(days=90), extract=False, background=True)
        [job] = [j for j in bank.jobs() if j.kind == OPINIONS]
        hs.engine.reinforcer.run(job)
        history = bank.opinion_history(opinion.id)
        assert [e.label for e in history] == ["formed", "contradict"]
        assert history[-1].evidence == news.memory_ids and (history[-1].new_confidence or 1) < 0.7
        assert bank.get(opinion.id).text == "Maya sometimes forgets her dog."


# ---------------------------------------------------------------------------------------------------------------
# The demo's case with the real local model
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.llm
def test_the_demos_bad_news_moves_the_opinion_with_the_local_model(tmp_path: Path, qwen: LocalLLM) -> None:
    """One opinion, one negative message, as in the issue: a step is recorded and the confidence falls. (The
    background job runs the same ``apply``; ``background=False`` keeps the observation job, a slow call of its
    own, out of this test.)"""
    with Hindsight.open(tmp_path / "m", llm=qwen, start_worker=False) as hs:
        bank = hs.bank("demo")
        bank.retain(HISTORY, timestamp=T0, extract=False, background=False)
        opinion = bank.add_opinion(OPINION, 0.7)
        news = bank.retain([BAD_NEWS], timestamp=T0 + timedelta(days=90), extract=False, background=False)
        events = bank.update_opinions(news.memory_ids)
        assert [(e.opinion_id, e.evidence) for e in events] == [(opinion.id, news.memory_ids)]
        assert events[0].label in ("weaken", "contradict"), events[0].rationale
        after = bank.get(opinion.id)
        assert after is not None and (after.confidence or 0) < 0.7
        assert [e.label for e in bank.opinion_history(opinion.id)][-1] == events[0].label
