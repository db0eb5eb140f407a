"""The integrity seams of every graph store, with the same expected results: entity upsert by normalised
name, atomic swap of a document's units, vector marks, leases, exactly-once opinion updates, checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conformance_support import Backend
from test_graph_store import T0, seed, unit

from hindsight_core.errors import StoreError
from hindsight_core.models import (
    BankProfile,
    Document,
    DocumentKind,
    DocumentStatus,
    Entity,
    EntityType,
    Job,
    JobStatus,
    Link,
    LinkType,
    Network,
    OpinionEvent,
)
from hindsight_core.stores.base import GraphStore, Mention, OpinionUpdate, Owner, UnitBatch
from hindsight_core.stores.records import StaleConfidenceError


@pytest.fixture()
def store(backend: Backend, bank_id: str) -> GraphStore:
    s = backend.store()
    seed(s, bank_id)
    return s


def _entity(eid: str, bank: str, name: str, etype: EntityType = EntityType.PERSON, **kw: Any) -> Entity:
    return Entity(id=eid, bank_id=bank, name=name, type=etype, **kw)


def test_entities_are_unique_per_normalised_name(store: GraphStore, bank_id: str) -> None:
    """Another writer's entity of the same normalised name is reused; mentions follow it; counts are exact."""
    names = store.add_units(bank_id, UnitBatch(
        units=[unit("n1", bank_id, "ZOË met Zoe", 30)],
        new_entities=[_entity("z1", bank_id, "Zoë", aliases=["Z"]), _entity("o2", bank_id, "OSCAR")],
        mentions=[Mention("n1", "z1"), Mention("n1", "o2")],
    ))
    assert names == {"z1": "Zoë", "o2": "Oscar"}  # o2 folded into the seeded "Oscar"
    names = store.add_units(bank_id, UnitBatch(
        units=[unit("n2", bank_id, "zoe again", 31)],
        new_entities=[_entity("z2", bank_id, " zoe ", etype=EntityType.OTHER, aliases=["Zozo"])],
        mentions=[Mention("n2", "z2")],
    ))
    assert names == {"z2": "Zoë"}
    zoe = store.find_entity(bank_id, "ZOE")
    assert zoe is not None and zoe.id == "z1" and zoe.mention_count == 2 and zoe.type == EntityType.PERSON
    assert sorted(zoe.aliases) == ["Z", "Zozo"]
    assert sorted(store.units_of_entity(bank_id, "z1")) == ["n1", "n2"]
    oscar = store.find_entity(bank_id, "oscar")
    assert oscar is not None and oscar.id == "e_oscar" and oscar.mention_count == 4
    assert store.get_units(bank_id, ["n1"])[0].entities == ["Oscar", "Zoë"]
    assert store.check_bank(bank_id) == {}


def test_an_entity_deleted_meanwhile_is_recreated(store: GraphStore, bank_id: str) -> None:
    """The resolver saw "Boston" (updated entity); a forget removed it before the commit: it comes back."""
    store.delete_units(bank_id, ["u2"])  # the only mention of Boston: the entity goes with it
    assert store.find_entity(bank_id, "Boston") is None
    store.add_units(bank_id, UnitBatch(
        units=[unit("n1", bank_id, "Back in Boston", 30)],
        updated_entities=[_entity("e_boston", bank_id, "Boston", EntityType.LOCATION, mention_count=7)],
        mentions=[Mention("n1", "e_boston")],
    ))
    boston = store.find_entity(bank_id, "boston")
    assert boston is not None and boston.mention_count == 1 and store.units_of_entity(bank_id, boston.id) == ["n1"]
    assert store.check_bank(bank_id) == {}


def test_links_to_missing_units_are_not_stored(store: GraphStore, bank_id: str) -> None:
    """Both backends drop a link whose other end is not a unit of the bank (forgotten, or an orphan vector)."""
    store.add_units(bank_id, UnitBatch(
        units=[unit("n1", bank_id, "new", 30)],
        links=[Link(source_id="n1", target_id="u0", type=LinkType.SEMANTIC, weight=0.9),
               Link(source_id="n1", target_id="ghost", type=LinkType.SEMANTIC, weight=0.9),
               Link(source_id="ghost", target_id="n1", type=LinkType.TEMPORAL, weight=0.5)],
    ))
    edges = {(e.source_id, e.target_id) for e in store.neighbors(bank_id, ["n1", "ghost"], entity_fanout=0)}
    assert edges == {("n1", "u0")}
    assert store.units_exist(bank_id, ["n1", "ghost", "u0", "xu0"]) == {"n1", "u0"}
    assert store.check_bank(bank_id) == {}


def test_replacing_a_document_swaps_in_one_transaction(store: GraphStore, bank_id: str) -> None:
    """The old units go and the new come in one commit; old vectors are marked, new ones unmarked."""
    store.mark_vectors(bank_id, ["n1", "n2"], owner="proc")
    names = store.add_units(bank_id, UnitBatch(
        units=[unit("n1", bank_id, "Oscar is a golden puppy", 30), unit("n2", bank_id, "Melanie paints", 31)],
        new_entities=[_entity("e_mel2", bank_id, "melanie")],
        mentions=[Mention("n1", "e_oscar"), Mention("n2", "e_mel2")],
        updated_entities=[_entity("e_oscar", bank_id, "Oscar", EntityType.OTHER)],
        replaces=["u0", "u1", "u3"],
    ), owner="proc")
    assert names["e_mel2"] == "melanie"  # u0 held the last mention of "Melanie": that entity went with it
    assert store.unit_ids(bank_id) == {"u2", "u4", "n1", "n2"}
    assert sorted(store.vector_marks("proc")) == [(bank_id, "u0"), (bank_id, "u1"), (bank_id, "u3")]
    oscar = store.find_entity(bank_id, "Oscar")
    assert oscar is not None and oscar.mention_count == 2  # u4 and n1
    mel = store.find_entity(bank_id, "Melanie")
    assert mel is not None and mel.id == "e_mel2" and mel.mention_count == 1
    assert [i for i, _ in store.keyword_search(bank_id, "golden puppy", 5)] == ["n1"]
    # A batch that fails changes nothing, the replaced units included.
    with pytest.raises(StoreError):
        store.add_units(bank_id, UnitBatch(units=[unit("n3", bank_id, "x", 32), unit("n2", bank_id, "dup", 33)],
                                           replaces=["u2"]))
    assert store.unit_ids(bank_id) == {"u2", "u4", "n1", "n2"}
    assert store.check_bank(bank_id) == {}


def test_vector_marks_follow_deletes(store: GraphStore, bank_id: str) -> None:
    store.mark_vectors(bank_id, ["a", "b"], owner="p1")
    store.mark_vectors(bank_id, ["b"], owner="p2")  # the latest owner holds it
    assert store.vector_marks("p1") == [(bank_id, "a")] and store.vector_marks("p2") == [(bank_id, "b")]
    store.clear_vector_marks(bank_id, ["a", "b", "never"])
    assert store.vector_marks("p1") == [] and store.vector_marks("p2") == []
    assert store.delete_units(bank_id, ["u0", "missing"], owner="p1") == 1
    store.update_unit(bank_id, "u1", text="Oscar chewed the sofa")  # a new text must be embedded again
    assert store.vector_marks("p1") == [(bank_id, "u0")] and store.vector_marks(None) == [(bank_id, "u1")]
    store.delete_bank(bank_id, owner="p3")
    assert store.vector_marks("p3") == [(bank_id, "")] and store.vector_marks("p1") == []


def test_opinion_updates_apply_once_per_evidence(store: GraphStore, bank_id: str) -> None:
    at = T0 + timedelta(days=20)
    first = store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="reinforce", read_confidence=0.7, old_confidence=0.7, new_confidence=0.8,
        evidence=("u1", "u3"), rationale="more runs", at=at))
    assert first is not None and (first.old_confidence, first.evidence) == (0.7, ["u1", "u3"])
    assert first.new_confidence == 0.8 and store.get_units(bank_id, ["u4"])[0].confidence == 0.8
    # A retried job sends the same evidence: nothing moves, no second event.
    assert store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="reinforce", read_confidence=0.7, old_confidence=0.7, new_confidence=0.8,
        evidence=("u3", "u1"))) is None
    # Partly new evidence applies once, for the new part only; a rewrite marks the vector.
    second = store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="contradict", read_confidence=0.8, old_confidence=0.8, new_confidence=0.6,
        evidence=("u1", "u2"), new_text="Oscar hates the park"), owner="proc")
    assert second is not None and second.evidence == ["u2"] and second.old_text == "Running in the park with Oscar"
    assert second.new_confidence == 0.6
    assert store.get_units(bank_id, ["u4"])[0].text == "Oscar hates the park"
    assert store.vector_marks("proc") == [(bank_id, "u4")]
    assert [i for i, _ in store.keyword_search(bank_id, "hates", 5)] == ["u4"]
    history = store.opinion_history(bank_id, "u4")
    assert [(e.label, e.evidence) for e in history] == [("reinforce", ["u1", "u3"]), ("contradict", ["u2"])]
    assert store.applied_evidence(bank_id, "u4") == {"u1", "u2", "u3"}
    # The store writes the value it is given and computes nothing (the ceiling is the caller's business) ...
    top = store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="reinforce", read_confidence=0.6, old_confidence=0.6, new_confidence=0.95,
        evidence=("u0",)))
    assert top is not None and top.new_confidence == 0.95
    assert store.get_units(bank_id, ["u4"])[0].confidence == 0.95
    # ... and a missing opinion is no error.
    assert store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="gone", label="weaken", read_confidence=0.5, old_confidence=0.5, new_confidence=0.4,
        evidence=("u0",))) is None
    assert store.check_bank(bank_id) == {}


def test_an_opinion_update_from_a_stale_confidence_writes_nothing(store: GraphStore, bank_id: str) -> None:
    """Compare-and-set: a move computed from a confidence the opinion no longer has is refused, whole."""
    with pytest.raises(StaleConfidenceError):
        store.apply_opinion_update(bank_id, OpinionUpdate(
            opinion_id="u4", label="contradict", read_confidence=0.5, old_confidence=0.5, new_confidence=0.3,
            evidence=("u1",), new_text="Oscar hates the park"), owner="proc")
    unit4 = store.get_units(bank_id, ["u4"])[0]
    assert (unit4.confidence, unit4.text) == (0.7, "Running in the park with Oscar")
    assert store.opinion_history(bank_id, "u4") == [] and store.applied_evidence(bank_id, "u4") == set()
    assert store.vector_marks("proc") == []
    # Computed again from what is stored, it applies.
    event = store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="contradict", read_confidence=0.7, old_confidence=0.7, new_confidence=0.5,
        evidence=("u1",)))
    assert event is not None and (event.old_confidence, event.new_confidence) == (0.7, 0.5)
    # Evidence already applied is skipped before the confidence is compared: a retried job is no conflict.
    assert store.apply_opinion_update(bank_id, OpinionUpdate(
        opinion_id="u4", label="contradict", read_confidence=0.7, old_confidence=0.7, new_confidence=0.5,
        evidence=("u1",))) is None


def test_formed_events_commit_with_the_opinion(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    op = unit("op1", bank_id, "Oscar is a good dog", 1, Network.OPINION, confidence=0.6)
    s.add_units(bank_id, UnitBatch(units=[op], opinion_events=[
        OpinionEvent(opinion_id="op1", label="formed", new_confidence=0.6, evidence=["x"]),
        OpinionEvent(opinion_id="ghost", label="formed", new_confidence=0.6),  # not a unit: not stored
    ]))
    assert [e.label for e in s.opinion_history(bank_id, "op1")] == ["formed"]
    assert s.opinion_history(bank_id, "ghost") == []
    s.add_opinion_event(bank_id + "-x", OpinionEvent(opinion_id="op1", label="x", new_confidence=0.1))
    assert s.opinion_history(bank_id + "-x", "op1") == []  # another bank's opinion is not this bank's history


def test_documents_record_kind_options_and_owner(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.put_document(Document(id="d1", bank_id=bank_id, content='["not", "messages"]', kind=DocumentKind.TEXT,
                            options={"extract": False, "metadata": {"k": 1}}, status=DocumentStatus.EXTRACTING,
                            owner="proc"))
    doc = s.get_document(bank_id, "d1")
    assert doc is not None and (doc.kind, doc.options, doc.owner) == (
        DocumentKind.TEXT, {"extract": False, "metadata": {"k": 1}}, "proc")
    s.set_document_status(bank_id, "d1", DocumentStatus.DONE)
    doc = s.get_document(bank_id, "d1")
    assert doc is not None and doc.status == DocumentStatus.DONE and doc.owner is None
    s.put_document(Document(id="d2", bank_id=bank_id, content="x", status=DocumentStatus.PENDING, owner="proc"))
    s.enqueue_job(Job(id="j2", bank_id=bank_id, kind="retain"), document_id="d2")
    doc = s.get_document(bank_id, "d2")
    assert doc is not None and (doc.status, doc.owner, doc.job_id) == (DocumentStatus.PENDING, None, "j2")


def test_leases_release_only_dead_owners_work(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    now = datetime.now(UTC)
    for oid in ("alive", "dead"):
        s.register_owner(Owner(id=oid, host="h", pid=1, started_at=now, heartbeat_at=now))
    assert {o.id for o in s.list_owners()} >= {"alive", "dead"}
    assert s.heartbeat("alive", now + timedelta(seconds=1)) and not s.heartbeat("never-registered", now)
    later = now + timedelta(seconds=5)
    # dead held: a running job, a document it was extracting, a deferred document whose job it was running,
    # and vector marks; alive holds the same kinds of things, which must stay untouched.
    for oid in ("alive", "dead"):
        s.put_document(Document(id=f"sync-{oid}", bank_id=bank_id, content="t", status=DocumentStatus.EXTRACTING,
                                owner=oid))
        s.put_document(Document(id=f"deferred-{oid}", bank_id=bank_id, content="t", status=DocumentStatus.PENDING))
        s.enqueue_job(Job(id=f"job-{oid}", bank_id=bank_id, kind="retain", created_at=now, run_after=now),
                      document_id=f"deferred-{oid}")
        assert s.claim_job(later, owner=oid) is not None
        s.put_document(Document(id=f"deferred-{oid}", bank_id=bank_id, content="t",
                                status=DocumentStatus.EXTRACTING, owner=oid, job_id=f"job-{oid}"))
        s.mark_vectors(bank_id, [f"v-{oid}"], owner=oid)
    s.put_document(Document(id="orphan", bank_id=bank_id, content="t", status=DocumentStatus.PENDING))  # no job
    s.put_document(Document(id="done", bank_id=bank_id, content="t", status=DocumentStatus.DONE))
    released = s.release_owners(["dead"], "reaper", later)
    assert released.jobs == 1 and released.owners == 1 and released.vector_marks == 1
    assert sorted(released.documents) == [(bank_id, "orphan"), (bank_id, "sync-dead")]
    docs = {d.id: (d.status, d.owner) for d in s.list_documents(bank_id)}
    assert docs["sync-dead"] == (DocumentStatus.EXTRACTING, "reaper")  # the reaper resumes it
    assert docs["deferred-dead"] == (DocumentStatus.PENDING, None)  # its job, queued again, will extract it
    assert docs["sync-alive"] == (DocumentStatus.EXTRACTING, "alive")
    assert docs["deferred-alive"] == (DocumentStatus.EXTRACTING, "alive")
    jobs = {j.id: (j.status, j.owner) for j in s.list_jobs(bank_id)}
    assert jobs == {"job-dead": (JobStatus.QUEUED, None), "job-alive": (JobStatus.RUNNING, "alive")}
    assert s.vector_marks("reaper") == [(bank_id, "v-dead")] and s.vector_marks("alive") == [(bank_id, "v-alive")]
    assert "dead" not in {o.id for o in s.list_owners()}
    # Closing cleanly gives what alive still held back to nobody; the next reaper takes it.
    s.remove_owner("alive")
    assert {j.id: j.status for j in s.list_jobs(bank_id)}["job-alive"] == JobStatus.QUEUED
    assert s.vector_marks(None) == [(bank_id, "v-alive")]
    assert (bank_id, "sync-alive") in s.release_owners([], "reaper", later).documents


def test_check_and_repair_find_and_fix_damage(backend: Backend, store: GraphStore, bank_id: str) -> None:
    """Damage only a crash or an older version could leave: wrong counts, a duplicate entity, an orphan."""
    assert store.check_bank(bank_id) == {}
    if backend.name == "embedded":
        con = store._con()  # type: ignore[attr-defined]
        con.execute("UPDATE entities SET mention_count = 9 WHERE id = 'e_mel'")
        con.execute("DROP INDEX entities_bank_norm_unique")
        con.execute("INSERT INTO entities (id, bank_id, name, norm, type, aliases, mention_count) "
                    "VALUES ('dup', ?, 'OSCAR', 'oscar', 'PERSON', '[\"Oz\"]', 1)", (bank_id,))
        con.execute("INSERT INTO mentions (unit_id, entity_id) VALUES ('u0', 'dup')")
        con.execute("INSERT INTO entities (id, bank_id, name, norm, type, aliases, mention_count) "
                    "VALUES ('lonely', ?, 'Lonely', 'lonely', 'OTHER', '[]', 0)", (bank_id,))
        con.execute("UPDATE keyword_totals SET units = units + 1 WHERE bank_id = ?", (bank_id,))
    else:
        run = store._run  # type: ignore[attr-defined]
        run("MATCH (e:Entity {id: 'e_mel'}) SET e.mention_count = 9")
        run("CREATE (e:Entity {id: 'dup', bank_id: $b, name: 'OSCAR', norm: 'oscar', key: 'legacy-dup', "
            "type: 'PERSON', aliases: ['Oz'], mention_count: 1})", b=bank_id)
        run("MATCH (u:Unit {id: 'u0'}), (e:Entity {id: 'dup'}) CREATE (u)-[:MENTIONS]->(e)")
        run("CREATE (e:Entity {id: 'lonely', bank_id: $b, name: 'Lonely', norm: 'lonely', key: 'k-lonely', "
            "type: 'OTHER', aliases: [], mention_count: 0})", b=bank_id)
        run("MATCH (u:Unit {id: 'u1'}) REMOVE u.kw_len")
    found = store.check_bank(bank_id)
    assert set(found) >= {"mention_count", "duplicate_entity", "orphan_entity", "keyword_stats"}
    assert "e_mel" in found["mention_count"] and "lonely" in found["orphan_entity"]
    assert {"dup", "e_oscar"} <= set(found["duplicate_entity"])
    fixed = store.repair_bank(bank_id)
    assert fixed.get("duplicate_entity") == 1 and fixed.get("orphan_entity", 0) >= 1
    assert store.check_bank(bank_id) == {}
    oscar = store.find_entity(bank_id, "OSCAR")
    assert oscar is not None and oscar.id == "e_oscar" and oscar.mention_count == 4 and "Oz" in oscar.aliases
    assert store.find_entity(bank_id, "Melanie").mention_count == 1  # type: ignore[union-attr]
    assert store.repair_bank(bank_id) == {}


def test_backend_errors_are_store_errors(store: GraphStore, bank_id: str) -> None:
    with pytest.raises(StoreError):
        store.add_units(bank_id, UnitBatch(units=[unit("u0", bank_id, "duplicate id", 1)]))
    assert store.get_units(bank_id, ["u0"])[0].text.startswith("Melanie")



def test_a_commit_lands_only_on_its_own_revision(backend: Backend, bank_id: str) -> None:
    """A retain commits (and marks its document done) only if the document is still the revision it stored;
    a newer put of the same document wins, and a stale retain changes nothing."""
    from hindsight_core.errors import ConflictError

    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.put_document(Document(id="d", bank_id=bank_id, content="v1", status=DocumentStatus.EXTRACTING, owner="p",
                            revision="r1"))
    def of_d(uid: str, text: str) -> Any:
        return unit(uid, bank_id, text, 1).model_copy(update={"document_id": "d"})

    s.add_units(bank_id, UnitBatch(units=[of_d("a1", "version one")], document_id="d", revision="r1"))
    doc = s.get_document(bank_id, "d")
    assert doc is not None and (doc.status, doc.owner) == (DocumentStatus.DONE, None)
    s.put_document(Document(id="d", bank_id=bank_id, content="v2", status=DocumentStatus.EXTRACTING, owner="p",
                            revision="r2"))
    with pytest.raises(ConflictError):  # a slow retain of r1 arrives after r2 was stored
        s.add_units(bank_id, UnitBatch(units=[of_d("a2", "stale")], replaces=["a1"], document_id="d",
                                       revision="r1"))
    assert s.unit_ids(bank_id) == {"a1"}
    assert not s.set_document_status(bank_id, "d", DocumentStatus.FAILED, "stale", revision="r1")
    assert s.set_document_status(bank_id, "d", DocumentStatus.EXTRACTING, revision="r2", owner="q")
    doc = s.get_document(bank_id, "d")
    assert doc is not None and (doc.status, doc.owner, doc.revision) == (DocumentStatus.EXTRACTING, "q", "r2")
    s.forget_document(bank_id, "d", owner="p")
    with pytest.raises(ConflictError):  # forgotten meanwhile: nothing may bring it back
        s.add_units(bank_id, UnitBatch(units=[of_d("a3", "late")], document_id="d", revision="r2"))
    assert s.unit_ids(bank_id) == set() and s.get_document(bank_id, "d") is None
    assert s.vector_marks("p") == [(bank_id, "a1")]
