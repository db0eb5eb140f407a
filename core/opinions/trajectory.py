"""An opinion's trajectory: every step of its history with each piece of evidence and its verdict.

A verdict says how one memory bore on the opinion: ``for``, ``against`` or ``neutral``. A step that formed a judged
opinion (reflect on a yes/no question, :mod:`hindsight_core.opinions.stance`) has one verdict per judged memory,
stored with the opinion (``metadata["verdicts"]``, relative to the side the opinion takes); an older formation has
its cited evidence for it and the evidence cited against it (``metadata["against"]``) against it. A step that moved
the opinion (the opinion job, :mod:`hindsight_core.opinions.reinforce`) judged its new evidence as a whole: reinforce
is for, weaken and contradict against, neutral neutral. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..models import Memory, OpinionEvent

__all__ = ["StepVerdict", "step_verdicts", "trajectory"]

StepVerdict = Literal["for", "against", "neutral"]
_BY_LABEL: dict[str, StepVerdict] = {"reinforce": "for", "weaken": "against", "contradict": "against",
                                     "neutral": "neutral"}


def step_verdicts(event: OpinionEvent, opinion: Memory) -> dict[str, StepVerdict]:
    """Each evidence id of ``event`` (a step of ``opinion``'s history) with its verdict, in the event's order; a
    formation also lists the judged memories it did not cite (neutral, or against)."""
    if event.label != "formed":
        verdict = _BY_LABEL.get(event.label, "neutral")
        return {i: verdict for i in event.evidence}
    stored = opinion.metadata.get("verdicts")
    judged: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    against = opinion.metadata.get("against")
    opposed = {str(i) for i in against} if isinstance(against, list) else set()
    out: dict[str, StepVerdict] = {}
    for i in event.evidence:
        out[i] = _verdict(judged.get(i)) or ("against" if i in opposed else "for")
    for i, v in judged.items():
        out.setdefault(str(i), _verdict(v) or "neutral")
    for i in sorted(opposed):
        out.setdefault(i, "against")
    return out


def _verdict(value: Any) -> StepVerdict | None:
    return value if value in ("for", "against", "neutral") else None


def trajectory(events: Sequence[OpinionEvent], opinion: Memory) -> list[dict[str, Any]]:
    """The steps as JSON-ready dicts: the event's fields and ``verdicts`` (evidence id -> for / against / neutral)."""
    return [{**e.model_dump(mode="json"), "verdicts": step_verdicts(e, opinion)} for e in events]
