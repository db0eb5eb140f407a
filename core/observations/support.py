"""Which sentences of an entity summary are supported (paper section 3: observations are objective).

A small model writing an observation repeats itself, states things no memory says, gives one speaker's news to the
other and runs out of room mid-sentence. This module checks each sentence of its answer and keeps only the
sentences that rest on what was said. Two checks share the rules below:

- :func:`check_grounded` (what the observation job uses, issue 36): the evidence is the **raw messages** about the
  entity (the raw units that mention it and those its facts cite), each with its real speaker and date, never the
  facts alone (a fact is the model's reading of a message, and a wrong one made a wrong sentence look supported). A
  kept sentence must also be **whole** (it ends properly; a tail cut off at the length limit goes) and **about the
  entity** (its subject is the entity, or it names the entity). :func:`grounded_facts` sorts the entity's facts the
  same way (what the model is shown beside the messages) and :func:`material_about` cuts the messages down to what
  can speak of the entity.
- :func:`check_support` (kept for callers that hold only facts): the evidence is the facts given.

The rules:

- **Details must be stated.** A name, number, month or weekday in the sentence must occur in some usable message or
  fact (or in the entity's own name): a summary may shorten what was said but never add a place, a date or a count.
  A name it gives ("a parrot named Ricky") must be given so in the messages' own words, not only be a speaker's.
- **Chat lines speak for their speaker.** In ``Speaker: text``, a sentence in the first person ("I lost my job at
  Door Dash") is about the speaker: it supports a summary sentence about the speaker, never one about someone else
  (the subject is the person a sentence names first, else the entity), so the small model's commonest mistake,
  giving one person the other's news, is dropped. In the grounded check, another speaker's sentence supports a claim
  about a speaker only when it names or addresses them; a claim about a pet, a film or a place rests on sentences
  that name it, or say "he"/"it" in a message about it; a question states nothing.
- **Content must be covered.** The sentence's content words (stop words and the entity's name left out, words
  reduced to a crude stem) must be covered to at least ``min_overlap`` by the union of at most
  ``max_support_facts`` facts (or messages), chosen greedily; or the sentence's embedding must reach
  ``min_similarity`` cosine with one usable sentence (a paraphrase shares meaning, not words).
- **Repeats are dropped.** A sentence whose content words were all said by a sentence already kept adds
  nothing and goes, as does one whose embedding is near-identical to a kept one.

The thresholds were chosen on the dev halves of the labelled sets ``observation_support.jsonl`` and (for the
grounded check, with the first) ``observation_grounding.jsonl`` (the benchmarks' data; ``hindsight bench
observations``) and are reported on their test halves.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..text.words import (
    MONTHS,
    NUMBER_WORDS,
    STOPWORDS,
    WEEKDAYS,
    WORD,
    content_words,
    detail_words,
    split_sentences,
    words,
)

__all__ = [
    "GROUNDED_MIN_OVERLAP",
    "GROUNDED_MIN_SIMILARITY",
    "MAX_SUPPORT_FACTS",
    "MIN_OVERLAP",
    "MIN_SIMILARITY",
    "REPEAT_SIMILARITY",
    "SentenceSupport",
    "SupportCheck",
    "check_grounded",
    "check_support",
    "content_words",
    "detail_words",
    "facts_about",
    "grounded_facts",
    "is_whole_sentence",
    "material_about",
    "mentions",
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
NEAR_REPEAT_OVERLAP = 0.7
NEAR_REPEAT_SIMILARITY = 0.85
"""A sentence sharing ``NEAR_REPEAT_OVERLAP`` of its content words (Jaccard) with one kept sentence and this close to it
in meaning says it again in other words: "Akib thinks fried chicken is considered an American food" after "Akib
believes fried chicken is considered an American food over there" (two facts of one message, real chat; 0.75 and
0.94). "Akib moved to Porto" after "Akib works in Porto" shares a third of its words and stays (0.33, 0.87)."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors (``Embedder.embed``)."""

# The word helpers live in the text layer (``text/words``, shared with the facts' grounding check); their names stay
# importable from here.
_WORD, _MONTHS, _WEEKDAYS, _NUMBER_WORDS = WORD, MONTHS, WEEKDAYS, NUMBER_WORDS
_STOPWORDS = STOPWORDS
_words = words


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
    sims, sentence_sims = _similarities(embed, sentences, [p.text for p in known.pieces])
    verdicts: list[SentenceSupport] = []
    said: set[str] = set()
    kept_rows: list[int] = []
    kept_words: dict[int, set[str]] = {}
    for row, sentence in enumerate(sentences):
        found = _evidence(sentence, row, known, entity, sims, max_support_facts)
        repeated = found.words <= said or (sentence_sims is not None and any(
            sentence_sims[row, k] >= repeat_similarity
            or (sentence_sims[row, k] >= NEAR_REPEAT_SIMILARITY and _jaccard(found.words, kept_words[k])
                >= NEAR_REPEAT_OVERLAP) for k in kept_rows))
        reason, fact_rows = _reason(sentence, found, known.names, repeated, min_overlap, min_similarity)
        verdicts.append(SentenceSupport(
            sentence, reason == "supported", [known.ids[i] for i in dict.fromkeys(fact_rows)],
            round(found.overlap, 3), None if found.similarity is None else round(found.similarity, 3), reason))
        if reason == "supported":
            said |= found.words
            kept_rows.append(row)
            kept_words[row] = found.words
    return SupportCheck(verdicts)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


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
    embed: Embed | None, sentences: list[str], texts: list[str]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Cosines of the summary's sentences with the fact (or message) sentences ``texts`` and with each other (None
    without ``embed`` or without facts), from one call of ``embed``."""
    if embed is None or not texts:
        return None, None
    vectors = np.asarray(embed([*sentences, *texts]), dtype=np.float32)
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


# --- The grounded check: a summary against the raw messages about its entity (issue 36) -------------------------
#
# Facts are the model's reading of the messages, and a wrong fact ("Kevin has a cat named Luna", from Paola's "my
# cat Luna") made a wrong sentence look supported. The grounded check reads the messages themselves, each with its
# real speaker, and asks four things of a sentence: is it whole, is it about the entity, does every detail it
# states occur in a message that can speak of its subject, and do those messages cover its content.

GROUNDED_MIN_OVERLAP = 2 / 3
"""``min_overlap`` of the grounded check (raw messages as evidence): chosen on the dev half of both labelled sets
(``hindsight bench observations``), the best F0.5 over the same grid, the middle of the tied values."""
GROUNDED_MIN_SIMILARITY = 0.85
"""``min_similarity`` of the grounded check, chosen with ``GROUNDED_MIN_OVERLAP``."""

_ROLE_LABELS = ("user", "assistant", "human", "ai", "system", "bot", "agent", "tool")
_LINE = re.compile(r"^\s*(?P<date>\[[^\]]{1,40}\])?\s*(?P<text>.*)$", re.DOTALL)
_LABEL = re.compile(r"^(?P<speaker>[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}|" + "|".join(_ROLE_LABELS) + r"):\s+")
_THIRD_PERSON = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself", "they", "them", "their",
                           "theirs", "themselves", "it", "its", "itself"})
_SUBJECT_PRONOUNS = frozenset({"he", "she", "they", "his", "her", "their", "it", "its", "him", "them"})
_NOT_NAMES = _STOPWORDS | _MONTHS | _WEEKDAYS | _NUMBER_WORDS | {"i", "i'm", "i've", "i'd", "i'll"}
# A sentence that ends on one of these was cut off ("He went to the.").
_DANGLING = frozenset("""a an the and or but nor of to with for in on at by from as than that which who whose whom
his her their my its our your this these those into onto about like including such""".split())
_CLOSERS = "\"'”’)]"
_ORDINALS = frozenset({"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"})
# "named Ricky", "called Luna", "her name is Ana": a name a sentence gives to something.
_NAMING = re.compile(r"\b(?:[Nn]ame(?:'s|’s| is| was)|named|called|nicknamed)\s+([A-Z][\w'’-]*)")


def is_whole_sentence(sentence: str) -> bool:
    """Whether ``sentence`` is whole: it ends with ``.``, ``!`` or ``?`` (not an ellipsis), not on a word that leaves
    it hanging ("the", "and", "his"), and its brackets and quotes are closed. A summary clipped at its length limit
    ends mid-phrase ("... enjoyed watching Wes Anderson's"): that tail is no sentence."""
    text = sentence.strip()
    core = text.rstrip(_CLOSERS)
    if not core or core[-1] not in ".!?" or core.endswith("..") or core.endswith("…"):
        return False
    words = _WORD.findall(core)
    if not words or words[-1].lower() in _DANGLING:
        return False
    return text.count("(") == text.count(")") and text.count('"') % 2 == 0 and text.count("“") == text.count("”")


def _name_forms(name: str) -> tuple[str, list[str]]:
    """A name as matched: the whole name (any case), and its first and last words as written (capitalised, at least
    three letters, no stop word), which a message or a summary may use alone ("Wes", "Anderson")."""
    words = [w for w in name.split() if len(w) >= 3 and w.lower() not in _STOPWORDS and w[:1].isupper()]
    return name.strip(), list(dict.fromkeys([*words[:1], *words[-1:]]))


def mentions(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names one of ``names``: the whole name as a word sequence in any case, or the first or last
    word of a longer name written with its capital; a short form counts when a name starts with it ("Mel",
    "Melanie")."""
    return _mentions(text, tuple(n for n in names if n and n.strip()))


@functools.lru_cache(maxsize=65536)
def _mentions(text: str, names: tuple[str, ...]) -> bool:
    capitalised = [w.removesuffix("'s").removesuffix("’s") for w in _WORD.findall(text)
                   if w[:1].isupper() and w.lower() not in _STOPWORDS]
    for name in names:
        whole, parts = _name_forms(name)
        if re.search(rf"(?<![\w]){re.escape(whole)}(?![\w])", text, re.IGNORECASE):
            return True
        if any(w in parts or (parts and _same_name(w, parts[0])) for w in capitalised):
            return True
    return False


@dataclass(frozen=True)
class _Said:
    """One sentence of a raw message, as its speaker said it."""

    message: int
    """Position of its message in the check's input."""
    speaker: str | None
    body: str
    """The sentence alone."""
    text: str
    """The sentence with its message's date and speaker (``[8 May 2023] Paola: ...``): what covers and embeds."""
    first_person: bool
    second_person: bool
    third_person: bool
    question: bool
    names_other: bool
    """It names another speaker ("Jon, a dance studio sounds awesome")."""


def _turns(body: str, speakers: Sequence[str]) -> list[tuple[str | None, str]]:
    """A message line cut into its speakers' turns (a raw unit of several messages reads ``A: ... B: ...``)."""
    label = _LABEL.match(body)
    if label is None:
        return [(None, body)]
    # A label starts the line or follows a sentence's end ("... congrats. Raul: ..."), never inside a sentence.
    pattern = re.compile(r"(?:^|(?<=[.!?\"'”’)]))\s(" + "|".join(re.escape(s) for s in speakers) + r"):\s+")
    parts = pattern.split(" " + body)
    return [(parts[k], parts[k + 1].strip()) for k in range(1, len(parts) - 1, 2)] or [(label.group("speaker"),
                                                                                          body[label.end():])]


_INNER_LABEL = re.compile(r"(?<=[.!?])\s+([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}):\s+(?=\S)")


def _said(lines: Sequence[str]) -> list[_Said]:
    """Every sentence of the message lines, with its speaker and what kind of sentence it is."""
    parsed = []
    for line in lines:
        match = _LINE.match(line)
        date, body = (match.group("date") or "", match.group("text")) if match else ("", line)
        label = _LABEL.match(body)
        parsed.append((date, body, label.group("speaker") if label else None))
    # Speakers: who starts a line, and who speaks after them inside one (a raw unit of several messages).
    starters = {sp for _, _, sp in parsed if sp}
    inner = {m.group(1) for _, body, sp in parsed if sp for m in _INNER_LABEL.finditer(body)}
    speakers = sorted(starters | inner, key=len, reverse=True)
    out: list[_Said] = []
    for index, (date, body, speaker) in enumerate(parsed):
        for turn_speaker, turn in ([(None, body)] if speaker is None else _turns(body, speakers)):
            for sentence in split_sentences(turn) or [turn]:
                words = {w.lower().replace("’", "'") for w in re.findall(r"[A-Za-z'’]+", sentence)}
                said = f"{date} {turn_speaker}: {sentence}" if turn_speaker else f"{date} {sentence}"
                out.append(_Said(
                    index, turn_speaker, sentence, said.strip(), bool(words & _FIRST_PERSON),
                    bool(words & _SECOND_PERSON), bool(words & _THIRD_PERSON),
                    sentence.rstrip(_CLOSERS).endswith("?"),
                    any(o != turn_speaker and _names(sentence, o) for o in speakers if o not in _ROLE_LABELS)))
    return out


@dataclass(frozen=True)
class _Subject:
    """Whom a summary sentence is about."""

    names: tuple[str, ...]
    """The names that refer to its subject (the entity's, when it starts with a pronoun or names no one first)."""
    speaker: str | None
    """The chat speaker its subject is (None: a pet, a film, a place, or no chat at all)."""
    about_entity: bool
    """Its subject is the entity, or it names the entity."""


def _subject(sentence: str, entity_names: Sequence[str], speakers: Sequence[str]) -> _Subject:
    """The subject of a summary sentence: the first name near its start (``Paola's parrot`` is Paola's), or the
    entity when it starts with a pronoun or names no one there."""
    name = _first_name(sentence, entity_names, speakers)
    is_entity = name is None or mentions(name, entity_names) or any(_same_name(name, n) for n in entity_names)
    who = list(entity_names) if is_entity or name is None else [name]
    speaker = next((sp for sp in speakers if any(_same_name(w, sp) for w in who)), None)
    names = tuple(entity_names) if is_entity or name is None else (name, *entity_names)
    # A sentence about the other speaker that names this one ("Kevin finished soccer practice and appreciated the
    # support from Paola") is about the other, not news of a speaker's own: only other entities (a place, a club,
    # a pet) are spoken of in sentences about someone else.
    other_speaker = (not is_entity and speaker is not None
                     and any(_same_name(n, sp) for n in entity_names for sp in speakers))
    return _Subject(names, speaker, is_entity or (not other_speaker and mentions(sentence, entity_names)))


_LEADING_PHRASE = re.compile(
    r"^\s*(?:in|at|on|after|before|during|since|from|by|with|for|when|while|like)\b[^,]{0,60},\s*", re.IGNORECASE)


def _first_name(sentence: str, entity_names: Sequence[str], speakers: Sequence[str]) -> str | None:
    # "In Lisbon, Marta found a flat": the subject comes after a leading phrase.
    sentence = _LEADING_PHRASE.sub("", sentence, count=1)
    tokens = list(_WORD.finditer(sentence))
    for k, match in enumerate(tokens[:8]):
        raw = match.group(0)
        base = raw.lower().replace("’", "'").removesuffix("'s")
        if base in _SUBJECT_PRONOUNS:
            return None
        if not raw[:1].isupper() or base in _NOT_NAMES or any(c.isdigit() for c in raw):
            continue
        if k == 0 and _plain_word(base) and not mentions(raw, [*entity_names, *speakers]):
            continue  # "Running is ...": a capital that only starts the sentence
        run, end = [raw], match.end()
        for nxt in tokens[k + 1:]:
            if sentence[end:nxt.start()] != " " or not nxt.group(0)[:1].isupper() or run[-1].endswith(("'s", "’s")):
                break
            run.append(nxt.group(0))
            end = nxt.end()
        return " ".join(run).removesuffix("'s").removesuffix("’s")
    return None


def _plain_word(word: str) -> bool:
    """A lower-case dictionary word that is never a name (the word lists of the mention rules)."""
    from ..extract.common_words import in_dictionary, is_dictionary_name

    return in_dictionary(word) and not is_dictionary_name(word)


def _names_another(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names someone or something other than ``names`` (a capitalised name inside it)."""
    own = set(_words(" ".join(names)))
    return bool(detail_words(text) - _MONTHS - _WEEKDAYS - _NUMBER_WORDS - own - {"i"}
                - {w for w in detail_words(text) if any(c.isdigit() for c in w)})


def _usable(said: _Said, subject: _Subject, named: bool, about: bool, own_words: bool = False) -> bool:
    """Whether a message sentence can support a claim about ``subject``. ``named``: its message names the entity;
    ``about``: its message names it or a fact about it cites the message.

    A speaker's "I" is that speaker: their own sentences support claims about them (not one addressed to someone
    else), and another speaker's first person supports nothing about them. A sentence that names the subject
    supports it; a plain statement supports it when its message names the entity, one with "he", "she" or "it" when
    its message is about the entity; a question states nothing.

    ``own_words``: a claim about a speaker rests on their own sentences in the first person ("I ...", "my ...") or on
    another's sentence that names them; not on a remark of theirs without "I" (a listener echoing the other's news:
    "The Grand Budapest Hotel is such a delightful watch!" after "I am watching The Grand Budapest Hotel") nor on
    what another says to them ("You'll be an awesome mom").
    """
    if said.question:
        return False
    names_it = mentions(said.body, subject.names)
    if subject.speaker is not None and said.speaker is not None:
        if _same_name(said.speaker, subject.speaker):  # the subject's own words
            if own_words:
                return said.first_person
            return said.first_person or not (said.second_person or said.names_other)
        if said.first_person:  # another speaker's "I" is that speaker
            return False
        return names_it or (said.second_person and not own_words)  # said of the subject, or to them
    if names_it:
        return True
    if said.third_person:  # "he", "it": the entity, in a message about it, unless the sentence names someone else
        return about and not _names_another(said.body, subject.names)
    # The speaker's or the listener's own news ("I will call Kevin soon") is not the entity's.
    return named and not (said.first_person or said.second_person)


@dataclass(frozen=True)
class _Messages:
    """The raw messages of one grounded check, read once for all the summary's sentences."""

    ids: list[str]
    said: list[_Said]
    speakers: list[str]
    named: list[bool]
    """Per message: it names the entity or is said by it."""
    about: list[bool]
    """Per message: it is named, or among the ``about_ids`` (what the entity's facts cite)."""
    names: set[str]
    own_words: bool = False
    """Claims about a speaker rest on their own first-person sentences or on sentences naming them (``_usable``)."""

    @classmethod
    def of(cls, messages: Sequence[tuple[str, str]], entity_names: Sequence[str],
           about_ids: Collection[str] | None, own_words: bool = False) -> _Messages:
        said = _said([str(t) for _, t in messages])
        speakers = sorted({s.speaker for s in said if s.speaker and s.speaker not in _ROLE_LABELS})
        ids = [str(i) for i, _ in messages]
        named = {s.message for s in said if mentions(s.body, entity_names)
                 or (s.speaker is not None and any(_same_name(s.speaker, n) for n in entity_names))}
        about = [i in named or (about_ids is None or ids[i] in about_ids) for i in range(len(ids))]
        names = set().union(*(detail_words(s.text) for s in said)) - _MONTHS - _WEEKDAYS - _NUMBER_WORDS
        return cls(ids, said, speakers, [i in named for i in range(len(ids))], about, names, own_words)

    def usable(self, k: int, subject: _Subject) -> bool:
        """Whether message sentence ``k`` can support a claim about ``subject``."""
        said = self.said[k]
        return _usable(said, subject, self.named[said.message], self.about[said.message], self.own_words)


def check_grounded(
    summary: str,
    messages: Sequence[tuple[str, str]],
    entity: str,
    *,
    aliases: Sequence[str] = (),
    about_ids: Collection[str] | None = None,
    embed: Embed | None = None,
    min_overlap: float = GROUNDED_MIN_OVERLAP,
    min_similarity: float = GROUNDED_MIN_SIMILARITY,
    max_support_facts: int = MAX_SUPPORT_FACTS,
    repeat_similarity: float = REPEAT_SIMILARITY,
    repeats: bool = True,
    own_words: bool = False,
) -> SupportCheck:
    """Check each sentence of ``summary`` about ``entity`` against raw ``messages`` (``(unit_id, line)`` pairs, a
    line ``[8 May 2023] Speaker: text`` as :func:`~hindsight_core.observations.job.fact_line` renders a raw
    unit; date and speaker optional).

    A sentence is kept when it is whole (:func:`is_whole_sentence`; else ``cut off``), it is about the entity (its
    subject is the entity or one of ``aliases``, or it names the entity; else ``other entity``), every name, number,
    month or weekday it states occurs in a message sentence that can speak of its subject (a speaker's first person
    speaks only of that speaker; a name it gives with "named"/"called" must be given so by a message: else ``new
    detail`` or ``wrong name``), it says something no kept sentence said (unless ``repeats`` is False), and at most
    ``max_support_facts`` such messages cover ``min_overlap`` of its content words or one reaches ``min_similarity``
    cosine with it. ``about_ids``: the messages known to be about the entity (its mentions, and what its facts
    cite); a message that names it or is said by it is about it anyway; None: every message is. The verdicts'
    ``fact_ids`` are the ids of the supporting messages. ``own_words``: a sentence about a speaker rests only on
    their own first-person sentences or on sentences naming them (stricter; the extractive observation uses it).
    """
    names = [n for n in (entity, *aliases) if n and n.strip()]
    return _check_sentences(split_sentences(summary), messages, names, about_ids, embed, min_overlap, min_similarity,
                            max_support_facts, repeat_similarity, repeats, own_words)


def _check_sentences(
    sentences: list[str], messages: Sequence[tuple[str, str]], names: list[str], about_ids: Collection[str] | None,
    embed: Embed | None, min_overlap: float, min_similarity: float, max_support_facts: int,
    repeat_similarity: float, repeats: bool, own_words: bool = False,
) -> SupportCheck:
    """:func:`check_grounded` of sentences already split."""
    if not sentences:
        return SupportCheck([])
    known = _Messages.of(messages, names, about_ids, own_words)
    sims, sentence_sims = _similarities(embed, sentences, [s.text for s in known.said])
    verdicts: list[SentenceSupport] = []
    said_words: set[str] = set()
    kept_rows: list[int] = []
    for row, sentence in enumerate(sentences):
        subject = _subject(sentence, names, known.speakers)
        found = _grounded_evidence(sentence, row, known, subject, names, sims, max_support_facts)
        repeated = repeats and (found.words <= said_words or (sentence_sims is not None and any(
            sentence_sims[row, k] >= repeat_similarity for k in kept_rows)))
        fact_rows: list[int]
        if not is_whole_sentence(sentence):
            reason, fact_rows = "cut off", []
        elif not subject.about_entity:
            reason, fact_rows = "other entity", []
        elif found.words and not repeated and _misnamed(sentence, known, subject):
            reason, fact_rows = "wrong name", []
        elif (words_of_sentence(sentence) & _ORDINALS) - found.known_details:  # "first prize" for "second prize"
            reason, fact_rows = "new detail", []
        else:
            reason, fact_rows = _reason(sentence, found, known.names, repeated, min_overlap, min_similarity)
        verdicts.append(SentenceSupport(
            sentence, reason == "supported", [known.ids[i] for i in dict.fromkeys(fact_rows)],
            round(found.overlap, 3), None if found.similarity is None else round(found.similarity, 3), reason))
        if reason == "supported":
            said_words |= found.words
            kept_rows.append(row)
    return SupportCheck(verdicts)


def _grounded_evidence(
    sentence: str, row: int, known: _Messages, subject: _Subject, entity_names: Sequence[str],
    sims: np.ndarray | None, max_support_facts: int,
) -> _Evidence:
    """The cover of ``sentence`` by the message sentences that can speak of its subject (rows of ``known.ids``)."""
    said = known.said
    usable = [k for k in range(len(said)) if known.usable(k, subject)]
    texts = [" ".join(said[k].text for k in usable if said[k].message == i) for i in range(len(known.ids))]
    message_words = [content_words(t, ignore=entity_names) for t in texts]
    known_details = {w for t in (*texts, *entity_names) for w in _words(t)}
    words = content_words(sentence, ignore=entity_names)
    overlap, used = _cover(words, message_words, max_support_facts)
    similarity: float | None = None
    best: int | None = None
    if sims is not None and usable:
        k = max(usable, key=lambda k: float(sims[row, k]))
        similarity, best = float(sims[row, k]), said[k].message
    return _Evidence(words, known_details, overlap, used, similarity, best)


def _misnamed(sentence: str, known: _Messages, subject: _Subject) -> bool:
    """Whether the sentence gives something a name ("named Ricky", "Ricky's name is Paola") that no usable message
    sentence gives in its own words (a speaker's name in front of their message names no one)."""
    given = {m.group(1).removesuffix("'s").removesuffix("’s").lower() for m in _NAMING.finditer(sentence)}
    if not given:
        return False
    bodies = " ".join(s.body for k, s in enumerate(known.said) if known.usable(k, subject))
    return bool(given - {w for w in _words(bodies)})


def grounded_facts(
    facts: Sequence[tuple[str, str]],
    messages: Sequence[tuple[str, str]],
    entity: str,
    *,
    aliases: Sequence[str] = (),
    about_ids: Collection[str] | None = None,
    embed: Embed | None = None,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``facts`` (``(id, text)``) split into those the raw ``messages`` support (every sentence, by
    :func:`check_grounded`, each fact alone) and those they do not (a fact that gives one speaker's news to the
    other, or states what no message about the entity says). Returns ``(kept, dropped)``."""
    kept: list[tuple[str, str]] = []
    dropped: list[tuple[str, str]] = []
    owners: list[int] = []
    sentences: list[str] = []
    for index, (_, text) in enumerate(facts):
        parts = split_sentences(str(text)) or [str(text)]
        # A fact may end without a full stop; it is judged as the whole sentence it is meant to be.
        sentences.extend(p if is_whole_sentence(p) else p.rstrip(" ,;:") + "." for p in parts)
        owners.extend([index] * len(parts))
    names = [n for n in (entity, *aliases) if n and n.strip()]
    # One pass over every fact's sentences (one embedding call); without repeats each is judged on its own.
    check = _check_sentences(sentences, messages, names, about_ids, embed, GROUNDED_MIN_OVERLAP,
                             GROUNDED_MIN_SIMILARITY, MAX_SUPPORT_FACTS, REPEAT_SIMILARITY, repeats=False)
    for index, (fact_id, text) in enumerate(facts):
        ok = [v.supported for v, owner in zip(check.sentences, owners, strict=True) if owner == index]
        (kept if ok and all(ok) else dropped).append((str(fact_id), str(text)))
    return kept, dropped


def material_about(
    messages: Sequence[tuple[str, str]],
    entity: str,
    *,
    aliases: Sequence[str] = (),
    about_ids: Collection[str] | None = None,
) -> list[tuple[str, str]]:
    """The message lines cut down to what can speak of ``entity`` (what the summary prompt shows): each message
    keeps its sentences that :func:`check_grounded` would let support a sentence about the entity (another
    speaker's "I ..." and every question go), with its date and speaker; a message with nothing left goes."""
    names = [n for n in (entity, *aliases) if n and n.strip()]
    known = _Messages.of(messages, names, about_ids)
    subject = _subject(entity, names, known.speakers)
    out: list[tuple[str, str]] = []
    for index, (message_id, line) in enumerate(messages):
        kept = [s for k, s in enumerate(known.said) if s.message == index and known.usable(k, subject)]
        if not kept:
            continue
        match = _LINE.match(str(line))
        date = (match.group("date") or "") if match else ""
        turns: list[str] = []
        for s in kept:
            if turns and s.speaker is not None and turns[-1].startswith(f"{s.speaker}: "):
                turns[-1] += f" {s.body}"
            else:
                turns.append(f"{s.speaker}: {s.body}" if s.speaker else s.body)
        out.append((str(message_id), " ".join(x for x in (date, *turns) if x)))
    return out
