"""Which NER spans are names, and of what type: the rules around spaCy's small model for chat text.

spaCy's small English model tags many capitalised chat words as entities ("Congrats", "Wanna", "Nah", "Last
Fri", "ya, Melanie") and often mistypes the rest ("Pepper" the dog as an organisation, "Porto" as a person).
These rules work on the model's spans with the surrounding tokens:

* **Cleaning**: list bullets, leading articles, greetings and interjections ("Congrats Mel" -> "Mel"),
  possessives ("Ed Sheeran's" -> "Ed Sheeran") and dangling punctuation are stripped; a span across a line
  break is cut at it.
* **Is it a name**: dropped when made only of chat words, time words or terms of address
  (``data/not_names.json``); when no word is capitalised (unless it is a known name: a speaker or a name seen
  capitalised in the same call); when it follows a quantity or unit (a recipe line); and when it stands at
  the start of a sentence, line or list item and every word of it is a common lower-case English word
  (``common_words``) that the call never shows as a name elsewhere ("Pottery is fun", "Chocolate Chips then").
* **Type**: cue words say person ("my dog Pepper", "her name is", "a guy called", titles), place ("on
  Gloucester Road", "in Porto") or organisation ("Greenline Studio"); speakers are persons; per call the
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
from ..names import normalise_name, short_form_relatives
from .common_words import is_common_word, is_proper_word

__all__ = ["BULLET", "PERSON_TITLES", "SENTENCE_END", "Candidate", "clean_tokens", "cue_type", "drop_reason",
           "not_name_words"]

_DATA = Path(__file__).resolve().parent.parent / "data" / "not_names.json"
# Words stripped from either end of a span ("Congrats Mel", "ya, Melanie", "Zara btw"); terms of address are
# not stripped ("Uncle Ray" is a name) and only drop a mention made of them alone ("Mum").
_STRIP_KINDS = ("interjections", "chat_spellings", "discourse", "time_words", "generic")
BULLET = re.compile(r"^(?:[-*•·‣◦▪–—>]+|\d{1,3}[.)]|[a-z][.)])$")
_EDGE_PUNCT = "'\"“”‘’`.,;:!?()[]{}<>«»…-–—•*/\\|~_ \t\r\n"
_POSSESSIVE = frozenset({"'s", "’s", "'", "’"})
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
    estate""".split()
)
_ORG_SUFFIXES = frozenset(
    """inc ltd llc plc co corp company studio studios labs lab bank school university college academy
    cafe café bakery bar pub restaurant bistro kitchen books bookshop vets vet dental clinic hospital
    centre center club group stores store shop market foundation trust council agency games records press
    gym fc united""".split()
)
# A person does these ("Tunde swears by Hoka", "Nadia makes a mean one").
_PERSON_VERBS = frozenset(
    """says said say thinks thought loves loved likes liked wants wanted swears swore asked asks told tells texted
    messaged called calls knows knew feels felt makes made cooks cooked is was lives lived works worked
    reckons agrees agreed laughed cried smiled hates hated misses missed""".split()
)
# "in Porto", "near Leeds": a place unless the name is known as a person.
_PLACE_PREPOSITIONS = frozenset({"in", "near", "around", "across", "outside", "visiting", "visit", "toward",
                                 "towards", "via"})
_MOTION = frozenset({"go", "going", "went", "gone", "trip", "flight", "flights", "fly", "flying", "flew", "move",
                     "moving", "moved", "drive", "driving", "drove", "travel", "travelling", "traveling",
                     "holiday", "vacation", "road", "train", "back", "way"})


@lru_cache(maxsize=1)
def not_name_words() -> dict[str, frozenset[str]]:
    """The word lists of ``data/not_names.json`` by kind (lower case)."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    return {k: frozenset(w.casefold() for w in v) for k, v in data.items() if not k.startswith("_")}


@lru_cache(maxsize=1)
def _strippable() -> frozenset[str]:
    words = not_name_words()
    return frozenset().union(*(words[k] for k in _STRIP_KINDS))


@lru_cache(maxsize=1)
def _never_alone() -> frozenset[str]:
    return frozenset().union(*not_name_words().values())


@dataclass
class Candidate:
    """One cleaned span of one text: its words, where it starts, and what precedes it."""

    words: list[str]
    etype: EntityType | None  # the model's label; None for a capitalised run the model left unlabelled
    start: int  # token index of the first kept word
    initial: bool  # first word of a sentence, line or list item
    before: list[str]  # the (up to) three lower-cased words before it, nearest last
    after: list[str] = field(default_factory=list)  # the (up to) two lower-cased words after it

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


def clean_tokens(tokens: Sequence[str], start: int) -> tuple[list[str], int]:
    """Strip a span's bullets, punctuation, articles, possessives and chat words from both ends.

    ``tokens`` are the span's token texts (whitespace tokens included); returns the kept words and the
    offset of the first one within ``tokens`` (relative to ``start``'s caller). A span across a line break is
    cut at the first break that follows a word.
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
    strip = _strippable()
    lead = 0
    while lead < len(words) and (_is_noise(words[lead]) or words[lead] in _POSSESSIVE or words[lead].casefold() in strip
                                 or words[lead].casefold().strip(_EDGE_PUNCT) in strip):
        lead += 1
    words = words[lead:]
    first = first + lead if first >= 0 else 0
    while words and (_is_noise(words[-1]) or words[-1] in _POSSESSIVE or words[-1].casefold() in strip):
        words.pop()
    words = [w.strip(_EDGE_PUNCT) if i in (0, len(words) - 1) else w for i, w in enumerate(words)]
    words = [w for w in words if w]
    if words and words[-1].casefold().endswith(("'s", "’s")) and len(words[-1]) > 2:
        words[-1] = words[-1][:-2]
    return words, first + start


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def drop_reason(c: Candidate, known: set[str], key: str) -> str | None:
    """Why a candidate is not a name, or None to keep it. ``known``: keys of names known in this call
    (speakers, and names seen capitalised away from a sentence start); ``key`` is the candidate's key."""
    if not c.words:
        return "empty"
    lowered = [w.casefold() for w in c.words]
    if all(w in _never_alone() or not any(ch.isalpha() for ch in w) for w in lowered):
        return "chat, time or address word"
    if key in known:
        return None
    if not any(_capitalised(w) for w in c.words):
        return "not capitalised"
    if c.before and (c.before[-1] in _UNITS or c.before[-1].replace(".", "").isdigit()):
        return "after a quantity"
    alpha = [w for w in c.words if any(ch.isalpha() for ch in w)]
    if c.initial and all(is_common_word(w.casefold()) for w in alpha):
        return "common word at a sentence start"
    if len(alpha) == 1 and is_common_word(alpha[0].casefold()) and (
        c.etype is None or alpha[0].isupper() or not is_proper_word(alpha[0])
    ) and not (c.before and c.before[-1] in _PERSON_CUES):
        # "have Football after", "my Lettuce", "TICKETS": a common word capitalised for emphasis; a name
        # that is also a word ("my dog Pepper") comes with a cue, or is a name elsewhere in the call.
        return "common word capitalised"
    if c.etype is None and len(alpha) == 1 and alpha[0].casefold().endswith("ing"):
        return "activity"  # "Swimming at the lido", "Painting is his life"
    return None


def cue_type(c: Candidate, key: str, speakers: set[str]) -> EntityType | None:
    """The type the context says, or None when only the model's label is to go on."""
    if key in speakers:
        return EntityType.PERSON
    lowered = [w.casefold().strip(".") for w in c.words]
    if len(lowered) > 1 and lowered[0] in PERSON_TITLES:
        return EntityType.PERSON
    before = c.before
    if before and before[-1] in _PERSON_CUES:
        return EntityType.PERSON
    if len(before) >= 2 and before[-2:] in (["name", "is"], ["name", "'s"], ["named", "as"]):
        return EntityType.PERSON
    if c.after and c.after[0] in _PERSON_VERBS and c.etype != EntityType.LOCATION:
        return EntityType.PERSON
    if len(lowered) == 1 and c.etype not in (EntityType.LOCATION, EntityType.PERSON) and short_form_relatives(
        normalise_name(lowered[0])
    ):
        return EntityType.PERSON  # a given name of the nickname tables ("Freddie"), not a company
    if len(lowered) > 1 and lowered[-1] in _PLACE_SUFFIXES:
        return EntityType.LOCATION
    if len(lowered) > 1 and lowered[-1] in _ORG_SUFFIXES:
        return EntityType.ORGANIZATION
    given = bool(short_form_relatives(normalise_name(lowered[0])))  # "near Ed Sheeran's flat": a person
    placed = bool(before) and (before[-1] in _PLACE_PREPOSITIONS or (
        before[-1] == "to" and len(before) >= 2 and before[-2] in _MOTION))
    if c.etype in (EntityType.PERSON, EntityType.ORGANIZATION, None) and placed and not given:
        return EntityType.LOCATION
    return None
