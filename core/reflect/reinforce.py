"""The opinion job (paper section 5.3): new facts reinforce, weaken or contradict the opinions they bear on.

Runs in the background worker after a retain, when the bank holds opinions. An opinion is related to a new
fact when they share a name or their vectors are close (:mod:`hindsight_core.reflect.opinion_candidates`); one
structured model call per opinion labels the new evidence (:func:`hindsight_core.reflect.opinions.assess_opinion`) and
the store moves the confidence. Every assessed pair records a step in the opinion's history, neutral (a move of
0) included. The bank's skepticism sizes the step, and decides whether evidence that is only second-hand ("I heard that
...") moves it at all (:func:`hindsight_core.reflect.disposition.hearsay_factor`); the label is recorded either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..config import CaraSettings
from ..llm.base import LLM
from ..models import Job, Memory, OpinionEvent
from ..stores.base import BankStore, EntityStore, OpinionStore, OpinionUpdate, UnitStore, VectorIndex
from .disposition import hearsay_factor, is_hearsay, opinion_step
from .observation_job import FACT_NETWORKS
from .opinion_candidates import related_opinions
from .opinions import Assessment, assess_opinion, confidence_delta


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
        :mod:`hindsight_core.reflect.opinion_candidates`)."""
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
            old = opinion.confidence if opinion.confidence is not None else 0.5
            verdict = assess_opinion(self._llm(), opinion.text, old, [(m.id, _content(m)) for m in evidence])
            # Neutral is recorded too (a step of 0): the trajectory shows the evidence was heard, and the
            # evidence counts as applied, so it is not asked about again.
            new_text = verdict.revised_text if verdict.label == Assessment.CONTRADICT else None
            delta = confidence_delta(verdict.label, step)
            rationale = verdict.rationale
            hearsay = all(is_hearsay(m.text) for m in evidence)
            if hearsay and verdict.label != Assessment.NEUTRAL:  # nobody saw it: skepticism decides if it counts
                factor = hearsay_factor(profile.disposition)
                delta *= factor
                if factor == 0.0:
                    new_text = None
                    rationale = f"{rationale} [second-hand only: held at skepticism {profile.disposition.skepticism}]"
            event = store.apply_opinion_update(bank_id, OpinionUpdate(
                opinion_id=opinion.id, label=verdict.label.value, delta=delta,
                evidence=tuple(m.id for m in evidence), rationale=rationale.strip(), new_text=new_text,
            ), owner=self.owner)
            if event is None:
                continue
            events.append(event)
            if event.new_text:
                self.reindex(bank_id, [opinion.id])
        return events


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
