"""Which NER spans are names, and of what type: the rules around spaCy's small model for chat text.

spaCy's small English model tags many capitalised chat words as entities ("Congrats", "Wanna", "Nah", "Last
Fri", "ya, Melanie") and often mistypes the rest ("Pepper" the dog as an organisation, "Porto" as a person).
These rules work on the model's spans with the surrounding tokens:

* **Cleaning**: list bullets, leading articles, greetings and interjections ("Congrats Mel" -> "Mel"),
  possessives ("Ed Sheeran's" -> "Ed Sheeran") and dangling punctuation are stripped; a span across a line
  break is cut at it.
* **Is it a name**: dropped when made only of chat words, time words or terms of address
  (``data/not_names.json``); when no word is capitalised (unless it is a known name: a speaker or a name seen
  capitalised in the same call); when it follows a quantity or unit (a recipe line); when it stands at
  the start of a sentence, line or list item and every word of it is a common lower-case English word
  (``common_words``) that the call never shows as a name elsewhere ("Pottery is fun", "Chocolate Chips then"),
  or a plain dictionary word the model did not label ("Slugs ate it", "Lasagne ok?"); and, away from a
  sentence start, when it is one common word capitalised for emphasis ("have Football after") or one plain
  dictionary word that the model did not label or that follows a determiner ("try Watercolour", "her
  Dahlias"). A cue ("my dog Pepper") or another mention of the name in the call keeps it.
* **Type**: cue words say person ("my dog Pepper", "her name is", "a guy called", titles, "Becca's wedding"),
  place ("on Gloucester Road", "in Porto", a country, major city or region of ``data/places.json``),
  organisation ("Greenline Studio", "an interview at Monzo") or event ("Bristol Half Marathon": CONCEPT);
  nationality and language words ("Thai", "Portuguese") are CONCEPT; speakers are persons; per call the
  cue-backed type, else the model's most frequent one, wins for every mention of a name.

Named animals are typed PERSON: the types have no animal, and like people they are named individuals.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..models import EntityType
from ..text.names import normalise_name, short_form_relatives
from .common_words import in_dictionary, is_common_word, is_dictionary_name, is_plain_word, is_proper_word

__all__ = ["BULLET", "IMPERATIVES", "PERSON_TITLES", "SENTENCE_END", "Candidate", "clean_tokens", "cue_type",
           "drop_reason", "known_acronym", "known_first_words", "known_name", "lower_case_name", "medicine_name",
           "nationality_words", "not_name_words", "person_use", "place_names", "title_verb"]

_DATA = Path(__file__).resolve().parent.parent / "data" / "not_names.json"
_PLACES = Path(__file__).resolve().parent.parent / "data" / "places.json"
_KNOWN = Path(__file__).resolve().parent.parent / "data" / "known_names.json"
_WORD_NAMES = Path(__file__).resolve().parent.parent / "data" / "word_names.json"
# Words stripped from either end of a span ("Congrats Mel", "ya, Melanie", "Zara btw"); terms of address are
# not stripped ("Uncle Ray" is a name) and only drop a mention made of them alone ("Mum").
_STRIP_KINDS = ("interjections", "chat_spellings", "discourse", "time_words", "generic")
BULLET = re.compile(r"^(?:[-*•·‣◦▪–—>]+|\d{1,3}[.)]|[a-z][.)])$")
_EDGE_PUNCT = "'\"“”‘’`.,;:!?()[]{}<>«»…-–—•*/\\|~_ \t\r\n"
_POSSESSIVE = frozenset({"'s", "’s", "'", "’"})
_CONTRACTIONS = frozenset({"'m", "'ll", "'ve", "'d", "'re", "n't", "’m", "’ll", "’ve", "’d", "’re", "n’t"})
# Laughter and drawn-out letters: "Ahhahha", "hehehe", "Lolll", "lmaooo", "Mmm", "xD".
_LAUGHTER = re.compile(r"^(?:[ah]*h[ah]*a[ah]*|[eh]*h[eh]*e[eh]*|l+o+l+[lo]*|l+m+f*a+o+|m{2,}|x+d+|j[ja]*a[ja]*)$")
SENTENCE_END = frozenset({".", "!", "?", "…", ":", ";", "!!", "??", "?!", "!?", "...", "\"", "(", ")"})
_UNITS = frozenset(
    """cup cups tsp tbsp teaspoon teaspoons tablespoon tablespoons g kg mg ml l litre litres liter liters oz lb
    lbs pinch handful clove cloves slice slices can cans tin tins pack packs packet bag bags jar bottle dash
    sprig sprigs bunch stick sticks x""".split()
)
# Cue words in the two tokens before a name.
_PERSON_CUES = frozenset(
    """dog cat puppy pup kitten kitty pet horse pony rabbit bunny hamster parrot budgie tortoise turtle goldfish
    sister brother friend bestie cousin mum mom dad mother father son daughter husband wife partner boyfriend
    girlfriend fiance fiancee neighbour neighbor flatmate roommate housemate colleague coworker boss teacher
    coach tutor nephew niece aunt aunty auntie uncle grandma grandpa gran granny grandad nan baby kid kids
    named called bf gf hubby""".split()
)
PERSON_TITLES = frozenset(
    """mr mrs ms mx miss dr doctor prof professor aunty auntie aunt uncle chef coach sir dame lady lord
    captain capt nurse father sister brother grandma grandpa nana pastor rev""".split()
)
_PLACE_SUFFIXES = frozenset(
    """road rd street st lane ln avenue ave park square sq hill bridge close drive crescent terrace gardens
    common green croft way place row mews walk quay wharf beach bay island lake river valley mountain mount
    heath moor falls forest wood woods field fields station airport village town city county lido
    estate barn farm manor castle abbey cathedral chapel palace tower towers cottage lodge pier harbour harbor
    marina docks canal reservoir gorge glen cove ground stadium arena""".split()
)
_ORG_SUFFIXES = frozenset(
    """inc ltd llc plc co corp company studio studios labs lab bank school university college academy
    cafe café bakery bar pub restaurant bistro kitchen books bookshop vets vet dental clinic hospital
    centre center club group stores store shop market foundation trust council agency games records press
    gym fc united diner grill deli pizzeria tavern inn brewery salon barbers florist florists boutique pharmacy
    chemist opticians motors repairs uni afc zoo museum""".split()
)
# A capitalised word that ends a venue's or place's name the model cut short ("Durham Uni", "Wrexham AFC"); each is
# in the place or organisation suffixes too, which type the name.
NAME_SUFFIXES = frozenset({"uni", "afc", "fc", "inn", "ground", "stadium", "arena", "hospital", "college",
                           "university", "academy", "school", "station", "airport", "market", "zoo", "museum"})
# The last word of an event's name ("Bristol Half Marathon", "Chelsea Flower Show").
_EVENT_SUFFIXES = frozenset(
    """marathon festival fest fete fête show fair carnival parade gala concert tournament championship
    championships olympics cup expo conference summit triathlon awards ceremony jubilee""".split()
)
# A person does these ("Tunde swears by Hoka", "Nadia makes a mean one"); "is" and "was" say nothing
# ("Marylebone is easier").
_PERSON_VERBS = frozenset(
    """says said say thinks thought loves loved likes liked wants wanted swears swore asked asks told tells texted
    messaged called calls knows knew feels felt makes made cooks cooked lives lived works worked
    reckons agrees agreed laughed cried smiled hates hated misses missed shares drops owes needs texts rings
    reckoned promised promises bakes sings writes drives plays studies teaches visits joins hosts owns reckon
    goes comes gets keeps brings sends buys pays helps picks replied replies""".split()
)
# What a person has ("Becca's wedding", "Dan's mum"): a name before "'s" and one of these is a person.
_PERSON_POSSESSIONS = _PERSON_CUES | frozenset(
    """wedding birthday funeral party hen stag baby family parents kids children husband wife mum mom dad
    nan grandma grandpa gran auntie uncle phone number car flat house place face eyes ears nose hair paws paw
    tail fur legs hands feet voice birthday vet vets collar lead bowl toys owner""".split()
)
# A determiner before a capitalised plain word makes it a noun ("her Dahlias", "my Lettuce"); "the" does not
# ("the Fender", "the Arnolfini").
_DETERMINERS = frozenset(
    """a an my your his her its our their some any this that these those every each no another""".split()
)
# Verbs that open a chat sentence before a name ("Tell Tobi thanks", "Ask Priya"): never part of the name.
IMPERATIVES = frozenset(
    """tell ask thank text call ring message email ping invite meet give bring take send wish remind kiss hug
    tag let get see visit phone download add follow check try watch join dm order grab buy use congratulate""".split()
)
# "in Porto", "near Leeds": a place unless the name is known as a person.
_PLACE_PREPOSITIONS = frozenset({"in", "near", "around", "across", "outside", "visiting", "visit", "toward", "past",
                                 "towards", "via"})
_MOTION = frozenset({"go", "going", "went", "gone", "trip", "flight", "flights", "fly", "flying", "flew", "move",
                     "moving", "moved", "drive", "driving", "drove", "travel", "travelling", "traveling",
                     "holiday", "vacation", "road", "train", "back", "way"})
# Verbs that take a person as their object ("tell Priti", "met Rose"): the name after them is someone.
_PERSON_OBJECT_VERBS = frozenset(
    """tell ask text thank remind invite hug kiss told asked texted thanked reminded invited hugged kissed met meet
    meeting marry married dating""".split()
)
# Verbs before a work's title ("watching Get Out", "finished Normal People", "reading Circe").
_TITLE_VERBS = frozenset(
    """watch watching watched rewatch rewatching rewatched binge binged bingeing binging read reading reread rereading
    finish finished finishing""".split()
)
# Before a work's title of two or more words ("never seen Get Out"); a single word after them is often a person.
_TITLE_VERBS_MULTI = frozenset({"seen", "saw", "see"})
# After a team's name: "the Spurs game", "Arsenal fans".
_TEAM_WORDS = frozenset({"game", "games", "match", "fans", "fan", "shirt", "kit", "season", "manager", "squad"})
# Irregular past forms a person is the subject of ("Will came too", "Mark got tickets").
_PAST = frozenset(
    """said came went got told made took gave saw thought knew felt left brought bought sent met ran won lost found
    had was did wrote drove flew sang spoke kept paid sold""".split()
)
# What follows "is"/"was" after a person's name ("Mark is coming", "Will is a keeper").
_AFTER_IS = frozenset(
    """coming going here there back home at in on with always still really being getting doing off out away
    driving bringing""".split()
)
# Object pronouns after a given name that is also a verb make it the verb ("See you soon", "Mark it").
_OBJECT_PRONOUNS = frozenset({"you", "u", "ya", "me", "him", "her", "them", "it", "us", "yourself"})
# Words "will" is followed by as a verb ("Will do", "Will you ...?"): never a person's.
_MODAL_NEXT = frozenset(
    """do be you i we they he she it have get go try ask let see send bring call text check message make need
    there that this probably definitely def prob""".split()
)
# After a given name that is also a verb, at a sentence start, words that make it the verb ("Hope so").
_SUBJECT_NEXT = frozenset({"so", "not", "i", "we", "he", "she", "they", "that", "this", "everything", "all", "your",
                           "ur", "the"})
# Modal verbs after a name make it someone who may act ("Drew could drive", "Mark can pick you up").
_MODALS = frozenset({"could", "would", "should", "can", "might", "must", "couldn't", "wouldn't", "can't", "won't",
                     "shouldn't", "will", "'ll", "'d"})
# Frequent short function words a sentence starts with, for typos ("Amd" for "And", "Thw" for "The").
_FUNCTION_WORDS = frozenset(
    """and the but for not now yes was are you she how why who what that this then than with just when they have
    our also so""".split()
)
_KEYBOARD = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# Before a brand, words that make it a thing someone has ("his new Tesla", "a Lemsip"), and words that may follow
# such a thing at the end of a clause ("a Tesla now", not "my Yamaha keyboard").
_OWNED = frozenset({"a", "an", "my", "his", "her", "your", "our", "their", "new"})
# Verbs that agree with one name ("Boots has the strong ones"), not with a plural noun.
_SINGULAR_VERBS = frozenset({"has", "is", "was", "does", "sells", "says", "makes", "do", "did"})
# "get the Snoo", "bought a Dyson", "has the Jeep": a thing.
_THING_VERBS = frozenset({"get", "got", "buy", "bought", "order", "ordered", "buying", "getting", "ordering", "has",
                        "have", "had", "owns", "own", "drive", "drives", "driving", "drove", "sold", "sell", "selling"})
_AFTER_OBJECT = frozenset({"now", "too", "though", "tho", "and", "or", "is", "was", "yet", "lol", "today", "again",
                           "since", "so", "but", "which", "that", "this", "yesterday", "haha"})


@lru_cache(maxsize=1)
def not_name_words() -> dict[str, frozenset[str]]:
    """The word lists of ``data/not_names.json`` by kind (lower case)."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    return {k: frozenset(w.casefold() for w in v) for k, v in data.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def _places() -> dict[str, frozenset[str]]:
    data = json.loads(_PLACES.read_text(encoding="utf-8"))
    return {k: frozenset(normalise_name(n) for n in v) for k, v in data.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def place_names() -> frozenset[str]:
    """Keys of the countries, US states, continents, regions and major cities of ``data/places.json``."""
    places = _places()
    return frozenset().union(*(v for k, v in places.items() if k != "nationalities"))


def nationality_words() -> frozenset[str]:
    """Keys of the nationality, language and faith words of ``data/places.json`` ("thai", "sri lankan")."""
    return _places()["nationalities"]


@lru_cache(maxsize=1)
def _known() -> tuple[dict[str, EntityType], frozenset[str], frozenset[str]]:
    data = json.loads(_KNOWN.read_text(encoding="utf-8"))
    known: dict[str, EntityType] = {}
    acronyms: set[str] = set()
    for kind, etype in (("products", EntityType.PRODUCT), ("organisations", EntityType.ORGANIZATION)):
        for name in data[kind]:
            if key := normalise_name(name):
                known.setdefault(key, etype)
                if name.isupper() and " " not in name:
                    acronyms.add(key)
    medicines = frozenset(normalise_name(n) for n in data["medicines"])
    return known, medicines, frozenset(acronyms)


def known_name(key: str, written: str = "") -> EntityType | None:
    """The type of a well-known organisation or product of ``data/known_names.json`` ("ryanair", "real madrid",
    "airpods"), by key; None for any other name. An acronym of the list ("AMD", "EE") is known only when
    ``written`` in capitals (not "Amd", a typo of "And")."""
    known, medicines, acronyms = _known()
    if key in medicines:
        return EntityType.PRODUCT
    if key in acronyms and not (written.isupper() and len(written) == len(key)):
        return None
    return known.get(key)


@lru_cache(maxsize=1)
def known_first_words() -> frozenset[str]:
    """The first words of the known names and medicines, lower-cased as written and as keys: a quick test of
    whether a token can start one."""
    data = json.loads(_KNOWN.read_text(encoding="utf-8"))
    names = [n for kind in ("organisations", "products", "medicines") for n in data[kind]]
    firsts = [n.split()[0].lower() for n in names] + [(normalise_name(n).split() or [""])[0] for n in names]
    return frozenset(w for f in firsts for w in (f, re.split(r"[^\w]", f)[0]) if w)  # "co" of "Co-op"


def known_acronym(key: str) -> bool:
    """Whether ``key`` is one of the list's names written in capitals ("ee", "bt", "nhs")."""
    return key in _known()[2]


def medicine_name(word: str) -> bool:
    """Whether ``word`` (any case) is a medicine's generic name: a product even in lower case ("acetaminophen")."""
    return normalise_name(word) in _known()[1]


@lru_cache(maxsize=1)
def _strippable() -> frozenset[str]:
    words = not_name_words()
    return frozenset().union(*(words[k] for k in _STRIP_KINDS))


@lru_cache(maxsize=1)
def _never_alone() -> frozenset[str]:
    return frozenset().union(*not_name_words().values())


def _drawn_out(word: str) -> list[str]:
    """``word`` (lower case) with letters written three or more times cut to one and to two ("yesss" ->
    "yes", "sooo" -> "so", "omggg" -> "omg", "cooool" -> "col", "cool")."""
    if not re.search(r"(.)\1\1", word):
        return []
    return [re.sub(r"(.)\1{2,}", r"\1", word), re.sub(r"(.)\1{2,}", r"\1\1", word)]


# Words that take a glued "'s" of "is" or "us" in chat ("It's", "Let`s", "What's"): no name is written so.
_S_CONTRACTED = frozenset(
    """it that what let there here who where how he she everyone everything nothing something""".split()
)
_APOSTROPHES = str.maketrans({"’": "'", "`": "'", "´": "'", "‘": "'"})


def _chat_word(word: str, words: frozenset[str]) -> bool:
    """Whether ``word`` (any case) is one of ``words``, drawn out or not, a contraction of a common word
    ("I`m", "It's", "We've"), a dropped g ("Rockin", "Startin") or laughter ("Ahhahha")."""
    low = word.casefold().translate(_APOSTROPHES).strip(_EDGE_PUNCT)
    if not low:
        return False
    if low in words or word.casefold() in words:
        return True
    if "'" in low:
        if low.replace("'", "") in words:  # "I'm", "that's": the chat list has them without the apostrophe
            return True
        base, _, tail = low.partition("'")
        if tail in ("m", "re", "ve", "ll", "d", "t") and (is_common_word(base) or base in words):
            return True
        if tail == "s" and base in _S_CONTRACTED:
            return True
    if len(low) >= 4 and low.isalpha() and _LAUGHTER.match(low):
        return True
    if len(low) >= 5 and low.endswith("in") and low.isalpha() and is_common_word(low + "g"):
        return True  # "Rockin", "Startin", "Nothin"
    return any(w in words or is_common_word(w) for w in _drawn_out(low))


@dataclass
class Candidate:
    """One cleaned span of one text: its words, where it starts, and what precedes it."""

    words: list[str]
    etype: EntityType | None  # the model's label; None for a capitalised run the model left unlabelled
    start: int  # token index of the first kept word
    initial: bool  # first word of a sentence, line or list item
    before: list[str]  # the (up to) three lower-cased words before it, nearest last
    after: list[str] = field(default_factory=list)  # the (up to) two lower-cased words after it
    lower_name: bool = False  # a name written in lower case in an all-lower-case message ("w ollie")
    title: bool = False  # a double-quoted title-case name: a work ("The Lord of the Rings")
    opened: bool = False  # a sentence starts with the chat words cleaned off it ("Good Luck" -> "Luck")
    known: EntityType | None = None  # a well-known organisation or product (``known_name``)
    next_word: str = ""  # the lower-cased token right after it (punctuation included), "" at the end

    @property
    def name(self) -> str:
        """The mention as written, words joined by single spaces (token spacing kept for "re:Invent")."""
        return _join(self.words)


def _join(words: Sequence[str]) -> str:
    out = ""
    for w in words:
        glued = w.startswith(("'", "-", ":")) or out.endswith(("-", "'"))
        if out and (w == "&" or not glued):
            out += " "
        out += w
    return out.replace(" :", ":")


def _is_noise(word: str) -> bool:
    return not any(c.isalnum() for c in word) or bool(BULLET.match(word))


def clean_tokens(tokens: Sequence[str], start: int, chat: bool = True) -> tuple[list[str], int]:
    """Strip a span's bullets, punctuation, articles, possessives and chat words from both ends.

    ``tokens`` are the span's token texts (whitespace tokens included); returns the kept words and the
    offset of the first one within ``tokens`` (relative to ``start``'s caller). A span across a line break is
    cut at the first break that follows a word. With ``chat`` false (a quoted title: "The Lord of the Rings")
    words are kept whatever they are.
    """
    words: list[str] = []
    first = -1
    for i, tok in enumerate(tokens):
        if "\n" in tok:
            if words:
                break
            continue
        if tok.isspace():
            continue
        if first < 0:
            first = i
        words.append(tok)
    strip = _strippable() if chat else frozenset()
    named = [w for w in words if any(ch.isalpha() for ch in w)]
    if len(named) > 1 and all(w[:1].isupper() for w in named) and named[-1].casefold() in NAME_SUFFIXES:
        strip = frozenset()  # "Durham Uni", "the Sun Inn": a venue's name keeps words that alone are chat or time
    lead = 0
    while lead < len(words) and (_is_noise(words[lead]) or words[lead] in _POSSESSIVE
                                 or words[lead] in _CONTRACTIONS or _chat_word(words[lead], strip)):
        lead += 1
    words = words[lead:]
    first = first + lead if first >= 0 else 0
    while words and (_is_noise(words[-1]) or words[-1] in _POSSESSIVE or words[-1] in _CONTRACTIONS
                     or _chat_word(words[-1], strip)):
        words.pop()
    words = [w.strip(_EDGE_PUNCT) if i in (0, len(words) - 1) else w for i, w in enumerate(words)]
    words = [w for w in words if w]
    if words and words[-1].casefold().endswith(("'s", "’s")) and len(words[-1]) > 2:
        words[-1] = words[-1][:-2]
    return words, first + start


@lru_cache(maxsize=1)
def _word_name_lists() -> dict[str, frozenset[str]]:
    data = json.loads(_WORD_NAMES.read_text(encoding="utf-8"))
    return {key: frozenset(data[key]) for key in ("names", "not_subjects")}


def word_names() -> frozenset[str]:
    """Given names that are also English words ("Summer", "Hope", "Grace"): ``data/word_names.json``."""
    return _word_name_lists()["names"]


def _not_subjects() -> frozenset[str]:
    """Given names whose word is never the singular subject of "is" (a verb, modal, adjective or plural)."""
    return _word_name_lists()["not_subjects"]


def given_name(word: str) -> bool:
    """Whether ``word`` (lower case, normalised) is a given name: one the nickname tables relate ("Will",
    "Mark") or one of the given names that are also words ("Summer", "Dawn")."""
    return bool(short_form_relatives(word)) or word in word_names()


# Before a season, words that make it the season ("this Summer", "over Summer"), not a person called Summer.
_SEASON_BEFORE = frozenset({"in", "over", "during", "since", "until", "till", "by", "all", "this", "last", "next",
                            "every", "early", "late", "mid", "of"})


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def lower_case_name(word: str, before: str = "") -> EntityType | None:
    """The type of a word that is a name even in lower case, in a message written all in lower case: a given
    name of the nickname tables ("ollie", "jess") or a place of ``data/places.json`` ("brighton", "london")
    that is not also an English word or a chat word, or any word no dictionary knows after a title or a word
    that takes a person (``before``: "dr hussain", "ask priya", "my cousin tunde"); None otherwise (not "josh",
    "mike", "bday")."""
    if len(word) < 3 or not word.isalpha() or not word.islower() or in_dictionary(word) or is_common_word(word):
        return None
    if _chat_word(word, _never_alone()):
        return None
    if (before in PERSON_TITLES or before in _PERSON_CUES or before in _PERSON_OBJECT_VERBS) and not in_dictionary(
        word, rare=True
    ):
        return EntityType.PERSON
    if len(word) < 4:
        return None
    if short_form_relatives(word):
        return EntityType.PERSON
    if word in place_names():
        return EntityType.LOCATION
    return None


def _person_verb(after: Sequence[str]) -> bool:
    """Whether the words after a name make it the subject of what a person does: "says", "reckons", "came",
    "is coming", "is a keeper", "has a Tesla", "and I"."""
    if not after:
        return False
    word = after[0]
    nxt = after[1] if len(after) > 1 else ""
    if word in _PERSON_VERBS or word in _PAST or word in ("has", "had") or word in _MODALS:
        return True
    if word in ("is", "was", "'s"):
        return nxt in _AFTER_IS or (len(nxt) > 4 and nxt.endswith("ing"))
    if word == "and":
        return nxt in ("i", "me")
    return len(word) > 4 and word.endswith("ed") and word.isalpha() and word not in ("need", "speed", "seed")


def person_use(c: Candidate) -> bool:
    """Whether a given name that is also a word ("Mark", "Rose", "Will") is used as a name here: it does what a
    person does ("Mark said", "Will is bringing soup", "Rose and I"), or, away from a sentence start, stands
    capitalised after a verb that takes a person ("Bring Will", "met Rose") or anywhere but before what follows
    the verb "will" ("ok Will do")."""
    alpha = [w for w in c.words if any(ch.isalpha() for ch in w)]
    if len(alpha) != 1 or not alpha[0][:1].isupper() or (alpha[0].isupper() and len(alpha[0]) > 1):
        return False
    word = alpha[0].casefold()
    if not given_name(word):
        return False
    if word in word_names() and c.before and not c.initial and (
        c.before[-1] in _DETERMINERS or c.before[-1] == "the" or (word == "summer" and c.before[-1] in _SEASON_BEFORE)
    ):
        return False  # "my Hope", "the Grant", "this Summer": the word, capitalised
    after = c.after
    if after[:1] == ["'s"]:
        # "Will's guitar", "Will's bringing soup": a modal or a verb takes no "'s"; a season does ("Summer's
        # here"), so only what a person has may follow it
        return len(after) > 1 and (after[1] in _PERSON_POSSESSIONS or word != "summer")
    if _person_verb(after):
        return True
    if after[:1] in (["is"], ["was"]) and word in _not_subjects():
        return True  # "Will is a keeper", "Drew is flaky": no modal or verb takes "is"; not "Art is hard"
    if c.initial:
        return False
    return not _word_use(c)


def title_verb(word: str) -> bool:
    """Whether ``word`` (lower case) comes before a work's title ("watching", "finished", "seen")."""
    return word in _TITLE_VERBS or word in _TITLE_VERBS_MULTI


def _word_use(c: Candidate) -> bool:
    """Whether a given name that is also a word is used as the word: "Will do", "Will you ...?" anywhere, or a
    verb before a determiner at a sentence start ("Mark my words")."""
    alpha = [w for w in c.words if any(ch.isalpha() for ch in w)]
    if len(alpha) != 1 or not given_name(alpha[0].casefold()) or not is_common_word(alpha[0].casefold()):
        return False
    word, nxt = alpha[0].casefold(), c.next_word
    if word == "will" and nxt in _MODAL_NEXT:
        return True
    if nxt in _OBJECT_PRONOUNS:
        return True  # "See you soon", "Mark it down"
    if c.initial and word in word_names() and nxt in _SUBJECT_NEXT:
        return True  # "Hope so!", "Hope we win": the verb
    return c.initial and nxt in _DETERMINERS and nxt not in ("a", "an")  # "Mark my words"


def _typo_of_function_word(word: str) -> bool:
    """Whether ``word`` (lower case) is a frequent function word with one key hit beside the right one, or two
    letters swapped ("amd" for "and", "thw" for "the", "teh")."""
    for target in _FUNCTION_WORDS:
        if len(target) != len(word) or target == word:
            continue
        diff = [i for i in range(len(word)) if word[i] != target[i]]
        if len(diff) == 1 and _adjacent_keys(word[diff[0]], target[diff[0]]):
            return True
        if len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == target[diff[1]] and (
            word[diff[1]] == target[diff[0]]
        ):
            return True
    return False


def _adjacent_keys(a: str, b: str) -> bool:
    for r, row in enumerate(_KEYBOARD):
        if a in row:
            i = row.index(a)
            near = {row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)}
            for other in (r - 1, r + 1):
                if 0 <= other < len(_KEYBOARD):
                    near.update(_KEYBOARD[other][max(0, i - 1) : i + 2])
            return b in near
    return False


def drop_reason(c: Candidate, known: set[str], key: str, recurring: frozenset[str] = frozenset()) -> str | None:
    """Why a candidate is not a name, or None to keep it. ``known``: keys of names known in this call
    (speakers, and names seen capitalised away from a sentence start); ``key`` is the candidate's key;
    ``recurring``: keys the call writes capitalised more than once."""
    if not c.words:
        return "empty"
    lowered = [w.casefold() for w in c.words]
    never = _never_alone()
    if all(w in never or not any(ch.isalpha() for ch in w) or _chat_word(w, never) for w in lowered):
        return "chat, time or address word"
    if _word_use(c):
        return "a word, not a name"  # "Will do", "Mark my words", even where the call names a Will or a Mark
    if key in known:
        return None
    if not c.lower_name and not any(_capitalised(w) for w in c.words):
        return "not capitalised"
    if c.before and (c.before[-1] in _UNITS or c.before[-1].replace(".", "").isdigit()):
        return "after a quantity"
    alpha = [w for w in c.words if any(ch.isalpha() for ch in w)]
    folded = [w.casefold() for w in alpha]
    if c.initial and len(alpha) == 1 and not alpha[0].isupper() and not short_form_relatives(folded[0]) and (
        c.known is None and not is_common_word(folded[0]) and not in_dictionary(folded[0])
        and _typo_of_function_word(folded[0])
    ):
        return "typo of a function word"  # "Amd now I can't smell anything"
    if c.known is not None and (
        not (len(alpha) == 1 and is_common_word(folded[0])) or known_acronym(key) or len(c.words) > len(alpha)
        or any(ch.isupper() for ch in alpha[0][1:]) or (c.after[:1] and c.after[0] in _SINGULAR_VERBS)
    ):
        # "Ryanair", "Real Madrid", "AirPods", "EE", "iPhone 15": well-known names that are not common words, or
        # are written as the name is; "Boots has": a common word that a verb takes as one name
        return None
    if person_use(c):
        return None  # "Mark said he'd come", "Will and I went", "Bring Will too"
    if c.before and not c.initial and all(w[:1].isupper() for w in alpha) and (
        (c.before[-1] in _TITLE_VERBS and (len(alpha) > 1 or not is_common_word(folded[0])))
        or (c.before[-1] in _TITLE_VERBS_MULTI and len(alpha) > 1 and not short_form_relatives(folded[0]))
    ):
        return None  # "watching Get Out", "did you finish Normal People"
    # The model's "Aria Rose", "Will Smith", "Spider-Man" are names: several words, all capitalised, one of them a
    # given name or a name that is not a common word, or joined by a hyphen (not "Sprint Review", "Quick Q").
    named = c.etype is not None and len(alpha) > 1 and all(w[:1].isupper() for w in alpha) and ("-" in c.words or any(
        len(w) > 2 and (given_name(w) or (is_dictionary_name(w) and not is_common_word(w))) for w in folded))
    if c.opened and len(alpha) == 1 and (is_common_word(folded[0]) or is_plain_word(folded[0], rare=True)) and (
        not is_dictionary_name(folded[0])
    ):
        return "common word after a greeting"  # "Good Luck on Monday", "Happy Birthday": not "Thanks Will"
    # "Racecourse Ground tour then": capitalised words that end as a venue's or a place's name does
    # (not "Train Station is shut": a frequent word before the suffix is the sentence's noun)
    named = named or (len(alpha) > 1 and all(w[:1].isupper() for w in alpha) and not is_common_word(folded[0]) and (
        folded[-1] in _PLACE_SUFFIXES or folded[-1] in _ORG_SUFFIXES))
    if c.initial and not named and all(is_common_word(w) for w in folded):
        return "common word at a sentence start"
    if c.initial and not named and all(is_common_word(w) or is_plain_word(w, rare=True) for w in folded):
        return "dictionary word at a sentence start"  # "Slugs ate my lettuce", "Lasagne ok?", "Netball was fun"
    cued = bool(c.before) and c.before[-1] in _PERSON_CUES
    determined = bool(c.before) and c.before[-1] in _DETERMINERS
    singled = (bool(c.before) and c.before[-1] == "the") or key in recurring
    if len(alpha) == 1 and is_common_word(folded[0]) and (
        c.etype is None or alpha[0].isupper() or not is_proper_word(alpha[0])
        or (determined and not is_dictionary_name(folded[0]))
    ) and not cued:
        # "have Football after", "my Lettuce", "TICKETS": a common word capitalised for emphasis; a name
        # that is also a word ("my dog Pepper") comes with a cue, or is a name elsewhere in the call; the
        # model's label on a word often written capitalised keeps it ("the Garage", "Panda", "Switch").
        return "common word capitalised"
    if len(alpha) == 1 and is_plain_word(folded[0]) and not is_proper_word(alpha[0]) and not cued and (
        c.etype is None or determined or not singled
    ):
        # "try Watercolour next", "her Dahlias won": a rarer noun. The model's label keeps one the call names
        # again ("bring Biscuit" ... "Biscuit's collar") or that "the" singles out ("fix the Fender").
        return "dictionary word capitalised"
    if c.etype is None and len(alpha) == 1 and alpha[0].casefold().endswith("ing"):
        return "activity"  # "Swimming at the lido", "Painting is his life"
    if c.etype == EntityType.PERSON and len(alpha) == 1 and len(folded[0]) > 5 and folded[0].endswith("ing") and (
        in_dictionary(folded[0]) or is_common_word(folded[0])
    ) and not is_dictionary_name(folded[0]) and not cued:
        return "activity"  # "Kickboxing is a perfect way to de-stress": the model's person
    if len(alpha) > 1 and all(w.isupper() for w in alpha) and all(is_common_word(w) for w in folded):
        return "shouted words"  # "YES PLEASE", "JUST DOING IT"
    if c.etype is None and len(alpha) > 1 and determined and all(is_common_word(w) or is_plain_word(w) for w in folded):
        return "capitalised words after a determiner"  # "get me a Flat White", "my Leg Day"
    return None


def cue_type(c: Candidate, key: str, speakers: set[str]) -> EntityType | None:
    """The type the context says, or None when only the model's label is to go on."""
    if key in speakers:
        return EntityType.PERSON
    if c.title:
        return EntityType.PRODUCT  # a quoted "Lord of the Rings" is a work, whatever its words say
    lowered = [w.casefold().strip(".") for w in c.words]
    if len(lowered) > 1 and lowered[0] in PERSON_TITLES:
        return EntityType.PERSON
    before = c.before
    if before and before[-1] in _PERSON_CUES:
        return EntityType.PERSON
    if len(before) >= 2 and before[-2:] in (["name", "is"], ["name", "'s"], ["named", "as"]):
        return EntityType.PERSON
    after = c.after
    if len(after) >= 2 and after[0] in _POSSESSIVE and after[1] in _PERSON_POSSESSIONS:
        return EntityType.PERSON  # "Becca's wedding", "Dan's mum", "Pepper's ears"
    if after[:2] in (["and", "i"], ["and", "me"]) or before[-2:] in (["looking", "after"], ["look", "after"],
                                                                     ["looked", "after"], ["looks", "after"]):
        return EntityType.PERSON  # "Pepper and I", "looking after Pepper": someone, not something
    if c.known is not None and not (len(lowered) == 1 and short_form_relatives(lowered[0])):  # not "Zara" (Rose)
        owned = bool(before) and (before[-1] in _OWNED or (
            len(before) >= 2 and before[-2] in _THING_VERBS and before[-1] in ("the", "a", "an")))
        if c.known == EntityType.ORGANIZATION and owned and (not after or after[0] in _AFTER_OBJECT):
            # "his new Tesla", "a Lemsip", "he has the Jeep": a thing of the brand, not the company
            return EntityType.PRODUCT
        return c.known  # "Iberia", "Real Madrid", "Man City", "Netflix", "AirPods"
    # The name's own last word: "Fenwick Lane", "Halcyon Labs", "Manchester Marathon".
    if len(lowered) > 1 and lowered[-1] in _EVENT_SUFFIXES:
        return EntityType.CONCEPT
    if len(lowered) > 1 and lowered[-1] in _PLACE_SUFFIXES:
        return EntityType.LOCATION
    if len(lowered) > 1 and lowered[-1] in _ORG_SUFFIXES:
        return EntityType.ORGANIZATION
    if key in nationality_words():
        return EntityType.CONCEPT  # "Thai", "Portuguese": a people or a language, never a person
    first = normalise_name(lowered[0])
    # "Ed Sheeran", "Mark Evans": a given name opens a person's name; a word-name ("Blossom Bridal") only alone
    given = (bool(short_form_relatives(first)) and "and" not in lowered and "&" not in lowered) or (
        len(lowered) == 1 and first in word_names())  # "near Ed Sheeran's flat": a person
    if before and before[-1] in _PERSON_OBJECT_VERBS:
        return EntityType.PERSON  # "tell Priti", "met Rose"
    if after and after[0] in _TEAM_WORDS and not given:
        return EntityType.ORGANIZATION  # "the Spurs game", "Liverpool fans", "NBA games"
    if before and not given and (
        (before[-1] in _TITLE_VERBS and (len(lowered) > 1 or c.etype != EntityType.PERSON))
        or (before[-1] in _TITLE_VERBS_MULTI and len(lowered) > 1)
    ):
        # "watch Bake Off", "finished Normal People", "never seen Get Out"; not "watching LeBron"
        return EntityType.PRODUCT
    if len(before) >= 2 and before[-2] in _THING_VERBS and before[-1] in ("the", "a", "an") and not given:
        return EntityType.PRODUCT  # "get the Snoo", "bought a Dyson"
    if given and _person_verb(after):
        return EntityType.PERSON  # "Florence says hi", "Mark is coming": a given name that does what people do
    if key in place_names() and not (given and c.etype == EntityType.PERSON) and not (
        len(lowered) == 1 and in_dictionary(lowered[0])
    ):  # "Glasgow", "Portugal", "Somerset"; not "Florence" when the model reads a person, nor "Reading"
        return EntityType.LOCATION
    if after and after[0] in _PERSON_VERBS and c.etype != EntityType.LOCATION:
        return EntityType.PERSON
    if len(lowered) == 1 and c.etype not in (EntityType.LOCATION, EntityType.PERSON) and given:
        return EntityType.PERSON  # a given name of the nickname tables ("Freddie"), not a company
    placed = bool(before) and (before[-1] in _PLACE_PREPOSITIONS or (
        before[-1] == "to" and len(before) >= 2 and before[-2] in _MOTION))
    if c.etype in (EntityType.PERSON, EntityType.ORGANIZATION, EntityType.LOCATION, None) and placed and not given:
        return EntityType.LOCATION
    if after and after[0] in _ORG_SUFFIXES and after[0] not in ("co", "group") and not given:
        return EntityType.ORGANIZATION  # "the Old Vic pub", "Foyles cafe", "the Livraria Lello bookshop"
    if after and after[0] in ("flight", "flights", "airline") and not given:
        return EntityType.ORGANIZATION  # "my Vueling flight"
    if after and after[0] == "near" and not given:
        return EntityType.LOCATION  # "Headingley, near the cricket ground"
    at = before[-2:] == ["at", "the"] or (bool(before) and before[-1] == "at")
    if at and c.etype != EntityType.PERSON and not given and not (after and after[0] in _POSSESSIVE):
        # "an interview at Monzo", "drinks at Nightjar", "born at the Royal Berkshire": a named venue that is
        # not a known place (those matched above) is most often a business or institution; "at Maisie's" is not.
        return EntityType.ORGANIZATION
    return None
