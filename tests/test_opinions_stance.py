"""Stance from the evidence (``hindsight_core.opinions.stance``): each memory's verdict on a yes/no question, weighed
by the disposition; the answer and the opinion follow the computed stance (``coherence.judged_*``), and reflect
records every verdict with the opinion it forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Disposition, Hindsight
from hindsight_core.models import Memory, Network
from hindsight_core.opinions.coherence import judged_answer, judged_opinion_text, statement_side
from hindsight_core.opinions.confidence import evidence_weight, is_self_claim
from hindsight_core.opinions.stance import judge, names_in

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
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
    assert written.startswith(("No to", "Probably not to")) and written.endswith(".") and "gate open" in written
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


def test_reflect_computes_the_stance_from_the_verdicts_and_records_them(tmp_path: Path) -> None:
    def respond(messages: list[dict[str, str]], schema: type) -> dict[str, object]:
        lines = [ln for ln in messages[-1]["content"].splitlines() if ln.startswith("[")]
        number = {key: i for i, ln in enumerate(lines, 1) for key in ("watered", "gate", "unlocked", "party")
                  if key in ln}
        # The model answers yes, as the small one does, but judges three memories against.
        return _answer([number["watered"]], [number["gate"], number["unlocked"], number["party"]],
                       "Yes, you can rely on him.", "Rafael is a reliable house-sitter.")

    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([respond, respond])) as hs:
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


def test_judged_but_marked_unknown_is_known(tmp_path: Path) -> None:
    out = {**_answer([], [1], "No", "Rafael should not house-sit."), "known": False}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([out])) as hs:
        bank, _ = _bank(hs)
        assert bank.reflect(QUESTION, reference_time=T0 + timedelta(days=1)).known
