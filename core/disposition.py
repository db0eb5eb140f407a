"""Disposition verbalization and disposition-dependent opinion dynamics (paper sections 5.2-5.4).

A :class:`~hindsight_core.models.Disposition` is three traits in 1..5 (skepticism, literalism, empathy) and
a bias in [0, 1]. Reflect turns it into plain instructions for the system message (:func:`verbalize`); the
opinion network uses it to size confidence updates (:func:`opinion_step`).

Everything here is pure and deterministic: no LLM call, no I/O.
"""

from __future__ import annotations

import math

from .models import Disposition

__all__ = [
    "BIAS_HIGH",
    "BIAS_LOW",
    "DEFAULT_STEP_BASE",
    "EMPATHY_LEVELS",
    "LITERALISM_LEVELS",
    "SKEPTICISM_LEVELS",
    "bias_instruction",
    "opinion_step",
    "verbalize",
]

# One text per level (index 0 is level 1). Each level says something different, so every disposition
# gives a different system message, and wording grows monotonically with the level.
SKEPTICISM_LEVELS: tuple[str, ...] = (
    "Trusting: accept claims at face value unless they are plainly false.",
    "Fairly trusting: accept plausible claims; question only surprising ones.",
    "Balanced: weigh each claim against the evidence you have.",
    "Cautious: look for supporting evidence before accepting a claim; flag weakly supported ones.",
    "Highly skeptical: demand strong evidence and question unsupported claims.",
)
"""Skepticism level texts, level 1 (trusting) to 5 (demands strong evidence)."""

LITERALISM_LEVELS: tuple[str, ...] = (
    "Interpretive: read intent between the lines and infer what people mean beyond their words.",
    "Fairly interpretive: infer likely intent when the wording leaves room.",
    "Balanced: weigh the literal wording against the likely intent.",
    "Fairly literal: stay close to the wording; infer only what is obvious.",
    "Literal: take statements exactly as worded; do not infer unstated meaning.",
)
"""Literalism level texts, level 1 (reads between the lines) to 5 (exactly as worded)."""

EMPATHY_LEVELS: tuple[str, ...] = (
    "Detached: stay factual and leave feelings out of your judgments.",
    "Reserved: mention feelings only when they matter to the question.",
    "Considerate: weigh people's feelings alongside the facts.",
    "Warm: take people's feelings and circumstances into account.",
    "Deeply empathetic: attend closely to people's feelings and wellbeing.",
)
"""Empathy level texts, level 1 (detached, factual) to 5 (attends to feelings and wellbeing)."""

BIAS_LOW = 0.25
"""Bias strictly below this reads as "neutral": the disposition barely colours judgments."""
BIAS_HIGH = 0.75
"""Bias strictly above this reads as "strong": the disposition shapes judgments strongly."""

_BIAS_TEXTS = (
    "Reason from the facts; keep your style neutral.",
    "Let this disposition inform your judgments, but let the facts lead.",
    "Let this disposition shape your judgments strongly.",
)

DEFAULT_STEP_BASE = 0.1
"""Default base confidence step for opinion updates (before the disposition scales it)."""


def bias_instruction(bias: float) -> str:
    """The closing instruction for a bias value: neutral (< 0.25), balanced (0.25-0.75) or strong (> 0.75)."""
    if not 0.0 <= bias <= 1.0:  # also rejects NaN
        raise ValueError(f"bias must be in [0, 1], got {bias!r}")
    if bias < BIAS_LOW:
        return _BIAS_TEXTS[0]
    if bias > BIAS_HIGH:
        return _BIAS_TEXTS[2]
    return _BIAS_TEXTS[1]


def verbalize(d: Disposition) -> str:
    """Instructions describing ``d`` for the reflect system message.

    One line per trait (its level and that level's behaviour) and a closing line set by the bias band.
    Distinct dispositions (up to bias within one band) give distinct texts. Example for the default
    ``Disposition()``::

        Your disposition:
        - Skepticism 3/5. Balanced: weigh each claim against the evidence you have.
        - Literalism 3/5. Balanced: weigh the literal wording against the likely intent.
        - Empathy 3/5. Considerate: weigh people's feelings alongside the facts.
        Let this disposition inform your judgments, but let the facts lead.
    """
    return "\n".join(
        (
            "Your disposition:",
            f"- Skepticism {d.skepticism}/5. {SKEPTICISM_LEVELS[d.skepticism - 1]}",
            f"- Literalism {d.literalism}/5. {LITERALISM_LEVELS[d.literalism - 1]}",
            f"- Empathy {d.empathy}/5. {EMPATHY_LEVELS[d.empathy - 1]}",
            bias_instruction(d.bias),
        )
    )


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
