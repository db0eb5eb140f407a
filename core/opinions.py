"""Opinion network dynamics (paper section 5.4): assessing new evidence and moving opinion confidence.

When new facts arrive that relate to a stored opinion, one structured LLM call labels the evidence as
reinforcing, weakening, contradicting or neutral (:func:`assess_opinion`); the confidence then moves by
``+a``, ``-a``, ``-2a`` or ``0`` (:func:`update_confidence`), where ``a`` comes from
:func:`hindsight_core.disposition.opinion_step`. A contradiction also yields a revised opinion text.

Also here: :class:`FormedOpinion`, the shape of an opinion formed during reflect. The retrying structured
call every CARA helper uses lives in :mod:`hindsight_core.llm.structured`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from .llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage
from .llm.structured import astructured_call, clip, structured_call, trim

__all__ = [
    "Assessment",
    "FormedOpinion",
    "OpinionAssessment",
    "aassess_opinion",
    "assess_opinion",
    "build_assessment_prompt",
    "confidence_delta",
    "update_confidence",
]



# --------------------------------------------------------------------------------------------------------
# Confidence dynamics
# --------------------------------------------------------------------------------------------------------


class Assessment(StrEnum):
    """How new evidence bears on an existing opinion."""

    REINFORCE = "reinforce"
    WEAKEN = "weaken"
    CONTRADICT = "contradict"
    NEUTRAL = "neutral"


_STEP_FACTOR = {
    Assessment.REINFORCE: 1.0,
    Assessment.WEAKEN: -1.0,
    Assessment.CONTRADICT: -2.0,
    Assessment.NEUTRAL: 0.0,
}


def confidence_delta(label: Assessment | str, step: float) -> float:
    """The signed move for evidence labelled ``label``: ``+a``, ``-a``, ``-2a`` or ``0`` (``a`` = ``step``)."""
    if not (isinstance(step, int | float) and math.isfinite(step) and step >= 0.0):
        raise ValueError(f"step must be a finite number >= 0, got {step!r}")
    try:
        label = Assessment(label)
    except ValueError as exc:
        raise ValueError(f"unknown assessment label {label!r}") from exc
    return _STEP_FACTOR[label] * float(step)


def update_confidence(confidence: float, label: Assessment | str, step: float) -> float:
    """The new confidence after evidence labelled ``label``: ``+a``, ``-a``, ``-2a`` or ``0``, clamped to [0, 1].

    ``confidence`` must be in [0, 1] and ``step`` (``a``) finite and >= 0; ``label`` may be the enum or its
    value. Anything else raises ``ValueError``.
    """
    if not (isinstance(confidence, int | float) and 0.0 <= confidence <= 1.0):  # rejects NaN too
        raise ValueError(f"confidence must be in [0, 1], got {confidence!r}")
    return min(1.0, max(0.0, float(confidence) + confidence_delta(label, step)))


# --------------------------------------------------------------------------------------------------------
# Public result models
# --------------------------------------------------------------------------------------------------------


class OpinionAssessment(BaseModel):
    """The verdict on one opinion given new evidence."""

    label: Assessment
    rationale: str = ""
    revised_text: str | None = Field(None, description="contradict only: the opinion rewritten to fit the evidence")


_OPINION_CHARS = 300
_RATIONALE_CHARS = 300
_ENTITY_CHARS = 80
_MAX_ENTITIES = 5


class FormedOpinion(BaseModel):
    """An opinion formed during reflect: text (first person is fine), why, confidence and its entities.

    Ready to embed in an LLM schema: strings and the entity list carry ``maxLength``/``maxItems``, and the
    advertised schema is strict (all keys required, no extra keys). Validation is lenient (over-long values
    are clipped, ``"80"``/``80`` reads as 0.8, missing optional keys take defaults) so sloppy but usable
    output passes.
    """

    model_config = LLM_SCHEMA_CONFIG

    text: str = Field(max_length=_OPINION_CHARS, description="the opinion, one sentence")
    rationale: str = Field("", max_length=_RATIONALE_CHARS, description="why, one short sentence")
    confidence: float = Field(0.5, ge=0.0, le=1.0, description="0 to 1")
    entities: list[Annotated[str, Field(max_length=_ENTITY_CHARS)]] = Field(
        default_factory=list, max_length=_MAX_ENTITIES, description="names it is about"
    )

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return trim(v, _OPINION_CHARS)

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, v: Any) -> Any:
        return trim(v, _RATIONALE_CHARS)

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = float(v.strip().rstrip("%"))
            except ValueError:
                return v
        if isinstance(v, int | float) and 1.0 < v <= 100.0:  # percentages from small models
            return v / 100.0
        return v

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            names = [clip(str(e), _ENTITY_CHARS) for e in v if isinstance(e, str | int) and str(e).strip()]
            return list(dict.fromkeys(names))[:_MAX_ENTITIES]
        return v


# --------------------------------------------------------------------------------------------------------
# Assessing evidence against an opinion
# --------------------------------------------------------------------------------------------------------

_MAX_FACTS = 20
_FACT_CHARS = 300
_MAX_TOKENS = 200
_REASON_CHARS = 200

_LABEL_SYNONYMS = {
    "support": "reinforce", "supports": "reinforce", "reinforces": "reinforce", "confirm": "reinforce",
    "confirms": "reinforce", "weakens": "weaken", "contradicts": "contradict", "refute": "contradict",
    "refutes": "contradict", "unrelated": "neutral", "none": "neutral", "irrelevant": "neutral",
}


class _AssessmentOut(BaseModel):
    """LLM-facing schema. The reason comes first: a small model labels better after saying why."""

    model_config = LLM_SCHEMA_CONFIG

    reason: str = Field(max_length=_REASON_CHARS, description="one short sentence")
    label: Literal["reinforce", "weaken", "contradict", "neutral"]
    revised: str = Field(max_length=_OPINION_CHARS, description='contradict only: corrected opinion; else ""')

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        return trim(v, _REASON_CHARS)

    @field_validator("revised", mode="before")
    @classmethod
    def _revised(cls, v: Any) -> Any:
        return trim(v, _OPINION_CHARS)

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, v: Any) -> Any:
        if isinstance(v, str):
            norm = v.strip().lower()
            return _LABEL_SYNONYMS.get(norm, norm)
        return v


# Measured on Qwen2.5-Coder-1.5B. First version (8 hand cases 7/8): "contradict: the evidence clearly shows the
# opinion is false", "neutral: the evidence is about something else", four examples. On the CARA benchmark's dev
# half it called serious failures (a restaurant failing its health inspection) "weaken" and anything that
# mentioned the subject kindly "reinforce" (a car's colour): 41/66 right. This version defines contradict by
# seriousness, weaken as a minor or one-off problem, neutral by relevance to the claim rather than the subject,
# with worked examples of each: 50/66 on the same dev messages (contradict 10/19 -> 18/19, weaken 7/16 -> 8/16;
# without the second weaken example weaken fell to 2/16). Earlier: without worked examples, or with the label
# before the reason, the model put everything in one label. The examples share nothing with real data or the
# benchmark's scenarios.
_ASSESS_SYSTEM = """You decide how new evidence affects an opinion.
reason: one short sentence: does the evidence say anything about what the opinion claims, and does it agree?
label:
- reinforce: the evidence supports what the opinion claims.
- weaken: a minor or one-off problem, complaint or worry about the claim (a small lapse, a mild \
disappointment, a second-hand doubt); the opinion may still be right.
- contradict: strong evidence against the claim: it shows the claim is false, or a failure so serious that \
the claim no longer holds.
- neutral: the evidence says nothing about what the opinion claims. News about the same person or thing that \
has nothing to do with the claim (their hobbies, purchases or looks) is neutral, even when it is pleasant.
revised: for contradict only, the opinion rewritten so that it is true given the evidence; otherwise "".
Examples:
Opinion: Sam is a good cook. Evidence: Every guest praised Sam's food.
{"reason": "Praise for Sam's food supports that Sam cooks well.", "label": "reinforce", "revised": ""}
Opinion: Sam is a good cook. Evidence: Sam burned the rice once.
{"reason": "One burned dish is a small doubt about Sam's cooking.", "label": "weaken", "revised": ""}
Opinion: Kim is a careful driver. Evidence: Kim forgot to signal at a roundabout once.
{"reason": "One forgotten signal is a minor lapse in Kim's careful driving.", "label": "weaken", "revised": ""}
Opinion: Kim is a careful driver. Evidence: Kim crashed twice this month while texting at the wheel.
{"reason": "Two crashes while texting show Kim does not drive carefully.", "label": "contradict", \
"revised": "Kim is a careless driver."}
Opinion: Sam lives in Paris. Evidence: Sam has lived in Berlin for ten years.
{"reason": "Living in Berlin shows Sam does not live in Paris.", "label": "contradict", \
"revised": "Sam lives in Berlin."}
Opinion: Sam is a good cook. Evidence: Sam bought a red bicycle and loves it.
{"reason": "A bicycle says nothing about Sam's cooking.", "label": "neutral", "revised": ""}
Opinion: Sam is a good cook. Evidence: It rained in Lima on Sunday.
{"reason": "The weather in Lima says nothing about Sam's cooking.", "label": "neutral", "revised": ""}"""


def build_assessment_prompt(opinion_text: str, facts: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    """The chat messages of one assessment call (at most 20 facts, each clipped to 300 characters).

    Facts are numbered 1..n rather than shown with their memory ids: ids cost tokens and the verdict is
    about the evidence as a whole. The opinion's confidence is not shown: the label must say what the
    evidence does, not how sure we already were.
    """
    lines = [f"{i}. {clip(text, _FACT_CHARS)}" for i, (_, text) in enumerate(_usable(facts)[:_MAX_FACTS], 1)]
    user = (
        f"Opinion: {clip(opinion_text, _OPINION_CHARS)}\n"
        "Evidence:\n" + "\n".join(lines) + "\nAnswer with JSON: reason, label, revised."
    )
    return [ChatMessage(role="system", content=_ASSESS_SYSTEM), ChatMessage(role="user", content=user)]


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


def _normaliser(opinion_text: str) -> Callable[[_AssessmentOut], OpinionAssessment]:
    """Public verdict from the model's answer: the revision is kept only for a contradiction; an empty one,
    or one that merely repeats the opinion (Qwen 1.5B does that in about a third of contradictions),
    becomes None."""

    def normalise(out: _AssessmentOut) -> OpinionAssessment:
        label = Assessment(out.label)
        revised = out.revised.strip() if label is Assessment.CONTRADICT else ""
        if revised and _same_text(revised, opinion_text):
            revised = ""
        return OpinionAssessment(label=label, rationale=out.reason.strip(), revised_text=revised or None)

    return normalise


def assess_opinion(
    llm: LLM, opinion_text: str, confidence: float, facts: list[tuple[str, str]]
) -> OpinionAssessment:
    """Label new evidence ``facts`` (``(memory_id, text)`` pairs) against an opinion with one LLM call.

    Returns reinforce / weaken / contradict / neutral (neutral when the facts are unrelated), a short
    rationale, and for contradict only a revised opinion text (None when the model gave none or merely
    repeated the opinion). At most 20 distinct facts are shown, each clipped to 300 characters. Raises
    ``ValueError`` for an empty opinion, a confidence outside [0, 1] or no usable facts, and ``LLMError``
    when the model answers malformed twice. ``confidence`` is validated but not shown to the model.
    """
    _check_inputs(opinion_text, confidence, facts)
    messages = build_assessment_prompt(opinion_text, facts)
    return structured_call(
        llm, messages, _AssessmentOut, what="opinion assessment", max_tokens=_MAX_TOKENS,
        check=_normaliser(opinion_text),
    )


async def aassess_opinion(
    llm: LLM, opinion_text: str, confidence: float, facts: list[tuple[str, str]]
) -> OpinionAssessment:
    """Async twin of :func:`assess_opinion`."""
    _check_inputs(opinion_text, confidence, facts)
    messages = build_assessment_prompt(opinion_text, facts)
    return await astructured_call(
        llm, messages, _AssessmentOut, what="opinion assessment", max_tokens=_MAX_TOKENS,
        check=_normaliser(opinion_text),
    )
