"""Disposition verbalization and what each trait does in code (paper sections 5.2-5.4).

A :class:`~hindsight_core.models.Disposition` is three traits in 1..5 (skepticism, literalism, empathy) and
a bias in [0, 1]. Reflect turns it into plain instructions for the system message (:func:`verbalize`), as the
paper does. A small model often ignores those instructions, so each trait also acts on something the code
controls; contrasting dispositions then differ with any model:

- skepticism: the support an opinion needs for a given confidence, the step by which new evidence moves an
  opinion, and whether a second-hand claim (:func:`is_hearsay`: "I heard that ...", "apparently ...") moves it
  at all; all computed in :mod:`hindsight_core.opinions.confidence`.
- literalism: whether inferred memories (observations, other opinions) count as evidence for an opinion's
  confidence, or only what was said and done (:mod:`hindsight_core.opinions.confidence` again).
- empathy: where the agent's own experiences and emotionally loaded memories sit among what reflect shows the
  model (:func:`empathy_order`: up to 4 places earlier at 5, 4 places later at 1), which decides what fits in
  the prompt and what the model reads first.

The bias only shapes the wording (:func:`bias_instruction`): it weighs no evidence.

Everything here is pure and deterministic: no LLM call, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..models import Disposition, Memory, Network

__all__ = [
    "BIAS_HIGH",
    "BIAS_LOW",
    "EMPATHY_LEVELS",
    "LITERALISM_LEVELS",
    "SKEPTICISM_LEVELS",
    "bias_instruction",
    "empathy_order",
    "is_emotional",
    "is_hearsay",
    "said_by",
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


# Second-hand reports: the speaker did not see it. Kept short and literal: a miss only means the claim moves
# the opinion as first-hand evidence would.
_HEARSAY = re.compile(
    r"\b(i (?:have |'ve )?heard|heard (?:that|from)|apparently|allegedly|supposedly|rumou?rs?|"
    r"(?:someone|somebody|people|they) (?:said|says|say|told me|claim)|word is|i was told|reportedly)\b",
    re.IGNORECASE,
)


_SAID = re.compile(r"^\s*([^:\n]{1,60}):\s+(.*)$", re.DOTALL)


def said_by(text: str) -> tuple[str | None, str]:
    """A raw message's speaker and words ("Rafael: I always lock up" -> ("Rafael", "I always lock up")), or (None,
    the text) when it names no speaker (``render_message`` writes raw units as "Speaker: text")."""
    match = _SAID.match(text)
    return (match.group(1).strip(), match.group(2)) if match else (None, text)


def is_hearsay(text: str) -> bool:
    """Whether ``text`` reports something second-hand ("I heard that ...", "apparently ...", "they say ...")."""
    return bool(_HEARSAY.search(text))


_EMOTION = re.compile(
    r"\b(love[ds]?|loving|hate[ds]?|sad|sadness|happy|happier|unhappy|upset|angry|anger|afraid|scared|fear|"
    r"worr(?:y|ied|ies|ying)|anxious|anxiety|stress(?:ed|ful)?|lonely|alone|hurt|cr(?:y|ied|ying)|tears|"
    r"miss(?:ed|ing)?|grateful|thankful|proud|ashamed|embarrassed|excited|thrilled|nervous|depressed|"
    r"grief|griev\w*|heartbroken|overwhelmed|exhausted|frustrat\w*|disappoint\w*|relie(?:f|ved)|"
    r"feel(?:s|ing|ings)?|felt|comfort\w*|supportive|caring|kindness)\b",
    re.IGNORECASE,
)

EMPATHY_SHIFT = 2
"""Places an emotionally loaded memory moves per point of empathy away from 3 (earlier above, later below)."""


def is_emotional(memory: Memory) -> bool:
    """Whether a memory is the agent's own experience or speaks of feelings (a short English lexicon)."""
    return memory.network == Network.EXPERIENCE or bool(_EMOTION.search(memory.text))


def empathy_order(memories: Sequence[Memory], d: Disposition) -> list[Memory]:
    """``memories`` (in recall's order) reordered for reflect by the empathy trait.

    Each emotionally loaded memory (:func:`is_emotional`) moves ``EMPATHY_SHIFT * (empathy - 3)`` places
    earlier (empathy 4-5) or later (1-2); the others keep their places relative to each other. Empathy 3
    keeps recall's order. Reflect shows the model the first memories of this order, in this order.
    """
    shift = EMPATHY_SHIFT * (d.empathy - 3)
    if shift == 0:
        return list(memories)
    keyed = [(rank - shift if is_emotional(m) else rank, rank, m) for rank, m in enumerate(memories)]
    return [m for _, _, m in sorted(keyed, key=lambda t: (t[0], t[1]))]
