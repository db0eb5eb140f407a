"""Each memory's verdict on a yes/no question: one small model call per memory, the code does the rest.

Asked in reflect's one call to sort the memories of a yes/no question into those pointing to yes and to no
(``points_yes`` / ``points_no``), the bundled 1.5B model put most of them on the side it was going to answer: on the
balance pairs' dev half the stance followed the evidence majority in 0.63 of the reflects. Asked about one memory at a
time, it judges each on its own. How it is asked matters (dev half, 80 messages, one call each):

- "does it point to yes, no or neither" (after a sentence on what it shows): 0.74 of the verdicts right, a yes for
  12 of 32 messages against (the question's subject named, the model said yes);
- the opinion job's assessment form with the scenario's written claim: no better on the first scenarios (stopped);
- **good news, bad news or unrelated for what the question asks about** (kept): 0.91 right, the evidence majority in
  15 of 16 scenarios; its misses are mostly a message for taken as unrelated.

Good news is a yes for a question asked the positive way ("Is Osteria Verde good for a family lunch?"); for one asked
the negative way ("Should I avoid the Corsa?", "Is the pass dangerous in the rain?": :func:`negative_question`) good
news is a no. The message is shown without its "Speaker: " prefix (the model took the speaker for the subject); who
said it is the code's business (hearsay, self-claims: :mod:`hindsight_core.opinions.confidence`).

At most ``JUDGED`` memories are judged, the first of the order reflect shows them in; a call that fails (malformed
twice) leaves its memory unjudged (neither) rather than failing the reflect.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage, LLMError
from ..llm.structured import astructured_call, clip, structured_call, trim
from ..models import Memory
from .disposition import said_by
from .stance import Verdict

__all__ = [
    "JUDGED",
    "ajudge_memories",
    "build_verdict_prompt",
    "is_yes_no_question",
    "judge_memories",
    "negative_question",
    "spoken_text",
]

log = logging.getLogger(__name__)

JUDGED = 6
"""Memories judged per question (one short call each: six cost less than reflect's one long answer)."""
_ABOUT_CHARS = 160
_TEXT_CHARS = 400
_MAX_TOKENS = 120

# A judgement is asked in the present, of what something is or what one should, could or would do ("Is Dario
# reliable?", "Should I book the Quillon?", "Can I rely on Rafael?"); a question of fact ("Does Ana run in the
# morning?", "Did the flight leave on time?", "Was she there?") is not news good or bad, and goes to reflect's call.
_YES_NO = re.compile(
    r"^\s*(is|are|isn't|aren't|should|shall|shouldn't|can|could|can't|couldn't|would|wouldn't|may|might|must)\b",
    re.IGNORECASE)
_AUXILIARY = re.compile(r"^\s*(do|does|did|don't|doesn't|didn't|has|have|had|will|was|were|am)\b", re.IGNORECASE)
# A question of fact asked with "Does", "Did", "Has" ... is a judgement when it asks how good something is ("Does
# Nordlicht make good birthday cakes?"): a general lexicon of evaluation, not a list fitted to any data set.
_EVALUATIVE = re.compile(
    r"\b(good|bad|great|better|best|worse|worst|well|badly|poor|nice|decent|fine|okay|ok|excellent|terrible|awful|"
    r"reliable|unreliable|trust|trustworthy|rely|safe|unsafe|dangerous|risky|worth|worthwhile|recommend\w*|"
    r"suitable|fit|right|wise|sensible|realistic|honest|careful|responsible|competent|qualified|kind|friendly|"
    r"helpful|useful|enough|value|deserve\w*|enjoy\w*)\b", re.IGNORECASE)
_ALTERNATIVES = re.compile(r"\bor\b(?!\s+not\b)", re.IGNORECASE)
_NEGATIVE = re.compile(
    r"\b(not|never|avoid|dangerous|unsafe|risky|bad|worse|worst|overpriced|overrated|unreliable|untrustworthy|"
    r"a mistake|a waste|scam)\b|n't\b", re.IGNORECASE)


class _NewsOut(BaseModel):
    """LLM-facing schema: what the message says that matters, then whether it is good or bad news for it."""

    model_config = LLM_SCHEMA_CONFIG

    about: str = Field(max_length=_ABOUT_CHARS, description="what the message says that matters to the question")
    news: Literal["good", "bad", "unrelated"]

    @field_validator("about", mode="before")
    @classmethod
    def _about(cls, v: Any) -> Any:
        return trim(v, _ABOUT_CHARS)

    @field_validator("news", mode="before")
    @classmethod
    def _news(cls, v: Any) -> Any:
        return " ".join(v.lower().split()) if isinstance(v, str) else v


# The examples share nothing with real data or the benchmark's scenarios.
_SYSTEM = """You read one message and say whether it is good news or bad news for the question asked.
about: one short sentence: what the message says that matters to the question, or "nothing" if it is about \
something else.
news: "good" if it speaks well of what the question asks about (praise, success, care, reliability, comfort, \
safety, value); "bad" if it speaks badly of it (a failure, a problem, carelessness, danger, high cost, a \
complaint), even a small one; "unrelated" if it is about something else, even when it names the same person or \
place.
Examples:
Question: Is Sam a good cook? Message: Every guest praised Sam's lasagne.
{"about": "Guests praised Sam's cooking.", "news": "good"}
Question: Is Sam a good cook? Message: Sam burned the rice again and set off the smoke alarm.
{"about": "Sam burned the food.", "news": "bad"}
Question: Should I stay at the Hotel Miro? Message: The Hotel Miro lost my booking and charged me twice.
{"about": "The hotel lost a booking and overcharged.", "news": "bad"}
Question: Should I hire Kim as a driver? Message: Kim dyed her hair green for a festival.
{"about": "nothing: hair colour is not about driving.", "news": "unrelated"}"""


def is_yes_no_question(question: str) -> bool:
    """Whether ``question`` asks for a judgement with a yes or a no: it opens with "Is", "Are", "Should", "Can",
    "Could", "Would", "May", "Might" or "Must", or with "Does", "Did", "Has", "Was" ... and asks how good something is
    ("Does Ingrid give good advice?"; "Does Ana run in the morning?" is a question of fact), and offers no
    alternatives ("Should I take the bus or the train?" is not)."""
    asks = bool(_YES_NO.match(question)) or bool(_AUXILIARY.match(question) and _EVALUATIVE.search(question))
    return asks and not _ALTERNATIVES.search(question)


def negative_question(question: str) -> bool:
    """Whether ``question`` is asked the negative way (an odd number of negative words: "Should I avoid the Corsa?",
    "Isn't it risky?" is positive again), so that good news answers it no."""
    return len(_NEGATIVE.findall(question.replace("\u2019", "'"))) % 2 == 1


def spoken_text(memory: Memory) -> str:
    """A memory's text without a leading "Speaker: "."""
    return said_by(memory.text)[1].strip() or memory.text


def build_verdict_prompt(question: str, memory: Memory) -> list[ChatMessage]:
    """The chat messages of one verdict call (the system part is the same for every call: the model's prompt cache
    keeps it)."""
    user = (f"Question: {' '.join(question.split())} Message: {clip(spoken_text(memory), _TEXT_CHARS)}\n"
            "Answer with JSON: about, news.")
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


def _verdict(news: str, negative: bool) -> Verdict:
    if news == "unrelated":
        return "neither"
    return "yes" if (news == "good") != negative else "no"


def judge_memories(llm: LLM, question: str, memories: Sequence[Memory]) -> dict[str, Verdict]:
    """The verdict of each of the first ``JUDGED`` memories on ``question`` (memory id -> yes / no / neither)."""
    negative = negative_question(question)
    out: dict[str, Verdict] = {}
    for m in memories[:JUDGED]:
        try:
            said: _NewsOut = structured_call(llm, build_verdict_prompt(question, m), _NewsOut, what="evidence verdict",
                                             max_tokens=_MAX_TOKENS)
            out[m.id] = _verdict(said.news, negative)
        except LLMError as exc:
            log.warning("reflect: no verdict for memory %s (%s)", m.id, exc)
            out[m.id] = "neither"
    return out


async def ajudge_memories(llm: LLM, question: str, memories: Sequence[Memory]) -> dict[str, Verdict]:
    """Async twin of :func:`judge_memories` (the calls run together; the model serves them as it can)."""
    negative = negative_question(question)
    chosen = list(memories[:JUDGED])

    async def one(m: Memory) -> Verdict:
        try:
            said: _NewsOut = await astructured_call(llm, build_verdict_prompt(question, m), _NewsOut,
                                                    what="evidence verdict", max_tokens=_MAX_TOKENS)
            return _verdict(said.news, negative)
        except LLMError as exc:
            log.warning("reflect: no verdict for memory %s (%s)", m.id, exc)
            return "neither"

    verdicts = await asyncio.gather(*(one(m) for m in chosen))
    return {m.id: v for m, v in zip(chosen, verdicts, strict=True)}
