"""Writing an opinion's history back so that the store ends up exactly as the exported one.

The store protocols record applied evidence (what makes an opinion move once per piece of evidence) only
through ``OpinionStore.apply_opinion_update``, which also appends the event and moves the confidence. So the
events that update wrote are replayed through it, in order, from the opinion's state before each of them; the
other events (an opinion's ``formed`` step, events appended with ``add_opinion_event``) are appended as they are.
The store is handed the recorded old and new confidence as they are (it computes nothing).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from ..models import OpinionEvent
from ..stores.base import OpinionStore, OpinionUpdate, UnitStore
from .format import OpinionHistoryRecord, UnitRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One history event and how it is written: replayed through ``apply_opinion_update`` or appended."""

    event: OpinionEvent
    replay: bool


def plan(record: OpinionHistoryRecord) -> list[Step]:
    """The events in order, each marked for replay when it is one ``apply_opinion_update`` wrote: it moved the
    confidence from a known value and all its evidence is applied evidence not claimed by an earlier event."""
    unclaimed = set(record.applied_evidence)
    steps = []
    for e in record.events:
        event = e.event(record.opinion_id)
        evidence = set(event.evidence)
        replay = (event.old_confidence is not None and bool(evidence) and len(evidence) == len(event.evidence)
                  and evidence <= unclaimed)
        if replay:
            unclaimed -= evidence
        steps.append(Step(event, replay))
    if unclaimed:
        log.warning("opinion %r: applied evidence %s is in no history event; it cannot be restored exactly",
                    record.opinion_id, sorted(unclaimed)[:5])
    return steps


def commit_text(unit: UnitRecord, record: OpinionHistoryRecord | None) -> str:
    """The text an opinion had when it was stored: its ``formed`` event's, else its first rewrite's old text."""
    for e in record.events if record is not None else []:
        if e.label == "formed" and e.new_text is not None:
            return e.new_text
        if e.old_text is not None:
            return e.old_text
    return unit.text


def initial_state(unit: UnitRecord, steps: list[Step]) -> tuple[str, float | None]:
    """Text and confidence an opinion is written with before its replayed events move it."""
    replayed = [s.event for s in steps if s.replay]
    if not replayed:
        return unit.text, unit.confidence
    rewrite = next((e for e in replayed if e.new_text is not None and e.old_text is not None), None)
    return (rewrite.old_text if rewrite is not None and rewrite.old_text is not None else unit.text,
            replayed[0].old_confidence)


class HistoryWriter:
    """Writes opinion histories into one bank (after the opinion units exist)."""

    def __init__(self, store: UnitAndOpinionStore, bank_id: str, owner: str | None) -> None:
        self.store = store
        self.bank_id = bank_id
        self.owner = owner

    def write(self, unit: UnitRecord, steps: list[Step], state: tuple[str, float | None]) -> bool:
        """Write ``steps`` for ``unit`` (stored with ``state``), then leave it at its exported text and confidence.
        Returns whether its text changed on the way (its vector must then be written again)."""
        text, confidence = state
        rewritten = False
        for step in steps:
            event = step.event
            if not step.replay:
                self.store.add_opinion_event(self.bank_id, event)
                continue
            old = event.old_confidence
            assert old is not None  # plan() replays only events with one
            if confidence != old:
                self.store.update_unit(self.bank_id, unit.id, confidence=old)
            if event.new_text is not None and event.old_text is not None and text != event.old_text:
                self.store.update_unit(self.bank_id, unit.id, text=event.old_text)
                rewritten = True
            written = self.store.apply_opinion_update(self.bank_id, OpinionUpdate(
                opinion_id=unit.id, label=event.label, read_confidence=old, old_confidence=old,
                new_confidence=event.new_confidence, evidence=tuple(event.evidence), rationale=event.rationale,
                new_text=event.new_text, at=event.at,
            ), owner=self.owner)
            if written is None:
                log.warning("opinion %r: replaying its %r step changed nothing", unit.id, event.label)
                continue
            confidence = written.new_confidence
            if written.new_text is not None:
                text, rewritten = written.new_text, True
        if confidence != unit.confidence and unit.confidence is not None:
            self.store.update_unit(self.bank_id, unit.id, confidence=unit.confidence)
        if text != unit.text:
            self.store.update_unit(self.bank_id, unit.id, text=unit.text)
            rewritten = True
        return rewritten


class UnitAndOpinionStore(UnitStore, OpinionStore, Protocol):
    """What writing histories needs: opinion updates and in-place unit changes."""
