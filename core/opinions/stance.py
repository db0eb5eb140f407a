"""Stance from the evidence: each shown memory's verdict on a yes/no question, weighed by the disposition.

Reflect's model sorts the memories that bear on a yes/no question into those that point to yes and those that point
to no (``points_yes`` / ``points_no`` in its answer); a memory in neither list is neutral, one in both counts for
neither. The model is only asked what each memory says; the stance and its confidence are computed here:

    W_yes, W_no  = the sums of ``evidence_weight`` over each side
    stance       = the heavier side, unless the lighter side weighs at least ``MIXED_RATIO`` of it ("mixed");
                   "unsure" when neither side weighs anything
    confidence   = ``confidence_basis(heavier side, lighter side)`` (the formation formula), for the stance's side

Each memory weighs what :func:`hindsight_core.opinions.confidence.evidence_weight` gives it (the one home of the
rule): skepticism discounts hearsay and claims people make about themselves, literalism discounts inferred memories,
empathy weighs feelings.

Every verdict is kept (:attr:`Judgement.verdicts`, memory id -> yes / no / neither) so that the opinion formed from
it records the evidence it weighed and how. Pure: no model call, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Literal, NamedTuple

from ..models import Disposition, Memory
from .confidence import confidence_basis, evidence_weight

__all__ = ["MIXED_RATIO", "Judgement", "Verdict", "judge", "names_in"]

Verdict = Literal["yes", "no", "neither"]
"""Where one memory points on a yes/no question."""

MIXED_RATIO = 0.8
"""The lighter side weighing at least this share of the heavier one makes the evidence mixed: 2 against 2 is mixed,
3 against 1 (or 2 against 1) is not. Fixed before measuring, not tuned."""
_NAME = re.compile(r"\b[A-Z][\w'-]+")


def names_in(question: str) -> frozenset[str]:
    """The capitalised words of a question other than its first (the people, places and things it names),
    casefolded. "Should I trust Rafael to house-sit?" names {"rafael"}."""
    words = _NAME.findall(question.strip())
    first = question.strip().split(maxsplit=1)[0] if question.strip() else ""
    return frozenset(w.casefold().removesuffix("'s") for w in words if w != first and w.casefold() != "i")


class Judgement(NamedTuple):
    """The stance a yes/no question's evidence carries, and how it was reached."""

    stance: Literal["yes", "no", "mixed", "unsure"]
    confidence: float
    """For the stance's side (for "mixed", the heavier side's; 0 when "unsure")."""
    support: list[Memory]
    """The memories on the stance's side (for "mixed", the heavier side), in the order given."""
    against: list[Memory]
    """The memories on the other side."""
    weight_yes: float
    weight_no: float
    verdicts: dict[str, Verdict]
    """Every judged memory's verdict, by id (neither included)."""
    explanation: str


def judge(
    yes: Sequence[Memory], no: Sequence[Memory], disposition: Disposition, reference: datetime, *,
    about: Collection[str] = (), neither: Iterable[Memory] = (),
) -> Judgement:
    """The stance carried by ``yes`` (memories pointing to yes) and ``no`` (to no) under ``disposition``; ``about``
    are the casefolded names the question is about (self-claims, :func:`names_in`), ``neither`` the memories judged
    to bear on neither side (recorded only). A memory on both sides counts for neither."""
    both = {m.id for m in yes} & {m.id for m in no}
    yes = list({m.id: m for m in yes if m.id not in both}.values())
    no = list({m.id: m for m in no if m.id not in both}.values())
    verdicts: dict[str, Verdict] = {m.id: "neither" for m in neither}
    verdicts.update({i: "neither" for i in both})
    verdicts.update({m.id: "yes" for m in yes})
    verdicts.update({m.id: "no" for m in no})
    w_yes = sum(evidence_weight(m, disposition, reference, about) for m in yes)
    w_no = sum(evidence_weight(m, disposition, reference, about) for m in no)
    heavier, lighter = (yes, no) if w_yes >= w_no else (no, yes)
    w_heavy, w_light = max(w_yes, w_no), min(w_yes, w_no)
    if w_heavy <= 0.0:
        stance: Literal["yes", "no", "mixed", "unsure"] = "unsure"
    elif w_light >= MIXED_RATIO * w_heavy:
        stance = "mixed"
    else:
        stance = "yes" if w_yes > w_no else "no"
    confidence = 0.0
    if stance != "unsure":
        # The formation formula: the side's own memories against the other side's.
        confidence = float(confidence_basis(heavier, lighter, disposition, reference, about)["confidence"])
    neutral = sum(1 for v in verdicts.values() if v == "neither")
    why = (f"{len(yes)} {'memory points' if len(yes) == 1 else 'memories point'} to yes (weight {w_yes:.2f}), "
           f"{len(no)} to no ({w_no:.2f}), {neutral} to neither; skepticism {disposition.skepticism}, literalism "
           f"{disposition.literalism}, empathy {disposition.empathy} -> stance {stance}, confidence {confidence:.2f}")
    return Judgement(stance, confidence, list(heavier), list(lighter), round(w_yes, 4), round(w_no, 4), verdicts,
                     why)
