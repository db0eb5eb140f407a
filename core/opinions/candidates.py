"""Which opinions new facts bear on: the (opinion, evidence) pairs the opinion job asks the model about.

An opinion and a new fact are paired when any of these holds:

1. the store links both to a common entity;
2. one of the opinion's names is one of the fact's entities, or appears as a whole word in the fact's text.
   An opinion's names are its entity list plus the bank's entities that its own text names: an opinion added or
   formed without an entity list ("Maya is a good person to ask for help with a dog") still names Maya. The
   fact's text is searched because the recogniser misses names, e.g. at the start of a sentence or right after a
   raw memory's "Jonah: " speaker prefix;
3. their vectors are close (cosine >= ``CaraSettings.opinion_similarity``).

Names come before vectors because of issue 25's case: "Jonah: Maya forgot to feed Pepper twice ..." against
"Maya is a good person to ask for help with a dog" has cosine 0.57 with MiniLM (the threshold is 0.6), the
recogniser found only Jonah and Pepper, and the opinion had no entity list, so no pair was made, the model was
never asked and the opinion recorded no step. A pair that is not really related costs one model call and
records a neutral step; a missed pair silently loses the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from ..models import Entity, Memory, Network
from ..stores.base import EntityStore, UnitStore, VectorFilter, VectorIndex
from ..text.names import normalise_name

__all__ = ["MIN_NAME_CHARS", "SIMILAR_OPINIONS", "known_names", "name_pattern", "opinion_names", "related_opinions"]

SIMILAR_OPINIONS = 5
"""Nearest opinions considered per new fact by vector."""
MIN_NAME_CHARS = 3
"""Shorter names ("Al", "Bo") are not searched for in a fact's text: as bare words they match too much."""
_MAX_SPAN_WORDS = 4
"""Longest run of capitalised words looked up as one name ("Gloucester Road", "Mary J. Blige")."""

_WORD = re.compile(r"[^\W\d_][\w'’.-]*")


class CandidateStore(UnitStore, EntityStore, Protocol):
    """What pairing reads: the opinions and the facts' entities."""


def known_names(entities: Iterable[Entity]) -> dict[str, list[str]]:
    """The bank's entities by normalised name or alias -> their written forms (name first, then aliases)."""
    known: dict[str, list[str]] = {}
    for entity in entities:
        forms = [f.strip() for f in (entity.name, *entity.aliases) if f and f.strip()]
        for key in {normalise_name(f) for f in forms}:
            known[key] = list(dict.fromkeys([*known.get(key, []), *forms]))
    return known


def _capitalised_spans(text: str) -> list[str]:
    """Runs of capitalised words of ``text`` and their sub-runs of up to ``_MAX_SPAN_WORDS`` words."""
    runs: list[list[str]] = [[]]
    last_end = 0
    for match in _WORD.finditer(text):
        word = match.group().rstrip(".'’-")
        gap = text[last_end:match.start()]
        last_end = match.end()
        if not word or not word[0].isupper() or (runs[-1] and gap.strip()):
            runs.append([])  # a lower-case word or punctuation between two words ends a run
        if word and word[0].isupper():
            runs[-1].append(word)
    spans: list[str] = []
    for run in runs:
        for size in range(min(len(run), _MAX_SPAN_WORDS), 0, -1):
            spans.extend(" ".join(run[i:i + size]) for i in range(len(run) - size + 1))
    return spans


def opinion_names(opinion: Memory, known: Mapping[str, Sequence[str]]) -> list[str]:
    """An opinion's names: its entity list, and each bank entity its text names (with that entity's written
    forms, so "Maya's dog" in the opinion finds "Maya" in a fact). ``known`` is :func:`known_names`."""
    names = [e.strip() for e in opinion.entities if e.strip()]
    for span in _capitalised_spans(opinion.text):
        forms = known.get(normalise_name(span))
        if forms:
            names.extend(forms)
    return list(dict.fromkeys(names))


def name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """A whole-word, case-sensitive pattern of the names of at least ``MIN_NAME_CHARS`` characters, or None."""
    usable = sorted({n.strip() for n in names if len(n.strip()) >= MIN_NAME_CHARS}, key=len, reverse=True)
    if not usable:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in usable) + r")(?!\w)")


def related_opinions(
    store: CandidateStore, index: VectorIndex, bank_id: str, new: Sequence[Memory], similarity: float
) -> dict[str, set[str]]:
    """Opinion id -> ids of the facts in ``new`` that bear on it (see the module for the three rules)."""
    related: dict[str, set[str]] = {}
    for fact in new:
        entity_ids = [e.id for n in fact.entities if (e := store.find_entity(bank_id, n)) is not None]
        for op_id in store.units_in_network(bank_id, Network.OPINION, entity_ids) if entity_ids else []:
            related.setdefault(op_id, set()).add(fact.id)
    opinions = store.get_units(bank_id, store.units_in_network(bank_id, Network.OPINION))
    if opinions:
        known = known_names(store.list_entities(bank_id))
        fact_keys = {fact.id: {normalise_name(e) for e in fact.entities} for fact in new}
        for opinion in opinions:
            names = opinion_names(opinion, known)
            keys = {normalise_name(n) for n in names}
            pattern = name_pattern(names)
            for fact in new:
                if keys & fact_keys[fact.id] or (pattern is not None and pattern.search(fact.text)):
                    related.setdefault(opinion.id, set()).add(fact.id)
    opinions_only = VectorFilter(networks=(Network.OPINION,))
    for fact_id, vector in index.get_embeddings(bank_id, [m.id for m in new]).items():
        for op_id, sim in index.query(bank_id, vector, SIMILAR_OPINIONS, opinions_only):
            if sim >= similarity:
                related.setdefault(op_id, set()).add(fact_id)
    return related
