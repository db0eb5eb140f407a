"""Entity resolution against a real SQLite graph store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_core.config import EntityResolutionSettings
from hindsight_core.entities import EntityResolver
from hindsight_core.extract.base import ExtractedEntity, ExtractedFact
from hindsight_core.models import BankProfile, EntityType, Memory
from hindsight_core.stores.base import UnitBatch
from hindsight_core.stores.sqlite import SQLiteGraphStore

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def fact(*names: tuple[str, EntityType], when: datetime = T0) -> ExtractedFact:
    return ExtractedFact(text=" ".join(n for n, _ in names), occurred_start=when, mentioned_at=when,
                         entities=[ExtractedEntity(name=n, type=t) for n, t in names])


@pytest.fixture()
def store(tmp_path: Path) -> SQLiteGraphStore:
    s = SQLiteGraphStore(tmp_path / "g.sqlite")
    s.create_bank(BankProfile(id="b", name="b"))
    return s


def commit(store: SQLiteGraphStore, resolver: EntityResolver, facts: list[ExtractedFact], tag: str) -> list[list[str]]:
    ids = [f"{tag}-{i}" for i in range(len(facts))]
    res = resolver.resolve("b", facts, ids)
    units = [
        Memory(id=i, bank_id="b", text=f.text, occurred_start=f.occurred_start)
        for i, f in zip(ids, facts, strict=True)
    ]
    store.add_units("b", UnitBatch(units=units, new_entities=res.new_entities, updated_entities=res.updated_entities,
                                   mentions=res.mentions))
    return res.names


def test_exact_names_merge_case_insensitively(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Melanie", EntityType.PERSON))], "a")
    names = commit(store, r, [fact(("melanie", EntityType.PERSON))], "b")
    assert names == [["Melanie"]]
    ents = store.list_entities("b")
    assert len(ents) == 1 and ents[0].mention_count == 2


def test_fuzzy_match_needs_supporting_evidence(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Melanie", EntityType.PERSON), ("Caroline", EntityType.PERSON))], "a")
    # Close in time: the nickname joins the existing person.
    assert commit(store, r, [fact(("Mel", EntityType.PERSON), ("Caroline", EntityType.PERSON))], "b") == [
        ["Melanie", "Caroline"]
    ]
    assert "Mel" in store.find_entity("b", "Melanie").aliases  # type: ignore[union-attr]
    assert store.find_entity("b", "mel").name == "Melanie"  # type: ignore[union-attr]
    # A similar but different name, a year later, with nothing in common, stays separate.
    later = T0 + timedelta(days=400)
    assert commit(store, r, [fact(("Melania", EntityType.PERSON), when=later)], "c") == [["Melania"]]


def test_incompatible_types_do_not_merge(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Jordan", EntityType.PERSON))], "a")
    assert commit(store, r, [fact(("Jordan River", EntityType.LOCATION))], "b") == [["Jordan River"]]


def test_weights_are_configurable(store: SQLiteGraphStore) -> None:
    strict = EntityResolver(store, EntityResolutionSettings(threshold=0.99))
    commit(store, strict, [fact(("Melanie", EntityType.PERSON))], "a")
    assert commit(store, strict, [fact(("Mel", EntityType.PERSON))], "b") == [["Mel"]]
    assert strict.score(1.0, 1.0, 0.0) == pytest.approx(1.0)
    assert strict.score(0.0, 0.0, None) == 0.0


def test_mentions_within_one_fact_are_deduplicated(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    names = commit(store, r, [fact(("Oscar", EntityType.PERSON), ("oscar", EntityType.OTHER))], "a")
    assert names == [["Oscar"]]
