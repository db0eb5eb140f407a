"""Facts are checked against the messages they cite before they are stored (``extract/grounding``), rejected facts
are counted on the facts job, and recall uses facts as keys to the messages they cite."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.config import RecallSettings, Settings
from hindsight_core.extract.base import ExtractedEntity, ExtractedFact
from hindsight_core.extract.grounding import FactChecker, SourceLine
from hindsight_core.models import EntityType, JobStatus
from hindsight_core.runtime.integrity import check

T0 = datetime(2024, 1, 6, 12, 0, tzinfo=UTC)

# A real chat's shape (REALTALK-like): two people, each talking about themselves.
LINES = [
    SourceLine("D1:1", "Kevin", "Did you watch the game? Juventus lost to Real Madrid, I'm gutted, I'm a Juventus fan",
               0, T0),
    SourceLine("D1:2", "Paola", "Haha I'm a huge Real Madrid fan! My favourite tennis player is Rafael Nadal. "
                                "What about you?", 1, T0),
    SourceLine("D1:3", "Kevin", "Nice! I play basketball every weekend with my friends.", 2, T0),
    SourceLine("D1:4", "Paola", "I'm at the cinema watching The Grand Budapest Hotel right now", 3, T0),
    SourceLine("D1:5", "Kevin", "What is your favorite horror movie?", 4, T0),
    SourceLine("D1:6", "Paola", "Get Out, definitely. I watched it last week with my parrot Ricky lol", 5, T0),
    SourceLine("D1:7", "Muhhamed", "do you work as a freelancer?", 6, T0),
    SourceLine("D1:8", "assistant", "Nice! I'll remember that.", 7, T0),
]


def _fact(text: str, *sources: str, participants: tuple[str, ...] = ()) -> ExtractedFact:
    return ExtractedFact(text=text, sources=list(sources), participants=list(participants), mentioned_at=T0,
                         entities=[ExtractedEntity(name=p, type=EntityType.PERSON) for p in participants])


def _verdicts(*facts: ExtractedFact) -> tuple[dict[str, list[str]], dict[str, str]]:
    report = FactChecker().check(list(facts), LINES)
    return {f.text: f.sources for f in report.kept}, {r.text: r.reason for r in report.rejected}


def test_true_facts_are_kept_with_the_message_that_says_them() -> None:
    kept, rejected = _verdicts(
        _fact("Kevin is a Juventus fan", "D1:1"),
        _fact("Paola is a fan of Real Madrid", "D1:2"),
        _fact("Paola is watching The Grand Budapest Hotel at the cinema", "D1:4"),
        _fact("Kevin plays basketball every weekend with friends", "D1:3"),
        _fact("Paola watched Get Out last week (30 December 2023) with her parrot Ricky", "D1:6"),
    )
    assert rejected == {}
    assert kept["Kevin is a Juventus fan"] == ["D1:1"]
    assert kept["Paola watched Get Out last week (30 December 2023) with her parrot Ricky"] == ["D1:6"]


@pytest.mark.parametrize(("text", "source", "reason"), [
    # One speaker's words handed to the other, as the bundled model did on a real chat.
    ("Kevin is a fan of Real Madrid", "D1:2", "speaker"),
    ("Kevin likes Rafael Nadal as a tennis favorite", "D1:2", "speaker"),
    ("Kevin is watching The Grand Budapest Hotel", "D1:4", "speaker"),
    ("Vanessa is responding with a plan to play basketball", "D1:3", "content"),
    # A question asserts nothing.
    ("Muhhamed works as a freelancer", "D1:7", "question"),
    ("Kevin asks Paola about her favorite horror movie", "D1:5", "junk"),
    # Junk.
    ("Kevin's favorite horror movie is not mentioned in the messages", "D1:5", "junk"),
    ("Alice will remember that", "D1:8", "junk"),
    ("Kevin: I play basketball every weekend", "D1:3", "junk"),
    ("Kevin greets Paola", "D1:3", "junk"),
    ("It was great", "D1:3", "junk"),
    # A time the message does not state.
    ("Paola watched Get Out in March 2023", "D1:6", "date"),
])
def test_facts_their_messages_do_not_bear_out_are_rejected_with_the_reason(text: str, source: str,
                                                                           reason: str) -> None:
    kept, rejected = _verdicts(_fact(text, source))
    assert kept == {} and rejected == {text: reason}


def test_a_misattributed_fact_is_not_rescued_by_a_neighbour_that_names_the_same_club() -> None:
    # Kevin's own message names Real Madrid (the team that beat his): the fact came from Paola's message.
    kept, rejected = _verdicts(_fact("Kevin is a fan of Real Madrid", "D1:2"))
    assert kept == {} and rejected == {"Kevin is a fan of Real Madrid": "speaker"}


def test_a_citation_is_repointed_to_the_neighbour_that_says_it() -> None:
    report = FactChecker().check([
        _fact("Kevin is a Juventus fan", "D1:2", participants=("Paola",)),  # cites the reply, not his message
        _fact("Paola's favorite horror movie is Get Out", "D1:5", participants=("Kevin",)),  # cites the question
    ], LINES)
    assert report.rejected == [] and report.repointed == 2
    juve, film = report.kept
    assert juve.sources == ["D1:1"] and juve.participants == ["Kevin"]
    assert [e.name for e in juve.entities] == ["Kevin"]
    assert film.sources == ["D1:5", "D1:6"] and film.participants == ["Kevin", "Paola"]


def test_paraphrase_support_needs_the_embedder() -> None:
    def embed(texts: Any) -> Any:
        import numpy as np

        # Every text the same direction: a paraphrase as far as the check can tell.
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0

    fact = _fact("Kevin loves hoops and plays them weekly alongside his mates", "D1:3")
    assert FactChecker().check([fact], LINES).rejected[0].reason == "content"
    assert FactChecker(embed).check([fact], LINES).kept == [fact]


# ---- the facts job -----------------------------------------------------------------------------------------

MESSAGES = [
    {"speaker": "Kevin", "text": "Juventus lost to Real Madrid, I'm gutted, I'm a Juventus fan", "id": "m1"},
    {"speaker": "Paola", "text": "Haha I'm a huge Real Madrid fan!", "id": "m2"},
    {"speaker": "Kevin", "text": "Nice! I play basketball every weekend with my friends.", "id": "m3"},
]


def _answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    if "summary" in schema.model_fields:
        return {"summary": "Kevin is a Juventus fan."}
    assert re.search(r"\[m1\] Kevin: Juventus", messages[-1]["content"])
    return {"facts": [
        {"text": "Kevin is a Juventus fan.", "src": ["m1"]},
        {"text": "Kevin is a fan of Real Madrid.", "src": ["m2"]},  # Paola's words
        {"text": "Kevin plays basketball every weekend with his friends.", "src": ["m3"]},
        {"text": "Kevin's favorite horror movie is not mentioned in the messages.", "src": ["m3"]},
    ]}


def test_the_facts_job_stores_only_grounded_facts_and_reports_the_rejected(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([_answer] * 3), start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain(MESSAGES, timestamp=T0, document_id="d1")
        assert hs.worker.run_once()
        units = hs.store.get_units("b", hs.store.units_of_document("b", "d1"))
        facts = sorted(m.text for m in units if m.cites is not None)
        assert facts == ["Kevin is a Juventus fan.", "Kevin plays basketball every weekend with his friends."]
        job = next(j for j in bank.jobs() if j.id == result.job_id)
        assert job.status == JobStatus.DONE and job.result is not None
        assert job.result["facts"] == 2 and job.result["rejected"] == 2
        assert job.result["rejected_by_reason"] == {"speaker": 1, "junk": 1}
        assert {r["text"] for r in job.result["rejections"]} == {
            "Kevin is a fan of Real Madrid.", "Kevin's favorite horror movie is not mentioned in the messages."}
        assert all(not b.problems for b in check(hs).banks)


def test_recall_ranks_the_cited_message_where_its_fact_ranked(tmp_path: Path) -> None:
    def answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
        if "summary" in schema.model_fields:
            return {"summary": "Kevin plays basketball."}
        # A fact worded like the question, citing a message worded unlike it.
        return {"facts": [{"text": "Kevin plays basketball every weekend with his friends.", "src": ["m3"]}]}

    msgs = [{"speaker": "Kevin", "text": f"Filler message number {i} about the weather.", "id": f"f{i}"}
            for i in range(12)] + [MESSAGES[2]]
    for ranking in ("keys", "as_ranked"):
        settings = Settings(recall=RecallSettings(fact_ranking=ranking))
        with Hindsight.open(tmp_path / ranking, llm=ScriptedLLM([answer] * 3), settings=settings) as hs:
            bank = hs.bank("b")
            bank.retain(msgs, timestamp=T0, document_id="d1")
            assert bank.wait_idle(60)
            rec = bank.recall("What sport does Kevin play every weekend with his friends?", trace=True,
                              max_memories=3)
            assert rec.trace is not None
            top = rec.memories[0]
            if ranking == "keys":
                # The message comes first, with its fact's score; the fact follows its evidence.
                assert top.cites is None and top.sources == ["m3"]
                item = next(i for i in rec.trace.items if i.memory_id == top.id)
                (fact,) = [m for m in hs.store.get_units("b", hs.store.units_of_document("b", "d1")) if m.cites]
                fact_item = next(i for i in rec.trace.items if i.memory_id == fact.id)
                assert fact.cites == [top.id] and item.found_by == fact.id
                assert top.score == fact_item.fused_score > 0
            else:
                assert top.cites is not None


def test_a_country_is_no_pronoun_and_an_address_is_no_mention() -> None:
    lines = [SourceLine("a", "Kevin", "I moved to the US in 2019, Paola. Have u been to the U.S.?", 0, T0),
             SourceLine("b", "Paola", "Thanks, Kevin! We loved Boston when we visited.", 1, T0)]
    report = FactChecker().check([
        _fact("Kevin moved to the US in 2019", "a"),  # "US" is a country, not "us"
        _fact("Kevin loved Boston", "b"),  # Kevin is only addressed in Paola's message
        _fact("Paola loved Boston when they visited", "b"),
    ], lines)
    assert [f.text for f in report.kept] == ["Kevin moved to the US in 2019", "Paola loved Boston when they visited"]
    assert [(r.text, r.reason) for r in report.rejected] == [("Kevin loved Boston", "speaker")]


def test_a_speaker_of_two_names_is_named_by_either() -> None:
    """REALTALK speakers are "Fahim Khan": a fact naming him by both names, or by his first name, is his."""
    lines = [SourceLine("a", "Fahim Khan", "I go to the library to focus, it's really quiet", 0, T0),
             SourceLine("b", "Akib", "Nice, I just got back from the gym", 1, T0)]
    report = FactChecker().check([
        _fact("Fahim Khan goes to the library to focus", "a"),
        _fact("Fahim focuses at the library because it is quiet", "a"),
        _fact("Fahim just got back from the gym", "b"),  # Akib's news
    ], lines)
    assert [f.text for f in report.kept] == ["Fahim Khan goes to the library to focus",
                                             "Fahim focuses at the library because it is quiet"]
    assert [(r.text, r.reason) for r in report.rejected] == [("Fahim just got back from the gym", "speaker")]


def test_a_reaction_to_the_other_speakers_news_is_junk() -> None:
    lines = [SourceLine("a", "Gina", "I opened my own dance store last month!", 0, T0),
             SourceLine("b", "Jon", "Wow, I'm so impressed by your store, Gina. Proud of you!", 1, T0)]
    report = FactChecker().check([
        _fact("Gina opened her own dance store last month", "a"),
        _fact("Jon is impressed by Gina's store", "b"),
        _fact("Jon is proud of Gina", "b"),
    ], lines)
    assert [f.text for f in report.kept] == ["Gina opened her own dance store last month"]
    assert {(r.text, r.reason) for r in report.rejected} == {("Jon is impressed by Gina's store", "junk"),
                                                            ("Jon is proud of Gina", "junk")}


def test_a_dropped_negation_and_a_question_with_a_preamble_are_caught() -> None:
    lines = [SourceLine("a", "Fahim", "I've never been a pistons fan but I really want them to win.", 0, T0),
             SourceLine("b", "Fahim", "I know you like going to the gym, you think you'll hit the gym today?", 1, T0),
             SourceLine("c", "Tim", "I don't surf but reading a fantasy book relaxes me.", 2, T0),
             SourceLine("d", "Kevin", "I was thinking about visiting Pisa, what do you think?", 3, T0)]
    report = FactChecker().check([
        _fact("Fahim is a Pistons fan", "a"),
        _fact("Fahim thinks he might hit the gym today", "b"),
        _fact("Tim finds reading a fantasy book relaxing", "c"),  # the negation is the surfing's
        _fact("Kevin was thinking about visiting Pisa", "d"),  # a statement before a tag question
    ], lines)
    assert [f.text for f in report.kept] == ["Tim finds reading a fantasy book relaxing",
                                             "Kevin was thinking about visiting Pisa"]
    assert [(r.text, r.reason) for r in report.rejected] == [("Fahim is a Pistons fan", "content"),
                                                             ("Fahim thinks he might hit the gym today", "question")]


def test_the_two_people_of_a_chat_as_one_subject_and_a_feeling_shown_are_rejected() -> None:
    lines = [SourceLine("a", "Priya", "Our team won the relay on Saturday, we trained so hard for it!", 0, T0),
             SourceLine("b", "Omar", "Amazing, well done! Thanks for telling me, that made my day.", 1, T0)]
    report = FactChecker().check([
        _fact("Priya's team won the relay on Saturday", "a"),
        _fact("Priya and Omar trained hard for the relay", "a", "b"),
        _fact("Omar expressed gratitude for the update", "b"),
    ], lines)
    assert [f.text for f in report.kept] == ["Priya's team won the relay on Saturday"]
    assert [(r.text, r.reason) for r in report.rejected] == [
        ("Priya and Omar trained hard for the relay", "speaker"), ("Omar expressed gratitude for the update", "junk")]
    # Someone else beside a speaker is no merged pair.
    other = FactChecker().check([_fact("Priya and her team won the relay on Saturday", "a")], lines)
    assert [f.text for f in other.kept] == ["Priya and her team won the relay on Saturday"]


def test_the_clauses_before_talk_to_the_listener_are_kept() -> None:
    lines = [SourceLine("a", "Dev", "I've been volunteering at the food bank, sorting donations, and learning what "
                                    "our town needs most.", 0, T0)]
    report = FactChecker().check([
        _fact("Dev has been volunteering at the food bank, sorting donations, and learning what our town needs.",
              "a"),
        _fact("Dev thinks you should help too.", "a"),
    ], lines)
    assert [f.text for f in report.kept] == ["Dev has been volunteering at the food bank, sorting donations."]
    assert [r.text for r in report.rejected] == ["Dev thinks you should help too."]
