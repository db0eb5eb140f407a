"""Every ``GraphStore`` method, against every implementation, with the same expected results."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from conformance_support import Backend

from hindsight_core.config import RecallSettings
from hindsight_core.errors import ConflictError
from hindsight_core.models import (
    BankProfile,
    Disposition,
    Document,
    DocumentStatus,
    Entity,
    EntityType,
    Job,
    JobStatus,
    Link,
    LinkType,
    Memory,
    Network,
    OpinionEvent,
    TimeRange,
    utcnow,
)
from hindsight_core.recall import channels
from hindsight_core.stores.base import GraphStore, Mention, Owner, UnitBatch

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def day(n: float) -> datetime:
    """``n`` days after T0."""
    return T0 + timedelta(days=n)


def unit(uid: str, bank: str, text: str, n: float, network: Network = Network.WORLD, **kw: object) -> Memory:
    """A unit occurring ``n`` days after T0."""
    return Memory(id=uid, bank_id=bank, text=text, network=network, occurred_start=day(n),
                  mentioned_at=day(n), sources=[f"D1:{uid}"], document_id="doc1", **kw)  # type: ignore[arg-type]


def seed(store: GraphStore, bank: str, prefix: str = "") -> None:
    """A small bank: 5 units, 3 entities, mentions, links and a document."""
    p = prefix
    store.create_bank(BankProfile(id=bank, name="Bank " + bank, created_at=T0))
    store.put_document(Document(id="doc1", bank_id=bank, content="raw", created_at=T0, updated_at=T0))
    units = [
        unit(p + "u0", bank, "Melanie painted a sunrise by the lake", 0, metadata={"k": [1, 2]}),
        unit(p + "u1", bank, "Oscar the puppy chewed the running shoes", 1),
        unit(p + "u2", bank, "Caroline wants to become a counselor in Boston", 2, Network.EXPERIENCE),
        unit(p + "u3", bank, "Oscar is a golden retriever", 3, occurred_end=day(4)),
        unit(p + "u4", bank, "Running in the park with Oscar", 10, Network.OPINION, confidence=0.7),
    ]
    ents = [
        Entity(id=p + "e_oscar", bank_id=bank, name="Oscar", type=EntityType.OTHER, aliases=["Ozzie"],
               mention_count=3, first_seen=day(1), last_seen=day(10)),
        Entity(id=p + "e_mel", bank_id=bank, name="Melanie", type=EntityType.PERSON, mention_count=1),
        Entity(id=p + "e_boston", bank_id=bank, name="Boston", type=EntityType.LOCATION, mention_count=1),
    ]
    mentions = [Mention(p + "u1", p + "e_oscar"), Mention(p + "u3", p + "e_oscar"), Mention(p + "u4", p + "e_oscar"),
                Mention(p + "u0", p + "e_mel"), Mention(p + "u2", p + "e_boston")]
    links = [
        Link(source_id=p + "u0", target_id=p + "u1", type=LinkType.TEMPORAL, weight=0.6),
        Link(source_id=p + "u1", target_id=p + "u0", type=LinkType.TEMPORAL, weight=0.6),
        Link(source_id=p + "u1", target_id=p + "u3", type=LinkType.SEMANTIC, weight=0.9),
        Link(source_id=p + "u2", target_id=p + "u4", type=LinkType.CAUSES, weight=1.0),
        Link(source_id=p + "u2", target_id=p + "u4", type=LinkType.CAUSES, weight=0.4),  # duplicate keeps the max
    ]
    store.add_units(bank, UnitBatch(
        units=units, positions={p + f"u{i}": i for i in range(5)},
        contexts={p + "u1": "what did the dog chew", p + "u3": "tell me about sunrise"},
        new_entities=ents, mentions=mentions, links=links,
    ))


@pytest.fixture()
def store(backend: Backend, bank_id: str) -> GraphStore:
    """A store holding the seeded bank ``bank_id`` and a second bank with the same shape."""
    s = backend.store()
    seed(s, bank_id)
    seed(s, bank_id + "-other", prefix="x")
    return s


def test_banks(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    created = s.create_bank(BankProfile(id=bank_id, name="First", background="bg", created_at=T0,
                                        disposition=Disposition(skepticism=5, literalism=1, empathy=2, bias=0.9)))
    again = s.create_bank(BankProfile(id=bank_id, name="Second", created_at=day(1)))
    assert again == created and again.name == "First" and again.disposition.skepticism == 5
    assert s.get_bank("missing") is None
    s.create_bank(BankProfile(id=bank_id + "b", name="Later", created_at=day(2)))
    assert [b.id for b in s.list_banks()] == [bank_id, bank_id + "b"]
    s.update_bank(BankProfile(id=bank_id, name="Renamed", background="new bg", created_at=day(9),
                              disposition=Disposition(empathy=5)))
    got = s.get_bank(bank_id)
    assert got is not None and (got.name, got.background, got.disposition.empathy) == ("Renamed", "new bg", 5)
    assert got.created_at == T0  # update keeps the creation time


def test_delete_bank_removes_everything_and_nothing_else(backend: Backend, store: GraphStore, bank_id: str) -> None:
    store.enqueue_job(Job(id="job-a", bank_id=bank_id, kind="k"))
    store.add_opinion_event(bank_id, OpinionEvent(opinion_id="u4", label="formed", new_confidence=0.7))
    store.delete_bank(bank_id)
    assert store.get_bank(bank_id) is None
    assert store.unit_ids(bank_id) == set()
    assert store.list_entities(bank_id) == [] and store.list_documents(bank_id) == []
    assert store.list_jobs(bank_id) == [] and store.opinion_history(bank_id, "u4") == []
    assert store.stats(bank_id)["units"] == 0
    other = bank_id + "-other"
    assert store.unit_ids(other) == {f"xu{i}" for i in range(5)}
    assert len(store.list_entities(other)) == 3 and store.get_bank(other) is not None


def test_documents(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.put_document(Document(id="a/1", bank_id=bank_id, content="one", context="ctx", timestamp=day(1),
                            metadata={"source": "chat", "n": [1, 2]}, created_at=T0, updated_at=T0))
    s.put_document(Document(id="a%_2", bank_id=bank_id, content="two", created_at=day(1), updated_at=day(1)))
    s.put_document(Document(id="b/3", bank_id=bank_id, content="three", created_at=day(2), updated_at=day(2)))
    # re-put keeps the first created_at, takes the new updated_at and content
    s.put_document(Document(id="a/1", bank_id=bank_id, content="one v2", metadata={"v": 2}, created_at=day(5),
                            updated_at=day(5)))
    d = s.get_document(bank_id, "a/1")
    assert d is not None
    assert (d.content, d.metadata, d.created_at, d.updated_at) == ("one v2", {"v": 2}, T0, day(5))
    assert s.get_document(bank_id, "nope") is None and s.get_document(bank_id + "x", "a/1") is None
    assert [x.id for x in s.list_documents(bank_id)] == ["a/1", "a%_2", "b/3"]
    assert [x.id for x in s.list_documents(bank_id, prefix="a")] == ["a/1", "a%_2"]
    assert [x.id for x in s.list_documents(bank_id, prefix="a%_")] == ["a%_2"]  # literal, no wildcards
    assert [x.id for x in s.list_documents(bank_id, prefix="A")] == []  # case-sensitive
    s.set_document_status(bank_id, "b/3", DocumentStatus.FAILED, "model died")
    failed = s.list_documents(bank_id, status=DocumentStatus.FAILED)
    assert [(x.id, x.error) for x in failed] == [("b/3", "model died")]
    assert [x.id for x in s.list_documents(bank_id, status=DocumentStatus.PENDING, prefix="a")] == ["a/1", "a%_2"]
    s.delete_document(bank_id, "a/1")
    assert s.get_document(bank_id, "a/1") is None


def test_units_roundtrip(store: GraphStore, bank_id: str) -> None:
    got = store.get_units(bank_id, ["u3", "missing", "u0", "xu0", "u3"])
    assert [m.id for m in got] == ["u3", "u0"]  # order asked, unknown and other-bank ids skipped, no repeats
    u3, u0 = got
    assert u3.text == "Oscar is a golden retriever" and u3.network == Network.WORLD
    assert (u3.occurred_start, u3.occurred_end, u3.mentioned_at) == (day(3), day(4), day(3))
    assert u3.entities == ["Oscar"] and u3.sources == ["D1:u3"] and u3.document_id == "doc1"
    assert u0.metadata == {"k": [1, 2]} and u0.entities == ["Melanie"] and u0.occurred_end is None
    (u4,) = store.get_units(bank_id, ["u4"])
    assert u4.network == Network.OPINION and u4.confidence == pytest.approx(0.7)
    assert store.unit_ids(bank_id) == {f"u{i}" for i in range(5)}
    assert store.units_of_document(bank_id, "doc1") == ["u0", "u1", "u2", "u3", "u4"]
    assert sorted(store.units_of_entity(bank_id, "e_oscar")) == ["u1", "u3", "u4"]
    assert store.units_of_entity(bank_id, "xe_oscar") == []  # another bank's entity


def test_adjacent_units_follow_document_order_and_skip_gaps(store: GraphStore, bank_id: str) -> None:
    assert store.adjacent_units(bank_id, ["u0", "u2", "u4", "missing", "xu2"]) == {
        "u0": (None, "u1"), "u2": ("u1", "u3"), "u4": ("u3", None),  # the document's ends have one side only
    }
    store.delete_units(bank_id, ["u2"])
    assert store.adjacent_units(bank_id, ["u1", "u3"]) == {"u1": ("u0", "u3"), "u3": ("u1", "u4")}  # across the gap
    store.add_units(bank_id, UnitBatch(units=[Memory(id="loose", bank_id=bank_id, text="no document")]))
    assert store.adjacent_units(bank_id, ["loose"]) == {}  # a unit without a document has no neighbours
    assert store.adjacent_units(bank_id, []) == {}
    assert store.adjacent_units(bank_id + "-other", ["xu1"]) == {"xu1": ("xu0", "xu2")}


def test_update_unit(store: GraphStore, bank_id: str) -> None:
    store.update_unit(bank_id, "u4", confidence=0.2)
    store.update_unit(bank_id, "u0", text="Melanie sketched a volcano")
    store.update_unit(bank_id + "-other", "u1", text="wrong bank: ignored")
    u0, u1, u4 = store.get_units(bank_id, ["u0", "u1", "u4"])
    assert u4.confidence == pytest.approx(0.2) and u4.text.startswith("Running")
    assert u0.text == "Melanie sketched a volcano" and u1.text.startswith("Oscar the puppy")
    assert [i for i, _ in store.keyword_search(bank_id, "volcano", 5)] == ["u0"]  # the index follows
    assert store.keyword_search(bank_id, "sunrise lake", 5)[0][0] != "u0"


def test_units_in_network_and_near_time(store: GraphStore, bank_id: str) -> None:
    assert store.units_in_network(bank_id, Network.WORLD) == ["u3", "u1", "u0"]  # newest first
    assert store.units_in_network(bank_id, Network.WORLD, limit=2) == ["u3", "u1"]
    assert store.units_in_network(bank_id, Network.WORLD, entity_ids=["e_oscar", "e_mel"]) == ["u3", "u1", "u0"]
    assert store.units_in_network(bank_id, Network.OPINION, entity_ids=["e_oscar"]) == ["u4"]
    assert store.units_in_network(bank_id, Network.WORLD, entity_ids=[]) == []
    near = store.units_near_time(bank_id, day(1.2), 86400 * 1.5, 10)
    assert [i for i, _ in near] == ["u1", "u2", "u0"] and near[0][1] == day(1)
    assert [i for i, _ in store.units_near_time(bank_id, day(1.2), 86400 * 1.5, 1, exclude=["u1"])] == ["u2"]


def test_delete_units_cascades(store: GraphStore, bank_id: str) -> None:
    store.add_opinion_event(bank_id, OpinionEvent(opinion_id="u4", label="formed", new_confidence=0.7))
    assert store.delete_units(bank_id, ["u0", "u4", "missing", "xu1"]) == 2
    assert store.unit_ids(bank_id) == {"u1", "u2", "u3"}
    assert store.opinion_history(bank_id, "u4") == []
    ents = {e.name: e.mention_count for e in store.list_entities(bank_id)}
    assert ents == {"Oscar": 2, "Boston": 1}  # Melanie lost her only mention and is gone
    edges = store.neighbors(bank_id, ["u0", "u1", "u2"], entity_fanout=0)
    assert {(e.source_id, e.target_id, e.type) for e in edges} == {("u1", "u3", "semantic")}
    assert store.unit_ids(bank_id + "-other") == {f"xu{i}" for i in range(5)}
    assert store.delete_units(bank_id, []) == 0


def test_opinion_history(store: GraphStore, bank_id: str) -> None:
    events = [
        OpinionEvent(opinion_id="u4", at=day(10), label="formed", new_confidence=0.7, evidence=["u1"]),
        OpinionEvent(opinion_id="u4", at=day(11), label="weaken", old_confidence=0.7, new_confidence=0.6,
                     evidence=["u3", "u1"], old_text="a", new_text="b", rationale="why"),
    ]
    for e in events:
        store.add_opinion_event(bank_id, e)
    store.add_opinion_event(bank_id + "-other", OpinionEvent(opinion_id="u4", label="x", new_confidence=0.1))
    assert store.opinion_history(bank_id, "u4") == events
    assert store.opinion_history(bank_id, "u0") == []


def test_entities(store: GraphStore, bank_id: str) -> None:
    ents = store.list_entities(bank_id)
    assert [e.name for e in ents] == ["Oscar", "Boston", "Melanie"]  # most mentioned, then name
    oscar = ents[0]
    assert (oscar.id, oscar.type, oscar.aliases, oscar.first_seen, oscar.last_seen) == (
        "e_oscar", EntityType.OTHER, ["Ozzie"], day(1), day(10))
    found = store.find_entity(bank_id, "oSCAR")
    assert found is not None and found.id == "e_oscar"
    by_alias = store.find_entity(bank_id, "ozzie")
    assert by_alias is not None and by_alias.id == "e_oscar"
    assert store.find_entity(bank_id, "Nobody") is None
    # updated entities: counts and aliases replaced in place
    store.add_units(bank_id, UnitBatch(
        units=[unit("u5", bank_id, "Oscar met Melanie", 5)],
        updated_entities=[oscar.model_copy(update={"mention_count": 4, "aliases": ["Ozzie", "Oz"]})],
        mentions=[Mention("u5", "e_oscar"), Mention("u5", "e_mel"), Mention("u5", "e_mel")],
    ))
    again = store.find_entity(bank_id, "oz")
    assert again is not None and again.mention_count == 4
    co = store.entity_cooccurrence(bank_id, ["e_oscar", "e_mel", "e_boston", "e_oscar"])
    assert co == {tuple(sorted(("e_oscar", "e_mel"))): 1}
    assert store.entity_cooccurrence(bank_id, ["e_oscar"]) == {}
    assert store.entity_cooccurrence(bank_id, ["xe_oscar", "xe_mel"]) == {}  # other bank's entities
    assert store.units_of_entity(bank_id, "e_mel") == ["u0", "u5"] or sorted(
        store.units_of_entity(bank_id, "e_mel")) == ["u0", "u5"]


def test_entity_type_is_the_vote_of_its_mentions(store: GraphStore, bank_id: str) -> None:
    def typed(name: str) -> EntityType:
        found = store.find_entity(bank_id, name)
        assert found is not None
        return found.type

    iberia = Entity(id="e_ib", bank_id=bank_id, name="Iberia", type=EntityType.LOCATION)
    store.add_units(bank_id, UnitBatch(units=[unit("u5", bank_id, "Iberia lost my bag", 5)], new_entities=[iberia],
                                       mentions=[Mention("u5", "e_ib", "LOCATION", 1.0)]))
    assert typed("Iberia") == EntityType.LOCATION
    # The batch's entity row says LOCATION; its mention's evidence (a cue) outweighs the stored one.
    store.add_units(bank_id, UnitBatch(units=[unit("u6", bank_id, "flew Iberia", 6)], updated_entities=[iberia],
                                       mentions=[Mention("u6", "e_ib", "ORGANIZATION", 3.0)]))
    assert typed("Iberia") == EntityType.ORGANIZATION
    store.add_units(bank_id, UnitBatch(units=[unit("u7", bank_id, "Iberia again", 7)], updated_entities=[iberia],
                                       mentions=[Mention("u7", "e_ib", "LOCATION", 1.0)]))
    assert typed("Iberia") == EntityType.ORGANIZATION  # 3 against 2
    assert store.delete_units(bank_id, ["u6"]) == 1
    assert typed("Iberia") == EntityType.LOCATION  # the cue went with its unit
    # Mentions stored without evidence (the seed's) count for their entity's type as it was.
    boston = store.find_entity(bank_id, "Boston")
    assert boston is not None and boston.type == EntityType.LOCATION
    store.add_units(bank_id, UnitBatch(units=[unit("u8", bank_id, "Boston said hi", 8)], updated_entities=[boston],
                                       mentions=[Mention("u8", boston.id, "PERSON", 0.5)]))
    assert typed("Boston") == EntityType.LOCATION


def test_keyword_search(store: GraphStore, bank_id: str) -> None:
    hits = store.keyword_search(bank_id, "Where did Oscar go running?", 10)
    ids = [i for i, _ in hits]
    assert set(ids) == {"u1", "u3", "u4"} and ids[0] in {"u4", "u1"}
    assert all(a >= b for (_, a), (_, b) in itertools.pairwise(hits))  # best first
    assert [i for i, _ in store.keyword_search(bank_id, "paintings", 10)] == ["u0"]  # stemmed
    # context: u1 is found through its neighbour's question, ranked below text hits; weight 0 turns it off
    chew = [i for i, _ in store.keyword_search(bank_id, "sunrise", 10)]
    assert chew == ["u0", "u3"]
    # weight 0: the context-only hit is still found but scores nothing (as FTS5 bm25 column weights do)
    zero = store.keyword_search(bank_id, "sunrise", 10, context_weight=0.0)
    assert [i for i, _ in zero] == ["u0", "u3"] and abs(zero[1][1]) < 1e-6 < zero[0][1]
    heavy = store.keyword_search(bank_id, "dog chew", 10, context_weight=1.0)
    assert [i for i, _ in heavy] == ["u1"]
    assert [i for i, _ in store.keyword_search(bank_id, "oscar", 10, networks=[Network.OPINION])] == ["u4"]
    window = TimeRange(start=day(2.5), end=day(3.5))
    assert [i for i, _ in store.keyword_search(bank_id, "oscar", 10, time_range=window)] == ["u3"]
    assert store.keyword_search(bank_id, "oscar", 1)[0][0] in {"u1", "u3", "u4"}
    assert len(store.keyword_search(bank_id, "oscar", 1)) == 1
    assert store.keyword_search(bank_id, "   ", 10) == [] and store.keyword_search(bank_id, "?!", 10) == []
    assert [i for i, _ in store.keyword_search(bank_id, "the", 10)]  # only stopwords: searched anyway
    assert all(i.startswith("u") for i, _ in store.keyword_search(bank_id, "oscar sunrise boston", 50))


def test_keyword_ranking_ignores_other_banks(backend: Backend, bank_id: str) -> None:
    """Keyword scores use the bank's own statistics: filling another bank with the query's words (which
    changes the file's or server's totals) leaves this bank's hits and scores exactly as they were."""
    s = backend.store()
    seed(s, bank_id)
    query = "Where did Oscar go running at sunrise?"
    before = s.keyword_search(bank_id, query, 10)
    other = bank_id + "-crowd"
    s.create_bank(BankProfile(id=other, name="crowd", created_at=T0))
    s.add_units(other, UnitBatch(units=[
        unit(f"c{i}", other, "Oscar " * (i % 3 + 1) + "ran at sunrise " * (i % 2) + f"lap {i}", i) for i in range(60)
    ]))
    after = s.keyword_search(bank_id, query, 10)
    assert [i for i, _ in after] == [i for i, _ in before] and [i for i, _ in before]
    assert [x for _, x in after] == pytest.approx([x for _, x in before], rel=1e-12)
    assert {i for i, _ in s.keyword_search(other, query, 100)} == {f"c{i}" for i in range(60)}


def test_temporal_search(store: GraphStore, bank_id: str) -> None:
    got = store.temporal_search(bank_id, TimeRange(start=day(0.5), end=day(3.5)), 10)
    assert got == [("u3", day(3)), ("u2", day(2)), ("u1", day(1))]  # most recent first
    # occurrence interval overlap: u3 runs day 3..4
    assert [i for i, _ in store.temporal_search(bank_id, TimeRange(start=day(3.5), end=day(3.9)), 10)] == ["u3"]
    assert [i for i, _ in store.temporal_search(bank_id, TimeRange(start=day(9)), 10)] == ["u4"]
    assert [i for i, _ in store.temporal_search(bank_id, TimeRange(end=day(0.5)), 10)] == ["u0"]
    assert [i for i, _ in store.temporal_search(bank_id, TimeRange(start=day(0.5), end=day(3.5)), 10,
                                                networks=[Network.EXPERIENCE])] == ["u2"]
    assert len(store.temporal_search(bank_id, TimeRange(start=day(-1), end=day(99)), 2)) == 2


def test_neighbors(store: GraphStore, bank_id: str) -> None:
    edges = store.neighbors(bank_id, ["u1", "u2"], entity_fanout=50)
    got = {(e.source_id, e.target_id, e.type): round(e.weight, 6) for e in edges}
    oscar_w = round(1.0 / (1.0 + __import__("math").log1p(2)), 6)
    assert got == {
        ("u1", "u0", "temporal"): 0.6, ("u1", "u3", "semantic"): 0.9, ("u2", "u4", "causes"): 1.0,
        ("u1", "u3", "entity"): oscar_w, ("u1", "u4", "entity"): oscar_w,
    }
    typed = store.neighbors(bank_id, ["u1", "u2"], link_types=[LinkType.SEMANTIC], entity_fanout=0)
    assert [(e.source_id, e.target_id, e.type) for e in typed] == [("u1", "u3", "semantic")]
    # an entity mentioned by more units than the fan-out is not traversed
    capped = store.neighbors(bank_id, ["u1"], entity_fanout=2)
    assert {e.type for e in capped} == {"temporal", "semantic"}
    assert store.neighbors(bank_id, []) == [] and store.neighbors(bank_id, ["xu1"]) == []


def test_spreading_activation_matches_channel(backend: Backend, store: GraphStore, bank_id: str) -> None:
    settings = RecallSettings(graph_hops=2)
    seeds = [("u1", 1.0), ("u2", 0.5)]
    expected = channels.spread_over_neighbors(store, bank_id, seeds, settings)
    assert [i for i, _ in expected][:2] == ["u1", "u4"] or expected[0][0] == "u1"
    spread = getattr(store, "spread_activation", None)
    if backend.name == "server":  # the Bolt store computes the same ranking server-side
        assert spread is not None
        got = spread(bank_id, seeds, hops=settings.graph_hops, decay=settings.graph_decay,
                     multipliers=settings.link_multipliers, entity_fanout=settings.entity_fanout, k=settings.graph_k)
        assert [i for i, _ in got] == [i for i, _ in expected]
        assert [a for _, a in got] == pytest.approx([a for _, a in expected])
        assert channels.graph(store, bank_id, seeds, settings) == got  # recall's graph channel takes that path


def test_jobs(backend: Backend, bank_id: str) -> None:
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.enqueue_job(Job(id="j-late", bank_id=bank_id, kind="observe", payload={"e": ["x"]}, created_at=day(0),
                      run_after=day(5)))
    s.enqueue_job(Job(id="j-first", bank_id=bank_id, kind="observe", created_at=day(1), run_after=day(1)))
    s.enqueue_job(Job(id="j-second", bank_id=bank_id + "-b", kind="opinion", created_at=day(2), run_after=day(2)))
    assert s.pending_jobs() == 3 and s.pending_jobs(bank_id) == 2
    assert [j.id for j in s.list_jobs()] == ["j-second", "j-first", "j-late"]  # newest first
    assert [j.id for j in s.list_jobs(bank_id)] == ["j-first", "j-late"]
    job = s.claim_job(day(3))
    assert job is not None and (job.id, job.status, job.attempts) == ("j-first", JobStatus.RUNNING, 1)
    job2 = s.claim_job(day(3))
    assert job2 is not None and job2.id == "j-second"
    assert s.claim_job(day(3)) is None  # j-late is not due yet
    s.finish_job("j-first", error="boom", retry_at=day(4))  # back-off: re-queued for later
    s.finish_job("j-second")
    assert s.claim_job(day(3.5)) is None
    again = s.claim_job(day(4.5))
    assert again is not None and (again.id, again.attempts, again.error) == ("j-first", 2, "boom")
    s.finish_job("j-first", error="gave up")
    for proc in ("proc-a", "proc-b"):
        s.register_owner(Owner(id=proc, host="h", pid=1, started_at=day(6), heartbeat_at=day(6)))
    late = s.claim_job(day(6), owner="proc-a")
    assert late is not None and late.id == "j-late" and late.payload == {"e": ["x"]} and late.owner == "proc-a"
    assert s.list_jobs(bank_id)[-1].owner == "proc-a"
    # proc-b is alive and running j-late2: releasing the dead proc-a never touches it
    s.enqueue_job(Job(id="j-late2", bank_id=bank_id, kind="observe", created_at=day(7), run_after=day(7)))
    assert s.claim_job(day(8), owner="proc-b").id == "j-late2"  # type: ignore[union-attr]
    released = s.release_owners(["proc-a"], "proc-c", day(8))
    assert released.jobs == 1 and s.release_owners(["proc-a"], "proc-c", day(8)).jobs == 0
    status = {j.id: j.status for j in s.list_jobs()}
    assert status == {"j-first": JobStatus.FAILED, "j-second": JobStatus.DONE, "j-late": JobStatus.QUEUED,
                      "j-late2": JobStatus.RUNNING}
    assert s.pending_jobs() == 2
    s.finish_job("j-late2")
    assert {j.id: j.owner for j in s.list_jobs()}["j-late2"] is None  # finishing releases the lease


def test_a_job_records_when_it_finished(backend: Backend, bank_id: str) -> None:
    """Done or failed for good: ``finished_at`` is when (the overview's throughput counts by it); queued, running or
    queued again for a retry: not finished."""
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    for i in ("ok", "bad", "retry"):
        s.enqueue_job(Job(id=f"j-{i}", bank_id=bank_id, kind="observe", created_at=day(0), run_after=day(0)))
    while (claimed := s.claim_job(day(1))) is not None:
        assert claimed.finished_at is None
    before = utcnow()
    s.finish_job("j-ok", result={"n": 1})
    s.finish_job("j-bad", error="gave up")
    s.finish_job("j-retry", error="try again", retry_at=day(2))
    after = utcnow()
    jobs = {j.id: j for j in s.list_jobs(bank_id)}
    for i in ("j-ok", "j-bad"):
        at = jobs[i].finished_at
        assert at is not None and before - timedelta(seconds=1) <= at <= after + timedelta(seconds=1), (i, at)
    assert (jobs["j-ok"].status, jobs["j-bad"].status) == (JobStatus.DONE, JobStatus.FAILED)
    assert jobs["j-retry"].status == JobStatus.QUEUED and jobs["j-retry"].finished_at is None
    assert [j.finished_at is None for j in s.page_jobs(bank_id, JobStatus.DONE)] == [False]
    again = s.claim_job(day(3))
    assert again is not None and again.id == "j-retry" and again.finished_at is None
    s.finish_job("j-retry")
    assert {j.id: j for j in s.list_jobs(bank_id)}["j-retry"].finished_at is not None


def test_stats(store: GraphStore, bank_id: str) -> None:
    store.enqueue_job(Job(id="job-s", bank_id=bank_id, kind="k"))
    st = store.stats(bank_id)
    assert st == {
        "units": 5, "networks": {"world": 3, "experience": 1, "opinion": 1}, "documents": {"pending": 1},
        "entities": 3, "links": {"temporal": 2, "semantic": 1, "causes": 1}, "jobs": {"queued": 1},
    }
    assert store.stats("no-such-bank")["units"] == 0


def test_add_units_is_atomic(backend: Backend, bank_id: str) -> None:
    """A retain whose batch fails half-way leaves nothing behind."""
    s = backend.store()
    seed(s, bank_id)
    bad = UnitBatch(units=[unit("n1", bank_id, "new fact", 20), unit("u0", bank_id, "duplicate id", 21)],
                    new_entities=[Entity(id="e_new", bank_id=bank_id, name="Newbie")])
    with pytest.raises(Exception):  # noqa: B017 - each backend raises its own driver's constraint error
        s.add_units(bank_id, bad)
    assert "n1" not in s.unit_ids(bank_id) and s.find_entity(bank_id, "Newbie") is None
    assert s.get_units(bank_id, ["u0"])[0].text.startswith("Melanie")


def test_a_batch_queues_its_jobs_in_its_own_transaction(backend: Backend, bank_id: str) -> None:
    """Raw first, facts later: the facts job is queued by the commit of the raw units, or not at all."""
    s = backend.store()
    s.create_bank(BankProfile(id=bank_id, name="b"))
    s.put_document(Document(id="d1", bank_id=bank_id, content="x", revision="r1"))
    job = Job(id=f"{bank_id}-facts", bank_id=bank_id, kind="facts", payload={"document_id": "d1", "revision": "r1"})
    stale = UnitBatch(units=[Memory(id="s1", bank_id=bank_id, text="stale", document_id="d1")], document_id="d1",
                      revision="r0",
                      jobs=[job.model_copy(update={"id": f"{bank_id}-stale"})])
    with pytest.raises(ConflictError):
        s.add_units(bank_id, stale)
    assert s.list_jobs(bank_id) == [] and "s1" not in s.unit_ids(bank_id)
    s.add_units(bank_id, UnitBatch(units=[Memory(id="r1", bank_id=bank_id, text="raw", document_id="d1")],
                                   document_id="d1", revision="r1", jobs=[job]))
    (queued,) = s.list_jobs(bank_id)
    assert (queued.id, queued.kind, queued.status, queued.payload) == (job.id, "facts", JobStatus.QUEUED, job.payload)
    doc = s.get_document(bank_id, "d1")
    assert doc is not None and doc.status == DocumentStatus.DONE and s.pending_jobs(bank_id) == 1


def test_reopen_keeps_data(backend: Backend, store: GraphStore, bank_id: str) -> None:
    """Schema set-up at open is idempotent and the data survives a new connection."""
    store.close()
    again = backend.store()
    assert again.unit_ids(bank_id) == {f"u{i}" for i in range(5)}
    assert [i for i, _ in again.keyword_search(bank_id, "retriever", 5)] == ["u3"]


def test_arcadedb_reads_a_time_range_through_sql_and_falls_back_to_cypher(backend: Backend, bank_id: str) -> None:
    """ArcadeDB's Cypher scans the whole bank for a range on (bank_id, occurred_start), its SQL reads the index: the
    ArcadeDB dialect answers ``units_near_time`` through SQL, the same as the Cypher query does, and falls back to
    that query for good when its HTTP API fails three times in a row (the Neo4j dialect always uses Cypher)."""
    from hindsight_core.stores.cypher_dialect import ArcadeDBDialect, CypherDialect

    s = backend.store()
    seed(s, bank_id)
    dialect = getattr(s, "dialect", None)
    if backend.name == "embedded":
        assert dialect is None  # SQLite has its own time index
        return
    assert isinstance(dialect, ArcadeDBDialect) and dialect.sql_reads  # the test servers are ArcadeDB
    windows = [(day(1.2), 86400 * 1.5, 10), (day(1.2), 86400 * 1.5, 1), (day(0), 86400 * 30, 10), (day(9), 60.0, 5)]
    by_sql = [s.units_near_time(bank_id, when, width, limit) for when, width, limit in windows]
    assert dialect.sql_reads  # nothing failed: these answers came through SQL
    cypher = CypherDialect()
    for (when, width, limit), got in zip(windows, by_sql, strict=True):
        t = when.timestamp()
        rows = cypher.units_near_time(s._read, bank_id, t - width, t + width, t, limit)  # type: ignore[attr-defined]
        assert [i for i, _ in got] == [r["id"] for r in rows]
    assert [i for i, _ in by_sql[0]] == ["u1", "u2", "u0"]
    dialect.http_url = "http://127.0.0.1:9"  # nothing listens there
    assert s.units_near_time(bank_id, day(1.2), 86400 * 1.5, 10) == by_sql[0]  # Cypher answered
    assert dialect.sql_reads  # one failure may be a busy moment
    for _ in range(2):
        assert s.units_near_time(bank_id, day(1.2), 86400 * 1.5, 10) == by_sql[0]
    assert not dialect.sql_reads  # three in a row: Cypher from now on
