"""Beliefs that change, on every backend: supersession recorded at retain (never deletion), recall that puts what is
current first and answers ``as_of`` a time, corrections, and forgetting that takes along what rests on what it
deletes (facts, observations, corrections, opinions) and makes superseded memories current again."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_support import Backend

from hindsight_core import Hindsight
from hindsight_core.errors import InvalidInputError, MemoryNotFoundError
from hindsight_core.extract.base import ExtractedFact
from hindsight_core.models import Document, JobStatus, Memory, Network
from hindsight_core.observations.job import OBSERVATIONS, observation_document_id
from hindsight_core.runtime.integrity import check

T0 = datetime(2023, 1, 10, 9, 0, tzinfo=UTC)


def say(speaker: str, text: str, mid: str, days: int) -> dict[str, Any]:
    """One message ``days`` after T0."""
    return {"speaker": speaker, "text": text, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


def fill(hs: Hindsight, bank_id: str) -> dict[str, Memory]:
    """Two people state things, talk of other things for months, then one changes (and one look-alike does not);
    returns each message's memory by message id."""
    bank = hs.bank(bank_id)
    sessions = [
        [say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0),
         say("Rui", "I work as a nurse at the Santa Maria hospital.", "r1", 0)],
        [say("Ana", "The jacaranda trees are blooming everywhere this week.", "a2", 60),
         say("Rui", "My sister moved to Porto for her new job.", "r2", 60)],
        [say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300),
         say("Rui", "Still working nights at the hospital, as a nurse.", "r3", 300)],
    ]
    for i, session in enumerate(sessions):
        bank.retain(session, document_id=f"s{i + 1}", extract=False, background=False)
    units = hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id)))
    return {m.sources[0]: m for m in units}


def test_a_change_supersedes_the_earlier_statement_and_nothing_else(backend: Backend, embedder: Any,
                                                                     bank_id: str) -> None:
    with backend.open(embedder) as hs:
        by_msg = fill(hs, bank_id)
        lisbon, porto = by_msg["a1"], by_msg["a3"]
        assert lisbon.superseded_by == porto.id
        assert lisbon.valid_until == porto.mentioned_at
        assert lisbon.text.startswith("Ana: I live in Lisbon")  # history keeps its words
        assert lisbon.metadata["supersession"]["by"] == "rule"
        # Another person's move, a restatement and everything else stay current.
        assert [m for m in by_msg.values() if m.superseded_by and m.id != lisbon.id] == []
        assert not lisbon.current_at(None) and lisbon.current_at(T0 + timedelta(days=100))
        assert check(hs).ok


def test_recall_puts_what_is_current_first_and_keeps_the_past(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        by_msg = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        lisbon, porto = by_msg["a1"], by_msg["a3"]
        now = bank.recall("Where does Ana live?", trace=True, reference_time=T0 + timedelta(days=400))
        ids = [m.id for m in now.memories]
        assert ids.index(porto.id) < ids.index(lisbon.id)
        item = next(i for i in now.trace.items if i.memory_id == lisbon.id)  # type: ignore[union-attr]
        assert item.superseded_by == porto.id
        before = bank.recall("Where did Ana live before she moved?", reference_time=T0 + timedelta(days=400))
        assert lisbon.id in [m.id for m in before.memories[:5]]
        # A time range in the past finds what was true then, superseded since.
        spring = bank.recall("Where does Ana live?", time_range=(T0, T0 + timedelta(days=100)),
                             reference_time=T0 + timedelta(days=400))
        spring_ids = [m.id for m in spring.memories]
        assert lisbon.id in spring_ids[:3] and (porto.id not in spring_ids
                                                or spring_ids.index(lisbon.id) < spring_ids.index(porto.id))
        # As of a day before the move was said: the move is not known yet and Lisbon is current.
        then = bank.recall("Where does Ana live?", as_of=T0 + timedelta(days=100))
        then_ids = [m.id for m in then.memories]
        assert lisbon.id in then_ids and porto.id not in then_ids
        assert next(m for m in then.memories if m.id == lisbon.id).superseded_by is None
        with pytest.raises(InvalidInputError):
            bank.recall("Where does Ana live?", as_of="not a date")


def test_a_corrected_plan_comes_first_when_the_question_names_its_time(backend: Backend, embedder: Any,
                                                                        bank_id: str) -> None:
    # "December" asked in May names a past month: a question about the past, yet the cancellation tells of that
    # December too, so it comes before the plan it corrected (the plan still follows it).
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain([say("Kavya", "We're going to Goa in December for my birthday, the beach shack is booked.",
                         "k1", 60)], document_id="k1", extract=False, background=False)
        bank.retain([say("Kavya", "We cancelled Goa, we're going to Kerala in December instead.", "k2", 300)],
                    document_id="k2", extract=False, background=False)
        units = {m.sources[0]: m for m in hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id)))}
        assert units["k1"].superseded_by == units["k2"].id
        ranked = [m.sources[0] for m in bank.recall("Where is Kavya going on her December trip?",
                                                    reference_time=datetime(2024, 5, 5, tzinfo=UTC)).memories]
        assert ranked.index("k2") < ranked.index("k1")
        # A question with a past cue still puts what was true before first.
        before = [m.sources[0] for m in bank.recall("Where was Kavya going before, in December?",
                                                    reference_time=datetime(2024, 5, 5, tzinfo=UTC)).memories]
        assert before.index("k1") < before.index("k2")


def test_a_correction_supersedes_and_is_audited(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        by_msg = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        wrong = by_msg["r1"]
        fixed = bank.correct(wrong.id, "Rui works as a paramedic, not a nurse.", by="rui")
        assert bank.get(wrong.id).superseded_by == fixed.id  # type: ignore[union-attr]
        assert fixed.network == wrong.network and fixed.sources == wrong.sources
        assert fixed.metadata["correction"]["of"] == wrong.id and fixed.metadata["correction"]["by"] == "rui"
        entry = bank.audit(limit=1)[0]
        assert entry.operation == "correct" and set(entry.memory_ids) == {wrong.id, fixed.id}
        assert "nurse" not in entry.summary and "paramedic" not in entry.summary
        # Correcting it again replaces the first correction; the memory stays superseded, by the new one.
        again = bank.correct(wrong.id, "Rui works as a firefighter.", by="rui")
        assert bank.get(fixed.id) is None and bank.get(wrong.id).superseded_by == again.id  # type: ignore[union-attr]
        top = bank.recall("What is Rui's job?").memories
        assert [m.id for m in top].index(again.id) < [m.id for m in top].index(wrong.id)
        with pytest.raises(MemoryNotFoundError):
            bank.correct("no-such-memory", "x")
        with pytest.raises(InvalidInputError):
            bank.correct(wrong.id, "   ")
        # Forgetting the corrected memory takes its correction along.
        assert bank.forget(memory_id=wrong.id) == 2
        assert bank.get(again.id) is None
        assert check(hs).ok


def _observation(hs: Hindsight, bank_id: str, entity: str, basis: list[Memory]) -> Memory:
    """An observation written as the observation job writes one (its text, basis and entity), without a model."""
    found = hs.store.find_entity(bank_id, entity)
    assert found is not None
    fact = ExtractedFact(text=f"{entity} lives in Lisbon near the river.", network=Network.OBSERVATION,
                         sources=[s for m in basis for s in m.sources])
    doc = Document(id=observation_document_id(found.id), bank_id=bank_id, content=entity,
                   timestamp=T0 + timedelta(days=1))
    meta = {"entity": found.name, "entity_id": found.id, "facts": [m.id for m in basis]}
    return hs.engine.retainer.store_facts(doc, [fact], metadata=meta).memories[0]


def _fact(hs: Hindsight, bank_id: str, raw: Memory, text: str, document_id: str | None = None) -> Memory:
    """An LLM fact beside a raw message, as the facts job stores one (a facts job's write replaces the document's
    earlier facts: ``document_id`` keeps two apart)."""
    doc = Document(id=document_id or raw.document_id or "", bank_id=bank_id, content="", timestamp=raw.mentioned_at)
    fact = ExtractedFact(text=text, network=Network.WORLD, sources=list(raw.sources), mentioned_at=raw.mentioned_at)
    return hs.engine.retainer.store_facts(doc, [fact], cites=[[raw.id]]).memories[0]


def _queued_rebuilds(hs: Hindsight, bank_id: str) -> list[dict[str, Any]]:
    return [j.payload for j in hs.store.page_jobs(bank_id, JobStatus.QUEUED, limit=100, offset=0)
            if j.kind == OBSERVATIONS and j.payload.get("rebuild")]


def test_an_observation_resting_on_a_superseded_memory_is_superseded_and_rewritten(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain([say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0)], document_id="s1",
                    extract=False, background=False)
        lisbon = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s1"))[0]
        summary = _observation(hs, bank_id, "Ana", [lisbon])
        bank.retain([say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300)],
                    document_id="s3", extract=False, background=False)
        porto = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s3"))[0]
        assert bank.get(lisbon.id).superseded_by == porto.id  # type: ignore[union-attr]
        # In the same transaction: the summary is history too, and a job writes it again from what is current.
        assert bank.get(summary.id).superseded_by == porto.id  # type: ignore[union-attr]
        rebuilds = _queued_rebuilds(hs, bank_id)
        ana = hs.store.find_entity(bank_id, "Ana")
        assert ana is not None and any(ana.id in p["entity_ids"] for p in rebuilds)
        top = [m.id for m in bank.recall("Where does Ana live?").memories]
        assert top.index(porto.id) < top.index(summary.id)


def test_the_rewritten_observation_states_what_is_current_not_what_was_superseded(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    # The rebuild job runs (extractive observations: no model): the new summary rests on current facts only, and
    # until it is written the superseded summary is not offered as the entity's observation.
    from hindsight_core.extract.base import ExtractedEntity
    from hindsight_core.models import EntityType

    def fact(raw: Memory, text: str) -> Memory:
        doc = Document(id=raw.document_id or "", bank_id=bank_id, content="", timestamp=raw.mentioned_at)
        made = ExtractedFact(text=text, network=Network.WORLD, sources=list(raw.sources),
                             mentioned_at=raw.mentioned_at, entities=[ExtractedEntity(name="Ana",
                                                                                       type=EntityType.PERSON)])
        return hs.engine.retainer.store_facts(doc, [made], cites=[[raw.id]]).memories[0]

    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain([say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0)], document_id="s1",
                    extract=False, background=False)
        lisbon = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s1"))[0]
        old_fact = fact(lisbon, "Ana lives in Lisbon in a small flat near the river.")
        old_summary = _observation(hs, bank_id, "Ana", [lisbon, old_fact])
        assert bank.observation("Ana") is not None
        bank.retain([say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300)],
                    document_id="s3", extract=False, background=False)
        porto = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s3"))[0]
        assert bank.get(old_fact.id).superseded_by == porto.id  # type: ignore[union-attr]
        assert bank.get(old_summary.id).superseded_by == porto.id  # type: ignore[union-attr]
        # Superseded and not yet rewritten: no current observation, rather than one saying she lives in Lisbon.
        assert bank.observation("Ana") is None
        fact(porto, "Ana moved to Porto and her new flat is much bigger.")
        assert _queued_rebuilds(hs, bank_id)
        while hs.worker.run_once():
            pass
        rewritten = bank.observation("Ana")
        assert rewritten is not None and rewritten.id != old_summary.id
        assert "Porto" in rewritten.text and "Lisbon" not in rewritten.text


def test_forgetting_takes_what_rests_on_it(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        by_msg = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        lisbon, porto = by_msg["a1"], by_msg["a3"]
        fact = _fact(hs, bank_id, porto, "Ana moved to Porto in 2023 and her new flat is bigger.")
        summary = _observation(hs, bank_id, "Ana", [porto, by_msg["a2"]])
        opinion = bank.add_opinion("Ana is happier in Porto.", 0.6, based_on=[porto.id])
        keep = bank.add_opinion("Ana likes trees.", 0.6, based_on=[by_msg["a2"].id])
        # One message: its fact, the observation and the opinion written from it go in the same transaction.
        gone = {porto.id, fact.id, summary.id, opinion.id}
        assert bank.forget(memory_id=porto.id) == len(gone)
        assert not gone & hs.store.unit_ids(bank_id) and not gone & hs.index.ids(bank_id)
        assert bank.get(keep.id) is not None
        entry = bank.audit(limit=1)[0]
        assert entry.operation == "forget" and "Porto" not in entry.summary
        assert entry.counts == {"memories": 1, "fact": 1, "observation": 1, "opinion": 1}
        # What the forgotten move superseded is current again; the entity's observation is queued to be rewritten.
        assert bank.get(lisbon.id).superseded_by is None  # type: ignore[union-attr]
        ana = hs.store.find_entity(bank_id, "Ana")
        assert ana is not None and any(ana.id in p["entity_ids"] for p in _queued_rebuilds(hs, bank_id))
        texts = " ".join(m.text for m in bank.recall("Porto flat move", budget=100_000).memories)
        assert "Porto" not in texts.replace("My sister moved to Porto", "")
        assert hs.store.keyword_search(bank_id, "bigger", 10) == []
        # A whole document: its messages and the facts beside them.
        rest = set(hs.store.units_of_document(bank_id, "s3"))
        assert rest and bank.forget(document_id="s3") == len(rest)
        assert not rest & hs.store.unit_ids(bank_id)
        assert check(hs).ok


def test_facts_follow_the_messages_they_cite(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain([say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0)], document_id="s1",
                    extract=False, background=False)
        lisbon = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s1"))[0]
        before = _fact(hs, bank_id, lisbon, "Ana lives in Lisbon in a small flat.")
        bank.retain([say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300)],
                    document_id="s3", extract=False, background=False)
        porto = hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, "s3"))[0]
        # The fact written before the move is superseded with its message, in the move's transaction ...
        assert bank.get(before.id).superseded_by == porto.id  # type: ignore[union-attr]
        assert bank.get(before.id).metadata["supersession"]["via"] == lisbon.id  # type: ignore[union-attr]
        # ... and a fact the facts job writes later about the old message is stored as history at once.
        late = _fact(hs, bank_id, lisbon, "Ana's flat in Lisbon is near the river.", document_id="s1-late")
        assert bank.get(late.id).superseded_by == porto.id  # type: ignore[union-attr]
        now = _fact(hs, bank_id, porto, "Ana moved to Porto.")
        assert bank.get(now.id).superseded_by is None  # type: ignore[union-attr]
        # Forgetting the move makes the message and its facts current again.
        bank.forget(document_id="s3")
        assert all(bank.get(i).superseded_by is None for i in (lisbon.id, before.id, late.id))  # type: ignore[union-attr]


def _nurse_twice(hs: Hindsight, bank_id: str) -> tuple[Memory, Memory, Memory]:
    """Ana says the same in two documents, 40 days apart, and the first has its fact: (fact, message, message)."""
    bank = hs.bank(bank_id)
    for i, day in enumerate((0, 40)):
        bank.retain([say("Ana", "I work as a nurse at the Santa Maria hospital.", f"n{i}", day)],
                    document_id=f"d{i}", extract=False, background=False)
    first, second = (hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, f"d{i}"))[0]
                     for i in range(2))
    return _fact(hs, bank_id, first, "Ana works as a nurse at the Santa Maria hospital."), first, second


def test_a_restated_fact_is_linked_not_stored_twice(backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _nurse_twice(hs, bank_id)
        doc = Document(id="d1", bank_id=bank_id, content="", timestamp=second.mentioned_at)
        again = ExtractedFact(text="Ana works as a nurse at the Santa Maria hospital.", network=Network.WORLD,
                              sources=list(second.sources), mentioned_at=second.mentioned_at)
        other = ExtractedFact(text="Ana works night shifts this month.", network=Network.WORLD,
                              sources=list(second.sources), mentioned_at=second.mentioned_at)
        result = hs.engine.retainer.store_facts(doc, [again, other], cites=[[second.id], [second.id]])
        # The twin is not stored: the held fact now cites both messages; a fact saying something else is stored.
        assert result.restated == 1 and [m.text for m in result.memories] == [other.text]
        assert bank.get(held.id).cites == [first.id, second.id]  # type: ignore[union-attr]
        facts = [m for m in hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id))) if m.cites]
        assert sorted(m.text for m in facts) == sorted([held.text, other.text])


def test_a_restating_document_retained_again_takes_its_citation_back(backend: Backend, embedder: Any,
                                                                     bank_id: str) -> None:
    # The held fact gained a citation of the restating message; a retain of that document again replaces the
    # message, and the held fact stops citing it (the id would name nothing).
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _nurse_twice(hs, bank_id)
        doc = Document(id="d1", bank_id=bank_id, content="", timestamp=second.mentioned_at)
        again = ExtractedFact(text=held.text, network=Network.WORLD, sources=list(second.sources),
                              mentioned_at=second.mentioned_at)
        assert hs.engine.retainer.store_facts(doc, [again], cites=[[second.id]]).restated == 1
        assert bank.get(held.id).cites == [first.id, second.id]  # type: ignore[union-attr]
        bank.retain([say("Ana", "The canteen has a new coffee machine.", "n1", 41)], document_id="d1",
                    extract=False, background=False)
        assert second.id not in hs.store.unit_ids(bank_id)
        assert bank.get(held.id).cites == [first.id]  # type: ignore[union-attr]
        assert check(hs).ok


def _restated(hs: Hindsight, bank_id: str) -> tuple[Memory, Memory, Memory]:
    """Ana says the same thing in two documents; the fact of the first is lent the second's citation (the second's
    fact restated it): (held fact, its own message, the lent message)."""
    bank = hs.bank(bank_id)
    for i, day in enumerate((0, 40)):
        bank.retain([say("Ana", "I work as a nurse at the Santa Maria hospital.", f"n{i}", day),
                     say("Rui", f"Noted, day {day}.", f"m{i}", day)],
                    document_id=f"d{i}", extract=False, background=False)
    first, second = (next(m for m in hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, f"d{i}"))
                          if m.text.startswith("Ana")) for i in range(2))
    held = _fact(hs, bank_id, first, "Ana works as a nurse at the Santa Maria hospital.")
    doc = Document(id="d1", bank_id=bank_id, content="", timestamp=second.mentioned_at)
    again = ExtractedFact(text=held.text, network=Network.WORLD, sources=list(second.sources),
                          mentioned_at=second.mentioned_at)
    assert hs.engine.retainer.store_facts(doc, [again], cites=[[second.id]]).restated == 1
    assert bank.get(held.id).cites == [first.id, second.id]  # type: ignore[union-attr]
    return held, first, second


@pytest.mark.parametrize("selector", ["document", "memory"])
def test_forgetting_a_restating_message_takes_its_citation_back_and_keeps_the_fact(
        backend: Backend, embedder: Any, bank_id: str, selector: str) -> None:
    # The fact was made of the first document's message; the second only said it again. Forgetting the second
    # takes back the citation it lent and leaves the first document's fact (it used to delete it).
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _restated(hs, bank_id)
        if selector == "document":
            bank.forget(document_id="d1")
        else:
            bank.forget(memory_id=second.id)
        assert second.id not in hs.store.unit_ids(bank_id)
        kept = bank.get(held.id)
        assert kept is not None and kept.cites == [first.id] and kept.text == held.text
        assert check(hs).ok
        # What it rests on still takes it: forgetting the message it was made of deletes it.
        bank.forget(memory_id=first.id)
        assert bank.get(held.id) is None
        assert check(hs).ok


def _corrected_restatement(hs: Hindsight, bank_id: str) -> tuple[Memory, Memory, Memory, Memory]:
    """``_restated``, an observation of Ana written from the held fact, then a correction of the fact's own message
    while the lent one still holds (the fact stays current): (held fact, its own message, observation, correction)."""
    bank = hs.bank(bank_id)
    held, first, _second = _restated(hs, bank_id)
    summary = _observation(hs, bank_id, "Ana", [held])
    fixed = bank.correct(first.id, "Ana: I work as a paramedic with the INEM ambulance service.", by="ana")
    assert bank.get(held.id).superseded_by is None  # type: ignore[union-attr]  # the lent message still holds
    return held, first, summary, fixed


def test_a_fact_left_citing_only_superseded_messages_after_a_take_back_is_superseded_with_them(
        backend: Backend, embedder: Any, bank_id: str) -> None:
    # The fact's own message was corrected while the restating message it was lent still held, so the fact stayed
    # current (it rested on a message that held). Forgetting the restating document takes that citation back: the fact
    # now rests on the corrected message alone and is history like it, superseded by the correction.
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, summary, fixed = _corrected_restatement(hs, bank_id)
        bank.forget(document_id="d1")
        kept = bank.get(held.id)
        assert kept is not None and kept.cites == [first.id]
        assert kept.superseded_by == fixed.id and kept.valid_until is not None
        assert held.id in hs.store.superseded_by_ids(bank_id, [fixed.id]).get(fixed.id, [])
        # The observation written from the fact is history with it, in the same transaction, and is written again.
        assert bank.get(summary.id).superseded_by == fixed.id  # type: ignore[union-attr]
        assert bank.observation("Ana") is None
        assert any(job["rebuild"] for job in _queued_rebuilds(hs, bank_id))
        assert check(hs).ok
        # Forgetting the correction makes the message, and the fact with it, current again.
        bank.forget(memory_id=fixed.id)
        assert bank.get(held.id).superseded_by is None  # type: ignore[union-attr]
        assert bank.get(first.id).superseded_by is None  # type: ignore[union-attr]
        assert check(hs).ok


def test_a_restating_document_retained_again_leaves_a_fact_citing_only_superseded_messages_superseded(
        backend: Backend, embedder: Any, bank_id: str) -> None:
    # The same rule when the lent citation goes because its document is retained again with other words.
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, summary, fixed = _corrected_restatement(hs, bank_id)
        bank.retain([say("Rui", "Only Rui talks now.", "x1", 41)], document_id="d1", extract=False, background=False)
        kept = bank.get(held.id)
        assert kept is not None and kept.cites == [first.id] and kept.superseded_by == fixed.id
        assert held.id in hs.store.superseded_by_ids(bank_id, [fixed.id]).get(fixed.id, [])
        # No rebuild is queued here, so the observation is left as it was rather than hidden with nothing after it.
        assert bank.get(summary.id).superseded_by is None  # type: ignore[union-attr]
        assert check(hs).ok


def test_a_forget_failing_after_taking_a_citation_back_changes_nothing_and_a_retry_completes(
        backend: Backend, embedder: Any, bank_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_core.errors import StoreError
    from hindsight_core.stores.neo4j import cypher as neo4j_cypher
    from hindsight_core.stores.sqlite import sql as sqlite_sql

    module, name = ((sqlite_sql, "_take_back_lent") if backend.name == "embedded"
                    else (neo4j_cypher, "_take_back_lent_tx"))
    real = getattr(module, name)

    def fails(*args: Any) -> None:
        real(*args)
        if backend.name == "embedded":
            raise sqlite3.OperationalError("database or disk is full")
        from neo4j.exceptions import DatabaseError
        raise DatabaseError("injected: the server failed inside the transaction, after the citation was taken back")

    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _restated(hs, bank_id)
        with monkeypatch.context() as m:
            m.setattr(module, name, fails)
            with pytest.raises(StoreError):
                bank.forget(document_id="d1")
        assert second.id in hs.store.unit_ids(bank_id)
        assert bank.get(held.id).cites == [first.id, second.id]  # type: ignore[union-attr]
        bank.forget(document_id="d1")
        assert bank.get(held.id).cites == [first.id]  # type: ignore[union-attr]
        assert check(hs).ok


def test_forgetting_the_message_a_fact_was_made_of_deletes_it_whatever_was_lent(
        backend: Backend, embedder: Any, bank_id: str) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _restated(hs, bank_id)
        bank.forget(document_id="d0")
        assert bank.get(held.id) is None and first.id not in hs.store.unit_ids(bank_id)
        assert bank.get(second.id) is not None  # the restating message stays, with nothing citing it
        assert check(hs).ok


def test_a_repair_deletes_a_fact_left_with_lent_citations_only(backend: Backend, embedder: Any,
                                                               bank_id: str) -> None:
    # The message the fact was made of went without it (a crash or a race: what `hindsight check` is for). Its own
    # citation dangles; the lent one does not make it rest on something: the repair deletes it.
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _restated(hs, bank_id)
        hs.store.delete_units(bank_id, [first.id])
        assert check(hs).banks[0].problems.get("dangling_citation") == [held.id]
        assert check(hs, repair=True).ok
        assert bank.get(held.id) is None and bank.get(second.id) is not None


def test_a_fact_with_lent_citations_only_goes_with_them() -> None:
    from hindsight_core.retain.forget import rests_on

    assert rests_on({"fact_of": ["m2"], "fact_lent": ["m2"]}, {"m2"}) == "fact"
    assert rests_on({"fact_of": ["m1", "m2"], "fact_lent": ["m2"]}, {"m2"}) is None
    assert rests_on({"fact_of": ["m1", "m2"], "fact_lent": ["m2"]}, {"m1"}) == "fact"


def test_the_observations_of_a_fact_that_only_loses_a_lent_citation_are_written_again_not_deleted() -> None:
    from hindsight_core.retain.forget import dependents

    refs = [("f1", {"fact_of": ["m1", "m2"], "fact_lent": ["m2"]}),
            ("f2", {"fact_of": ["m3"]}),
            ("o1", {"facts": ["f1"], "entity_id": "ana"}),
            ("o2", {"facts": ["f2"], "entity_id": "rui"})]
    found = dependents(refs, ["m2"])
    assert found.kinds == {} and found.rebuild == ["ana"]  # f1 stays (it may be history now): Ana's is rewritten
    found = dependents(refs, ["m1"])
    assert found.kinds == {"f1": "fact", "o1": "observation"} and found.rebuild == ["ana"]
    assert dependents(refs, ["m9"]).rebuild == []


def test_a_restatement_lends_no_citation_of_a_message_already_forgotten(backend: Backend, embedder: Any,
                                                                        bank_id: str) -> None:
    # The restating facts job read the message before a forget took it; its commit lends only what still exists.
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        held, first, second = _nurse_twice(hs, bank_id)
        bank.forget(memory_id=second.id)
        doc = Document(id="d1", bank_id=bank_id, content="", timestamp=second.mentioned_at)
        again = ExtractedFact(text=held.text, network=Network.WORLD, sources=list(second.sources),
                              mentioned_at=second.mentioned_at)
        hs.engine.retainer.store_facts(doc, [again], cites=[[second.id]])
        assert bank.get(held.id).cites == [first.id]  # type: ignore[union-attr]
        assert check(hs).ok


def test_a_fact_that_turns_a_held_one_around_is_not_a_restatement(backend: Backend, embedder: Any,
                                                                  bank_id: str) -> None:
    # "not" is a stop word: the turned fact shares every content word with the held one and is close in meaning,
    # but it is news (for supersession and recall), and the held fact must not gain a citation of it.
    from hindsight_core.retain.restated import MIN_SIMILARITY
    from hindsight_core.vectors.unit_text import timed_text

    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        # The later message carries no change cue of the raw rules (which would supersede the held fact first).
        said = ("I work as a nurse at the Santa Maria hospital.", "Long week at the hospital, I will tell you later.")
        for i, text in enumerate(said):
            bank.retain([say("Ana", text, f"t{i}", 0)], document_id=f"t{i}", extract=False, background=False)
        first, second = (hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, f"t{i}"))[0]
                         for i in range(2))
        held = _fact(hs, bank_id, first, "Ana works as a nurse at the Santa Maria hospital.")
        text = "Ana does not work as a nurse at the Santa Maria hospital."
        # Without the turn words it would pass both gates of a restatement: close in meaning, the same content words.
        vector = hs.embedder.embed([timed_text(text, second.mentioned_at, True)])[0]  # as store_facts embeds it
        assert any(h == held.id and score >= MIN_SIMILARITY for h, score in hs.index.query(bank_id, vector, 5))
        doc = Document(id="t1", bank_id=bank_id, content="", timestamp=second.mentioned_at)
        turned = ExtractedFact(text=text, network=Network.WORLD, sources=list(second.sources),
                               mentioned_at=second.mentioned_at)
        result = hs.engine.retainer.store_facts(doc, [turned], cites=[[second.id]])
        assert result.restated == 0 and [m.text for m in result.memories] == [text]
        assert bank.get(held.id).cites == [first.id]  # type: ignore[union-attr]
