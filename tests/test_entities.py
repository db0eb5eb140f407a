"""Entity resolution against a real SQLite graph store, and the name keys it relies on."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hindsight_core.config import EntityResolutionSettings, Settings
from hindsight_core.extract.base import ExtractedEntity, ExtractedFact
from hindsight_core.models import BankProfile, EntityType, Memory
from hindsight_core.retain.entities import EntityResolver, name_relation
from hindsight_core.stores.base import UnitBatch
from hindsight_core.stores.sqlite import SQLiteGraphStore
from hindsight_core.text.names import compact_name, is_short_form, normalise_name

T0 = datetime(2024, 5, 1, tzinfo=UTC)
P, L, ORG = EntityType.PERSON, EntityType.LOCATION, EntityType.ORGANIZATION


def fact(*names: tuple[str, EntityType], when: datetime = T0) -> ExtractedFact:
    return ExtractedFact(text=" ".join(n for n, _ in names), occurred_start=when, mentioned_at=when,
                         entities=[ExtractedEntity(name=n, type=t) for n, t in names])


@pytest.fixture()
def store(tmp_path: Path) -> SQLiteGraphStore:
    s = SQLiteGraphStore(tmp_path / "g.sqlite")
    s.create_bank(BankProfile(id="b", name="b"))
    return s


def commit(store: SQLiteGraphStore, resolver: EntityResolver, facts: list[ExtractedFact], tag: str,
           bank: str = "b") -> list[list[str]]:
    ids = [f"{tag}-{i}" for i in range(len(facts))]
    res = resolver.resolve(bank, facts, ids)
    units = [
        Memory(id=i, bank_id=bank, text=f.text, occurred_start=f.occurred_start)
        for i, f in zip(ids, facts, strict=True)
    ]
    store.add_units(bank, UnitBatch(units=units, new_entities=res.new_entities,
                                    updated_entities=res.updated_entities, mentions=res.mentions))
    return res.names


def entity_names(store: SQLiteGraphStore, bank: str = "b") -> list[str]:
    return sorted(e.name for e in store.list_entities(bank))


# --------------------------------------------------------------------------------------------------
# normalise_name
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b"), [
    ("José", "JOSE"), ("Zoë", "ZOE"), ("Zoë", "zoe"), ("Ｅｍｍａ", "emma"), ("  Emma  ", "emma"),
    ("\"Emma\"", "Emma"), ("(Emma)", "Emma"), ("“Gina”", "Gina"), ("Mark's", "Mark"), ("Mark’s", "mark"),
    ("O’Brien", "O'Brien"), ("Jean‐Luc", "Jean-Luc"), ("Jean–Luc", "jean-luc"), ("St. Louis", "St Louis"),
    ("St.Louis", "st louis"), ("J.R.R. Tolkien", "JRR Tolkien"), ("J. R. R. Tolkien", "jrr tolkien"),
    ("U.S.A.", "USA"), ("New  York\tCity", "new york city"), ("Straße", "STRASSE"), ("Łódź", "Lodz"),
    ("Søren", "Soren"), ("Ἀθῆναι", "αθηναι"), ("Jo\u00adsé", "Jose"), ("Beyoncé's", "beyonce"),
])
def test_normalise_name_folds_variants_of_one_name(a: str, b: str) -> None:
    assert normalise_name(a) == normalise_name(b)


@pytest.mark.parametrize(("a", "b"), [
    ("Emma", "Emmanuel"), ("Dan", "Dana"), ("Jon", "John"), ("C#", "C"), ("C++", "C"), ("version 2.0", "version 20"),
    ("Mary J. Blige", "Mary Blige"), ("हिन्दी", "हिन्द"), ("Ёлка", "Елка"),
])
def test_normalise_name_keeps_different_names_apart(a: str, b: str) -> None:
    assert normalise_name(a) != normalise_name(b)


def test_normalise_name_values() -> None:
    assert normalise_name("J.R.R. Tolkien’s") == "jrr tolkien"
    assert normalise_name(" Dr. Zoë O’Brien-Smith ") == "dr zoe o'brien-smith"
    assert normalise_name("version 2.0") == "version 2.0"
    assert normalise_name("Malcolm X") == "malcolm x"
    assert normalise_name("'s") == "s"  # a name with a letter never yields ""
    for junk in ("", "   ", "?!", "--", "…", "'", "&", "#+"):
        assert normalise_name(junk) == ""


@given(st.text(max_size=30))
def test_normalise_name_is_idempotent_and_never_empty_for_a_name(text: str) -> None:
    key = normalise_name(text)
    assert normalise_name(key) == key
    # A compatibility character such as "⒜" is "(a)" once decomposed: a name with a letter, as the key sees it.
    assert bool(key) == any(c.isalnum() for c in unicodedata.normalize("NFKD", text))


def test_compact_name_and_short_forms() -> None:
    assert compact_name(normalise_name("Coca-Cola")) == compact_name(normalise_name("Coca Cola"))
    assert is_short_form("em", "emma") and is_short_form("mel", "melanie") and is_short_form("dave", "david")
    # Spelling neighbours and unrelated names are never short forms of each other.
    for short, full in (("jon", "john"), ("ann", "anna"), ("dan", "dana"), ("emma", "emmanuel"),
                        ("emma", "emily"), ("mark", "marek"), ("em", "em")):
        assert not is_short_form(short, full)


def test_name_relation() -> None:
    assert name_relation("em", P, "emma", P) == "short-form"
    assert name_relation("mel brown", P, "melanie brown", P) == "short-form"
    assert name_relation("caroline", P, "caroline smith", P) == "partial"
    assert name_relation("smith", P, "caroline smith", P) == "partial"
    assert name_relation("dr smith", P, "anna smith", P) == "partial"
    assert name_relation("new york", L, "new york city", L) == "partial"
    assert name_relation("york", L, "new york", L) is None  # a place's last word is not the place
    assert name_relation("nyc", L, "new york city", L) == "acronym"
    assert name_relation("mit", ORG, "massachusetts institute of technology", ORG) == "acronym"
    assert name_relation("coca cola", ORG, "coca-cola", ORG) == "spelling"
    for a, b in (("emma", "emmanuel"), ("dan", "dana"), ("mark", "marek"), ("caroline", "carolina"),
                 ("emma stone", "emma watson"), ("jon", "john smith"), ("smith", "smithson")):
        assert name_relation(a, P, b, P) is None, (a, b)
    off = EntityResolutionSettings(nicknames=False, partial_names=False, acronyms=False)
    assert name_relation("em", P, "emma", P, off) is None
    assert name_relation("caroline", P, "caroline smith", P, off) is None
    assert name_relation("nyc", L, "new york city", L, off) is None


# --------------------------------------------------------------------------------------------------
# the resolver through the store
# --------------------------------------------------------------------------------------------------
def test_exact_names_merge_case_insensitively(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Melanie", EntityType.PERSON))], "a")
    names = commit(store, r, [fact(("melanie", EntityType.PERSON))], "b")
    assert names == [["Melanie"]]
    ents = store.list_entities("b")
    assert len(ents) == 1 and ents[0].mention_count == 2


def test_case_and_diacritics_variants_merge(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("José", P), ("Lima", L))], "a")
    assert commit(store, r, [fact(("JOSE", P), when=T0 + timedelta(days=40))], "b") == [["José"]]
    assert commit(store, r, [fact(("Jose", P), ("Kyoto", L))], "c") == [["José", "Kyoto"]]
    commit(store, r, [fact(("Zoë", P))], "d")
    assert commit(store, r, [fact(("ZOE", P)), fact(("“Zoe”", P))], "e") == [["Zoë"], ["Zoë"]]
    assert commit(store, r, [fact(("Coca-Cola", ORG)), fact(("Coca Cola", ORG))], "f") == [["Coca-Cola"], ["Coca-Cola"]]
    assert entity_names(store) == ["Coca-Cola", "José", "Kyoto", "Lima", "Zoë"]


def test_confusable_names_stay_apart_however_close_in_time(store: SQLiteGraphStore) -> None:
    """The issue: with nothing co-mentioned, name similarity plus time closeness merged different people."""
    r = EntityResolver(store)
    for i, (a, b) in enumerate((("Emma", "Emmanuel"), ("Dan", "Dana"), ("Mark", "Marek"), ("Jon", "John"),
                                ("Caroline", "Carolina"))):
        when = T0 + timedelta(days=i)
        commit(store, r, [fact((a, P), when=when)], f"{a}-1")
        assert commit(store, r, [fact((b, P), when=when + timedelta(hours=3))], f"{b}-2") == [[b]]
    # Not even with a specific shared context: their names are not related.
    commit(store, r, [fact(("Emma", P), ("Liam", P))], "ctx-1")
    assert commit(store, r, [fact(("Emmanuel", P), ("Liam", P))], "ctx-2") == [["Emmanuel", "Liam"]]
    commit(store, r, [fact(("Jon", P), ("Gina", P))], "ctx-3")
    assert commit(store, r, [fact(("John", P), ("Gina", P))], "ctx-4") == [["John", "Gina"]]
    assert len(store.list_entities("b")) == 12


def test_nickname_joins_only_with_evidence(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Emma", P), ("Paris", L))], "a")
    # Minutes later, alone: time closeness is no evidence.
    assert commit(store, r, [fact(("Em", P), when=T0 + timedelta(minutes=30))], "b") == [["Em"]]
    store.delete_units("b", ["b-0"])
    # With an entity that was named with Emma before: the short form joins her.
    assert commit(store, r, [fact(("Em", P), ("Paris", L), when=T0 + timedelta(days=30))], "c") == [["Emma", "Paris"]]
    emma = store.find_entity("b", "em")
    assert emma is not None and emma.name == "Emma" and "Em" in emma.aliases and emma.mention_count == 2


def test_fuzzy_match_needs_supporting_evidence(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Melanie", EntityType.PERSON), ("Caroline", EntityType.PERSON))], "a")
    # Named with Caroline, who was named with Melanie: the nickname joins the existing person.
    assert commit(store, r, [fact(("Mel", EntityType.PERSON), ("Caroline", EntityType.PERSON))], "b") == [
        ["Melanie", "Caroline"]
    ]
    assert "Mel" in store.find_entity("b", "Melanie").aliases  # type: ignore[union-attr]
    assert store.find_entity("b", "mel").name == "Melanie"  # type: ignore[union-attr]
    # A similar but different name stays separate.
    later = T0 + timedelta(days=400)
    assert commit(store, r, [fact(("Melania", EntityType.PERSON), when=later)], "c") == [["Melania"]]


def test_full_name_joins_a_known_short_form_with_evidence(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Dave", P), ("chess club", ORG))], "a")
    assert commit(store, r, [fact(("David", P), ("chess club", ORG))], "b") == [["Dave", "chess club"]]


def test_evidence_within_one_retain(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    names = commit(store, r, [fact(("Andrew", P), ("Boeing", ORG)), fact(("Andy", P), ("Boeing", ORG))], "a")
    assert names == [["Andrew", "Boeing"], ["Andrew", "Boeing"]]
    assert entity_names(store) == ["Andrew", "Boeing"]


def test_ambiguous_short_form_is_a_new_entity(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Melanie", P), ("Oslo", L)), fact(("Melissa", P), ("Oslo", L))], "a")
    assert commit(store, r, [fact(("Mel", P), ("Oslo", L))], "b") == [["Mel", "Oslo"]]
    # With evidence for only one of them, it joins that one.
    commit(store, r, [fact(("Christopher", P), ("Lima", L)), fact(("Christina", P), ("Kyoto", L))], "c")
    assert commit(store, r, [fact(("Chris", P), ("Lima", L))], "d") == [["Christopher", "Lima"]]


def test_an_entity_named_everywhere_is_no_evidence(store: SQLiteGraphStore) -> None:
    """The speaker of a conversation co-occurs with everyone: sharing them says nothing about identity."""
    r = EntityResolver(store)
    others = ["Priya", "Kenji", "Omar", "Fatima", "Diego", "Ingrid", "Tariq", "Yuki", "Ravi", "Astrid", "Kofi"]
    commit(store, r, [fact(("Caroline", P), (o, P)) for o in others] + [fact(("Christina", P), ("Caroline", P))], "a")
    assert commit(store, r, [fact(("Chris", P), ("Caroline", P))], "b") == [["Chris", "Caroline"]]
    # The same rule still lets the other speaker's nickname through: most of Caroline's facts name Melanie.
    commit(store, r, [fact(("Caroline", P), ("Melanie", P)) for _ in range(20)], "c")
    assert commit(store, r, [fact(("Mel", P), ("Caroline", P))], "d") == [["Melanie", "Caroline"]]
    # And the threshold is a setting.
    strict = EntityResolver(store, EntityResolutionSettings(min_support=1.0))
    assert commit(store, strict, [fact(("Chrissy", P), ("Caroline", P))], "e") == [["Chrissy", "Caroline"]]


def test_partial_names(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Caroline Smith", P), ("Red Cross", ORG))], "a")
    assert commit(store, r, [fact(("Caroline", P))], "b") == [["Caroline"]]  # no evidence: a new entity
    store.delete_units("b", ["b-0"])
    assert commit(store, r, [fact(("Caroline", P), ("Red Cross", ORG))], "c") == [["Caroline Smith", "Red Cross"]]
    assert commit(store, r, [fact(("Smith", P), ("Red Cross", ORG))], "d") == [["Caroline Smith", "Red Cross"]]
    # A different full name sharing the first name never joins, whatever the evidence.
    assert commit(store, r, [fact(("Caroline Jones", P), ("Red Cross", ORG))], "e") == [["Caroline Jones", "Red Cross"]]


def test_known_full_name_blocks_a_conflicting_one(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Emma", P), ("Oxfam", ORG))], "a")
    assert commit(store, r, [fact(("Emma Watson", P), ("Oxfam", ORG))], "b") == [["Emma", "Oxfam"]]
    assert commit(store, r, [fact(("Emma Stone", P), ("Oxfam", ORG))], "c") == [["Emma Stone", "Oxfam"]]


def test_places_and_acronyms(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("New York City", L), ("Kenji", P)), fact(("United Nations", ORG), ("Kenji", P))], "a")
    assert commit(store, r, [fact(("New York", L), ("Kenji", P))], "b") == [["New York City", "Kenji"]]
    assert commit(store, r, [fact(("UN", ORG), ("Kenji", P))], "c") == [["United Nations", "Kenji"]]
    assert commit(store, r, [fact(("York", L), ("Kenji", P))], "d") == [["York", "Kenji"]]


def test_incompatible_types_do_not_merge(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Jordan", EntityType.PERSON))], "a")
    assert commit(store, r, [fact(("Jordan River", EntityType.LOCATION))], "b") == [["Jordan River"]]


def test_two_names_in_one_fact_are_two_entities(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    commit(store, r, [fact(("Christina", P), ("Lima", L))], "a")
    assert commit(store, r, [fact(("Chris", P), ("Christina", P), ("Lima", L))], "b") == [
        ["Chris", "Christina", "Lima"]
    ]


def test_banks_never_share_entities(store: SQLiteGraphStore) -> None:
    store.create_bank(BankProfile(id="other", name="other"))
    r = EntityResolver(store)
    commit(store, r, [fact(("Emma", P), ("Paris", L))], "a")
    commit(store, r, [fact(("Emma", P), ("Paris", L)), fact(("Em", P), ("Paris", L))], "x", bank="other")
    (mine,) = [e for e in store.list_entities("b") if e.name == "Emma"]
    (theirs,) = [e for e in store.list_entities("other") if e.name == "Emma"]
    assert mine.id != theirs.id and mine.aliases == [] and theirs.aliases == ["Em"]


def test_rules_are_configurable(store: SQLiteGraphStore) -> None:
    off = EntityResolver(store, EntityResolutionSettings(nicknames=False))
    commit(store, off, [fact(("Melanie", P), ("Caroline", P))], "a")
    assert commit(store, off, [fact(("Mel", P), ("Caroline", P))], "b") == [["Mel", "Caroline"]]
    two = EntityResolver(store, EntityResolutionSettings(min_shared_entities=2))
    commit(store, two, [fact(("Timothy", P), ("Oslo", L), ("Pixar", ORG))], "c")
    assert commit(store, two, [fact(("Tim", P), ("Oslo", L))], "d") == [["Tim", "Oslo"]]
    store.delete_units("b", ["d-0"])
    assert commit(store, two, [fact(("Tim", P), ("Oslo", L), ("Pixar", ORG))], "e") == [["Timothy", "Oslo", "Pixar"]]
    # Old configurations (the weighted score's fields) still validate.
    assert Settings.model_validate({"entities": {"threshold": 0.5, "string_weight": 1.0}}).entities.nicknames


def test_mentions_within_one_fact_are_deduplicated(store: SQLiteGraphStore) -> None:
    r = EntityResolver(store)
    names = commit(store, r, [fact(("Oscar", EntityType.PERSON), ("oscar", EntityType.OTHER))], "a")
    assert names == [["Oscar"]]
    assert commit(store, r, [fact(("?!", EntityType.OTHER), ("Óscar", EntityType.OTHER))], "b") == [["Oscar"]]


def test_new_entity_shows_the_best_cased_form_of_one_retain(store: SQLiteGraphStore) -> None:
    resolver = EntityResolver(store)
    commit(store, resolver, [fact(("melanie", P)), fact(("Melanie", P)), fact(("MELANIE", P))], "u")
    assert entity_names(store) == ["Melanie"]


# --------------------------------------------------------------------------------------------------
# mentions: which NER spans are names (raw extractor on chat text written for these tests)
# --------------------------------------------------------------------------------------------------
CHAT = [
    ("Rosa", "Congrats on the promotion!! Glad it worked out"),
    ("Theo", "Thanks! Wanna celebrate Tues? FYI I'm kinda broke lol"),
    ("Rosa", "Nah I'll pay. Last Fri was on you"),
    ("Theo", "ya, rosa is the best. My dog Pepper says hi"),
    ("Rosa", "We're off to Porto in June, then a week in Porto with Clara's family"),
    ("Theo", "The vet is on Gloucester Road, near Ed Sheeran's old flat"),
    ("Rosa", "Shopping list:\n- 2 cups Flour\n- Baking Soda\n• Pepper's food"),
]


@pytest.fixture(scope="module")
def chat_entities() -> list[list[tuple[str, EntityType]]]:
    from hindsight_core.extract.raw_extractor import RawExtractor
    from hindsight_core.models import Message

    facts = RawExtractor().extract([Message(speaker=s, text=t, id=str(i)) for i, (s, t) in enumerate(CHAT)],
                                   document_time=T0)
    return [[(e.name, e.type) for e in f.entities] for f in facts]


def test_chat_words_are_not_names(chat_entities: list[list[tuple[str, EntityType]]]) -> None:
    names = {n for ents in chat_entities for n, _ in ents}
    for word in ("Congrats", "Glad", "Wanna", "FYI", "Last Fri", "Tues", "Nah", "ya, rosa", "kinda", "lol",
                 "Flour", "Baking Soda", "June", "Shopping"):
        assert not any(word.casefold() in n.casefold().split() or word.casefold() == n.casefold() for n in names), (
            word, names)
    assert names == {"Rosa", "Theo", "Pepper", "Porto", "Clara", "Gloucester Road", "Ed Sheeran"}, names


def test_names_are_cleaned_cased_and_typed(chat_entities: list[list[tuple[str, EntityType]]]) -> None:
    types = {n: t for ents in chat_entities for n, t in ents}
    assert types["Pepper"] == P  # "my dog Pepper": a named animal, not an organisation
    assert types["Porto"] == L and types["Gloucester Road"] == L
    assert types["Rosa"] == P
    # The lower-case "rosa" in Theo's message is the speaker, shown as the speaker list writes her.
    assert ("Rosa", P) in chat_entities[3]
    assert ("Ed Sheeran", P) in chat_entities[5]  # possessive stripped
    # A list line keeps its line breaks in NER's input: bullet and possessive stripped, ingredients dropped.
    from hindsight_core.extract.ner import EntityRecognizer

    found = EntityRecognizer().recognize(["Tom: My dog Pepper hates baths", CHAT[6][1]], ["Rosa", "Tom"])
    assert [(e.name, e.type) for e in found[1]] == [("Pepper", P)]


def test_clean_tokens_strips_bullets_possessives_and_chat_words() -> None:
    from hindsight_core.extract.mention_rules import clean_tokens

    assert clean_tokens(["•", " ", "Pepper", "'s"], 0)[0] == ["Pepper"]
    assert clean_tokens(["ya", ",", "Melanie"], 0)[0] == ["Melanie"]
    assert clean_tokens(["Congrats", "Mel", "!"], 0)[0] == ["Mel"]
    assert clean_tokens(["Last", "Fri"], 0)[0] == []
    assert clean_tokens(["Porto", "\n", "Zara"], 0)[0] == ["Porto"]


# --------------------------------------------------------------------------------------------------
# types are voted by the evidence of every mention (issue 36)
# --------------------------------------------------------------------------------------------------
def raw_facts(*lines: tuple[str, str]) -> list[ExtractedFact]:
    """The raw extractor's facts (NER with its type evidence) of chat lines, as one retain sees them."""
    from hindsight_core.extract.raw_extractor import RawExtractor
    from hindsight_core.models import Message

    return RawExtractor().extract([Message(speaker=s, text=t, id=f"m{i}") for i, (s, t) in enumerate(lines)],
                                  document_time=T0)


def entity_type(store: SQLiteGraphStore, name: str, bank: str = "b") -> EntityType:
    found = store.find_entity(bank, name)
    assert found is not None, name
    return found.type


def test_an_entity_type_follows_the_evidence_of_two_retains(store: SQLiteGraphStore) -> None:
    resolver = EntityResolver(store)
    commit(store, resolver, raw_facts(("Ana", "Alberobello was so pretty")), "r1")
    assert entity_type(store, "Alberobello") == P  # the model's reading of one message: weak evidence
    commit(store, resolver, raw_facts(("Ben", "We stayed in Alberobello for three nights")), "r2")
    assert entity_type(store, "Alberobello") == L  # "in X" is a cue: it outweighs the label
    commit(store, resolver, raw_facts(("Ana", "Alberobello was lovely")), "r3")
    assert entity_type(store, "Alberobello") == L  # one more weak label does not undo it
    assert entity_type(store, "Ana") == P and entity_type(store, "Ben") == P


def test_type_votes_are_weighed_by_their_evidence(store: SQLiteGraphStore) -> None:
    resolver = EntityResolver(store)

    def said(name: str, etype: EntityType, evidence: float) -> ExtractedFact:
        return ExtractedFact(text=name, occurred_start=T0, mentioned_at=T0,
                             entities=[ExtractedEntity(name=name, type=etype, evidence=evidence)])

    commit(store, resolver, [said("Iberia", L, 1.0), said("Iberia", L, 1.0)], "a")
    assert entity_type(store, "Iberia") == L
    commit(store, resolver, [said("Iberia", ORG, 3.0)], "b")  # "flew Iberia": a cue against two labels
    assert entity_type(store, "Iberia") == ORG
    commit(store, resolver, [said("iberia", EntityType.OTHER, 1.0)], "c")  # OTHER is no evidence
    assert entity_type(store, "Iberia") == ORG
    store.delete_units("b", ["b-0"])  # the evidence is forgotten with its unit: the vote follows
    assert entity_type(store, "Iberia") == L
    # Mentions record their evidence.
    rows = store._con().execute("SELECT m.type, m.weight FROM mentions m JOIN entities e ON e.id = m.entity_id "
                                "WHERE e.name = 'Iberia' ORDER BY m.unit_id").fetchall()
    assert [tuple(r) for r in rows] == [("LOCATION", 1.0), ("LOCATION", 1.0), ("OTHER", 1.0)]


def test_mentions_stored_before_type_evidence_keep_their_entity_type(tmp_path: Path) -> None:
    """A v6 file's mentions have no evidence: they count for the type their entity had when new evidence came."""
    store = SQLiteGraphStore(tmp_path / "g.sqlite")
    store.create_bank(BankProfile(id="b", name="b"))
    resolver = EntityResolver(store)
    commit(store, resolver, [fact(("Porto", L)), fact(("Porto", L))], "old")
    store._con().execute("UPDATE mentions SET type = NULL, weight = NULL")  # as an older version stored them
    store._con().commit()
    commit(store, resolver, [ExtractedFact(text="Porto", occurred_start=T0, mentioned_at=T0, entities=[
        ExtractedEntity(name="Porto", type=ORG, evidence=1.5)])], "new")
    assert entity_type(store, "Porto") == L  # two frozen votes of 1 against 1.5
    assert store._con().execute("SELECT count(*) FROM mentions WHERE type IS NULL").fetchone()[0] == 0
