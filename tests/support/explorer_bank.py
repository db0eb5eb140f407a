"""A small store with something in every view of the memory explorer, built through the public API.

Two raw-retained conversations (the real embedder and NER), an opinion that moved twice, an observation written by
the real observation job with a scripted model, a failed document and a failed job; a second bank to check that
nothing leaks between banks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from hindsight_core import Hindsight
from hindsight_core.models import DocumentStatus, Job, utcnow
from hindsight_core.opinions.confidence import moved
from hindsight_core.stores.base import OpinionUpdate

BANK = "support-bot"
OTHER_BANK = "other/bank"  # a "/" in an id: the explorer must not read it as a path
RECALL_QUERY = "Where does Emma's sister live?"
SISTER = "Emma: My sister moved to Lisbon last spring."
FORGET_ME = "Emma: I adopted a grey cat called Pixel."
OPINION = "Emma would love a trip to Portugal."
OBSERVATION = "Emma is planning a move and has a sister in Lisbon; she adopted a cat called Pixel."

SESSION_1 = [
    {"speaker": "Emma", "text": "My sister moved to Lisbon last spring.", "id": "s1:1"},
    {"speaker": "assistant", "text": "Noted! Is she enjoying Portugal?", "id": "s1:2"},
    {"speaker": "Emma", "text": "She loves it, and she works at Blue Harbor Bank now.", "id": "s1:3"},
    {"speaker": "Emma", "text": "I adopted a grey cat called Pixel.", "id": "s1:4"},
    {"speaker": "Emma", "text": "Daniel and I are thinking of visiting her in June.", "id": "s1:5"},
]
SESSION_2 = [
    {"speaker": "Emma", "text": "Daniel booked the flights to Lisbon yesterday.", "id": "s2:1"},
    {"speaker": "assistant", "text": "How exciting! How long will you stay?", "id": "s2:2"},
    {"speaker": "Emma", "text": "Two weeks. Pixel will stay with my neighbour Rosa.", "id": "s2:3"},
    {"speaker": "Emma", "text": "Actually I'm nervous about flying since the storm last year.", "id": "s2:4"},
]


@dataclass
class ExplorerBank:
    """Ids of what ``build`` stored, for tests to look for."""

    path: Path
    memory_ids: dict[str, str] = field(default_factory=dict)  # text -> id
    opinion_id: str = ""
    emma_id: str = ""
    failed_document: str = "import-3"
    failed_job: str = "job-failed-1"
    facts_job: str = "job-facts-1"


def build(path: Path) -> ExplorerBank:
    """Fill a new store at ``path`` (closed again before returning)."""
    out = ExplorerBank(path=path)
    # The observation job asks the model once for Emma's summary: a scripted model answers (no LLM here).
    from scripted_llm import ScriptedLLM

    llm = ScriptedLLM([{"summary": OBSERVATION}])
    from hindsight_core.config import CaraSettings, Settings

    # The scripted model writes the observation (the bank is retained raw: an extractive one is made of facts).
    with Hindsight.open(path, llm=llm, start_worker=False,
                        settings=Settings(cara=CaraSettings(observation_mode="model"))) as hs:
        bank = hs.bank(BANK, name="Support bot", background="I help Emma plan her trips.")
        first = bank.retain(SESSION_1, timestamp="2025-03-02T10:00:00", document_id="chat-1", extract=False,
                            document_metadata={"channel": "web"})
        second = bank.retain(SESSION_2, timestamp="2025-04-10T18:30:00", document_id="chat-2", extract=False)
        for m in [*first.memories, *second.memories]:
            out.memory_ids[m.text] = m.id
        opinion = bank.add_opinion(OPINION, 0.55, entities=["Emma"], based_on=[out.memory_ids[SISTER]],
                                   rationale="her sister lives in Lisbon")
        out.opinion_id = opinion.id
        # Two later steps, as the opinion reinforcer records them (``at`` is when each was assessed).
        formed = hs.store.opinion_history(BANK, opinion.id)[0].at
        for label, step, evidence, rationale, days in (
            ("reinforce", 0.2, "Emma: Daniel booked the flights to Lisbon yesterday.", "the flights are booked", 1),
            ("weaken", 0.15, "Emma: Actually I'm nervous about flying since the storm last year.",
             "she is afraid of flying", 3),
        ):
            read = hs.store.get_units(BANK, [opinion.id])[0].confidence
            move = moved(read, label, step)
            hs.store.apply_opinion_update(BANK, OpinionUpdate(
                opinion_id=opinion.id, label=label, read_confidence=read, old_confidence=move.old,
                new_confidence=move.new, evidence=(out.memory_ids[evidence],), rationale=rationale,
                at=formed + timedelta(days=days)))
        emma = hs.store.find_entity(BANK, "Emma")
        assert emma is not None
        out.emma_id = emma.id
        hs.engine.observations.regenerate(BANK, emma.id)
        # A document whose extraction failed, and a job that gave up, as the worker leaves them.
        bank.put_document(out.failed_document, "raw text the model could not read", timestamp="2025-04-11")
        hs.store.set_document_status(BANK, out.failed_document, DocumentStatus.FAILED,
                                     error="ExtractionError: the model returned no facts")
        hs.store.enqueue_job(Job(id=out.failed_job, bank_id=BANK, kind="observe", payload={"entity_ids": ["x"]},
                                 created_at=utcnow(), run_after=utcnow()))
        claimed = hs.store.claim_job(utcnow(), owner=hs.lease.id)
        assert claimed is not None and claimed.id == out.failed_job
        hs.store.finish_job(out.failed_job, error="LLMError: the local model did not answer")
        # A facts job that finished, with what its checks rejected (as the facts job reports it).
        hs.store.enqueue_job(Job(id=out.facts_job, bank_id=BANK, kind="facts", payload={"document_id": "chat-1"},
                                 created_at=utcnow(), run_after=utcnow()))
        claimed = hs.store.claim_job(utcnow(), owner=hs.lease.id)
        assert claimed is not None and claimed.id == out.facts_job
        hs.store.finish_job(out.facts_job, result={
            "facts": 2, "rejected": 1, "rejected_by_reason": {"speaker": 1}, "repointed": 0,
            "rejections": [{"text": "Daniel moved to Lisbon last spring.", "sources": ["m1"], "reason": "speaker",
                            "detail": "about Daniel, said by Emma"}]})
        other = hs.bank(OTHER_BANK)
        other.retain([{"speaker": "Bob", "text": "I keep bees in Oslo.", "id": "o:1"}], timestamp="2025-01-01",
                     document_id="bees", extract=False)
    return out
