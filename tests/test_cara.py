"""Reflect, opinions, observations and the background worker, with a scripted model to force outcomes.

The same behaviours run against the real local model in ``test_cara_llm.py``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, assessment

from hindsight_core import Disposition, Hindsight
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.models import JobStatus, Network, utcnow
from hindsight_core.opinions.confidence import grounded_confidence, opinion_step, update_confidence

IN_CALL = Settings(cara=CaraSettings(reflect_judgement="in_call"))
"""These tests script reflect's one call for yes/no questions (the evidence cited for and against)."""

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
FACTS = [
    {"speaker": "Ana", "text": "I started running every morning in January.", "id": "m1"},
    {"speaker": "Ana", "text": "I finished my first 10k race last Sunday in Porto.", "id": "m2"},
    {"speaker": "Ana", "text": "My knee hurt a bit after the race but it is fine now.", "id": "m3"},
]


def answer(known: bool = True, text: str = "Ana runs.", based_on: list[int] | None = None,
           opinions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"known": known, "answer": text, "based_on": based_on or [], "opinions": opinions or []}


def test_reflect_system_message_follows_disposition_and_based_on_is_real(tmp_path: Path) -> None:
    llm = ScriptedLLM([answer(based_on=[2, 1, 2, 99, 1]), answer(based_on=[1])])
    with Hindsight.open(tmp_path / "m", llm=llm, settings=IN_CALL) as hs:
        bank = hs.bank("coach", background="I coach amateur runners.")
        bank.retain(FACTS, timestamp=T0, extract=False)
        warm = bank.reflect("Is Ana a committed runner?", disposition=Disposition(skepticism=1, literalism=2,
                                                                                     empathy=5, bias=0.8))
        cold = bank.reflect("Is Ana a committed runner?", disposition=Disposition(skepticism=5, literalism=5,
                                                                                     empathy=1, bias=0.8))
    assert warm.system_message != cold.system_message
    assert "coach" in warm.system_message and "I coach amateur runners." in warm.system_message
    assert llm.calls[0].system == warm.system_message and llm.calls[1].system == cold.system_message
    recalled = {m.id for m in warm.memories}
    assert warm.based_on and set(warm.based_on) <= recalled  # [99] was invented and dropped
    # Each memory once, in the order the answer relied on them (the model cited 2 first, and twice).
    assert warm.based_on == [warm.memories[1].id, warm.memories[0].id]
    assert "[1]" in llm.calls[0].user and "Question: Is Ana a committed runner?" in llm.calls[0].user


def test_reflect_stores_opinions_with_their_formation(tmp_path: Path) -> None:
    op = {"text": "Ana is a dedicated runner.", "rationale": "daily runs and a race", "confidence": 0.7,
          "entities": ["Ana"]}
    llm = ScriptedLLM([answer(based_on=[1, 2], opinions=[op])])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("coach")
        bank.retain(FACTS, timestamp=T0, extract=False)
        result = bank.reflect("What do you think of Ana's running?")
        assert [o.text for o in result.opinions] == ["Ana is a dedicated runner."]
        opinion = bank.opinions()[0]
        # The confidence is the evidence's (two memories, bank disposition), not the model's 0.7, which is kept.
        cited = bank.memories(result.based_on)
        expected = grounded_confidence(cited, [], bank.profile.disposition, utcnow())
        assert opinion.network == Network.OPINION and opinion.confidence == pytest.approx(expected, abs=1e-3)
        assert 0 < opinion.confidence < 0.95 and opinion.confidence != 0.7
        assert result.opinions[0].metadata["model_confidence"] == 0.7
        assert "Ana" in opinion.entities
        assert set(opinion.metadata["based_on"]) == set(result.based_on)
        assert set(opinion.sources) <= {"m1", "m2", "m3"} and opinion.sources
        history = bank.opinion_history(opinion.id)
        assert [e.label for e in history] == ["formed"]
        assert history[0].new_confidence == opinion.confidence and history[0].evidence == result.based_on
        # opinions take part in recall as their own network
        assert [m.id for m in bank.recall("dedicated runner", networks=["opinion"]).memories] == [opinion.id]


def test_reflect_without_relevant_memory_says_it_does_not_know(tmp_path: Path) -> None:
    llm = ScriptedLLM([])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        result = hs.bank("empty").reflect("What is Ana's favourite colour?")
    assert not result.known and "don't know" in result.answer and result.based_on == []
    assert llm.calls == []  # nothing to reason from: no model call, no invented answer


def test_model_saying_unknown_forms_no_opinion(tmp_path: Path) -> None:
    op = {"text": "x", "rationale": "y", "confidence": 0.9, "entities": []}
    llm = ScriptedLLM([answer(known=False, text="I don't know.", based_on=[1], opinions=[op])])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("b")
        bank.retain(FACTS, timestamp=T0, extract=False)
        result = bank.reflect("What is Ana's favourite running shoe?")
        assert not result.known and result.opinions == [] and bank.opinions() == []


def _form_opinion(bank: Any) -> str:
    bank.retain(FACTS, timestamp=T0, extract=False)
    result = bank.reflect("What do you think of Ana's running?")
    return result.opinions[0].id


def test_opinion_trajectory_with_forced_labels(tmp_path: Path) -> None:
    op = {"text": "Ana is a dedicated runner.", "rationale": "r", "confidence": 0.5, "entities": ["Ana"]}

    def responder(messages: Any, schema: Any) -> dict[str, Any]:
        user = messages[-1]["content"]
        if schema.__name__ == "_Answer":
            return answer(based_on=[1], opinions=[op])
        if schema.__name__ == "_SummaryOut":
            return {"summary": "Ana runs."}
        if "marathon" in user:
            return assessment("reinforce", shows="more training")
        if "quit" in user:
            return assessment("contradict", "Ana used to be a dedicated runner.", "stopped")
        return assessment("neutral", shows="unrelated")

    llm = ScriptedLLM([responder] * 50)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("coach", disposition=Disposition(skepticism=3))
        opinion_id = _form_opinion(bank)
        step = opinion_step(hs.settings.cara.opinion_step, Disposition(skepticism=3))
        up = bank.retain([{"speaker": "Ana", "text": "I signed up for the Porto marathon, training daily.",
                           "id": "m4"}], timestamp=T0 + timedelta(days=5), extract=False, background=True)
        assert bank.wait_idle(60)
        formed = bank.opinion_history(opinion_id)[0].new_confidence  # grounded in one memory
        assert formed is not None and 0 < formed < 0.95
        after_up = bank.memories([opinion_id])[0].confidence
        assert after_up == pytest.approx(update_confidence(formed, "reinforce", step))
        down = bank.retain([{"speaker": "Ana", "text": "I quit running entirely; Ana hates running now.",
                             "id": "m5"}], timestamp=T0 + timedelta(days=30), extract=False, background=True)
        assert bank.wait_idle(60)
        final = bank.memories([opinion_id])[0]
        assert final.confidence == pytest.approx(update_confidence(after_up, "contradict", step))
        assert final.text == "Ana used to be a dedicated runner."
        history = bank.opinion_history(opinion_id)
        assert [e.label for e in history] == ["formed", "reinforce", "contradict"]
        assert history[1].old_confidence == formed and history[1].new_confidence == pytest.approx(after_up)
        assert history[1].evidence == [up.memories[0].id]
        assert history[2].evidence == [down.memories[0].id]
        assert history[2].old_text == "Ana is a dedicated runner." and history[2].new_text == final.text
        assert all(j.status == JobStatus.DONE for j in bank.jobs())


def test_failing_job_is_retried_with_backoff_then_kept_as_failed(tmp_path: Path) -> None:
    # Three messages, and an entity's first observation after three (observation_first_evidence; default 5).
    settings = Settings(cara=CaraSettings(observation_first_evidence=3, observation_mode="model"))
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([RuntimeError("model down")] * 10), settings=settings) as hs:
        hs.worker.backoff_s = 0.05
        bank = hs.bank("b")
        bank.retain(FACTS, timestamp=T0, extract=False, background=True)
        assert bank.wait_idle(30)
        jobs = bank.jobs()
        assert jobs and all(j.status == JobStatus.FAILED for j in jobs)
        assert all(j.attempts == hs.worker.max_attempts and "model down" in (j.error or "") for j in jobs)


def test_raw_ingest_queues_no_background_work_unless_asked(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([])) as hs:
        bank = hs.bank("b")
        bank.retain(FACTS, timestamp=T0, extract=False)
        assert bank.jobs() == []


def test_reflect_reports_stance_against_and_dropped_citations(tmp_path: Path) -> None:
    op = {"text": "Ana is a committed runner.", "rationale": "r", "confidence": 0.9, "entities": ["Ana"]}
    out = {**answer(based_on=[1, 2, 7], opinions=[op]), "against": [3, 2, 0], "stance": "yes"}
    llm = ScriptedLLM([out])
    with Hindsight.open(tmp_path / "m", llm=llm, settings=IN_CALL) as hs:
        bank = hs.bank("coach", disposition=Disposition(skepticism=3))
        bank.retain(FACTS, timestamp=T0, extract=False)
        result = bank.reflect("Is Ana a committed runner?", reference_time=T0)
        shown = result.memories
        assert result.based_on == [shown[0].id, shown[1].id]
        assert result.against == [shown[2].id]  # [2] also supports: it counts for, once; [0] names nothing
        assert result.citations_dropped == 2  # 7 and 0
        support, opposed = bank.memories(result.based_on), bank.memories(result.against)
        expected = grounded_confidence(support, opposed, Disposition(skepticism=3), T0)
        assert result.opinions[0].confidence == pytest.approx(expected, abs=1e-3)
        assert expected < grounded_confidence(support, [], Disposition(skepticism=3), T0)  # opposition costs
        # The model's flat "yes" is not carried at that confidence (under 0.5, weight on both sides): the answer
        # says the evidence is mixed and the stance is unsure (tests/test_opinions_coherence.py has the rule).
        assert expected < 0.5 and result.stance == "unsure"
        assert result.answer.startswith(f"The evidence is mixed (confidence {expected:.2f})")
        assert result.opinions[0].metadata["against"] == result.against
    assert '"against"' in json.dumps(llm.calls[0].schema.model_json_schema())


def test_an_opinion_resting_only_on_inferred_memories_is_not_stored_by_a_literal_mind(tmp_path: Path) -> None:
    # The bank holds one inferred memory (an earlier opinion) and nothing that was said. The model cites it and
    # forms a new opinion: a fully literal mind counts only what was said, so nothing supports it and it is not
    # stored; an open mind counts the inferred memory at half weight and stores it.
    op = {"text": "Ana keeps training.", "rationale": "r", "confidence": 0.9, "entities": ["Ana"]}
    llm = ScriptedLLM([answer(based_on=[1], opinions=[op]), answer(based_on=[1], opinions=[op])])
    with Hindsight.open(tmp_path / "m", llm=llm, settings=IN_CALL) as hs:
        bank = hs.bank("coach")
        earlier = bank.add_opinion("Ana is a committed runner.", 0.8, entities=["Ana"])
        literal = bank.reflect("Is Ana a committed runner?", reference_time=T0,
                               disposition=Disposition(skepticism=3, literalism=5))
        assert literal.known and literal.based_on == [earlier.id]
        assert literal.opinions == [] and [o.id for o in bank.opinions()] == [earlier.id]
        open_mind = bank.reflect("Is Ana a committed runner?", reference_time=T0,
                                 disposition=Disposition(skepticism=3, literalism=1))
        assert [o.text for o in open_mind.opinions] == ["Ana keeps training."]
        assert 0.0 < (open_mind.opinions[0].confidence or 0) < 0.9
        assert {o.id for o in bank.opinions()} == {earlier.id, open_mind.opinions[0].id}


def test_empathy_decides_which_memories_reflect_shows_first(tmp_path: Path) -> None:
    llm = ScriptedLLM([answer(based_on=[1]), answer(based_on=[1])])
    facts = [{"speaker": "Ana", "text": f"Ana ran lap number {i} of the track in Porto.", "id": f"r{i}"}
             for i in range(8)]
    facts.append({"speaker": "Ana", "text": "Ana felt lonely and sad running the Porto track alone.", "id": "sad"})
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("coach")
        bank.retain(facts, timestamp=T0, extract=False)
        warm = bank.reflect("How is Ana's running on the Porto track?", disposition=Disposition(empathy=5))
        cold = bank.reflect("How is Ana's running on the Porto track?", disposition=Disposition(empathy=1))
    sad = next(m.id for m in warm.memories if "lonely" in m.text)
    assert [m.id for m in warm.memories].index(sad) < [m.id for m in cold.memories].index(sad)
    assert sorted(m.id for m in warm.memories) == sorted(m.id for m in cold.memories)
    # the prompt numbers them in that order
    position = [m.id for m in warm.memories].index(sad) + 1
    assert llm.calls[0].user.split("lonely")[0].splitlines()[-1].startswith(f"[{position}] ")


def _assessor(label: str) -> Any:
    def respond(messages: Any, schema: Any) -> dict[str, Any]:
        return assessment(label, shows="about Ana's running")
    return respond


@pytest.mark.parametrize(("skepticism", "moves"), [(3, 1.0), (4, 0.5), (5, 0.0)])
def test_second_hand_claims_move_an_opinion_only_as_skepticism_allows(
    tmp_path: Path, skepticism: int, moves: float
) -> None:
    llm = ScriptedLLM([_assessor("contradict")] * 4)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        disposition = Disposition(skepticism=skepticism)
        bank = hs.bank("coach", disposition=disposition)
        facts = bank.retain(FACTS, timestamp=T0, extract=False)
        opinion = bank.add_opinion("Ana is a dedicated runner.", 0.6, entities=["Ana"], based_on=facts.memory_ids)
        rumour = bank.retain([{"speaker": "Bo", "text": "I heard that Ana quit running for good.", "id": "h1"}],
                             timestamp=T0 + timedelta(days=3), extract=False)
        events = bank.update_opinions(rumour.memory_ids)
        assert [e.label for e in events] == ["contradict"]  # the verdict is recorded whatever the disposition
        step = opinion_step(hs.settings.cara.opinion_step, disposition)
        assert events[0].new_confidence == pytest.approx(0.6 - 2 * step * moves)
        assert bank.get(opinion.id).confidence == pytest.approx(0.6 - 2 * step * moves)
        assert ("held at skepticism 5" in (events[0].rationale or "")) == (skepticism == 5)
        # first-hand, the same news moves even the strictest mind
        seen = bank.retain([{"speaker": "Ana", "text": "Ana here: I quit running for good.", "id": "f1"}],
                           timestamp=T0 + timedelta(days=4), extract=False)
        after = bank.update_opinions(seen.memory_ids)
        assert after and after[0].new_confidence < events[0].new_confidence


def test_update_opinions_applies_evidence_once_and_finds_names_the_recogniser_missed(tmp_path: Path) -> None:
    llm = ScriptedLLM([_assessor("weaken")] * 3)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("food")
        opinion = bank.add_opinion("Fig is a good restaurant.", 0.5, entities=["Fig"])
        # a common word opening the sentence: the recogniser keeps no entity here
        news = bank.retain([{"speaker": "Nina", "text": "Fig failed its health inspection last week.",
                             "id": "n1"}], timestamp=T0, extract=False)
        assert "Fig" not in news.memories[0].entities
        first = bank.update_opinions(news.memory_ids)
        assert [(e.opinion_id, e.label, e.evidence) for e in first] == [(opinion.id, "weaken", news.memory_ids)]
        assert bank.update_opinions(news.memory_ids) == []  # already applied: nothing moves twice
        assert len(llm.calls) == 1
        other = bank.retain([{"speaker": "Nina", "text": "The tram was late again this morning.", "id": "n2"}],
                            timestamp=T0, extract=False)
        assert bank.update_opinions(other.memory_ids) == [] and len(llm.calls) == 1  # unrelated: no model call


def test_update_opinions_failing_half_way_then_retried_moves_each_opinion_once(tmp_path: Path) -> None:
    from hindsight_core.errors import LLMError

    verdict = assessment("reinforce", shows="about Ana's running")
    llm = ScriptedLLM([verdict, LLMError("model went away"), verdict, verdict])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("coach")
        first = bank.add_opinion("Ana is a dedicated runner.", 0.5, entities=["Ana"])
        second = bank.add_opinion("Ana likes racing in Porto.", 0.5, entities=["Ana"])
        news = bank.retain([{"speaker": "Ana", "text": "Ana ran the Porto half marathon again.", "id": "n1"}],
                           timestamp=T0, extract=False)
        with pytest.raises(LLMError):
            bank.update_opinions(news.memory_ids)
        moved = [o for o in (first, second) if len(bank.opinion_history(o.id)) == 2]
        assert len(moved) == 1  # the one assessed before the failure moved, and only that one
        retried = bank.update_opinions(news.memory_ids)
        assert [e.opinion_id for e in retried] == [o.id for o in (first, second) if o not in moved]
        assert bank.update_opinions(news.memory_ids) == []
        for opinion in (first, second):
            history = bank.opinion_history(opinion.id)
            assert [e.label for e in history] == ["formed", "reinforce"]  # exactly once each
            assert bank.get(opinion.id).confidence == pytest.approx(history[-1].new_confidence)
        assert len(llm.calls) == 3  # the applied evidence was not asked about again


def test_the_model_judges_what_a_message_said_not_who_said_it(tmp_path: Path) -> None:
    """A raw memory is "Speaker: text"; the small model read the speaker as the subject, so the assessment sees
    the text alone (one message, its speaker one of the memory's entities). A colon that is not a speaker's
    stays."""
    llm = ScriptedLLM([assessment("weaken")] * 4)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("team")
        bank.add_opinion("Dario is reliable.", 0.7, entities=["Dario"])
        said = bank.retain([{"speaker": "Priya", "text": "Dario was twenty minutes late to standup.", "id": "p1"}],
                           timestamp=T0, extract=False, background=False)
        assert said.memories[0].text.startswith("Priya: ")
        assert [e.label for e in bank.update_opinions(said.memory_ids)] == ["weaken"]
        assert "Evidence: Dario was twenty minutes late to standup." in llm.calls[-1].user
        assert "Priya" not in llm.calls[-1].user
        note = bank.retain([{"text": "Reminder: Dario booked the room late again.", "id": "p2"}], timestamp=T0,
                           extract=False, background=False)
        bank.update_opinions(note.memory_ids)
        assert "Evidence: Reminder: Dario booked the room late again." in llm.calls[-1].user


def test_a_contradiction_whose_revision_call_fails_moves_nothing_until_retried(tmp_path: Path) -> None:
    """The verdict came back but the second call, for the corrected opinion, failed: no confidence moved, no
    history event, no text changed; the retry applies the contradiction exactly once."""
    from hindsight_core.errors import LLMError

    verdict = assessment("contradict", "Ana used to be a dedicated runner.", "stopped")
    llm = ScriptedLLM([verdict, LLMError("model went away"), verdict, verdict])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("coach")
        opinion = bank.add_opinion("Ana is a dedicated runner.", 0.7, entities=["Ana"])
        news = bank.retain([{"speaker": "Ana", "text": "Ana quit running for good last year.", "id": "q1"}],
                           timestamp=T0, extract=False, background=False)
        with pytest.raises(LLMError):
            bank.update_opinions(news.memory_ids)
        same = bank.get(opinion.id)
        assert same is not None and (same.text, same.confidence) == ("Ana is a dedicated runner.", 0.7)
        assert [e.label for e in bank.opinion_history(opinion.id)] == ["formed"]
        assert [e.label for e in bank.update_opinions(news.memory_ids)] == ["contradict"]
        assert bank.update_opinions(news.memory_ids) == []
        moved = bank.get(opinion.id)
        assert moved is not None and moved.text == "Ana used to be a dedicated runner."
        assert [e.label for e in bank.opinion_history(opinion.id)] == ["formed", "contradict"]
        assert len(llm.calls) == 4  # verdict, failed revision, verdict, revision; nothing asked a third time
