"""Restated facts: a new LLM fact that says what a fact already held says is not stored twice.

The facts job often writes the same fact again from a later message ("Ana works as a nurse" from the first session
and from the fifth). A new fact that is near-identical to a held fact about the same people (most of its content
words shared both ways, close in meaning) is linked to it instead: the held fact gains the new fact's citations
(``UnitBatch.citations``, in the facts job's transaction), so its evidence grows and recall does not show the
same sentence twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..extract.base import ExtractedFact
from ..models import Memory
from ..stores.base import UnitStore, VectorIndex
from ..text.words import content_words

MIN_OVERLAP = 0.8
"""Shared content words over the larger set (Jaccard): "Ana works as a nurse at Santa Maria" and "Ana works as a
nurse" differ in what they say and stay apart."""
MIN_SIMILARITY = 0.85
"""Cosine of the two facts' vectors (which embed their dates too: the same words said a year apart score lower)."""


# Words that turn a statement around: content words ignore them ("not" is a stop word), so "Ana does not work as a
# nurse" shares every content word with "Ana works as a nurse". A fact that says the held one no longer holds is
# news for supersession and recall, not a restatement, and must not lend the held fact its citation. Compared by
# kind, so that "stopped" and "quit", or "used to" and "formerly", still restate each other.
_TURNS = re.compile(r"\b(?:no longer|no more|not|no|never|none|nothing|nobody|cannot|any ?more|used to|formerly|former|"
                    r"stopped|quit|gave up|given up|ex)\b|n['’]t\b", re.IGNORECASE)
_KIND = {"no longer": "ended", "no more": "ended", "anymore": "ended", "any more": "ended", "stopped": "ended",
         "quit": "ended", "gave up": "ended", "given up": "ended", "used to": "former", "formerly": "former",
         "former": "former", "ex": "former"}


def _turns(text: str) -> set[str]:
    """The kinds of words in ``text`` that turn a statement around: ``not`` (any negation), ``ended``, ``former``."""
    out = set()
    for match in _TURNS.finditer(text):
        word = " ".join(match.group(0).lower().replace("’", "'").split())
        out.add(_KIND.get(word, "not"))
    return out


def _overlap(a: str, b: str) -> float:
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def restated(
    store: UnitStore, index: VectorIndex, bank_id: str, document_id: str, units: Sequence[Memory],
    facts: Sequence[ExtractedFact], vectors: np.ndarray,
) -> dict[int, str]:
    """For each new fact (by position) that restates a fact already held in another document, that fact's id."""
    out: dict[int, str] = {}
    if len(vectors) != len(units):
        return out
    for i, (unit, fact) in enumerate(zip(units, facts, strict=True)):
        hits = [(h, s) for h, s in index.query(bank_id, vectors[i], 5) if s >= MIN_SIMILARITY]
        if not hits:
            continue
        names = {e.name.casefold() for e in fact.entities}
        for held in store.get_units(bank_id, [h for h, _ in hits]):
            if held.cites is None or held.superseded_by or held.document_id == document_id:
                continue
            theirs = {n.casefold() for n in held.entities}
            if held.network != unit.network or ((names or theirs) and not names & theirs):
                continue
            if _overlap(held.text, unit.text) >= MIN_OVERLAP and _turns(held.text) == _turns(unit.text):
                out[i] = held.id
                break
    return out
