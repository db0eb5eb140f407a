"""Answers that agree with their confidence: a flat yes or no that the evidence does not carry is rewritten.

Reflect's model states a stance on a yes/no question and cites the memories for it (``based_on``) and against it
(``against``); the confidence of that stance is computed from them and the disposition
(:func:`hindsight_core.opinions.confidence.confidence_basis`, the same number the opinion it forms is stored with).
A small model answers "Yes, ..." at a confidence of 0.12 as readily as at 0.85, so the code decides the stance the
evidence carries (:func:`computed_stance`):

- confidence >= ``AGREES`` (0.5): the model's stance;
- else, more weight cited against than for: the other side, hedged ("Probably not (confidence 0.12): against it,
  ...; for it, ...", or "Probably yes ...");
- else, weight on both sides: "The evidence is mixed (confidence ...): for it, ...; against it, ...";
- else (little support, nothing against): "Possibly, but I am not sure (confidence ...): for it, only ...".

An answer that states a yes or no flatly (:func:`flat_side`: its first word, or the model's stance when the first
sentence has no hedge) and differs from the computed stance is rewritten from that stance with the memories cited on
each side (:func:`coherent_answer`); a hedged answer, or one that agrees, is kept as the model wrote it. So no answer
says a flat "yes" at a confidence under 0.5. Pure: no model call, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal, NamedTuple

from ..models import Disposition, Memory
from .confidence import confidence_basis
from .disposition import said_by
from .stance import Judgement

__all__ = [
    "AGREES",
    "Coherent",
    "coherent_answer",
    "computed_stance",
    "flat_side",
    "judged_answer",
    "judged_lead",
    "judged_opinion_text",
    "judged_text",
    "statement_side",
]

AGREES = 0.5
"""From this confidence on, the evidence carries the stance the model took."""
_MAX_CITED = 3
_CITED_CHARS = 160
_ASKED_CHARS = 180

Side = Literal["yes", "no"]
Stance = Literal["yes", "no", "mixed", "unsure"]

_HEDGE = re.compile(
    r"\b(probably|possibly|perhaps|maybe|likely|unlikely|might|may|could|mixed|unclear|uncertain|not sure|"
    r"hard to say|it depends|depends on|on the other hand|however|but)\b", re.IGNORECASE)
_FIRST_WORD = re.compile(r"^\W*(yes|yeah|yep|definitely|absolutely|certainly|sure|no|nope|not)\b", re.IGNORECASE)
_YES_WORDS = {"yes", "yeah", "yep", "definitely", "absolutely", "certainly", "sure"}


class Coherent(NamedTuple):
    """The answer as reflect returns it: its text, its stance, the confidence computed for the model's stance,
    and whether the text was rewritten."""

    answer: str
    stance: Literal["yes", "no", "unsure"]
    confidence: float | None
    rewritten: bool


def flat_side(answer: str, stance: str) -> Side | None:
    """The yes or no ``answer`` states flatly: None when its first sentence hedges ("probably", "but", ...);
    else its first word when that is a yes or a no, else the model's ``stance`` when that is yes or no."""
    first = re.split(r"(?<=[.!?])\s", answer.strip(), maxsplit=1)[0]
    if _HEDGE.search(first):
        return None
    word = _FIRST_WORD.match(first)
    if word is not None:
        return "yes" if word.group(1).lower() in _YES_WORDS else "no"
    if stance == "yes":
        return "yes"
    return "no" if stance == "no" else None


def computed_stance(side: Side, confidence: float, support: float, against: float) -> Stance:
    """The stance the evidence carries for an answer that took ``side`` with this confidence and these weights of
    evidence for and against it (see the module)."""
    if confidence >= AGREES:
        return side
    if against > support:
        return "no" if side == "yes" else "yes"
    if support > 0.0 and against > 0.0:
        return "mixed"
    return "unsure"


def _cited(memories: Sequence[Memory]) -> str:
    texts = []
    for m in memories[:_MAX_CITED]:
        text = " ".join(m.text.split()).rstrip(".!?;, ")
        texts.append(text if len(text) <= _CITED_CHARS else text[: _CITED_CHARS - 3].rstrip() + "...")
    more = len(memories) - _MAX_CITED
    return "; ".join(texts) + (f" (and {more} more)" if more > 0 else "")


def _rewrite(stance: Stance, side: Side, confidence: float, support: Sequence[Memory],
             against: Sequence[Memory]) -> str:
    sure = f" (confidence {confidence:.2f})"
    if stance in ("yes", "no") and stance != side:
        lead = "Probably not" if stance == "no" else "Probably yes"
        other = f"; for it, {_cited(support)}" if support else ""
        return f"{lead}{sure}: against it, {_cited(against)}{other}."
    if stance == "mixed":
        return f"The evidence is mixed{sure}: for it, {_cited(support)}; against it, {_cited(against)}."
    if support:
        return f"Possibly, but I am not sure{sure}: for it, only {_cited(support)}."
    return f"I am not sure{sure}: nothing I remember settles it."


def coherent_answer(
    answer: str, stance: str, support: Sequence[Memory], against: Sequence[Memory], disposition: Disposition,
    reference: datetime,
) -> Coherent:
    """``answer`` kept, or rewritten from the computed stance when it states a yes or no flatly that the evidence
    does not carry. ``stance`` is the model's (yes / no / unsure); ``support`` and ``against`` are the memories it
    cited each way, in the order cited. A question the model took no stance on is left as it is."""
    answer = answer.strip()
    if stance not in ("yes", "no"):
        return Coherent(answer, "unsure", None, False)
    side: Side = "yes" if stance == "yes" else "no"
    basis = confidence_basis(support, against, disposition, reference)
    confidence = float(basis["confidence"])
    computed = computed_stance(side, confidence, float(basis["support"]), float(basis["against"]))
    returned: Literal["yes", "no", "unsure"] = "unsure"
    if computed == "yes" or computed == "no":
        returned = computed
    flat = flat_side(answer, stance)
    if flat is None or flat == computed:
        return Coherent(answer, returned, confidence, False)
    opposing = {m.id for m in against}
    support = [m for m in support if m.id not in opposing]
    return Coherent(_rewrite(computed, side, confidence, support, against), returned, confidence, True)


# --------------------------------------------------------------------------------------------------------
# Answers and opinions from judged evidence (each memory's verdict: :mod:`hindsight_core.opinions.stance`)
# --------------------------------------------------------------------------------------------------------

_NEGATION = re.compile(
    r"\b(not|no|never|nobody|nothing|cannot|can't|won't|isn't|aren't|wasn't|weren't|shouldn't|wouldn't|couldn't|"
    r"don't|doesn't|didn't|hasn't|haven't|unreliable|untrustworthy|unsafe|unsuitable|unwise|avoid|bad|poor|"
    r"worse|worst|risky|overpriced|overrated)\b", re.IGNORECASE)
_LEAD_WORD = re.compile(
    r"^\W*(probably not|probably yes|likely not|yes|yeah|yep|definitely|absolutely|certainly|sure|probably|likely|"
    r"no|nope|not|unlikely)\b", re.IGNORECASE)
_LEAD_YES = {*("yes", "yeah", "yep", "definitely", "absolutely", "certainly", "sure"), "probably yes", "probably",
             "likely"}


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text.replace("\u2019", "'")))


def statement_side(text: str, question: str) -> Side:
    """The side of a yes/no ``question`` a sentence takes: its leading yes or no when it has one, else "no" when it
    negates an odd number of times more than the question does ("Rafael is not reliable" for "Is Rafael
    reliable?"; "You should avoid it" for "Should I avoid the Corsa?" is "yes"), else "yes"."""
    lead = _LEAD_WORD.match(text.strip())
    if lead is not None:
        return "yes" if lead.group(1).lower() in _LEAD_YES else "no"
    return "no" if (_negations(text) - _negations(question)) % 2 else "yes"


def judged_lead(stance: str, confidence: float) -> str:
    """How an answer or opinion from judged evidence opens: "Yes" / "No" from ``AGREES`` on, "Probably yes" /
    "Probably not" below it, "The evidence is mixed", or "I am not sure"."""
    if stance == "yes":
        return "Yes" if confidence >= AGREES else "Probably yes"
    if stance == "no":
        return "No" if confidence >= AGREES else "Probably not"
    return "The evidence is mixed" if stance == "mixed" else "I am not sure"


def judged_answer(answer: str, judgement: Judgement, question: str) -> Coherent:
    """``answer`` kept when it agrees with the stance the judged evidence carries, else rewritten from it.

    Rewritten when its first sentence states a side flatly (:func:`flat_side`) that is not the stance, or states the
    stance flatly below ``AGREES`` (no flat "yes" at a confidence under 0.5), or opens with a yes or no that is not the
    stance (even hedged); a hedged answer on the stance's side is kept."""
    answer = answer.strip()
    stance, confidence = judgement.stance, judgement.confidence
    returned: Literal["yes", "no", "unsure"] = stance if stance in ("yes", "no") else "unsure"
    flat = flat_side(answer, "unsure")
    lead = _LEAD_WORD.match(answer)
    opens = None if lead is None else ("yes" if lead.group(1).lower() in _LEAD_YES else "no")
    agrees = (
        (flat is None or (flat == stance and confidence >= AGREES))
        and (opens is None or opens == stance)
        and not (flat is None and opens is None and stance in ("yes", "no")
                 and statement_side(answer, question) != stance and confidence >= AGREES)
    )
    if agrees and answer:
        return Coherent(answer, returned, confidence, False)
    return Coherent(judged_text(judgement), returned, confidence, True)


def judged_text(judgement: Judgement) -> str:
    """The stance in words, with the memories on each side: "Probably not (confidence 0.31): against it, ...; for it,
    ..." (for it: the memories pointing to yes; against it: those pointing to no)."""
    lead = f"{judged_lead(judgement.stance, judgement.confidence)} (confidence {judgement.confidence:.2f})"
    yes = [m for m in [*judgement.support, *judgement.against] if judgement.verdicts.get(m.id) == "yes"]
    no = [m for m in [*judgement.support, *judgement.against] if judgement.verdicts.get(m.id) == "no"]
    parts = [f"for it, {_quoted(yes)}" if yes else "", f"against it, {_quoted(no)}" if no else ""]
    if judgement.stance == "no":
        parts.reverse()
    said = "; ".join(p for p in parts if p)
    return f"{lead}: {said}." if said else f"{lead}: nothing I remember settles it."


def judged_opinion_text(text: str, judgement: Judgement, question: str) -> str:
    """An opinion's text that agrees with the judged stance: the model's ``text`` when it takes the stance's side
    (at ``AGREES`` or above, or hedged below it), else a sentence written from the stance and the question."""
    text = _whole_sentence(text)
    side_ok = judgement.stance in ("yes", "no") and text and statement_side(text, question) == judgement.stance
    if side_ok and (judgement.confidence >= AGREES or _HEDGE.search(text)):
        return text
    # Short and whole: the memories themselves are the opinion's evidence (its verdicts), not quoted in its text, which
    # the opinion's length limit would cut.
    asked = " ".join(question.split())
    asked = asked if len(asked) <= _ASKED_CHARS else asked[: _ASKED_CHARS - 3].rstrip() + "..."
    judged = sum(1 for v in judgement.verdicts.values() if v != "neither")
    side = "yes" if judgement.stance == "yes" else "no" if judgement.stance == "no" else None
    if side is None:
        return f"The evidence on \"{asked}\" is mixed: the {judged} memories that bear on it point both ways." \
            if judged else f"I am not sure about \"{asked}\": nothing I remember settles it."
    return f"{judged_lead(judgement.stance, judgement.confidence)} to \"{asked}\": {len(judgement.support)} of " \
           f"the {judged} memories that bear on it point to {side}."


def _quoted(memories: Sequence[Memory]) -> str:
    """Up to ``_MAX_CITED`` memories as quotes, a message with its speaker: 'Jonah: "Rafael left the door open"'."""
    texts = []
    for m in memories[:_MAX_CITED]:
        speaker, text = said_by(m.text)
        text = " ".join(text.split()).rstrip(".!?;, ")
        text = text if len(text) <= _CITED_CHARS else text[: _CITED_CHARS - 3].rstrip() + "..."
        texts.append(f'{speaker}: "{text}"' if speaker else f'"{text}"')
    more = len(memories) - _MAX_CITED
    return "; ".join(texts) + (f" (and {more} more)" if more > 0 else "")


def _whole_sentence(text: str) -> str:
    """The first whole sentence of ``text`` (ending in . ! or ?), or "" when it has none: a model's opinion cut at its
    length limit is not stored half-said."""
    text = " ".join(text.split())
    match = re.match(r"^(.+?[.!?])(?:\s|$)", text)
    return match.group(1) if match else ""
