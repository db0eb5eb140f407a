"""Which sentences of an entity summary the entity's facts support (paper section 3: observations are objective).

A small model writing an observation repeats itself and states things no memory says. This module checks each
sentence of its answer against the facts it was given and keeps only the sentences that rest on them:

- **Details must be stated.** A name, number, month or weekday in the sentence must occur in some fact (or in
  the entity's own name): a summary may shorten the facts but never add a place, a date or a count.
- **Chat lines speak for their speaker.** In a fact ``Speaker: text``, a sentence in the first person ("I lost
  my job at Door Dash") is about the speaker: it supports a summary sentence about the speaker, never one about
  someone else (the subject is the speaker a sentence names first, else the entity), so the small model's
  commonest mistake, giving one person the other's news, is dropped.
- **Content must be covered.** The sentence's content words (stop words and the entity's name left out, words
  reduced to a crude stem) must be covered to at least ``min_overlap`` by the union of at most
  ``max_support_facts`` facts, chosen greedily; or the sentence's embedding must reach ``min_similarity``
  cosine with one fact sentence (a paraphrase shares meaning, not words).
- **Repeats are dropped.** A sentence whose content words were all said by a sentence already kept adds
  nothing and goes, as does one whose embedding is near-identical to a kept one.

The thresholds were chosen on the dev half of the labelled set ``observation_support.jsonl`` (the benchmarks'
data; ``hindsight bench observations``) and are reported on its test half.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "MAX_SUPPORT_FACTS",
    "MIN_OVERLAP",
    "MIN_SIMILARITY",
    "REPEAT_SIMILARITY",
    "SentenceSupport",
    "SupportCheck",
    "check_support",
    "content_words",
    "detail_words",
    "facts_about",
    "split_sentences",
]

MIN_OVERLAP = 2 / 3
"""Share of a sentence's content words that its supporting facts must contain: two in three. Chosen on the dev
half of the labelled set: the best F0.5 (precision counts double) over a grid, the middle of the tied values."""
MIN_SIMILARITY = 0.85
"""Cosine with one fact sentence that supports a sentence on its own (a paraphrase; chosen with MIN_OVERLAP)."""
MAX_SUPPORT_FACTS = 3
"""A sentence may merge at most this many facts: covering it with more would accept any mix of common words."""
REPEAT_SIMILARITY = 0.95
"""Cosine to a kept sentence above which a sentence says the same thing again."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors (``Embedder.embed``)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec"}
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
_NUMBER_WORDS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "twice", "dozen"}
# Function words and the vocabulary every summary uses about anyone ("she has also expressed ..."): they carry
# no claim, so covering them proves nothing and missing them refutes nothing.
_STOPWORDS = frozenset("""
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


def _stem(word: str) -> str:
    """A crude stem (plural, tense and common derivations off), so "adopting" meets "adoption" half way."""
    for suffix in _STEM_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            # "running" -> "runn" -> "run", "planned" -> "plann" -> "plan" (but "fall", "pass" keep theirs)
            if stem[-1] == stem[-2] and stem[-1] not in "lsz" and stem[-1] not in "aeiou":
                stem = stem[:-1]
            return stem
    return word


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'").removesuffix("'s").replace("'", "") for w in _WORD.findall(text)]


def content_words(text: str, ignore: Sequence[str] = ()) -> set[str]:
    """Stems of ``text``'s content words: no stop words, no single letters, none of the words in ``ignore``."""
    skip = {_stem(w) for name in ignore for w in _words(name)}
    out = set()
    for word in _words(text):
        if word in _STOPWORDS or len(word) < 2:
            continue
        stem = _stem(word)
        if stem not in skip:
            out.add(stem)
    return out


def detail_words(text: str) -> set[str]:
    """The words of ``text`` that state a specific detail: numbers, months, weekdays and capitalised names
    (lower case; a capital at the start of a sentence does not count)."""
    out: set[str] = set()
    for sentence in split_sentences(text) or [text]:
        for i, match in enumerate(_WORD.finditer(sentence)):
            raw = match.group(0)
            word = raw.lower().replace("’", "'").removesuffix("'s").replace("'", "")
            specific = any(c.isdigit() for c in word) or word in _MONTHS | _WEEKDAYS | _NUMBER_WORDS
            # A capital that only starts the sentence says nothing; a capital inside it marks a name.
            named = i > 0 and raw[0].isupper() and word not in _STOPWORDS and raw.lower() != "i"
            if specific or named:
                out.add(word)
    return out


@dataclass(frozen=True)
class SentenceSupport:
    """The verdict on one sentence of a summary."""

    text: str
    supported: bool
    fact_ids: list[str] = field(default_factory=list)
    """The facts it rests on (empty when it is dropped)."""
    overlap: float = 0.0
    """Share of its content words covered by its best (at most ``max_support_facts``) facts."""
    similarity: float | None = None
    """Best cosine with one fact (None without an embedder)."""
    reason: str = "supported"
    """``supported``, ``unsupported`` (too little covered), ``new detail`` (a name, number or date no fact
    states), ``repeated`` (says a kept sentence again) or ``empty`` (no content word at all)."""


@dataclass(frozen=True)
class SupportCheck:
    """Every sentence of a summary with its verdict; ``text`` and ``fact_ids`` are what is kept."""

    sentences: list[SentenceSupport]

    @property
    def kept(self) -> list[SentenceSupport]:
        """The sentences kept, in the summary's order."""
        return [s for s in self.sentences if s.supported]

    @property
    def text(self) -> str:
        """The kept sentences joined; empty when none is kept."""
        return " ".join(s.text for s in self.kept)

    @property
    def fact_ids(self) -> list[str]:
        """Ids of the facts the kept sentences rest on, first use first, each once."""
        return list(dict.fromkeys(f for s in self.kept for f in s.fact_ids))

    @property
    def supported_share(self) -> float:
        """Share of the summary's sentences that are kept (1.0 for an empty summary: nothing false was said)."""
        return len(self.kept) / len(self.sentences) if self.sentences else 1.0


def _cover(words: set[str], facts: list[set[str]], max_facts: int) -> tuple[float, list[int]]:
    """Greedy cover of ``words`` by at most ``max_facts`` facts: (share covered, indices of the facts used)."""
    left: set[str] = set(words)
    used: list[int] = []
    while left and len(used) < max_facts:
        best = max(range(len(facts)), key=lambda i: (len(left & facts[i]), -i), default=None)
        if best is None or not left & facts[best]:
            break
        used.append(best)
        left -= facts[best]
    return (1.0 - len(left) / len(words)) if words else 0.0, used


_FACT_PREFIX = re.compile(
    r"^\s*(?P<date>\[[^\]]{1,40}\])?\s*(?:(?P<speaker>[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+)?(?P<text>.*)$",
    re.DOTALL)
_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've",
                           "we'll", "we'd", "our", "ours", "ourselves"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "you're", "you've", "you'll", "you'd"})
_PRONOUNS = frozenset({"he", "she", "they", "his", "her", "their", "it", "its", "him", "them"})


def words_of_sentence(text: str) -> set[str]:
    """Every word of ``text``, lower case, possessive and apostrophes dropped."""
    return set(_words(text))


@dataclass(frozen=True)
class _Piece:
    """One sentence of a fact: who said it (chat facts are ``Speaker: text``), and whether it speaks of the
    speaker (first person) rather than of someone else."""

    fact: int
    speaker: str | None
    text: str
    first_person: bool
    second_person: bool
    names_other: bool = False
    """It names another speaker ("Jon, a dance studio sounds awesome"): without "I", it is about them."""

    def speaks_of(self, subject: str | None) -> bool:
        """Whether this sentence can support a claim about ``subject`` (a speaker; None: anyone)."""
        if subject is None or self.speaker is None:
            return True
        if self.speaker == subject:  # "I ..." or a plain statement; "You'd be a great counselor" is not about me
            return self.first_person or not (self.second_person or self.names_other)
        return not self.first_person  # another speaker's "I ..." is about that speaker


def _pieces(facts: Sequence[str]) -> list[_Piece]:
    out = []
    for i, line in enumerate(facts):
        match = _FACT_PREFIX.match(line)
        date, speaker, body = (match.group("date") or "", match.group("speaker"), match.group("text")) if match \
            else ("", None, line)
        for sentence in split_sentences(body) or [body]:
            words = {w.lower().replace("’", "'") for w in re.findall(r"[A-Za-z'’]+", sentence)}
            # Date and speaker ride along with each sentence: "in May 2023" is stated when the fact is dated so,
            # and the speaker's name is part of what the sentence says ("Maya: I took him to the vet").
            said = f"{date} {speaker}: {sentence}" if speaker else f"{date} {sentence}"
            out.append(_Piece(i, speaker, said.strip(), bool(words & _FIRST_PERSON), bool(words & _SECOND_PERSON)))
    speakers = {p.speaker for p in out if p.speaker}
    return [replace(p, names_other=any(sp != p.speaker and _names(p.text.split(": ", 1)[-1], sp) for sp in speakers))
            for p in out]


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` (its first word, as a whole word)."""
    first = name.split()[0]
    return re.search(rf"\b{re.escape(first)}\b", text) is not None


def _same_name(a: str, b: str) -> bool:
    """``Mel`` and ``Melanie``, ``Jon`` and ``Jon Smith``: one name starts the other (case-insensitive)."""
    a, b = a.lower().strip(), b.lower().strip()
    short, long = sorted((a, b), key=len)
    return bool(short) and len(short) >= 3 and long.startswith(short)


def facts_about(facts: Sequence[tuple[str, str]], entity: str) -> list[tuple[str, str]]:
    """``facts`` cut down to what can speak of ``entity``: when the entity is one of the chat speakers, each
    ``Speaker: text`` fact keeps only its sentences about the entity (not another speaker's "I lost my job at
    Door Dash", not the entity's own "You'd be a great counselor"); a fact with none left goes. Other facts
    (narrative ones, or any fact when the entity is no speaker) are kept as they are."""
    pieces = _pieces([str(t) for _, t in facts])
    speakers = {p.speaker for p in pieces if p.speaker}
    subject = next((sp for sp in speakers if _same_name(entity, sp)), None)
    if subject is None:
        return [(str(i), str(t)) for i, t in facts]
    out = []
    for index, (fact_id, text) in enumerate(facts):
        kept = [p for p in pieces if p.fact == index and p.speaks_of(subject)]
        if not kept:
            continue
        if len(kept) == sum(1 for p in pieces if p.fact == index):
            out.append((str(fact_id), str(text)))
            continue
        match = _FACT_PREFIX.match(str(text))
        date, speaker = (match.group("date") or "", match.group("speaker")) if match else ("", None)
        body = " ".join(p.text.split(": ", 1)[1] if p.speaker else p.text.removeprefix(date).strip() for p in kept)
        out.append((str(fact_id), " ".join(x for x in (date, f"{speaker}: {body}" if speaker else body) if x)))
    return out


def _subject_speaker(sentence: str, entity: str, speakers: set[str]) -> str | None:
    """The speaker a summary sentence is about: a speaker named first, else (a pronoun, the entity, anything
    else) the entity when it is a speaker; None when the subject is no speaker (then any fact may support)."""
    words = _WORD.findall(sentence)
    first = words[0].removesuffix("'s").removesuffix("’s") if words else ""
    subject = entity if not first or first.lower() in _PRONOUNS or not first[0].isupper() else first
    for name in (subject, entity):
        found = next((sp for sp in speakers if _same_name(name, sp)), None)
        if found is not None:
            return found
    return None


def check_support(
    summary: str,
    facts: Sequence[tuple[str, str]],
    entity: str = "",
    *,
    embed: Embed | None = None,
    min_overlap: float = MIN_OVERLAP,
    min_similarity: float = MIN_SIMILARITY,
    max_support_facts: int = MAX_SUPPORT_FACTS,
    repeat_similarity: float = REPEAT_SIMILARITY,
) -> SupportCheck:
    """Check each sentence of ``summary`` against ``facts`` (``(fact_id, text)`` pairs) about ``entity``.

    Facts may carry a date (``[8 May 2023] ...``) and a speaker (``Caroline: ...``); only the fact sentences that
    can speak of the summary sentence's subject count (first-person sentences of another speaker do not). A
    sentence is kept when every detail it states (name, number, month, weekday) occurs in those or in the
    entity's name, it says something no kept sentence said, and either at most ``max_support_facts`` facts cover
    ``min_overlap`` of its content words or one fact sentence's embedding reaches ``min_similarity`` cosine with
    it (only with ``embed``). Its ``fact_ids`` are the covering facts, plus the most similar one when similarity
    decided.
    """
    sentences = split_sentences(summary)
    if not sentences:
        return SupportCheck([])
    known = _Facts.of(facts)
    sims, sentence_sims = _similarities(embed, sentences, known.pieces)
    verdicts: list[SentenceSupport] = []
    said: set[str] = set()
    kept_rows: list[int] = []
    for row, sentence in enumerate(sentences):
        found = _evidence(sentence, row, known, entity, sims, max_support_facts)
        repeated = found.words <= said or (sentence_sims is not None and any(
            sentence_sims[row, k] >= repeat_similarity for k in kept_rows))
        reason, fact_rows = _reason(sentence, found, known.names, repeated, min_overlap, min_similarity)
        verdicts.append(SentenceSupport(
            sentence, reason == "supported", [known.ids[i] for i in dict.fromkeys(fact_rows)],
            round(found.overlap, 3), None if found.similarity is None else round(found.similarity, 3), reason))
        if reason == "supported":
            said |= found.words
            kept_rows.append(row)
    return SupportCheck(verdicts)


@dataclass(frozen=True)
class _Facts:
    """The facts of one ``check_support`` call, read once for all the summary's sentences."""

    ids: list[str]
    pieces: list[_Piece]
    speakers: set[str]
    names: set[str]
    """Words some fact writes as a name ("Door Dash"): a detail even when the summary writes it in lower case."""

    @classmethod
    def of(cls, facts: Sequence[tuple[str, str]]) -> _Facts:
        """``facts`` (``(fact_id, text)`` pairs) cut into sentences, with their speakers and names."""
        pieces = _pieces([str(t) for _, t in facts])
        names = set().union(*(detail_words(p.text) for p in pieces)) - _MONTHS - _WEEKDAYS - _NUMBER_WORDS
        return cls([str(i) for i, _ in facts], pieces, {p.speaker for p in pieces if p.speaker}, names)


def _similarities(
    embed: Embed | None, sentences: list[str], pieces: list[_Piece]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Cosines of the summary's sentences with the fact sentences and with each other (None without ``embed``
    or without facts), from one call of ``embed``."""
    if embed is None or not pieces:
        return None, None
    vectors = np.asarray(embed([*sentences, *(p.text for p in pieces)]), dtype=np.float32)
    own = vectors[: len(sentences)]
    return own @ vectors[len(sentences):].T, own @ own.T


@dataclass(frozen=True)
class _Evidence:
    """What the facts say towards one summary sentence."""

    words: set[str]
    """The sentence's content words."""
    known_details: set[str]
    """Every word of the usable fact sentences and of the entity's name."""
    overlap: float
    used: list[int]
    """The covering facts (rows of ``_Facts.ids``)."""
    similarity: float | None
    best: int | None
    """The fact of the most similar usable fact sentence (with ``similarity``; None without embeddings)."""


def _evidence(
    sentence: str, row: int, known: _Facts, entity: str, sims: np.ndarray | None, max_support_facts: int
) -> _Evidence:
    """The cover of ``sentence`` (row ``row`` of ``sims``) by the fact sentences that can speak of its subject."""
    # In a chat line, "I lost my job" speaks of the speaker: it supports a sentence about the speaker, not
    # one about the person addressed (the model's commonest mistake is to give one person the other's news).
    subject = _subject_speaker(sentence, entity, known.speakers)
    pieces = known.pieces
    usable = [k for k, p in enumerate(pieces) if p.speaks_of(subject)]
    texts = [" ".join(pieces[k].text for k in usable if pieces[k].fact == i) for i in range(len(known.ids))]
    fact_words = [content_words(t, ignore=[entity]) for t in texts]
    # A detail counts as stated when its word occurs in a usable sentence (which need not capitalise it).
    known_details = {w for t in (*texts, entity) for w in _words(t)}
    words = content_words(sentence, ignore=[entity])
    overlap, used = _cover(words, fact_words, max_support_facts)
    similarity: float | None = None
    best: int | None = None
    if sims is not None and usable:
        k = max(usable, key=lambda k: float(sims[row, k]))
        similarity, best = float(sims[row, k]), pieces[k].fact
    return _Evidence(words, known_details, overlap, used, similarity, best)


def _reason(
    sentence: str, found: _Evidence, fact_names: set[str], repeated: bool, min_overlap: float,
    min_similarity: float,
) -> tuple[str, list[int]]:
    """The verdict's reason (see ``SentenceSupport.reason``) and, when supported, the facts it rests on."""
    if not found.words:
        return "empty", []
    if repeated:
        return "repeated", []
    if (detail_words(sentence) | (words_of_sentence(sentence) & fact_names)) - found.known_details:
        return "new detail", []
    if found.overlap >= min_overlap:
        return "supported", found.used
    if found.similarity is not None and found.best is not None and found.similarity >= min_similarity:
        return "supported", [found.best, *found.used]
    return "unsupported", []
