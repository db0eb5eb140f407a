"""Which capitalised chat words are names, and of what type (issue 25): word lists, cues and LoCoMo conv-26.

The chat lines here are written for these tests (not taken from the chat-mention benchmark set).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from hindsight_core.extract.common_words import in_dictionary, is_common_word, is_dictionary_name, is_plain_word
from hindsight_core.extract.mention_rules import (
    Candidate,
    clean_tokens,
    cue_type,
    drop_reason,
    lower_case_name,
    nationality_words,
    place_names,
)
from hindsight_core.extract.ner import EntityRecognizer
from hindsight_core.models import EntityType

P, L, ORG, C, PR = (EntityType.PERSON, EntityType.LOCATION, EntityType.ORGANIZATION, EntityType.CONCEPT,
                    EntityType.PRODUCT)


def names(chat: Sequence[tuple[str, str]]) -> list[list[tuple[str, EntityType]]]:
    """NER of one call over ``(speaker, text)`` lines, speakers excluded from the result."""
    speakers = sorted({s for s, _ in chat})
    found = EntityRecognizer().recognize([f"{s}: {t}" for s, t in chat], speakers)
    return [[(e.name, e.type) for e in ents if e.name not in speakers] for ents in found]


# --------------------------------------------------------------------------------------------------
# word lists
# --------------------------------------------------------------------------------------------------
def test_the_dictionary_tells_plain_words_from_names() -> None:
    for word in ("dahlias", "watercolour", "lasagne", "begonias", "calligraphy"):
        assert in_dictionary(word) and is_plain_word(word) and not is_dictionary_name(word), word
    for name in ("Ruth", "Glasgow", "Ikea", "Thai"):
        assert is_dictionary_name(name) and not is_plain_word(name.casefold()), name
    # Web tokens of cl100k that the dictionary knows only as names are not common words.
    assert not is_common_word("ikea") and not is_common_word("sam")
    assert is_common_word("pottery") and is_common_word("tell") and not is_plain_word("pottery")
    assert not in_dictionary("tobi") and not is_plain_word("tobi")
    # The larger list (asked at sentence starts only) has rarer words; names stay names there too.
    assert is_plain_word("netball", rare=True) and not is_plain_word("netball")
    assert not is_plain_word("milo", rare=True) and is_dictionary_name("Milo", rare=True)


def test_places_and_nationalities_are_loaded() -> None:
    assert {"portugal", "glasgow", "somerset", "douro", "california", "lisbon"} <= place_names()
    assert {"thai", "portuguese", "sri lankan", "mandarin"} <= nationality_words()
    assert "tobi" not in place_names()


def test_clean_tokens_drops_laughter_drawn_out_words_and_contractions() -> None:
    assert clean_tokens(["Hahahaha", "Mel"], 0)[0] == ["Mel"]
    assert clean_tokens(["Sooo", "Mel"], 0)[0] == ["Mel"]
    assert clean_tokens(["Mel", "'m"], 0)[0] == ["Mel"]
    # A quoted title keeps its words.
    title = ["The", "Lord", "of", "the", "Rings"]
    assert clean_tokens(title, 0, chat=False)[0] == title


def test_drop_reason_for_plain_and_chat_words() -> None:
    def cand(words: list[str], etype: EntityType | None = None, initial: bool = False,
             before: Sequence[str] = ()) -> Candidate:
        return Candidate(words, etype, 3, initial, list(before))

    assert drop_reason(cand(["Mmm"], initial=True), set(), "mmm") is not None
    assert drop_reason(cand(["Yesss"]), set(), "yesss") is not None
    assert drop_reason(cand(["Ahhahha"], P), set(), "ahhahha") is not None
    # A plain word: dropped unlabelled or after a determiner, kept when labelled and named again in the call.
    assert drop_reason(cand(["Hydrangeas"], before=["want", "to", "try"]), set(), "hydrangeas") is not None
    assert drop_reason(cand(["Begonias"], P, before=["about", "it", "her"]), set(), "begonias") is not None
    assert drop_reason(cand(["Marigold"], ORG, before=["bring"]), set(), "marigold") is not None
    assert drop_reason(cand(["Marigold"], ORG, before=["bring"]), set(), "marigold", frozenset({"marigold"})) is None
    assert drop_reason(cand(["Marigold"], None, before=["my", "dog"]), set(), "marigold") is None  # a cue
    assert drop_reason(cand(["Sardines"], initial=True), set(), "sardines") is not None
    assert drop_reason(cand(["Sardines"], initial=True), {"sardines"}, "sardines") is None  # known in the call
    assert drop_reason(cand(["Netball"], initial=True), set(), "netball") is not None
    assert drop_reason(cand(["Nightjar"], L, before=["drinks", "at", "the"]), set(), "nightjar") is None
    assert drop_reason(cand(["JUST", "DOING", "IT"], ORG), set(), "just doing it") is not None
    # An unknown capitalised word is a name.
    assert drop_reason(cand(["Ngozi"], initial=True), set(), "ngozi") is None


def test_lower_case_names() -> None:
    assert lower_case_name("ollie") == P and lower_case_name("charlie") == P
    assert lower_case_name("manchester") == L
    assert lower_case_name("josh") is None  # an English word too
    assert lower_case_name("bday") is None and lower_case_name("tho") is None and lower_case_name("del") is None


def test_cue_types() -> None:
    def cue(words: list[str], etype: EntityType | None, before: Sequence[str] = (),
            after: Sequence[str] = ()) -> EntityType | None:
        return cue_type(Candidate(words, etype, 5, False, list(before), list(after)),
                        " ".join(words).casefold(), set())

    assert cue(["Portugal"], P, ["we", "loved"]) == L
    assert cue(["California"], None, ["we", "had", "to"]) == L  # not "Callie"'s long form
    assert cue(["Florence"], P, ["with"]) is None  # a given name the model reads as a person
    assert cue(["Florence"], L, [], ["says", "hi"]) == P
    assert cue(["Thai"], P) == C and cue(["Sri", "Lankan"], ORG) == C
    assert cue(["Leeds", "Food", "Festival"], ORG) == C and cue(["Hartwell", "Manor"], P) == L
    assert cue(["Kaffeine"], L, ["drinks", "at"]) == ORG
    assert cue(["Maisie"], L, ["she", "at"], ["'s"]) is None  # at someone's house
    assert cue(["Nkechi"], L, [], ["'s", "wedding"]) == P
    assert cue(["Mochi"], ORG, [], ["and", "i"]) == P
    assert cue(["Old", "Vic"], None, ["from", "the"], ["pub", "wants"]) == ORG
    assert cue(["Headingley"], None, [], ["near", "the"]) == L
    assert cue(["Carver", "Street"], ORG, [], ["is", "booked"]) == L  # "is" says nothing of a person


# --------------------------------------------------------------------------------------------------
# the recogniser on a chat
# --------------------------------------------------------------------------------------------------
CHAT = [
    ("Ines", "Her Begonias won first prize at the village show"),
    ("Kofi", "I want to try Calligraphy next, or maybe Origami"),
    ("Ines", "Sardines again? Tell Ngozi thanks for the recipe"),
    ("Kofi", "Took Mr Pickles to the groomer, he hated it. Poor Pickles"),
    ("Ines", "I've subscribed to Farmer's Weekly for my dad"),
    ("Kofi", "Hahahaha. Sooo good. Mmm"),
    ("Ines", "Portugal was amazing, the Thai place in Lisbon too"),
    ("Kofi", "Nkechi's wedding is at Hartwell Manor in Devon"),
    ("Ines", "Drinks at Kaffeine after? Then the Leeds Food Festival"),
    ("Kofi", 'Just finished "The Lord of the Rings" on the train'),
    ("Ines", "She's here! Zara Rose, born this morning. Zara is perfect"),
]


@pytest.fixture(scope="module")
def chat_names() -> list[list[tuple[str, EntityType]]]:
    return names(CHAT)


def test_plain_words_capitalised_are_not_names(chat_names: list[list[tuple[str, EntityType]]]) -> None:
    found = {n.casefold() for ents in chat_names for n, _ in ents}
    for word in ("begonias", "calligraphy", "origami", "sardines", "hahahaha", "sooo", "mmm", "tell ngozi"):
        assert word not in found, (word, found)


def test_names_are_whole_and_typed(chat_names: list[list[tuple[str, EntityType]]]) -> None:
    assert ("Ngozi", P) in chat_names[2]  # the imperative is not part of the name
    assert ("Mr Pickles", P) in chat_names[3] and ("Pickles", P) in chat_names[3]
    assert [n for n, _ in chat_names[4]] == ["Farmer's Weekly"]  # "'s" inside a name
    assert chat_names[5] == []
    assert set(chat_names[6]) == {("Portugal", L), ("Thai", C), ("Lisbon", L)}
    assert set(chat_names[7]) == {("Nkechi", P), ("Hartwell Manor", L), ("Devon", L)}
    assert set(chat_names[8]) == {("Kaffeine", ORG), ("Leeds Food Festival", C)}
    assert chat_names[9] == [("Lord of the Rings", PR)]
    assert ("Zara Rose", P) in chat_names[10] and ("Zara", P) in chat_names[10]


def test_chat_habits_are_not_names() -> None:
    found = names([
        ("Ines", "Obviously. Good Luck on Monday x"),
        ("Kofi", "Thank u!! Sprint Review is Tues so wish me luck"),
        ("Ines", "It`s fine. Let`s go Rockin at the weekend"),
        ("Kofi", "Grandad's Allotment is full of weeds, Mum's Kitchen too"),
        ("Ines", "Get me a Flat White pls. K. Tell Sanjay too"),
        ("Kofi", "Haha ok James! Bet you will"),
    ])
    assert found[:4] == [[], [], [], []], found
    assert found[4] == [("Sanjay", P)]
    assert [n for n, _ in found[5]] == ["James"]


def test_lower_case_chat_keeps_known_names() -> None:
    found = names([("Ines", "omg at the pub w charlie rn"), ("Kofi", "nice, im off to manchester sat with josh")])
    assert found == [[("charlie", P)], [("manchester", L)]]


# --------------------------------------------------------------------------------------------------
# LoCoMo conv-26: the graph shows no chat word (issue 25), when the shared data is present
# --------------------------------------------------------------------------------------------------
NOT_IN_CONV_26 = ("Congrats", "Glad", "Wanna", "FYI", "Last Fri", "Tues", "Nah", "ya, Melanie", "kinda nerve")


def test_locomo_conv_26_names_hold_no_chat_words() -> None:
    from hindsight_bench.commands import BenchError, find_locomo
    from hindsight_core.cli.formats import locomo_sessions

    try:
        path = find_locomo()
    except BenchError:
        pytest.skip("LoCoMo data not present")
    sample = next(s for s in json.loads(path.read_text(encoding="utf-8")) if s["sample_id"] == "conv-26")
    recognizer = EntityRecognizer()
    found: dict[str, set[EntityType]] = {}
    for session in locomo_sessions(sample):
        texts = [f"{m['speaker']}: {m['text']}" for m in session.messages]
        for ents in recognizer.recognize(texts, sorted({m["speaker"] for m in session.messages})):
            for e in ents:
                found.setdefault(e.name, set()).add(e.type)
    lowered = {n.casefold() for n in found}
    for bad in NOT_IN_CONV_26:
        assert not any(bad.casefold() in n for n in lowered), (bad, sorted(found))
    assert found["Caroline"] == {P} and found["Melanie"] == {P} and found["Sweden"] == {L}


# --------------------------------------------------------------------------------------------------
# issue 36: full names of clubs and titles, names that are words, typos, brands and medicines
# --------------------------------------------------------------------------------------------------
def one(speaker: str, text: str) -> list[tuple[str, EntityType]]:
    """NER of a single line (its own call), the speaker excluded."""
    return names([(speaker, text)])[0]


def test_a_club_keeps_its_full_name() -> None:
    assert one("Ana", "Real Madrid won again last night, what a game") == [("Real Madrid", ORG)]
    assert ("Real Madrid", ORG) in one("Ben", "did you see real madrid?? no, Real Madrid vs Barca on Sat")
    found = one("Ben", "Watching Man City at the pub, then the Spurs game")
    assert ("Man City", ORG) in found and ("Spurs", ORG) in found
    assert not any(n in ("Madrid", "City") for n, _ in found)


def test_a_title_is_not_cut_short() -> None:
    assert one("Tasha", "we watched Get Out last night, so creepy") == [("Get Out", PR)]
    assert one("Tasha", "I've never seen Get Out") == [("Get Out", PR)]
    assert one("Callum", "did you finish Normal People?") == [("Normal People", PR)]


@pytest.mark.parametrize(("text", "name"), [
    ("Mark said he'd come to the party", "Mark"),
    ("Mark is coming too", "Mark"),
    ("I met Rose at the gym", "Rose"),
    ("Rose has good taste", "Rose"),
    ("Will and I went to the cinema", "Will"),
    ("Will reckons Arsenal have no chance", "Will"),
    ("Bring Will too, he owes me a pint", "Will"),
    ("ya and Will came too", "Will"),
])
def test_names_that_are_words_are_people_where_used_as_names(text: str, name: str) -> None:
    assert (name, P) in one("Jess", text), (text, one("Jess", text))


@pytest.mark.parametrize("text", [
    "mark my words, it will rain", "Mark my words, it will rain", "Mark it down, we need it",
    "he bought her a rose for valentines", "I will call you later", "Will do haha", "Will you come? Will be fun",
    "See you soon", "Sounds great, See you",
])
def test_names_that_are_words_are_not_names_where_used_as_words(text: str) -> None:
    assert one("Jess", text) == [], (text, one("Jess", text))


@pytest.mark.parametrize(("text", "name"), [
    ("Ask Hope to bring the cake", "Hope"),
    ("Dawn says hi", "Dawn"),
    ("Summer moved to Leeds last year", "Summer"),
    ("Will is a keeper", "Will"),
    ("Drew could drive us there", "Drew"),
    ("Will's bringing crisps", "Will"),
])
def test_given_names_that_are_words_and_have_no_short_form_are_people_where_used_as_names(text: str,
                                                                                           name: str) -> None:
    assert (name, P) in one("Jess", text), (text, one("Jess", text))


@pytest.mark.parametrize("text", [
    "Hope you're well!", "Hope so, fingers crossed", "This Summer we go camping", "Art is hard",
    "my Hope for this year is a new job",
])
def test_given_names_that_are_words_stay_words_where_used_as_words(text: str) -> None:
    assert one("Jess", text) == [], (text, one("Jess", text))


def test_a_speaker_whose_name_is_a_word_is_not_named_by_the_word_in_lower_case() -> None:
    found = EntityRecognizer().recognize(["I'll mark the essays tonight", "Can you grab mark's charger?",
                                          "hey mark how are you"], ["Mark", "Ann"])
    assert found[0] == []  # the verb, in a message that capitalises
    assert [e.name for e in found[1]] == ["Mark"]  # a possessive is the person's
    assert [e.name for e in found[2]] == ["Mark"]  # a message all in lower case writes names so too


@pytest.mark.parametrize(("text", "name", "etype"), [
    ("The kids read about Ivan the Terrible today", "Ivan the Terrible", P),
    ("Drinks at the Fox and Hounds tonight?", "Fox and Hounds", ORG),
    ("My brother studies at Leeds Uni now", "Leeds Uni", ORG),
    ("Lunch at the Sun Inn then?", "Sun Inn", ORG),
    ("Racecourse Ground tour then", "Racecourse Ground", L),
])
def test_names_with_small_or_suffix_words_stay_whole(text: str, name: str, etype: EntityType) -> None:
    assert one("Jess", text) == [(name, etype)], (text, one("Jess", text))


def test_in_lower_case_chat_a_title_or_a_verb_that_takes_a_person_names_an_unknown_word() -> None:
    assert one("Jess", "is it ok with dr okafor, ill email him") == [("dr okafor", P)]
    assert one("Jess", "gonna ask deepa if she wants to come") == [("deepa", P)]
    assert one("Jess", "gonna ask about the flat tho") == []  # a word the dictionary knows
    assert ("york", L) in one("Jess", "watched it on the train back from york")


def test_an_apposition_is_not_joined_into_a_name() -> None:
    assert one("Jess", "Pete Smith the plumber guy?") == [("Pete Smith", P)]
    assert one("Jess", "Train Station is closed again") == []


def test_a_name_after_a_verb_of_having_is_a_thing() -> None:
    assert ("Corsa", PR) in one("Jess", "Kim has the Corsa this week")
    assert ("Xperia", PR) in one("Jess", "he had an Xperia for years")


def test_a_call_that_names_will_still_reads_will_do_as_a_verb() -> None:
    found = names([("Jess", "Will says that every year lol"), ("Kieran", "Will do haha")])
    assert found[0] == [("Will", P)] and found[1] == []


def test_a_typo_of_a_function_word_is_not_a_name() -> None:
    assert one("Ben", "Amd then we went home lol") == []
    assert one("Ben", "Thw shop was shut") == []
    assert ("AMD", ORG) in one("Ben", "my new laptop has an AMD chip")  # the company, in capitals


def test_medicines_are_products_in_any_case() -> None:
    assert one("Sam", "Have you taken anything? acetaminophen helps me") == [("acetaminophen", PR)]
    assert set(one("Lena", "Took some ibuprofen this morning, and a Lemsip")) == {("ibuprofen", PR), ("Lemsip", PR)}


def test_well_known_brands_are_typed_by_what_they_are() -> None:
    assert one("Nina", "Iberia lost my suitcase again") == [("Iberia", ORG)]
    assert set(one("Nina", "Flights booked!! Ryanair via Madrid to Bari")) == {
        ("Ryanair", ORG), ("Madrid", L), ("Bari", L)}
    assert one("Kofi", "iPhone 15 or the Pixel 8?") == [("iPhone 15", PR), ("Pixel 8", PR)]
    assert one("Max", "he drove us in his new Tesla") == [("Tesla", PR)]  # a car of the brand
    assert one("Max", "since he started at Tesla lol") == [("Tesla", ORG)]


def test_a_town_outside_the_gazetteer_is_a_place_by_its_cue() -> None:
    found = names([("Ana", "Alberobello was so pretty"), ("Ben", "we stayed in Alberobello for a week")])
    assert found == [[("Alberobello", L)], [("Alberobello", L)]]


def test_mentions_carry_the_strength_of_their_type_evidence() -> None:
    from hindsight_core.extract.base import EVIDENCE

    found = EntityRecognizer().recognize(["Ana: Tunde is here", "Ana: my dog Pepper", "Ana: Ryanair again"],
                                         ["Ana"])
    strength = {e.name: e.evidence for ents in found for e in ents}
    assert strength == {"Ana": EVIDENCE["speaker"], "Tunde": EVIDENCE["guess"], "Pepper": EVIDENCE["cue"],
                        "Ryanair": EVIDENCE["cue"]}
