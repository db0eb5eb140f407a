"""Assessing new evidence against an opinion (paper section 5.4): one structured model call says what it shows.

When new facts arrive that relate to a stored opinion, one structured LLM call labels the evidence as
reinforcing, weakening, contradicting or neutral (:func:`assess_opinion`); a contradiction also yields a revised
opinion text. How far each label moves the confidence is decided in :mod:`hindsight_core.opinions.confidence`.
The retrying structured call every CARA helper uses lives in :mod:`hindsight_core.llm.structured`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage
from ..llm.structured import astructured_call, clip, structured_call, trim
from .confidence import Assessment

__all__ = [
    "Assessment",
    "OpinionAssessment",
    "aassess_opinion",
    "assess_opinion",
    "build_assessment_prompt",
]



# --------------------------------------------------------------------------------------------------------
# Public result models
# --------------------------------------------------------------------------------------------------------


class OpinionAssessment(BaseModel):
    """The verdict on one opinion given new evidence."""

    label: Assessment
    rationale: str = ""
    revised_text: str | None = Field(None, description="contradict only: the opinion rewritten to fit the evidence")


_OPINION_CHARS = 300


# --------------------------------------------------------------------------------------------------------
# Assessing evidence against an opinion
# --------------------------------------------------------------------------------------------------------

_MAX_FACTS = 20
_FACT_CHARS = 300
_MAX_TOKENS = 200
_REASON_CHARS = 200

_SEVERE = 4
"""``how_bad`` from this point on (of 5) makes evidence against the claim a contradiction, below it a weakening.
Fixed before measuring. In the dev half's bank-free screen every value read back for evidence against was 1 or 5
(33 of 35; two were cut from the log), so any point from 2 to 5 gives the same labels there."""


class _AssessmentOut(BaseModel):
    """LLM-facing schema. The model answers two small questions; code turns the answers into the label.

    Asked for a label directly, Qwen2.5-1.5B called most minor lapses contradictions: it judges direction
    well but not degree. Asked for the direction (yes / no / cannot tell) and, separately, how bad evidence
    against is on a 1-5 scale, it answers 1 for a one-off lapse and 5 for a serious failure. The sentence
    first: a small model answers better after saying what the evidence shows. A contradiction's corrected
    opinion is asked for in a second call (``_RevisedOut``): with it in the same answer (and a numbered
    evidence list even for one message) the dev half's messages got 47 of 66 right labels, against 58 (one
    call per claim and message, no bank; in banks 0.697 against 0.894).
    """

    model_config = LLM_SCHEMA_CONFIG

    shows: str = Field(max_length=_REASON_CHARS, description="what the evidence shows about the claim")
    answer: Literal["yes", "no", "cannot tell"]
    how_bad: int = Field(ge=0, le=5, description='0 unless answer is "no"; then 1 (trivial) to 5 (serious)')

    @field_validator("shows", mode="before")
    @classmethod
    def _shows(cls, v: Any) -> Any:
        return trim(v, _REASON_CHARS)

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, v: Any) -> Any:
        return " ".join(v.lower().split()) if isinstance(v, str) else v

    @field_validator("how_bad", mode="before")
    @classmethod
    def _how_bad(cls, v: Any) -> Any:
        return int(v) if isinstance(v, float) and v.is_integer() else v

    def label(self) -> Assessment:
        """The verdict, decided by code from the answers (see ``_SEVERE``)."""
        if self.answer == "yes":
            return Assessment.REINFORCE
        if self.answer == "cannot tell":
            return Assessment.NEUTRAL
        return Assessment.CONTRADICT if self.how_bad >= _SEVERE else Assessment.WEAKEN


class _RevisedOut(BaseModel):
    """LLM-facing schema of the second call, for a contradiction only: the opinion corrected."""

    model_config = LLM_SCHEMA_CONFIG

    revised: str = Field(max_length=_OPINION_CHARS, description="the claim rewritten to be true")

    @field_validator("revised", mode="before")
    @classmethod
    def _revised(cls, v: Any) -> Any:
        return trim(v, _OPINION_CHARS)


# Measured on Qwen2.5-Coder-1.5B, CARA benchmark dev half, see docs/BENCHMARKS.md section 6. v1 (label asked
# directly, "contradict: the evidence clearly shows the opinion is false"): 41/66. v2 (label asked directly;
# contradict defined by seriousness, weaken as a minor or one-off problem, neutral by relevance to the claim):
# 50/66, weaken only 8/16. v3 (this one): what the evidence shows, yes / no / cannot tell, how bad 1-5, and code
# decides the label. The examples share nothing with real data or the benchmark's scenarios.
_ASSESS_SYSTEM = """You check one new piece of evidence against a claim, using only the evidence.
shows: one short sentence: what the evidence shows about the claim, or "nothing" if it is about something else.
answer: "yes" if the evidence supports the claim; "no" if it goes against it; "cannot tell" if it is about \
something else (a hobby, a purchase, looks, news unrelated to the claim), even when it names the same person \
or thing.
how_bad: 0 unless the answer is "no"; then how badly it goes against the claim, 1 (trivial, one-off, \
easily explained) to 5 (serious, repeated, or proves the claim false).
Examples:
Claim: Sam is a good cook. Evidence: Every guest praised Sam's food.
{"shows": "Guests praising Sam's food shows Sam cooks well.", "answer": "yes", "how_bad": 0}
Claim: Sam is a good cook. Evidence: Sam burned the rice once.
{"shows": "One burned dish is a small, one-off problem.", "answer": "no", "how_bad": 1}
Claim: Kim is a careful driver. Evidence: Kim crashed twice this month while texting at the wheel.
{"shows": "Two crashes while texting show Kim drives carelessly.", "answer": "no", "how_bad": 5}
Claim: Sam is a good cook. Evidence: Sam bought a red bicycle and loves it.
{"shows": "nothing: a bicycle is not about cooking.", "answer": "cannot tell", "how_bad": 0}
Claim: Kim is a careful driver. Evidence: Kim dyed her hair green for a festival.
{"shows": "nothing: hair colour is not about driving.", "answer": "cannot tell", "how_bad": 0}"""

_REVISE_SYSTEM = """Evidence shows that a claim is false. Rewrite the claim in one sentence so that it is true \
given the evidence.
Example:
Claim: Sam lives in Paris. Evidence: Sam has lived in Berlin for ten years.
{"revised": "Sam lives in Berlin."}"""


def _evidence_block(facts: Sequence[tuple[str, str]]) -> str:
    lines = [clip(text, _FACT_CHARS) for _, text in _usable(facts)[:_MAX_FACTS]]
    if len(lines) == 1:
        return f"Evidence: {lines[0]}"
    return "Evidence:\n" + "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))


def build_assessment_prompt(opinion_text: str, facts: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    """The chat messages of one assessment call (at most 20 facts, each clipped to 300 characters).

    Facts are numbered 1..n (one fact is shown on the evidence line, like the examples) rather than shown
    with their memory ids: ids cost tokens and the verdict is about the evidence as a whole. The opinion's
    confidence is not shown: the label must say what the evidence does, not how sure we already were.
    """
    return _claim_and_evidence(_ASSESS_SYSTEM, opinion_text, facts, "shows, answer, how_bad")


def _revision_prompt(opinion_text: str, facts: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    return _claim_and_evidence(_REVISE_SYSTEM, opinion_text, facts, "revised")


def _claim_and_evidence(
    system: str, opinion_text: str, facts: Sequence[tuple[str, str]], keys: str
) -> list[ChatMessage]:
    user = f"Claim: {clip(opinion_text, _OPINION_CHARS)}\n{_evidence_block(facts)}\nAnswer with JSON: {keys}."
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def _usable(facts: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Facts with non-blank text, first occurrence of each text kept."""
    seen: set[str] = set()
    kept = []
    for fact_id, text in facts:
        key = " ".join(str(text).split()).lower()
        if key and key not in seen:
            seen.add(key)
            kept.append((str(fact_id), str(text)))
    return kept


def _check_inputs(opinion_text: str, confidence: float, facts: Sequence[tuple[str, str]]) -> None:
    if not opinion_text or not opinion_text.strip():
        raise ValueError("opinion_text is empty")
    if not (isinstance(confidence, int | float) and 0.0 <= confidence <= 1.0):
        raise ValueError(f"confidence must be in [0, 1], got {confidence!r}")
    if not _usable(facts):
        raise ValueError("no facts to assess the opinion against")


def _same_text(a: str, b: str) -> bool:
    def norm(t: str) -> str:
        return " ".join(t.lower().replace(".", " ").split())

    return norm(a) == norm(b)


def _verdict(out: _AssessmentOut) -> OpinionAssessment:
    return OpinionAssessment(label=out.label(), rationale=out.shows.strip(), revised_text=None)


def _revision(opinion_text: str) -> Callable[[_RevisedOut], str | None]:
    """The corrected opinion, or None when the model gave none or merely repeated the opinion (Qwen 1.5B does
    that in about a third of contradictions)."""

    def normalise(out: _RevisedOut) -> str | None:
        revised = out.revised.strip()
        return None if not revised or _same_text(revised, opinion_text) else revised

    return normalise


def assess_opinion(
    llm: LLM, opinion_text: str, confidence: float, facts: list[tuple[str, str]]
) -> OpinionAssessment:
    """Label new evidence ``facts`` (``(memory_id, text)`` pairs) against an opinion.

    One LLM call says what the evidence shows, whether it supports the opinion (yes / no / cannot tell) and,
    when it does not, how bad it is (1-5); code makes that reinforce / neutral / weaken (below 4) /
    contradict (4 or 5). A contradiction takes a second call for the revised opinion text (None when the
    model gave none or merely repeated the opinion). At most 20 distinct facts are shown, each clipped to 300
    characters. Raises ``ValueError`` for an empty opinion, a confidence outside [0, 1] or no usable facts,
    and ``LLMError`` when the model answers malformed twice. ``confidence`` is validated but not shown to the
    model.
    """
    _check_inputs(opinion_text, confidence, facts)
    verdict: OpinionAssessment = structured_call(
        llm, build_assessment_prompt(opinion_text, facts), _AssessmentOut, what="opinion assessment",
        max_tokens=_MAX_TOKENS, check=_verdict,
    )
    if verdict.label is not Assessment.CONTRADICT:
        return verdict
    revised = structured_call(llm, _revision_prompt(opinion_text, facts), _RevisedOut,
                              what="opinion revision", max_tokens=_MAX_TOKENS, check=_revision(opinion_text))
    return verdict.model_copy(update={"revised_text": revised})


async def aassess_opinion(
    llm: LLM, opinion_text: str, confidence: float, facts: list[tuple[str, str]]
) -> OpinionAssessment:
    """Async twin of :func:`assess_opinion`."""
    _check_inputs(opinion_text, confidence, facts)
    verdict: OpinionAssessment = await astructured_call(
        llm, build_assessment_prompt(opinion_text, facts), _AssessmentOut, what="opinion assessment",
        max_tokens=_MAX_TOKENS, check=_verdict,
    )
    if verdict.label is not Assessment.CONTRADICT:
        return verdict
    revised = await astructured_call(llm, _revision_prompt(opinion_text, facts), _RevisedOut,
                                     what="opinion revision", max_tokens=_MAX_TOKENS, check=_revision(opinion_text))
    return verdict.model_copy(update={"revised_text": revised})
