"""Stance from the evidence (``hindsight_core.opinions.stance``): each memory's verdict on a yes/no question, weighed
by the disposition; the answer and the opinion follow the computed stance (``coherence.judged_*``), and reflect
records every verdict with the opinion it forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Disposition, Hindsight
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.models import Memory, Network, utcnow
from hindsight_core.opinions.coherence import judged_answer, judged_opinion_text, statement_side
from hindsight_core.opinions.confidence import evidence_weight, is_self_claim
from hindsight_core.opinions.stance import judge, names_in

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
IN_CALL = Settings(cara=CaraSettings(reflect_judgement="in_call"))
QUESTION = "Can I rely on Rafael to house-sit while we're away?"
OPEN = Disposition(skepticism=1, literalism=1, empathy=5)
STRICT = Disposition(skepticism=5, literalism=5, empathy=1)


def _m(i: str, text: str, network: Network = Network.WORLD) -> Memory:
    return Memory(id=i, bank_id="b", text=text, network=network, document_id=f"d{i}", mentioned_at=T0)


PLANTS = _m("p", "Tomas: Rafael watered all our plants and sent a photo of the cat every evening.")
FLAT = _m("f", "Bea: Rafael stayed ten days, the flat was spotless and the bins were out on the right day.")
BOILER = _m("b", "Linnea: The boiler broke while Rafael minded the house and he got a plumber in the same afternoon.")
GATE = _m("g", "Linnea: Rafael left the back gate open and one of our rabbits got out.")
DOOR = _m("d", "Bea: Rafael left our front door unlocked overnight.")
PARTY = _m("y", "Linnea: Rafael threw a party in our flat while house-sitting, wine stains all over the sofa.")
BRAG = _m("s", "Rafael: I'm the most careful house-sitter you will ever find, I never forget anything.")


@pytest.mark.parametrize("d", [OPEN, Disposition(), STRICT])
def test_the_stance_follows_the_majority_whatever_the_disposition(d: Disposition) -> None:
    about = names_in(QUESTION)
    three_for = judge([PLANTS, FLAT, BOILER], [GATE], d, T0, about=about)
    three_against = judge([PLANTS], [GATE, DOOR, PARTY], d, T0, about=about)
    assert (three_for.stance, three_against.stance) == ("yes", "no")
    assert three_for.confidence > 0 and three_against.confidence > 0
    assert [m.id for m in three_against.support] == ["g", "d", "y"] and [m.id for m in three_against.against] == ["p"]
    assert three_against.verdicts == {"p": "yes", "g": "no", "d": "no", "y": "no"}
    assert judge([PLANTS, FLAT], [GATE, DOOR], d, T0).stance == "mixed"
    assert judge([], [], d, T0, neither=[PLANTS]) == judge([], [], d, T0, neither=[PLANTS])
    assert judge([], [], d, T0, neither=[PLANTS]).stance == "unsure"


def test_a_skeptic_is_less_sure_than_a_trusting_mind_on_the_same_evidence() -> None:
    trusting = judge([PLANTS, FLAT, BOILER], [GATE], OPEN, T0)
    skeptic = judge([PLANTS, FLAT, BOILER], [GATE], STRICT, T0)
    assert trusting.stance == skeptic.stance == "yes"
    assert trusting.confidence - skeptic.confidence >= 0.15


def test_a_claim_about_oneself_counts_less_to_a_skeptic() -> None:
    about = names_in(QUESTION)
    assert about == {"rafael"} and is_self_claim(BRAG, about) and not is_self_claim(PLANTS, about)
    assert evidence_weight(BRAG, OPEN, T0, about) == evidence_weight(PLANTS, OPEN, T0, about)
    assert evidence_weight(BRAG, STRICT, T0, about) < 0.5 * evidence_weight(PLANTS, STRICT, T0, about)
    # The brag alone against one lapse: a skeptic's balance tips to no, a trusting mind's stays mixed.
    assert judge([BRAG], [DOOR], STRICT, T0, about=about).stance == "no"
    assert judge([BRAG], [DOOR], OPEN, T0, about=about).stance == "mixed"


def test_empathy_weighs_feelings() -> None:
    sad = _m("e", "Bea: I was so upset and anxious when Rafael didn't answer for two days.")
    assert evidence_weight(sad, OPEN, T0) > evidence_weight(sad, Disposition(), T0) > evidence_weight(sad, STRICT, T0)


@pytest.mark.parametrize(("text", "question", "side"), [
    ("Rafael should not look after my home.", "Should Rafael look after my home?", "no"),
    ("Yes, he can.", "Is it safe?", "yes"),
    ("You should avoid it.", "Should I avoid the Corsa?", "yes"),
    ("The Corsa is a good car.", "Should I avoid the Corsa?", "no"),
    ("Probably not: he left the door open.", "Can I rely on Rafael?", "no"),
    ("Rafael is reliable with keys.", "Can I rely on Rafael?", "yes"),
])
def test_the_side_a_sentence_takes(text: str, question: str, side: str) -> None:
    assert statement_side(text, question) == side


def test_answers_follow_the_judged_stance() -> None:
    against = judge([PLANTS], [GATE, DOOR, PARTY], OPEN, T0)
    said = judged_answer("Yes, Rafael is great.", against, QUESTION)
    assert said.rewritten and said.stance == "no"
    assert said.answer.startswith(("No (confidence", "Probably not (confidence"))
    assert "front door unlocked" in said.answer and "watered" in said.answer
    assert not judged_answer("No: he left the door unlocked and threw a party.", against, QUESTION).rewritten
    weak_yes = judge([PLANTS], [], STRICT, T0)
    assert weak_yes.stance == "yes" and weak_yes.confidence < 0.5
    hedged = judged_answer("Yes, he is reliable.", weak_yes, QUESTION)  # no flat yes under 0.5
    assert hedged.rewritten and hedged.answer.startswith("Probably yes (confidence")
    assert not judged_answer("Probably, though I have little to go on.", weak_yes, QUESTION).rewritten
    mixed = judged_answer("Yes.", judge([PLANTS, FLAT], [GATE, DOOR], OPEN, T0), QUESTION)
    assert mixed.answer.startswith("The evidence is mixed") and mixed.stance == "unsure"


def test_the_opinion_text_takes_the_stance_side_and_is_a_whole_sentence() -> None:
    against = judge([PLANTS], [GATE, DOOR, PARTY], OPEN, T0)
    kept = judged_opinion_text("Rafael is not a reliable house-sitter. He also", against, QUESTION)
    assert kept == "Rafael is not a reliable house-sitter."
    written = judged_opinion_text("Rafael is a reliable house-sitter.", against, QUESTION)
    assert written.startswith(("No to", "Probably not to")) and written.endswith(".")
    assert written.endswith(": 3 of the 4 memories that bear on it point to no.") and len(written) <= 300
    cut = judged_opinion_text("Rafael is not reliable because he left the", against, QUESTION)
    assert cut.startswith(("No to", "Probably not to"))  # no whole sentence: written from the stance


def _answer(yes: list[int], no: list[int], text: str, opinion: str, stance: str = "yes") -> dict[str, object]:
    return {"known": True, "points_yes": yes, "points_no": no, "based_on": [*yes, *no] or [1], "against": [],
            "stance": stance, "answer": text,
            "opinions": [{"text": opinion, "rationale": "why", "confidence": 0.9, "entities": ["Rafael"]}]}


def _bank(hs: Hindsight) -> tuple[object, list[Memory]]:
    bank = hs.bank("home")
    messages = [{"speaker": m.text.split(":")[0], "text": m.text.split(": ", 1)[1], "id": m.id}
                for m in (PLANTS, GATE, DOOR, PARTY)]
    bank.retain(messages, timestamp=T0, extract=False)
    return bank, bank.recall(QUESTION, reference_time=T0 + timedelta(days=1)).memories


def test_in_call_reflect_computes_the_stance_from_the_verdicts_and_records_them(tmp_path: Path) -> None:
    def respond(messages: list[dict[str, str]], schema: type) -> dict[str, object]:
        lines = [ln for ln in messages[-1]["content"].splitlines() if ln.startswith("[")]
        number = {key: i for i, ln in enumerate(lines, 1) for key in ("watered", "gate", "unlocked", "party")
                  if key in ln}
        # The model answers yes, as the small one does, but judges three memories against.
        return _answer([number["watered"]], [number["gate"], number["unlocked"], number["party"]],
                       "Yes, you can rely on him.", "Rafael is a reliable house-sitter.")

    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([respond, respond]), settings=IN_CALL) as hs:
        bank, _ = _bank(hs)
        r = bank.reflect(QUESTION, disposition=OPEN, reference_time=T0 + timedelta(days=1))
        assert r.known and r.stance == "no" and r.confidence is not None and r.confidence > 0.5
        assert sorted(r.verdicts.values()) == ["no", "no", "no", "yes"]
        assert r.answer.startswith("No (confidence") and "Yes, you can" not in r.answer
        (opinion,) = r.opinions
        assert opinion.text.startswith("No to") and opinion.confidence == r.confidence
        meta = bank.get(opinion.id).metadata
        assert meta["stance"] == "no" and sorted(meta["verdicts"].values()) == ["against", "for", "for", "for"]
        assert set(meta["based_on"]) == {i for i, v in meta["verdicts"].items() if v == "for"}
        assert meta["against"] == [i for i, v in meta["verdicts"].items() if v == "against"]
        strict = bank.reflect(QUESTION, disposition=STRICT, reference_time=T0 + timedelta(days=1))
        assert strict.stance in ("no", "unsure") and (strict.confidence or 0) < r.confidence


def test_reflect_without_verdicts_keeps_the_cited_evidence_path(tmp_path: Path) -> None:
    plain = {"known": True, "based_on": [1], "against": [], "stance": "unsure", "answer": "He waters plants.",
             "opinions": []}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([plain])) as hs:
        bank, _ = _bank(hs)
        r = bank.reflect("What does Rafael do for people?", reference_time=T0 + timedelta(days=1))
        assert r.known and r.verdicts == {} and r.confidence is None and r.answer == "He waters plants."


def test_in_call_judged_but_marked_unknown_is_known(tmp_path: Path) -> None:
    out = {**_answer([], [1], "No", "Rafael should not house-sit."), "known": False}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([out]), settings=IN_CALL) as hs:
        bank, _ = _bank(hs)
        assert bank.reflect(QUESTION, reference_time=T0 + timedelta(days=1)).known


def _verdict(messages: list[dict[str, str]], schema: type) -> dict[str, object]:
    """One per-memory verdict call: the watering is good news, the gate, the door and the party bad news."""
    said = messages[-1]["content"].split("Message:", 1)[-1]
    if "watered" in said:
        return {"about": "he cared for the plants", "news": "good"}
    if any(k in said for k in ("gate", "unlocked", "party")):
        return {"about": "he was careless", "news": "bad"}
    return {"about": "nothing", "news": "unrelated"}


def test_reflect_judges_each_memory_and_writes_the_answer_from_the_stance(tmp_path: Path) -> None:
    llm = ScriptedLLM([_verdict] * 12)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank, shown = _bank(hs)
        r = bank.reflect(QUESTION, disposition=OPEN, reference_time=T0 + timedelta(days=1))
        # One small call per memory, each shown one memory without its speaker, and no reflect call.
        assert len(llm.calls) == len(shown) == 4
        assert all(c.schema.__name__ == "_NewsOut" for c in llm.calls)
        assert all(c.user.count("Message:") == 1 and "Linnea:" not in c.user for c in llm.calls)
        assert all(c.user.startswith(f"Question: {QUESTION} Message: ") for c in llm.calls)
        assert r.known and r.stance == "no" and sorted(r.verdicts.values()) == ["no", "no", "no", "yes"]
        assert r.answer.startswith("No (confidence") and "gate open" in r.answer and "watered" in r.answer
        (opinion,) = r.opinions
        assert opinion.confidence == r.confidence and opinion.text.startswith("No to")
        assert bank.get(opinion.id).metadata["stance"] == "no"
        history = bank.opinion_history(opinion.id)
        assert [e.label for e in history] == ["formed"] and set(history[0].evidence) == set(r.based_on)
        skeptic = bank.reflect(QUESTION, disposition=STRICT, reference_time=T0 + timedelta(days=1))
        assert skeptic.confidence is not None and r.confidence - skeptic.confidence >= 0.15


def test_reflect_with_nothing_judged_either_way_does_not_know(tmp_path: Path) -> None:
    nothing = {"about": "nothing", "news": "unrelated"}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([nothing] * 6)) as hs:
        bank, _ = _bank(hs)
        r = bank.reflect(QUESTION, reference_time=T0 + timedelta(days=1))
        assert not r.known and r.opinions == [] and set(r.verdicts.values()) == {"neither"}


def test_a_verdict_the_model_cannot_give_counts_for_neither_side(tmp_path: Path) -> None:
    from hindsight_core.llm.base import MalformedOutputError

    broken = MalformedOutputError("bad", raw="{")
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([broken, broken, *[_verdict] * 10])) as hs:
        bank, _ = _bank(hs)
        r = bank.reflect(QUESTION, disposition=OPEN, reference_time=T0 + timedelta(days=1))
        assert r.known and list(r.verdicts.values()).count("neither") == 1 and r.stance in ("no", "unsure")


def test_async_reflect_judges_each_memory_too(tmp_path: Path) -> None:
    import asyncio

    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([_verdict] * 12)) as hs:
        bank, _ = _bank(hs)
        r = asyncio.run(bank.areflect(QUESTION, disposition=OPEN, reference_time=T0 + timedelta(days=1)))
        assert r.stance == "no" and len(r.verdicts) == 4 and r.opinions


@pytest.mark.parametrize(("question", "yes_no"), [
    ("Can I rely on Rafael?", True), ("Is Osteria Verde good for lunch?", True), ("Should I go?", True),
    ("Should I take the bus or the train?", False), ("What does Rafael do?", False), ("Where is it?", False),
    ("Is it safe or not?", True), ("Does Ana run in the morning?", False), ("Did the flight leave on time?", False),
    ("Would Tobias be a good fit?", True), ("Was she there?", False), ("Does Ingrid give good advice?", True),
    ("Did the movers do a decent job?", True), ("Has Ana moved to Porto?", False),
])
def test_which_questions_are_judged(question: str, yes_no: bool) -> None:
    from hindsight_core.opinions.verdicts import is_yes_no_question

    assert is_yes_no_question(question) is yes_no


@pytest.mark.parametrize(("question", "negative"), [
    ("Should I avoid the Corsa?", True), ("Is the pass dangerous in the rain?", True), ("Isn't it risky?", False),
    ("Is Osteria Verde good for lunch?", False), ("Can I rely on Rafael?", False), ("Shouldn't I go?", True),
])
def test_good_news_answers_a_negative_question_no(question: str, negative: bool) -> None:
    from hindsight_core.opinions.verdicts import _verdict, negative_question

    assert negative_question(question) is negative
    assert _verdict("good", negative) == ("no" if negative else "yes")
    assert _verdict("bad", negative) == ("yes" if negative else "no")
    assert _verdict("unrelated", negative) == "neither"


@pytest.mark.parametrize(("text", "kept"), [
    ("Rafael should not house-sit. The memories show that he left the door open and never,",
     "Rafael should not house-sit."),
    ("Ana is a dedicated runner", "Ana is a dedicated runner"),
    ("word " * 60, ""),  # cut at the limit with no whole sentence: dropped
    ("A fine plan!", "A fine plan!"),
])
def test_a_formed_opinion_keeps_whole_sentences_only(text: str, kept: str) -> None:
    from hindsight_core.opinions.formed import FormedOpinion, whole_sentences

    assert whole_sentences(FormedOpinion(text=text, confidence=0.5).text) == kept


def test_reflect_stores_only_the_whole_sentences_of_the_models_opinion(tmp_path: Path) -> None:
    cut = "Rafael waters plants well. He also looked after the cat and the fish and the whole flat while we were in"
    out = {"known": True, "based_on": [1], "answer": "He does.", "opinions": [
        {"text": cut + " x" * 100, "rationale": "r", "confidence": 0.9, "entities": ["Rafael"]}]}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([out])) as hs:
        bank, _ = _bank(hs)
        r = bank.reflect("What do you think of Rafael?", reference_time=T0 + timedelta(days=1))
        assert [o.text for o in r.opinions] == ["Rafael waters plants well."]


def test_a_superseded_memory_is_not_judged(tmp_path: Path) -> None:
    def verdict(messages: list[dict[str, str]], schema: type) -> dict[str, object]:
        said = messages[-1]["content"].split("Message:", 1)[-1]
        if "closed the back gate" in said or "watered" in said:
            return {"about": "he was careful", "news": "good"}
        if any(k in said for k in ("gate", "unlocked", "party")):
            return {"about": "he was careless", "news": "bad"}
        return {"about": "nothing", "news": "unrelated"}

    llm = ScriptedLLM([verdict] * 12)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank, shown = _bank(hs)
        gate = next(m for m in shown if "gate" in m.text)
        fixed = bank.correct(gate.id, "Linnea: Rafael closed the back gate; the neighbour's child had opened it.")
        r = bank.reflect(QUESTION, disposition=OPEN, reference_time=utcnow())
        # The corrected statement is history: it is not judged, the correction is.
        assert gate.id not in r.verdicts and r.verdicts.get(fixed.id) == "yes"
        assert not any("back gate open" in c.user for c in llm.calls)
        assert sorted(r.verdicts.values()) == ["no", "no", "yes", "yes"]
        assert r.stance == "yes"  # two a side, and the correction is the freshest: recency tips it
