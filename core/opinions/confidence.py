"""How an opinion's confidence is computed: the one file that decides it (formation, update, ceiling, default).

Everything that turns evidence into a confidence number lives here, and nowhere else: reflect forms an opinion
with :func:`confidence_basis`, the opinion job moves it with :func:`moved` (:func:`update_confidence` with the
step of :func:`opinion_step`, scaled by :func:`hearsay_factor` for second-hand evidence), and the stores only write
the value computed here, re-checking inside their transaction that the confidence it started from is still the
stored one (``OpinionUpdate.read_confidence``, compare-and-set). Everything here is pure: no model call, no I/O.

Constants: ``DEFAULT_CONFIDENCE`` (an opinion stored without a confidence moves from it), ``CEILING`` (no computed
confidence, formed or updated, goes above it; a value a caller set above it is never raised and never lowered by
reinforcement), ``FLOOR``.

Formation
---------
An opinion's confidence, computed from the evidence it cites and the disposition, not from the model's number.

Reflect's model proposes a stance and cites the numbered memories it relied on, and those that speak against it.
Small models write a confidence between 0.75 and 0.95 whatever the evidence, and ignore the disposition in their
prompt; so the number stored with an opinion formed by reflect is computed here, and the model's own number is
kept beside it (``model_confidence``) for inspection only.

The formula, for the distinct memories cited in support (``for``) and against (``against``)::

    weight(m)      = kind(m) * hearsay(m) * self_claim(m) * feeling(m) * recency(m)
    kind(m)        = 1 for what was said or done (world, experience);
                     INFERRED_WEIGHT * (5 - literalism) / 4 for inferred memories (observations, other opinions):
                     a literal mind (5) counts only what was said
    hearsay(m)     = 1, or for a second-hand report ("I heard that ...") hearsay_factor: 1 at
                     skepticism 1-3, 0.5 at 4, 0 at 5 (the same rule that decides whether it moves an opinion)
    self_claim(m)  = 1, or for a first-person claim by someone the question names ("Rafael: I always lock up" for
                     "Should I trust Rafael?", :func:`is_self_claim`) self_claim_factor: 1 at skepticism 1-2,
                     0.75 at 3, 0.5 at 4, 0.25 at 5
    feeling(m)     = 1, or for a memory that speaks of feelings (``is_emotional``) 1 + EMPATHY_WEIGHT * (empathy - 3):
                     0.5 at empathy 1, 1.5 at 5
    recency(m)     = max(MIN_RECENCY, 0.5 ** (age_days / HALF_LIFE_DAYS))   (age at the reference time)
    S_for, S_against = the sums of weight over each side
    corroboration  = (sources + n_for) / (2 * n_for)      sources = distinct documents among the ``for`` memories:
                     1 when every memory comes from its own source, towards 0.5 when all share one
    need           = NEED_AT_SKEPTICISM_1 * 2 ** (skepticism - 1)   the support at which confidence reaches 63% of
                     CEILING: each point of skepticism doubles it (0.25 memories' worth at 1, 1 at 3, 4 at 5)
    confidence     = CEILING * (1 - exp(-S_for * corroboration / need)) * S_for / (S_for + S_against)

Edges (tested): no support gives 0; one fresh memory from one source gives 0.93 at skepticism 1 and 0.21 at 5;
three fresh memories from three sources give 0.90 at skepticism 3 and 0.50 at 5; support and equal opposition
halve it; an inferred memory alone counts for nothing to a fully literal mind, hearsay alone nothing to a fully
skeptical one. Confidence never reaches 1 (``CEILING``).

Update (paper section 5.4)
--------------------------
New evidence labelled reinforce / weaken / contradict / neutral moves the confidence by ``+a``, ``-a``, ``-2a`` or
``0``, where ``a = base * (1.2 - 0.1 * skepticism)`` (:func:`opinion_step`), times :func:`hearsay_factor` when the
evidence is only second-hand; the result is kept within ``[FLOOR, CEILING]`` (see ``CEILING`` for a value set
above it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from ..models import Disposition, Memory, Network
from .disposition import is_emotional, is_hearsay, said_by

__all__ = [
    "CEILING",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_STEP_BASE",
    "EMPATHY_WEIGHT",
    "FLOOR",
    "Assessment",
    "Move",
    "confidence_basis",
    "confidence_delta",
    "evidence_weight",
    "grounded_confidence",
    "hearsay_factor",
    "is_self_claim",
    "moved",
    "opinion_step",
    "self_claim_factor",
    "starting_confidence",
    "update_confidence",
]

DEFAULT_CONFIDENCE = 0.5
"""The confidence an opinion stored without one (an extracted or imported opinion) is moved from."""
CEILING = 0.95
"""No amount of remembered evidence makes an opinion certain: neither formation nor an update goes above it."""
FLOOR = 0.0
"""The lowest confidence: evidence can take an opinion down to no confidence at all."""

# --------------------------------------------------------------------------------------------------------
# Formation
# --------------------------------------------------------------------------------------------------------

NEED_AT_SKEPTICISM_1 = 0.25
"""Support needed at skepticism 1; it doubles with each point (4 memories' worth at 5). Doubling rather than a
linear step (0.4 per point, the first version) because a linear need left a strict mind at 0.85 on five
consistent memories, next to a trusting one's 0.95: the traits barely told apart (seen on the CARA dev half)."""
INFERRED_WEIGHT = 0.5
"""What an inferred memory (observation, opinion) weighs at literalism 1, against 1 for a fact."""
HALF_LIFE_DAYS = 365.0
"""Evidence a year old counts half."""
MIN_RECENCY = 0.25
"""Old evidence still counts this much."""

INFERRED = frozenset({Network.OBSERVATION, Network.OPINION})


EMPATHY_WEIGHT = 0.25
"""How much more (empathy 4-5) or less (1-2) a memory about feelings counts, per point of empathy away from 3."""

_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)


def self_claim_factor(d: Disposition) -> float:
    """How much a claim someone makes about themselves counts: 1 at skepticism 1-2, 0.75 at 3, 0.5 at 4, 0.25 at 5."""
    return {3: 0.75, 4: 0.5, 5: 0.25}.get(d.skepticism, 1.0)


def is_self_claim(memory: Memory, about: Collection[str]) -> bool:
    """Whether ``memory`` is a message in which someone the question is ``about`` (casefolded names) speaks of
    themselves in the first person ("Rafael: I always lock up")."""
    speaker, words = said_by(memory.text)
    if speaker is None or not about:
        return False
    names = {w.casefold().removesuffix("'s") for w in speaker.split()}
    return bool(names & set(about)) and bool(_FIRST_PERSON.search(words))


def evidence_weight(
    memory: Memory, disposition: Disposition, reference: datetime, about: Collection[str] = ()
) -> float:
    """``kind * hearsay * self_claim * feeling * recency`` of one cited memory (see the module); ``about``: the
    casefolded names the question is about (for self-claims)."""
    kind = 1.0
    if memory.network in INFERRED:
        kind = INFERRED_WEIGHT * (5 - disposition.literalism) / 4
    if is_hearsay(memory.text):
        kind *= hearsay_factor(disposition)
    if is_self_claim(memory, about):
        kind *= self_claim_factor(disposition)
    if is_emotional(memory):
        kind *= 1.0 + EMPATHY_WEIGHT * (disposition.empathy - 3)
    when = memory.occurred_end or memory.occurred_start or memory.mentioned_at
    recency = 1.0
    if when is not None:
        age_days = max(0.0, (reference - when).total_seconds() / 86400)
        recency = max(MIN_RECENCY, 0.5 ** (age_days / HALF_LIFE_DAYS))
    return kind * recency


def grounded_confidence(
    support: Sequence[Memory], against: Sequence[Memory], disposition: Disposition, reference: datetime,
    about: Collection[str] = (),
) -> float:
    """The confidence of an opinion resting on ``support`` and opposed by ``against`` (see the module)."""
    return float(confidence_basis(support, against, disposition, reference, about)["confidence"])


def confidence_basis(
    support: Sequence[Memory], against: Sequence[Memory], disposition: Disposition, reference: datetime,
    about: Collection[str] = (),
) -> dict[str, float | int | str]:
    """``grounded_confidence`` with the numbers it came from, and a one-line explanation of them."""
    opposing = {m.id for m in against}
    support = list({m.id: m for m in support if m.id not in opposing}.values())
    against = list({m.id: m for m in against}.values())
    s_for = sum(evidence_weight(m, disposition, reference, about) for m in support)
    s_against = sum(evidence_weight(m, disposition, reference, about) for m in against)
    sources = len({m.document_id or m.id for m in support})
    need = NEED_AT_SKEPTICISM_1 * 2 ** (disposition.skepticism - 1)
    value = 0.0
    if s_for > 0.0:
        corroboration = (sources + len(support)) / (2 * len(support))
        value = CEILING * (1.0 - math.exp(-s_for * corroboration / need)) * s_for / (s_for + s_against)
    confidence = round(min(CEILING, max(0.0, value)), 4)
    uncounted = sum(1 for m in support if evidence_weight(m, disposition, reference, about) == 0.0)
    why = (f"{len(support)} memories for ({sources} sources, support {s_for:.2f}"
           + (f", {uncounted} not counted at this disposition" if uncounted else "")
           + f"), {len(against)} against ({s_against:.2f}); skepticism {disposition.skepticism} needs "
           f"{need:g} -> confidence {confidence:.2f}")
    return {"confidence": confidence, "support": round(s_for, 4), "against": round(s_against, 4),
            "memories_for": len(support), "memories_against": len(against), "sources": sources,
            "need": round(need, 4), "explanation": why}


# --------------------------------------------------------------------------------------------------------
# Update
# --------------------------------------------------------------------------------------------------------

DEFAULT_STEP_BASE = 0.1
"""Default base confidence step for opinion updates (before the disposition scales it)."""


def opinion_step(base: float, d: Disposition) -> float:
    """The confidence step ``a`` for opinion updates under disposition ``d``.

    ``a = base * (1.2 - 0.1 * skepticism)``: skepticism 1 moves confidence by ``1.1 * base``, 3 by
    ``0.9 * base``, 5 by ``0.7 * base``. A skeptical mind changes its opinions in smaller steps, in both
    directions. Strictly decreasing in skepticism and always > 0 for ``base`` in (0, 1]; the other traits
    and the bias do not enter (bias shapes wording in reflect, not evidence weighting).
    """
    if not (math.isfinite(base) and 0.0 < base <= 1.0):
        raise ValueError(f"base step must be in (0, 1], got {base!r}")
    return base * (1.2 - 0.1 * d.skepticism)


def hearsay_factor(d: Disposition) -> float:
    """How much of its usual step a second-hand claim moves an opinion: 1 at skepticism 1-3, 0.5 at 4, 0 at 5.

    A highly skeptical mind records the claim in the opinion's history (its label and rationale) but does not
    change its confidence or text until someone reports it first-hand.
    """
    return {4: 0.5, 5: 0.0}.get(d.skepticism, 1.0)


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


def starting_confidence(stored: float | None) -> float:
    """The confidence a move starts from: the stored one, or ``DEFAULT_CONFIDENCE`` for an opinion without one."""
    return DEFAULT_CONFIDENCE if stored is None else float(stored)


def update_confidence(confidence: float, label: Assessment | str, step: float) -> float:
    """The new confidence after evidence labelled ``label``: ``+a``, ``-a``, ``-2a`` or ``0``, kept within
    ``[FLOOR, CEILING]``; a confidence already above ``CEILING`` (set by a caller) is never raised, and a move
    up never lowers it.

    ``confidence`` must be in [0, 1] and ``step`` (``a``) finite and >= 0; ``label`` may be the enum or its
    value. Anything else raises ``ValueError``.
    """
    if not (isinstance(confidence, int | float) and 0.0 <= confidence <= 1.0):  # rejects NaN too
        raise ValueError(f"confidence must be in [0, 1], got {confidence!r}")
    upper = max(CEILING, float(confidence))
    return min(upper, max(FLOOR, float(confidence) + confidence_delta(label, step)))


class Move(NamedTuple):
    """An update: where it starts (the stored confidence, or the default) and where it ends."""

    old: float
    new: float


def moved(stored: float | None, label: Assessment | str, step: float) -> Move:
    """The update of an opinion whose stored confidence is ``stored`` (None: it has none) by evidence labelled
    ``label`` with step ``step`` (:func:`opinion_step`, times :func:`hearsay_factor` when all the evidence is
    second-hand). The opinion job hands both numbers to the store, which writes them and computes nothing."""
    old = starting_confidence(stored)
    return Move(old, update_confidence(old, label, step))
