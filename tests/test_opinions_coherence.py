"""Answers that agree with their confidence (``hindsight_core.opinions.coherence``): no flat "yes" under 0.5, and a
flat yes or no that the cited evidence does not carry is rewritten from the computed stance, with a hedge."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Disposition, Hindsight
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.models import Memory, Network
from hindsight_core.opinions.coherence import coherent_answer, computed_stance, flat_side

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
RAFAEL = [
    {"speaker": "Jonah", "text": "Rafael watered my plants every day when I was in Lisbon.", "id": "r1"},
    {"speaker": "Jonah", "text": "Rafael forgot my birthday dinner and never called.", "id": "r2"},
    {"speaker": "Jonah", "text": "Rafael left my front door unlocked all weekend.", "id": "r3"},
]
QUESTION = "Should Rafael look after my home and plants while I am away?"


@pytest.mark.parametrize(("answer", "stance", "side"), [
    ("Yes, Rafael is reliable.", "yes", "yes"),
    ("Absolutely: he waters plants.", "unsure", "yes"),
    ("No. He forgets things.", "yes", "no"),
    ("Rafael is reliable enough.", "yes", "yes"),  # no yes/no word: the model's stance
    ("Probably not: he left the door unlocked.", "no", None),
    ("Yes, but he forgot a dinner.", "yes", None),  # hedged in its first sentence
    ("He waters plants.", "unsure", None),
])
def test_what_an_answer_states_flatly(answer: str, stance: str, side: str | None) -> None:
    assert flat_side(answer, stance) == side


def test_the_computed_stance_follows_confidence_then_the_balance() -> None:
    assert computed_stance("yes", 0.85, 3.0, 0.0) == "yes"
    assert computed_stance("yes", 0.12, 1.0, 2.0) == "no"
    assert computed_stance("no", 0.2, 1.0, 2.0) == "yes"
    assert computed_stance("yes", 0.3, 2.0, 1.0) == "mixed"
    assert computed_stance("yes", 0.12, 3.0, 0.0) == "unsure"


def _memories() -> list[Memory]:
    return [Memory(id=m["id"], bank_id="b", text=f"Jonah: {m['text']}", network=Network.WORLD, document_id=m["id"],
                   mentioned_at=T0) for m in RAFAEL]


@pytest.mark.parametrize("skepticism", [1, 3, 5])
def test_no_flat_yes_under_one_half(skepticism: int) -> None:
    plants, dinner, door = _memories()
    for support, against in (([plants], [dinner, door]), ([plants, dinner, door], []), ([plants, dinner], [door]),
                             ([plants], [])):
        said = coherent_answer("Yes, you should trust Rafael.", "yes", support, against,
                               Disposition(skepticism=skepticism), T0)
        assert said.confidence is not None
        flat_yes = said.answer.lower().startswith("yes")
        assert not (flat_yes and said.confidence < 0.5), (said, support, against)
        assert said.rewritten == (not flat_yes)
        if said.confidence >= 0.5:
            assert (said.answer, said.stance) == ("Yes, you should trust Rafael.", "yes")


def test_a_yes_against_the_balance_becomes_probably_not_with_the_evidence() -> None:
    plants, dinner, door = _memories()
    said = coherent_answer("Yes, you should trust Rafael to house-sit.", "yes", [plants], [dinner, door],
                           Disposition(skepticism=3), T0)
    assert said.rewritten and said.stance == "no" and said.confidence is not None and said.confidence < 0.5
    assert said.answer.startswith(f"Probably not (confidence {said.confidence:.2f}): against it, ")
    assert "birthday dinner" in said.answer and "front door unlocked" in said.answer
    assert said.answer.index("unlocked") < said.answer.index("; for it, ") < said.answer.index("plants")


def test_a_mixed_balance_and_thin_support_are_said_as_such() -> None:
    plants, dinner, door = _memories()
    mixed = coherent_answer("Yes.", "yes", [plants, dinner], [door], Disposition(skepticism=5), T0)
    assert mixed.answer.startswith("The evidence is mixed (confidence ") and mixed.stance == "unsure"
    assert "): for it, " in mixed.answer and "; against it, " in mixed.answer
    thin = coherent_answer("Yes, trust him.", "yes", [plants], [], Disposition(skepticism=5), T0)
    assert thin.answer.startswith("Possibly, but I am not sure (confidence ") and thin.stance == "unsure"
    # A hedged answer is the model's own, kept; a question without a stance is untouched.
    hedged = coherent_answer("Probably, he waters plants.", "yes", [plants], [], Disposition(skepticism=5), T0)
    assert (hedged.answer, hedged.rewritten) == ("Probably, he waters plants.", False)
    assert coherent_answer("In Lisbon.", "unsure", [plants], [], Disposition(), T0) == ("In Lisbon.", "unsure",
                                                                                         None, False)


def _numbers(user: str) -> dict[str, int]:
    """Memory number by a word of its text, from the reflect prompt's numbered lines."""
    found = {}
    for number, text in re.findall(r"^\[(\d+)\] \([^)]*\) (.*)$", user, re.MULTILINE):
        for word in ("plants", "dinner", "door"):
            if word in text:
                found[word] = int(number)
    return found


def _answer(for_: list[str], against: list[str]) -> Any:
    def respond(messages: Any, schema: Any) -> dict[str, Any]:
        n = _numbers(messages[-1]["content"])
        return {"known": True, "based_on": [n[w] for w in for_], "against": [n[w] for w in against],
                "stance": "yes", "answer": "Yes, I should trust Rafael to house-sit.",
                "opinions": [{"text": "Rafael can be trusted to house-sit.", "rationale": "he helped before",
                              "confidence": 0.9, "entities": ["Rafael"]}]}
    return respond


def test_reflect_rewrites_a_flat_yes_its_evidence_does_not_carry(tmp_path: Path) -> None:
    llm = ScriptedLLM([_answer(["plants"], ["dinner", "door"]), _answer(["plants", "dinner", "door"], []),
                       _answer(["plants", "dinner", "door"], [])])
    in_call = Settings(cara=CaraSettings(reflect_judgement="in_call"))  # the cited-evidence path, scripted
    with Hindsight.open(tmp_path / "m", llm=llm, settings=in_call) as hs:
        bank = hs.bank("friend")
        bank.retain(RAFAEL, timestamp=T0, extract=False)
        when = T0 + timedelta(days=1)
        against = bank.reflect(QUESTION, disposition=Disposition(skepticism=3), reference_time=when)
        for opinion in against.opinions:
            bank.forget(memory_id=opinion.id)
        skeptic = bank.reflect(QUESTION, disposition=Disposition(skepticism=5), reference_time=when)
        for opinion in skeptic.opinions:
            bank.forget(memory_id=opinion.id)
        trusting = bank.reflect(QUESTION, disposition=Disposition(skepticism=1), reference_time=when)
    # Two of three memories against: "Probably not", stated with the evidence, and the opinion's low confidence.
    assert against.answer.startswith("Probably not (confidence ") and against.stance == "no"
    assert against.opinions and (against.opinions[0].confidence or 0) < 0.5
    assert "unlocked" in against.answer and "birthday" in against.answer
    # All three cited for it, but a skeptic's confidence stays under 0.5: no flat yes.
    assert (skeptic.opinions[0].confidence or 0) < 0.5 and not skeptic.answer.lower().startswith("yes")
    assert skeptic.stance == "unsure"
    # A trusting mind's confidence carries the yes: the model's answer is kept as it wrote it.
    assert (trusting.opinions[0].confidence or 0) >= 0.5
    assert (trusting.answer, trusting.stance) == ("Yes, I should trust Rafael to house-sit.", "yes")


@pytest.mark.llm
def test_the_bundled_model_answers_in_line_with_its_confidence(tmp_path: Path, qwen: Any) -> None:
    """With the real model, whatever it writes: no flat "yes" under 0.5, and the returned stance is the computed one
    (a yes or no only when the opinion it formed carries it)."""
    with Hindsight.open(tmp_path / "m", llm=qwen) as hs:
        bank = hs.bank("friend")
        bank.retain(RAFAEL, timestamp=T0, extract=False)
        results = []
        for skepticism in (5, 1):
            result = bank.reflect(QUESTION, disposition=Disposition(skepticism=skepticism),
                                  reference_time=T0 + timedelta(days=1))
            results.append(result)
            for opinion in result.opinions:
                bank.forget(memory_id=opinion.id)
    for result in results:
        assert result.known and result.answer.strip()
        for opinion in result.opinions:
            confidence = opinion.confidence or 0.0
            if confidence < 0.5:
                assert flat_side(result.answer, result.stance or "unsure") != "yes", (confidence, result.answer)
                assert result.stance != "yes", (confidence, result.answer)
