"""An opinion's confidence, computed from the evidence it cites and the disposition, not from the model's number.

Reflect's model proposes a stance and cites the numbered memories it relied on, and those that speak against it.
Small models write a confidence between 0.75 and 0.95 whatever the evidence, and ignore the disposition in their
prompt; so the number stored with an opinion formed by reflect is computed here, and the model's own number is
kept beside it (``model_confidence``) for inspection only.

The formula, for the distinct memories cited in support (``for``) and against (``against``)::

    weight(m)      = kind(m) * hearsay(m) * recency(m)
    kind(m)        = 1 for what was said or done (world, experience);
                     INFERRED_WEIGHT * (5 - literalism) / 4 for inferred memories (observations, other opinions):
                     a literal mind (5) counts only what was said
    hearsay(m)     = 1, or for a second-hand report ("I heard that ...") disposition.hearsay_factor: 1 at
                     skepticism 1-3, 0.5 at 4, 0 at 5 (the same rule that decides whether it moves an opinion)
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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from ..models import Disposition, Memory, Network
from .disposition import hearsay_factor, is_hearsay

CEILING = 0.95
"""No amount of remembered evidence makes an opinion certain."""
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


def evidence_weight(memory: Memory, disposition: Disposition, reference: datetime) -> float:
    """``kind * hearsay * recency`` of one cited memory (see the module)."""
    kind = 1.0
    if memory.network in INFERRED:
        kind = INFERRED_WEIGHT * (5 - disposition.literalism) / 4
    if is_hearsay(memory.text):
        kind *= hearsay_factor(disposition)
    when = memory.occurred_end or memory.occurred_start or memory.mentioned_at
    recency = 1.0
    if when is not None:
        age_days = max(0.0, (reference - when).total_seconds() / 86400)
        recency = max(MIN_RECENCY, 0.5 ** (age_days / HALF_LIFE_DAYS))
    return kind * recency


def grounded_confidence(
    support: Sequence[Memory], against: Sequence[Memory], disposition: Disposition, reference: datetime
) -> float:
    """The confidence of an opinion resting on ``support`` and opposed by ``against`` (see the module)."""
    return float(confidence_basis(support, against, disposition, reference)["confidence"])


def confidence_basis(
    support: Sequence[Memory], against: Sequence[Memory], disposition: Disposition, reference: datetime
) -> dict[str, float | int | str]:
    """``grounded_confidence`` with the numbers it came from, and a one-line explanation of them."""
    opposing = {m.id for m in against}
    support = list({m.id: m for m in support if m.id not in opposing}.values())
    against = list({m.id: m for m in against}.values())
    s_for = sum(evidence_weight(m, disposition, reference) for m in support)
    s_against = sum(evidence_weight(m, disposition, reference) for m in against)
    sources = len({m.document_id or m.id for m in support})
    need = NEED_AT_SKEPTICISM_1 * 2 ** (disposition.skepticism - 1)
    value = 0.0
    if s_for > 0.0:
        corroboration = (sources + len(support)) / (2 * len(support))
        value = CEILING * (1.0 - math.exp(-s_for * corroboration / need)) * s_for / (s_for + s_against)
    confidence = round(min(CEILING, max(0.0, value)), 4)
    uncounted = sum(1 for m in support if evidence_weight(m, disposition, reference) == 0.0)
    why = (f"{len(support)} memories for ({sources} sources, support {s_for:.2f}"
           + (f", {uncounted} not counted at this disposition" if uncounted else "")
           + f"), {len(against)} against ({s_against:.2f}); skepticism {disposition.skepticism} needs "
           f"{need:g} -> confidence {confidence:.2f}")
    return {"confidence": confidence, "support": round(s_for, 4), "against": round(s_against, 4),
            "memories_for": len(support), "memories_against": len(against), "sources": sources,
            "need": round(need, 4), "explanation": why}
