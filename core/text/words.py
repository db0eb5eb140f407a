"""Words of a text as the support checks compare them: content-word stems, sentences and stated details.

Shared by the checks that ask whether a text is borne out by others: a fact against the messages it cites
(``extract/grounding``) and an observation's sentences against the messages and facts about its entity
(``observations/support``). Crude on purpose: stems that meet half way ("adopting", "adoption"), stop words
that carry no claim, and a capital inside a sentence as the mark of a name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "MONTHS", "NUMBER_WORDS", "STOPWORDS", "WEEKDAYS", "WORD", "content_words", "detail_words", "split_sentences",
    "stem", "words",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
"""A word, with an apostrophe ending kept ("Kevin's", "don't")."""
MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec"}
WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
NUMBER_WORDS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "twice", "dozen"}
# Function words and the vocabulary every summary uses about anyone ("she has also expressed ..."): they carry
# no claim, so covering them proves nothing and missing them refutes nothing.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves currently recently also often usually
really well still even already always never many much lot lots one ones someone something thing things way
entity person people summary facts fact mentioned mentions stated states says said shared shares expressed
express expresses talked talks discussed discusses describes described noted notes known seems appears
several various different particular including include includes such like likes new
""".split())
_STEM_SUFFIXES = ("ational", "ization", "fulness", "ousness", "iveness", "ements", "ations", "ingly", "ement",
                  "ation", "ities", "ions", "ness", "ment", "ings", "ing", "edly", "ion", "ies", "ied", "ity",
                  "ers", "ive", "ed", "er", "es", "ly", "s")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences at ``.``, ``!`` or ``?`` followed by a space and a capital or digit."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def stem(word: str) -> str:
    """A crude stem (plural, tense and common derivations off), so "adopting" meets "adoption" half way."""
    for suffix in _STEM_SUFFIXES:
        if suffix == "s" and word.endswith(("ss", "us", "is")):
            continue  # "focus", "class", "analysis" are no plurals ("focuses" -> "focus" meets it)
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            root = word[: -len(suffix)]
            # "running" -> "runn" -> "run", "planned" -> "plann" -> "plan" (but "fall", "pass" keep theirs)
            if root[-1] == root[-2] and root[-1] not in "lsz" and root[-1] not in "aeiou":
                root = root[:-1]
            return root
    return word


def words(text: str) -> list[str]:
    """The words of ``text`` in lower case, possessive 's and apostrophes off."""
    return [w.lower().replace("’", "'").removesuffix("'s").replace("'", "") for w in WORD.findall(text)]


def content_words(text: str, ignore: Sequence[str] = ()) -> set[str]:
    """Stems of ``text``'s content words: no stop words, no single letters, none of the words in ``ignore``."""
    skip = {stem(w) for name in ignore for w in words(name)}
    out = set()
    for word in words(text):
        if word in STOPWORDS or len(word) < 2:
            continue
        root = stem(word)
        if root not in skip:
            out.add(root)
    return out


def detail_words(text: str) -> set[str]:
    """The words of ``text`` that state a specific detail: numbers, months, weekdays and capitalised names
    (lower case; a capital at the start of a sentence does not count)."""
    out: set[str] = set()
    for sentence in split_sentences(text) or [text]:
        for i, match in enumerate(WORD.finditer(sentence)):
            raw = match.group(0)
            word = raw.lower().replace("’", "'").removesuffix("'s").replace("'", "")
            specific = any(c.isdigit() for c in word) or word in MONTHS | WEEKDAYS | NUMBER_WORDS
            # A capital that only starts the sentence says nothing; a capital inside it marks a name.
            named = i > 0 and raw[0].isupper() and word not in STOPWORDS and raw.lower() != "i"
            if specific or named:
                out.add(word)
    return out
