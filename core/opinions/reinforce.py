"""The opinion job (paper section 5.3): new facts reinforce, weaken or contradict the opinions they bear on.

Runs in the background worker after a retain, when the bank holds opinions. An opinion is related to a new
fact when they share a name or their vectors are close (:mod:`hindsight_core.opinions.candidates`); one
structured model call per opinion labels the new evidence (:func:`hindsight_core.opinions.assess.assess_opinion`),
the new confidence is computed here with :func:`hindsight_core.opinions.confidence.moved`, and the store writes it
if the confidence it was computed from is still the stored one (else the opinion is read again and the move
computed again; the model is not asked again). Every assessed pair records a step in the opinion's history,
neutral (a move of 0) included. The bank's skepticism sizes the step, and decides whether evidence that is only
second-hand ("I heard that ...") moves it at all (:func:`hindsight_core.opinions.confidence.hearsay_factor`); the
label is recorded either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..config import CaraSettings
from ..llm.base import LLM
from ..models import Job, Memory, Network, OpinionEvent
from ..stores.base import BankStore, EntityStore, OpinionStore, OpinionUpdate, UnitStore, VectorIndex
from ..stores.records import StaleConfidenceError
from .assess import assess_opinion
from .candidates import related_opinions
from .confidence import Assessment, hearsay_factor, moved, opinion_step, starting_confidence
from .disposition import is_hearsay

FACT_NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""What can move an opinion: facts said or done, not other inferences (observations, opinions)."""
MAX_MOVES = 8
"""Attempts to write one move when other writers keep changing the opinion's confidence in between."""


class ReinforceStore(BankStore, UnitStore, EntityStore, OpinionStore, Protocol):
    """What the opinion job reads and writes: the disposition, facts, opinions and their history."""


class OpinionReinforcer:
    """Moves the confidence of opinions related to new facts, exactly once per (opinion, evidence)."""

    def __init__(
        self,
        store: ReinforceStore,
        index: VectorIndex,
        reindex: Callable[[str, Sequence[str]], object],
        llm: Callable[[], LLM],
        settings: CaraSettings,
        owner: str | None = None,
    ) -> None:
        """``reindex(bank, ids)`` re-embeds units whose text changed (a contradiction rewrites the opinion);
        ``owner`` is this process's lease id (a vector mark left by a crash is then finished by someone)."""
        self.store = store
        self.index = index
        self.reindex = reindex
        self._llm = llm
        self.settings = settings
        self.owner = owner

    def related(self, bank_id: str, new: Sequence[Memory]) -> dict[str, set[str]]:
        """Opinion id -> ids of the new facts that bear on it: a shared entity, one of the opinion's names (its
        entity list, or a bank entity its text names) in the fact's entities or text, or a close vector (see
        :mod:`hindsight_core.opinions.candidates`)."""
        return related_opinions(self.store, self.index, bank_id, new, self.settings.opinion_similarity)

    def run(self, job: Job) -> None:
        """Job handler: see ``apply``."""
        self.apply(job.bank_id, job.payload.get("unit_ids", []))

    def apply(self, bank_id: str, unit_ids: Sequence[str]) -> list[OpinionEvent]:
        """Assess every opinion related to the facts ``unit_ids`` and move its confidence; returns the events.

        Exactly once per (opinion, evidence): evidence already applied to an opinion (by an earlier attempt of
        this job, or another job) is left out before the model is asked, and the store re-checks it inside
        the transaction that moves the confidence and appends the history event.
        """
        store = self.store
        new = [m for m in store.get_units(bank_id, list(unit_ids)) if m.network in FACT_NETWORKS]
        profile = store.get_bank(bank_id)
        events: list[OpinionEvent] = []
        if not new or profile is None:
            return events
        related = self.related(bank_id, new)
        by_id = {m.id: m for m in new}
        step = opinion_step(self.settings.opinion_step, profile.disposition)
        for opinion in store.get_units(bank_id, sorted(related)):  # a vector without a unit is skipped here
            applied = store.applied_evidence(bank_id, opinion.id)
            evidence = [by_id[i] for i in by_id if i in related[opinion.id] and i not in applied]
            if not evidence:
                continue
            verdict = assess_opinion(self._llm(), opinion.text, starting_confidence(opinion.confidence),
                                     [(m.id, _content(m)) for m in evidence])
            # Neutral is recorded too (a step of 0): the trajectory shows the evidence was heard, and the
            # evidence counts as applied, so it is not asked about again.
            new_text = verdict.revised_text if verdict.label == Assessment.CONTRADICT else None
            rationale = verdict.rationale
            factor = 1.0
            hearsay = all(is_hearsay(m.text) for m in evidence)
            if hearsay and verdict.label != Assessment.NEUTRAL:  # nobody saw it: skepticism decides if it counts
                factor = hearsay_factor(profile.disposition)
                if factor == 0.0:
                    new_text = None
                    rationale = f"{rationale} [second-hand only: held at skepticism {profile.disposition.skepticism}]"
            event = self._move(bank_id, opinion, verdict.label, step * factor, evidence=tuple(m.id for m in evidence),
                               rationale=rationale.strip(), new_text=new_text)
            if event is None:
                continue
            events.append(event)
            if event.new_text:
                self.reindex(bank_id, [opinion.id])
        return events

    def _move(
        self, bank_id: str, opinion: Memory, label: Assessment, step: float, *, evidence: tuple[str, ...],
        rationale: str, new_text: str | None,
    ) -> OpinionEvent | None:
        """Hand the store the move computed from the opinion's stored confidence; when another writer changed that
        confidence in between (the store's compare-and-set fails), read the opinion again and compute again."""
        for _ in range(MAX_MOVES):
            move = moved(opinion.confidence, label, step)
            try:
                return self.store.apply_opinion_update(bank_id, OpinionUpdate(
                    opinion_id=opinion.id, label=label.value, read_confidence=opinion.confidence,
                    old_confidence=move.old, new_confidence=move.new, evidence=evidence, rationale=rationale,
                    new_text=new_text,
                ), owner=self.owner)
            except StaleConfidenceError:
                again = self.store.get_units(bank_id, [opinion.id])
                if not again:
                    return None
                opinion = again[0]
        raise StaleConfidenceError(f"opinion {opinion.id!r} kept changing while it was being moved")


def _content(memory: Memory) -> str:
    """What a message said, without its "Speaker: " prefix, for the model that judges it. Who said it is the
    code's business (hearsay, sources); Qwen 1.5B read the speaker as the subject ("Priya's late arrival shows
    ...") and got 50 of the CARA dev half's 66 messages right with the prefix, 58 without (one call per claim
    and message, no bank). Only a memory of one
    message whose prefix is one of its entities (the raw extractor adds the speaker as one) is cut."""
    head, sep, rest = memory.text.partition(": ")
    if (sep and rest.strip() and len(memory.sources) == 1
            and any(head.strip().casefold() == e.casefold() for e in memory.entities)):
        return rest
    return memory.text
