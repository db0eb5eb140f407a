"""The paged reads browsing tools use (``page_units``, ``count_units``, ``page_entities``, ``get_entities``,
``related_entities``, ``page_documents``, ``page_jobs``), against every implementation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conformance_support import Backend

from hindsight_core.models import (
    BankProfile,
    Document,
    DocumentStatus,
    Entity,
    EntityType,
    Job,
    JobStatus,
    Memory,
    Network,
)
from hindsight_core.stores.base import GraphStore, Mention, UnitBatch

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def fill(store: GraphStore, bank: str, prefix: str = "") -> None:
    """12 units (every third an experience) in three batches; entities Ana (8 units), Bo (4, always with Ana),
    Cy (1, with Ana)."""
    store.create_bank(BankProfile(id=bank, name=bank, created_at=T0))
    ana = Entity(id=prefix + "e-ana", bank_id=bank, name="Ana Lima", type=EntityType.PERSON)
    bo = Entity(id=prefix + "e-bo", bank_id=bank, name="Bo", type=EntityType.PERSON)
    cy = Entity(id=prefix + "e-cy", bank_id=bank, name="Cy", type=EntityType.LOCATION)
    for batch in range(3):
        units, mentions = [], []
        for i in range(batch * 4, batch * 4 + 4):
            uid = f"{prefix}u{i:02d}"
            network = Network.EXPERIENCE if i % 3 == 0 else Network.WORLD
            units.append(Memory(id=uid, bank_id=bank, text=f"fact {i}", network=network,
                                occurred_start=T0 + timedelta(days=i)))
            if i < 8:
                mentions.append(Mention(uid, ana.id))
            if i % 3 == 1:
                mentions.append(Mention(uid, bo.id))
        if batch == 0:
            mentions.append(Mention(f"{prefix}u00", cy.id))
        # Later batches name the entities they mention again, as retain does, so their counts are recounted.
        store.add_units(bank, UnitBatch(units=units, new_entities=[ana, bo, cy] if batch == 0 else [],
                                        updated_entities=[ana, bo] if batch else [], mentions=mentions))


def test_page_units_pages_newest_first_with_filters(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    fill(s, bank_id)
    fill(s, bank_id + "-other", prefix="x")
    everything = s.page_units(bank_id, limit=100)
    assert everything == [f"u{i:02d}" for i in reversed(range(12))]
    pages = [s.page_units(bank_id, limit=5, offset=o) for o in (0, 5, 10, 15)]
    assert pages[0] + pages[1] + pages[2] == everything and len(pages[2]) == 2 and pages[3] == []
    assert s.count_units(bank_id) == 12
    experience = [f"u{i:02d}" for i in (9, 6, 3, 0)]
    assert s.page_units(bank_id, network=Network.EXPERIENCE, limit=10) == experience
    assert s.page_units(bank_id, network=Network.EXPERIENCE, limit=2, offset=1) == experience[1:3]
    assert s.count_units(bank_id, network=Network.EXPERIENCE) == 4
    assert s.count_units(bank_id, network=Network.OPINION) == 0
    assert s.page_units(bank_id, entity_id="e-bo", limit=10) == ["u10", "u07", "u04", "u01"]
    assert s.count_units(bank_id, entity_id="e-ana") == 8
    assert s.page_units(bank_id, entity_id="e-ana", network=Network.EXPERIENCE, limit=10) == ["u06", "u03", "u00"]
    assert s.count_units(bank_id, entity_id="e-ana", network=Network.EXPERIENCE) == 3
    # another bank's entity id finds nothing here; a zero or negative page is empty, not "everything"
    assert s.page_units(bank_id, entity_id="xe-ana", limit=10) == [] and s.count_units(bank_id, entity_id="xe-ana") == 0
    assert s.page_units(bank_id, limit=0) == [] and s.page_units(bank_id, limit=-1) == []


def test_entities_paged_by_mentions_searched_and_related(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    fill(s, bank_id)
    fill(s, bank_id + "-other", prefix="x")
    page = s.page_entities(bank_id, limit=10)
    assert [(e.id, e.mention_count) for e in page] == [("e-ana", 8), ("e-bo", 4), ("e-cy", 1)]
    assert [e.id for e in s.page_entities(bank_id, limit=1, offset=1)] == ["e-bo"]
    assert [e.id for e in s.page_entities(bank_id, query="  LIMA ", limit=10)] == ["e-ana"]  # normalised, contained
    assert [e.id for e in s.page_entities(bank_id, query="ima", limit=10)] == ["e-ana"]
    assert s.page_entities(bank_id, query="zz", limit=10) == []
    # a query that normalises to nothing (punctuation, blanks) does not filter
    assert [e.id for e in s.page_entities(bank_id, query=" % ", limit=10)] == ["e-ana", "e-bo", "e-cy"]
    assert [e.name for e in s.get_entities(bank_id, ["e-cy", "missing", "xe-ana", "e-ana"])] == ["Cy", "Ana Lima"]
    assert s.related_entities(bank_id, "e-ana") == [("e-bo", 3), ("e-cy", 1)]
    assert s.related_entities(bank_id, "e-bo", limit=1) == [("e-ana", 3)]
    assert s.related_entities(bank_id, "xe-ana") == []


def test_documents_and_jobs_paged_newest_first(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.create_bank(BankProfile(id=bank_id + "-b", name="b"))
    for i in range(5):
        at = T0 + timedelta(hours=i)
        s.put_document(Document(id=f"d{i}", bank_id=bank_id, content=f"doc {i}", created_at=at, updated_at=at,
                                status=DocumentStatus.FAILED if i % 2 else DocumentStatus.DONE,
                                error="boom" if i % 2 else None))
        s.enqueue_job(Job(id=f"j{i}", bank_id=bank_id, kind="observe", created_at=at, run_after=at))
    s.put_document(Document(id="elsewhere", bank_id=bank_id + "-b", content="x", created_at=T0, updated_at=T0))
    s.enqueue_job(Job(id="j-elsewhere", bank_id=bank_id + "-b", kind="observe", created_at=T0, run_after=T0))
    assert [d.id for d in s.page_documents(bank_id, limit=2)] == ["d4", "d3"]
    assert [d.id for d in s.page_documents(bank_id, limit=2, offset=4)] == ["d0"]
    failed = s.page_documents(bank_id, DocumentStatus.FAILED, limit=10)
    assert [(d.id, d.error) for d in failed] == [("d3", "boom"), ("d1", "boom")]
    assert [j.id for j in s.page_jobs(bank_id, limit=3)] == ["j4", "j3", "j2"]
    assert [j.id for j in s.page_jobs(bank_id, limit=3, offset=3)] == ["j1", "j0"]
    s.finish_job("j2", error="bad")
    assert [(j.id, j.error) for j in s.page_jobs(bank_id, JobStatus.FAILED, limit=10)] == [("j2", "bad")]
    assert s.page_jobs(bank_id, JobStatus.RUNNING) == []
