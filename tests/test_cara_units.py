"""Unit tests of the CARA building blocks: disposition wording and steps, opinion confidence dynamics and
assessment, entity observations, background merging and the first-person rewrite.

Everything runs against ``ScriptedLLM`` except one real-model test (marked ``llm``) of the background merge.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

import pytest
from pydantic import ValidationError
from scripted_llm import ScriptedLLM, assessment

from hindsight_core.errors import LLMError
from hindsight_core.llm.base import MalformedOutputError
from hindsight_core.llm.structured import clip
from hindsight_core.models import Disposition
from hindsight_core.observations.summary import (
    MAX_FACT_CHARS,
    MAX_FACTS,
    SUMMARY_CHARS,
    asummarize_entity,
    select_facts,
    summarize_entity,
)
from hindsight_core.opinions.assess import OpinionAssessment, aassess_opinion, assess_opinion
from hindsight_core.opinions.confidence import Assessment, opinion_step, update_confidence
from hindsight_core.opinions.disposition import (
    BIAS_HIGH,
    BIAS_LOW,
    EMPATHY_LEVELS,
    LITERALISM_LEVELS,
    SKEPTICISM_LEVELS,
    bias_instruction,
    verbalize,
)
from hindsight_core.opinions.formed import FormedOpinion
from hindsight_core.reflect.profile_merge import (
    BACKGROUND_CHARS,
    amerge_background,
    build_merge_prompt,
    merge_background,
    to_first_person,
)

# --------------------------------------------------------------------------------------------------------
# Disposition
# --------------------------------------------------------------------------------------------------------


def test_verbalize_all_dispositions_and_bias_bands_distinct() -> None:
    texts = {
        verbalize(Disposition(skepticism=s, literalism=lit, empathy=e, bias=b))
        for s, lit, e in itertools.product(range(1, 6), repeat=3)
        for b in (0.0, 0.5, 1.0)
    }
    assert len(texts) == 5 * 5 * 5 * 3


@pytest.mark.parametrize("levels", [SKEPTICISM_LEVELS, LITERALISM_LEVELS, EMPATHY_LEVELS])
def test_level_texts_are_five_distinct(levels: tuple[str, ...]) -> None:
    assert len(levels) == 5
    assert len(set(levels)) == 5
    assert all(t.strip() for t in levels)


def test_verbalize_wording_follows_levels() -> None:
    low = verbalize(Disposition(skepticism=1, literalism=1, empathy=1, bias=0.0))
    high = verbalize(Disposition(skepticism=5, literalism=5, empathy=5, bias=1.0))
    # Level 1 and 5 of every trait say what the brief asks for, and only at that end.
    assert "face value" in low and "face value" not in high
    assert "demand strong evidence" in high and "question unsupported claims" in high
    assert "between the lines" in low and "between the lines" not in high
    assert "exactly as worded" in high
    assert "factual" in low.lower()
    assert "feelings and wellbeing" in high
    for text in (low, high):
        assert text.startswith("Your disposition:")
        assert len(text) < 800  # a few lines of a system message, not an essay
    for level in range(1, 6):
        text = verbalize(Disposition(skepticism=level, literalism=level, empathy=level))
        assert f"Skepticism {level}/5. {SKEPTICISM_LEVELS[level - 1]}" in text
        assert f"Literalism {level}/5. {LITERALISM_LEVELS[level - 1]}" in text
        assert f"Empathy {level}/5. {EMPATHY_LEVELS[level - 1]}" in text


def test_skepticism_wording_grows_more_demanding() -> None:
    # Monotonic wording: the evidence words appear from "balanced" upwards, trust words only at the bottom.
    trusting = [("accept" in t.lower() and "evidence" not in t.lower()) for t in SKEPTICISM_LEVELS]
    evidence = ["evidence" in t.lower() for t in SKEPTICISM_LEVELS]
    assert trusting == [True, True, False, False, False]
    assert evidence == [False, False, True, True, True]


@pytest.mark.parametrize(
    ("bias", "expected"),
    [
        (0.0, "Reason from the facts; keep your style neutral."),
        (0.2499, "Reason from the facts; keep your style neutral."),
        (BIAS_LOW, "Let this disposition inform your judgments, but let the facts lead."),
        (0.5, "Let this disposition inform your judgments, but let the facts lead."),
        (BIAS_HIGH, "Let this disposition inform your judgments, but let the facts lead."),
        (0.7501, "Let this disposition shape your judgments strongly."),
        (1.0, "Let this disposition shape your judgments strongly."),
    ],
)
def test_bias_bands(bias: float, expected: str) -> None:
    assert bias_instruction(bias) == expected
    assert verbalize(Disposition(bias=bias)).endswith(expected)


@pytest.mark.parametrize("bias", [-0.1, 1.1, math.nan])
def test_bias_instruction_rejects_out_of_range(bias: float) -> None:
    with pytest.raises(ValueError):
        bias_instruction(bias)


def test_opinion_step_monotonic_and_positive() -> None:
    for base in (1e-6, 0.05, 0.1, 0.5, 1.0):
        steps = [opinion_step(base, Disposition(skepticism=s)) for s in range(1, 6)]
        assert all(a > b for a, b in itertools.pairwise(steps)), steps
        assert all(s > 0 for s in steps)
    assert opinion_step(0.1, Disposition(skepticism=3)) == pytest.approx(0.09)
    assert opinion_step(0.1, Disposition(skepticism=1)) == pytest.approx(0.11)
    assert opinion_step(0.1, Disposition(skepticism=5)) == pytest.approx(0.07)
    # Only skepticism matters.
    assert opinion_step(0.1, Disposition(skepticism=2, literalism=1, empathy=5, bias=1.0)) == pytest.approx(
        opinion_step(0.1, Disposition(skepticism=2))
    )


@pytest.mark.parametrize("base", [0.0, -0.1, 1.5, math.nan, math.inf])
def test_opinion_step_rejects_bad_base(base: float) -> None:
    with pytest.raises(ValueError):
        opinion_step(base, Disposition())


# --------------------------------------------------------------------------------------------------------
# Confidence updates
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "label", "step", "expected"),
    [
        (0.5, Assessment.REINFORCE, 0.1, 0.6),
        (0.5, Assessment.WEAKEN, 0.1, 0.4),
        (0.5, Assessment.CONTRADICT, 0.1, 0.3),
        (0.5, Assessment.NEUTRAL, 0.1, 0.5),
        # edges and clamping
        (1.0, Assessment.REINFORCE, 0.1, 1.0),  # set above the ceiling by a caller: support never lowers it
        (0.95, Assessment.REINFORCE, 0.1, 0.95),  # held at the one ceiling (formation's too)
        (0.9, Assessment.REINFORCE, 0.1, 0.95),
        (0.0, Assessment.WEAKEN, 0.1, 0.0),
        (0.05, Assessment.WEAKEN, 0.1, 0.0),
        (0.15, Assessment.CONTRADICT, 0.1, 0.0),
        (0.2, Assessment.CONTRADICT, 0.1, 0.0),
        (0.25, Assessment.CONTRADICT, 0.1, 0.05),
        (0.0, Assessment.REINFORCE, 0.1, 0.1),
        (1.0, Assessment.CONTRADICT, 0.1, 0.8),
        (0.0, Assessment.NEUTRAL, 0.3, 0.0),
        (1.0, Assessment.NEUTRAL, 0.3, 1.0),
        (0.999, Assessment.REINFORCE, 0.0005, 0.999),
        (0.001, Assessment.WEAKEN, 0.0005, 0.0005),
        # zero step never moves, a huge step saturates
        (0.4, Assessment.CONTRADICT, 0.0, 0.4),
        (0.4, Assessment.REINFORCE, 5.0, 0.95),
        (0.4, Assessment.WEAKEN, 5.0, 0.0),
    ],
)
def test_update_confidence(confidence: float, label: Assessment, step: float, expected: float) -> None:
    result = update_confidence(confidence, label, step)
    assert result == pytest.approx(expected)
    assert 0.0 <= result <= 1.0


def test_update_confidence_accepts_label_values() -> None:
    assert update_confidence(0.5, "contradict", 0.1) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("confidence", "label", "step"),
    [
        (-0.01, Assessment.REINFORCE, 0.1),
        (1.01, Assessment.REINFORCE, 0.1),
        (math.nan, Assessment.REINFORCE, 0.1),
        (0.5, Assessment.REINFORCE, -0.1),
        (0.5, Assessment.REINFORCE, math.nan),
        (0.5, Assessment.REINFORCE, math.inf),
        (0.5, "strengthen", 0.1),
        ("0.5", Assessment.REINFORCE, 0.1),
    ],
)
def test_update_confidence_rejects_invalid_inputs(confidence: float, label: Assessment, step: float) -> None:
    with pytest.raises(ValueError):
        update_confidence(confidence, label, step)


def test_assessment_values() -> None:
    assert [a.value for a in Assessment] == ["reinforce", "weaken", "contradict", "neutral"]
    assert Assessment("weaken") is Assessment.WEAKEN


# --------------------------------------------------------------------------------------------------------
# Opinion assessment
# --------------------------------------------------------------------------------------------------------

FACTS = [("m1", "Alice missed every deadline this quarter."), ("m2", "Alice was fired for unreliability.")]


def _assessment(label: str, revised: str = "", reason: str = "because") -> Any:
    return assessment(label, revised, reason)


def test_assess_opinion_prompt_and_result() -> None:
    llm = ScriptedLLM([_assessment("contradict", "Alice is unreliable.", "Missed deadlines show otherwise.")] * 2)
    result = assess_opinion(llm, "Alice is a reliable employee.", 0.7, FACTS)
    assert result == OpinionAssessment(
        label=Assessment.CONTRADICT, rationale="Missed deadlines show otherwise.", revised_text="Alice is unreliable."
    )
    call = llm.calls[0]
    assert "Alice is a reliable employee." in call.user
    assert "1. Alice missed every deadline this quarter." in call.user
    assert "2. Alice was fired for unreliability." in call.user
    assert "m1" not in call.user  # ids cost tokens and are not needed for the verdict
    for answer in ('"yes"', '"no"', '"cannot tell"', "how_bad"):
        assert answer in call.system
    assert call.temperature == 0.0 and call.max_tokens is not None and not call.is_async
    assert len(call.system) + len(call.user) < 700 * 4  # well under 700 tokens
    revision = llm.calls[1]  # a contradiction asks for the corrected opinion in a second call
    assert revision.schema.__name__ == "_RevisedOut" and "Alice is a reliable employee." in revision.user
    assert "1. Alice missed every deadline this quarter." in revision.user


def test_one_fact_is_shown_on_the_evidence_line_and_its_label_takes_one_call() -> None:
    llm = ScriptedLLM([_assessment("weaken")])
    assert assess_opinion(llm, "Alice is reliable.", 0.5, FACTS[:1]).label is Assessment.WEAKEN
    assert "Evidence: Alice missed every deadline this quarter." in llm.calls[0].user and len(llm.calls) == 1


@pytest.mark.parametrize("label", ["reinforce", "weaken", "neutral"])
def test_assess_opinion_drops_revision_unless_contradict(label: str) -> None:
    llm = ScriptedLLM([_assessment(label, "Some rewritten opinion.")])
    result = assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result.label == Assessment(label)
    assert result.revised_text is None


@pytest.mark.parametrize("revised", ["", "   ", "Alice is reliable", "alice is  reliable."])
def test_assess_opinion_empty_or_repeated_revision_becomes_none(revised: str) -> None:
    llm = ScriptedLLM([_assessment("contradict", revised)] * 2)
    result = assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result.label is Assessment.CONTRADICT
    assert result.revised_text is None


def test_assess_opinion_lenient_answer_and_long_text() -> None:
    llm = ScriptedLLM([{"shows": "x" * 1000, "answer": " Cannot  Tell ", "how_bad": 0.0}])
    result = assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result.label is Assessment.NEUTRAL
    assert len(result.rationale) <= 200
    assert result.revised_text is None


@pytest.mark.parametrize(("answer", "how_bad", "label"), [
    ("yes", 0, "reinforce"), ("yes", 5, "reinforce"), ("cannot tell", 3, "neutral"), ("no", 0, "weaken"),
    ("no", 1, "weaken"), ("no", 3, "weaken"), ("no", 4, "contradict"), ("no", 5, "contradict"),
])
def test_code_turns_the_answers_into_the_label(answer: str, how_bad: int, label: str) -> None:
    """The model says which way the evidence points and how bad evidence against is; code decides the label:
    against at 4 or 5 of 5 contradicts, below weakens; how bad is ignored for any other answer."""
    llm = ScriptedLLM([{"shows": "s", "answer": answer, "how_bad": how_bad}, {"revised": "Alice is unreliable."}])
    result = assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result.label is Assessment(label) and result.rationale == "s"
    assert result.revised_text == ("Alice is unreliable." if label == "contradict" else None)
    assert len(llm.calls) == (2 if label == "contradict" else 1)


@pytest.mark.parametrize("bad", [{"answer": "maybe", "how_bad": 1}, {"answer": "no", "how_bad": 9},
                                 {"answer": "no", "how_bad": "very"}, {"answer": "no", "how_bad": 2.5}])
def test_answers_outside_the_schema_are_malformed(bad: dict[str, object]) -> None:
    llm = ScriptedLLM([{"shows": "s", **bad}] * 2)
    with pytest.raises(LLMError, match="opinion assessment"):
        assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert len(llm.calls) == 2


def test_assess_opinion_bounds_facts() -> None:
    facts = [(f"m{i}", f"Fact number {i} " + "y" * 500) for i in range(50)]
    facts.append(("dup", facts[0][1]))
    llm = ScriptedLLM([_assessment("neutral")])
    assess_opinion(llm, "Opinion.", 0.5, facts)
    user = llm.calls[0].user
    assert "20. Fact number 19" in user and "21." not in user
    assert all(len(line) <= 310 for line in user.splitlines())


def test_assess_opinion_retries_malformed_once() -> None:
    llm = ScriptedLLM(['{"shows": "x", "answer": "maybe"', _assessment("reinforce")])
    result = assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result.label is Assessment.REINFORCE
    assert len(llm.calls) == 2
    retry = llm.calls[1]
    assert "not valid" in retry.user and retry.temperature > 0.0
    assert retry.system == llm.calls[0].system


def test_assess_opinion_malformed_twice_raises_llm_error_with_raw() -> None:
    bad = '{"answer": "perhaps", "shows": "' + "z" * 2000 + '"}'
    llm = ScriptedLLM([bad, bad])
    with pytest.raises(LLMError) as info:
        assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert not isinstance(info.value, MalformedOutputError)
    message = str(info.value)
    assert "opinion assessment" in message and "scripted" in message
    assert '"answer": "perhaps"' in message
    assert len(message) < 600  # raw output truncated
    assert len(llm.calls) == 2


def test_assess_opinion_other_llm_errors_propagate_without_retry() -> None:
    llm = ScriptedLLM([LLMError("server down")])
    with pytest.raises(LLMError, match="server down"):
        assess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert len(llm.calls) == 1


@pytest.mark.parametrize(
    ("opinion", "confidence", "facts"),
    [("", 0.5, FACTS), ("  ", 0.5, FACTS), ("Op.", 1.5, FACTS), ("Op.", -0.1, FACTS), ("Op.", 0.5, []),
     ("Op.", 0.5, [("m1", "  ")])],
)
def test_assess_opinion_rejects_bad_inputs(opinion: str, confidence: float, facts: list[tuple[str, str]]) -> None:
    llm = ScriptedLLM()
    with pytest.raises(ValueError):
        assess_opinion(llm, opinion, confidence, facts)
    assert llm.calls == []


async def test_aassess_opinion_async_twin_with_retry() -> None:
    llm = ScriptedLLM(["not json", _assessment("weaken", "ignored")])
    result = await aassess_opinion(llm, "Alice is reliable.", 0.5, FACTS)
    assert result == OpinionAssessment(label=Assessment.WEAKEN, rationale="because", revised_text=None)
    assert [c.is_async for c in llm.calls] == [True, True]
    llm = ScriptedLLM(["not json", "still not json"])
    with pytest.raises(LLMError, match="still not json"):
        await aassess_opinion(llm, "Alice is reliable.", 0.5, FACTS)


def test_formed_opinion_bounds_and_leniency() -> None:
    schema = FormedOpinion.model_json_schema()
    props = schema["properties"]
    assert props["text"]["maxLength"] and props["rationale"]["maxLength"]
    assert props["entities"]["maxItems"] and props["entities"]["items"]["maxLength"]
    assert set(schema["required"]) == {"text", "rationale", "confidence", "entities"}
    assert schema["additionalProperties"] is False
    op = FormedOpinion.model_validate(
        {"text": "I think Alice is great. " * 40, "confidence": "80", "entities": ["Alice", "Alice", *"bcdefgh"]}
    )
    assert len(op.text) <= 300 and op.confidence == pytest.approx(0.8)
    assert op.entities == ["Alice", "b", "c", "d", "e"]
    assert FormedOpinion(text="x", confidence=0.3).entities == []
    with pytest.raises(ValidationError):
        FormedOpinion(text="x", confidence=-0.2)


def test_llm_schemas_bound_every_list_and_string() -> None:
    from hindsight_core.observations.summary import _SummaryOut
    from hindsight_core.opinions.assess import _AssessmentOut
    from hindsight_core.reflect.profile_merge import _MergeOut

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node:
                assert "maxLength" in node, node
            if node.get("type") == "array":
                assert "maxItems" in node, node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for model in (_MergeOut, _SummaryOut, _AssessmentOut, FormedOpinion):
        schema = model.model_json_schema()
        walk(schema)
        assert "\\d" not in json.dumps(schema)


# --------------------------------------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------------------------------------


def test_summarize_entity_prompt_and_result() -> None:
    facts = [("m1", "Alice works at Google."), ("m2", "Alice moved to Austin in 2021.")]
    llm = ScriptedLLM([{"summary": "  Alice works at Google.   She moved to Austin in 2021. "}])
    summary = summarize_entity(llm, "Alice", facts)
    assert summary == "Alice works at Google. She moved to Austin in 2021."
    call = llm.calls[0]
    assert "Entity: Alice" in call.user
    assert "- Alice works at Google." in call.user and "- Alice moved to Austin in 2021." in call.user
    assert "Previous summary" not in call.user
    assert "no opinions" in call.system and "2-4 sentences" in call.system


def test_summarize_entity_passes_previous_summary() -> None:
    llm = ScriptedLLM([{"summary": "Alice works at Google."}])
    summarize_entity(llm, "Alice", [("m1", "Alice works at Google.")], previous="Alice lives in Austin.")
    assert "Previous summary: Alice lives in Austin." in llm.calls[0].user


def test_summarize_entity_bounds_facts_and_output() -> None:
    facts = [(f"m{i}", f"Fact {i:03d} " + "w " * 400) for i in range(100)]
    llm = ScriptedLLM([{"summary": "A sentence about Bob. " * 60}])
    summary = summarize_entity(llm, "Bob", facts)
    assert 0 < len(summary) <= SUMMARY_CHARS and summary.endswith(".")
    fact_lines = [line for line in llm.calls[0].user.splitlines() if line.startswith("- ")]
    assert 1 <= len(fact_lines) <= MAX_FACTS
    assert all(len(line) <= MAX_FACT_CHARS + 2 for line in fact_lines)
    assert fact_lines[0].startswith("- Fact 000")  # the caller's order is kept


def test_select_facts_bounds() -> None:
    facts = [(str(i), f"Fact {i}.") for i in range(100)] + [("x", "Fact 1."), ("y", "  ")]
    kept = select_facts(facts)
    assert kept[:3] == ["Fact 0.", "Fact 1.", "Fact 2."] and len(kept) == MAX_FACTS
    assert len(set(kept)) == len(kept)
    big = select_facts([(str(i), f"{i}" + "z" * 1000) for i in range(3)] + [("a", "short")], max_chars=500)
    assert big == ["0" + "z" * (MAX_FACT_CHARS - 1)]  # first fact always kept, then the char budget stops it


@pytest.mark.parametrize("facts", [[], [("m1", "")], [("m1", "   \n")]])
def test_summarize_entity_requires_facts(facts: list[tuple[str, str]]) -> None:
    llm = ScriptedLLM()
    with pytest.raises(ValueError):
        summarize_entity(llm, "Alice", facts)
    assert llm.calls == []


def test_summarize_entity_empty_answer_retried_then_error() -> None:
    llm = ScriptedLLM([{"summary": "   "}, {"summary": "Alice works at Google."}])
    assert summarize_entity(llm, "Alice", [("m1", "Alice works at Google.")]) == "Alice works at Google."
    llm = ScriptedLLM([{"summary": ""}, {"nothing": 1}])
    with pytest.raises(LLMError, match="entity summary"):
        summarize_entity(llm, "Alice", [("m1", "Alice works at Google.")])


async def test_asummarize_entity() -> None:
    llm = ScriptedLLM([{"summary": "Alice works at Google."}])
    assert await asummarize_entity(llm, "Alice", [("m1", "Alice works at Google.")]) == "Alice works at Google."
    assert llm.calls[0].is_async
    with pytest.raises(ValueError):
        await asummarize_entity(llm, "Alice", [])


# --------------------------------------------------------------------------------------------------------
# Background
# --------------------------------------------------------------------------------------------------------


def test_merge_background_passes_current_and_snippet_and_normalises() -> None:
    llm = ScriptedLLM(
        [{"outdated": ["I was born in Colorado."], "background": "You were born in Texas. Your dog is Rex."}]
    )
    merged = merge_background(llm, "I was born in Colorado.", "You were born in Texas and have a dog named Rex.")
    assert merged == "I was born in Texas. My dog is Rex."
    call = llm.calls[0]
    assert "Current background: I was born in Colorado." in call.user
    # The snippet reaches the model already in the first person.
    assert "New information: I was born in Texas and have a dog named Rex." in call.user
    assert "first person" in call.system.lower()


def test_merge_background_empty_current_still_calls_model() -> None:
    llm = ScriptedLLM([{"outdated": [], "background": "I am a travel assistant."}])
    assert merge_background(llm, "", "You are a travel assistant.") == "I am a travel assistant."
    assert len(llm.calls) == 1 and "Current background: (empty)" in llm.calls[0].user


def test_merge_background_blank_snippet_skips_model() -> None:
    llm = ScriptedLLM()
    assert merge_background(llm, "You like tea.", "   ") == "I like tea."
    assert llm.calls == []


def test_merge_background_bounds_output_and_lenient_outdated() -> None:
    llm = ScriptedLLM([{"outdated": "I was born in Colorado.", "background": "I like tea very much. " * 100}])
    merged = merge_background(llm, "I was born in Colorado.", "I like tea.")
    assert 0 < len(merged) <= BACKGROUND_CHARS and merged.endswith(".")


def test_merge_background_retry_then_error() -> None:
    llm = ScriptedLLM([{"outdated": [], "background": ""}, {"outdated": [], "background": "I like tea."}])
    assert merge_background(llm, "", "You like tea.") == "I like tea."
    assert len(llm.calls) == 2
    llm = ScriptedLLM(["{", "{"])
    with pytest.raises(LLMError, match="background merge"):
        merge_background(llm, "", "You like tea.")


async def test_amerge_background() -> None:
    llm = ScriptedLLM([{"outdated": [], "background": "You live in Rome."}])
    assert await amerge_background(llm, "I live in Paris.", "You live in Rome.") == "I live in Rome."
    assert llm.calls[0].is_async
    assert await amerge_background(llm, "I live in Paris.", "") == "I live in Paris."


def test_build_merge_prompt_is_short() -> None:
    messages = build_merge_prompt("I like chess. " * 200, "You like tea. " * 200)
    assert sum(len(m["content"]) for m in messages) < 700 * 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You were born in Texas.", "I was born in Texas."),
        ("You are kind.", "I am kind."),
        ("you're kind and you've tried.", "I'm kind and I've tried."),
        ("You’re here.", "I’m here."),
        ("You'll go and you'd stay.", "I'll go and I'd stay."),
        ("You have 10 years of startup experience.", "I have 10 years of startup experience."),
        ("You weren't there; you aren't sure.", "I wasn't there; I am not sure."),
        ("Where were you born? Are you sure?", "Where was I born? Am I sure?"),
        ("Your dog loves you.", "My dog loves me."),
        ("That book is yours. Do it yourself.", "That book is mine. Do it myself."),
        ("Help yourselves.", "Help ourselves."),
        ("He gave it to you because you asked.", "He gave it to me because I asked."),
        ("Alice and you went to Paris with your sister.", "Alice and I went to Paris with my sister."),
        ("In 2010, you moved to Austin.", "In 2010, I moved to Austin."),
        ("Alice works with you, and you like it.", "Alice works with me, and I like it."),
        ("I told you so.", "I told me so."),
        ("you also worked at Google", "I also worked at Google"),
        ('"You know it," she said.', '"I know it," she said.'),
        ("YOUR NAME IS AVA. YOU ARE 30.", "MY NAME IS AVA. I AM 30."),
        ("Young youth in Youngstown", "Young youth in Youngstown"),
        ("I was born in Colorado.", "I was born in Colorado."),
        ("She thanked them.", "She thanked them."),
        ("", ""),
    ],
)
def test_to_first_person(text: str, expected: str) -> None:
    assert to_first_person(text) == expected


def test_to_first_person_idempotent_and_removes_you() -> None:
    samples = ["You were born in Texas and you love your dog.", "Tell yourself: you're great, and yours is too."]
    for text in samples:
        once = to_first_person(text)
        assert to_first_person(once) == once
        assert not re.search(r"\byou", once, re.IGNORECASE)


def test_clip() -> None:
    assert clip("  a   b  ", 10) == "a b"
    assert clip("First sentence here. Second sentence is longer.", 30) == "First sentence here."
    assert clip("word " * 20, 12) == "word word"
    assert len(clip("x" * 50, 10)) == 10
# The real-model merge runs through Bank.merge_background in test_cara_llm.py.
