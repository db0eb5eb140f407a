"""A fact's citations as both stores edit them (in a fact's metadata): lent by restating facts, taken back.

A fact cites the raw messages it was made of (``FACT_CITES_KEY``). When a later retain says the same thing again,
the restating fact is not stored and the held fact gains its citations, recorded as lent (``FACT_LENT_KEY``): the
fact was made of its own messages, so forgetting a lent message takes the citation back and leaves the fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..models import FACT_CITES_KEY, FACT_LENT_KEY, SUPERSEDED_BY_KEY, SUPERSESSION_KEY, VALID_UNTIL_KEY

__all__ = ["inherit", "lend", "own_citations", "rests_on_inherited", "take_back"]


def own_citations(meta: dict[str, Any]) -> list[str]:
    """The messages a fact was made of: its citations less those lent by restating facts."""
    lent = {str(c) for c in meta.get(FACT_LENT_KEY) or []}
    return [str(c) for c in meta.get(FACT_CITES_KEY) or [] if str(c) not in lent]


def lend(meta: dict[str, Any], cites: Iterable[str]) -> bool:
    """Add a restating fact's citations to a held fact's, recorded as lent; returns whether anything changed."""
    held = [str(c) for c in meta.get(FACT_CITES_KEY) or []]
    new = [c for c in dict.fromkeys(str(c) for c in cites) if c not in held]
    if not new:
        return False
    meta[FACT_CITES_KEY] = [*held, *new]
    meta[FACT_LENT_KEY] = list(dict.fromkeys([*(str(c) for c in meta.get(FACT_LENT_KEY) or []), *new]))
    return True


def take_back(meta: dict[str, Any], ids: Sequence[str] | set[str], *, lent_only: bool = False) -> bool:
    """Remove ``ids`` from a fact's citations (with ``lent_only``, only those lent to it); returns whether it
    changed."""
    gone = set(ids)
    held = [str(c) for c in meta.get(FACT_CITES_KEY) or []]
    lent = [str(c) for c in meta.get(FACT_LENT_KEY) or []]
    drop = gone & (set(lent) if lent_only else set(held) | set(lent))
    if not drop:
        return False
    meta[FACT_CITES_KEY] = [c for c in held if c not in drop]
    kept_lent = [c for c in lent if c not in drop]
    if kept_lent:
        meta[FACT_LENT_KEY] = kept_lent
    else:
        meta.pop(FACT_LENT_KEY, None)
    return True


def inherit(meta: dict[str, Any], cited: dict[str, dict[str, Any]]) -> bool:
    """After citations were taken back: a current fact whose remaining citations are all superseded is history like
    them, superseded by what superseded the first of them (the rule of the supersession detector's ``follow``, which
    a lent citation of a message that still held had kept from it). ``cited``: the metadata of the fact's cited
    units by id (a missing one holds nothing). Returns whether ``meta`` changed."""
    cites = [str(c) for c in meta.get(FACT_CITES_KEY) or []]
    if not cites or meta.get(SUPERSEDED_BY_KEY):
        return False
    sources = [cited.get(c) for c in cites]
    if any(m is None or not m.get(SUPERSEDED_BY_KEY) or not m.get(VALID_UNTIL_KEY) for m in sources):
        return False
    first = sources[0]
    assert first is not None  # checked above; for the type checker
    meta.update({SUPERSEDED_BY_KEY: first[SUPERSEDED_BY_KEY], VALID_UNTIL_KEY: first[VALID_UNTIL_KEY],
                 SUPERSESSION_KEY: {"by": "rule", "via": cites[0]}})
    return True


def rests_on_inherited(meta: dict[str, Any], inherited: dict[str, dict[str, Any]]) -> bool:
    """An observation written from a fact that ``inherit`` just superseded (``inherited``: fact id -> its metadata) is
    superseded by the same memory, as ``ObservationWriter.follow`` does for any superseded fact; returns whether
    ``meta`` changed."""
    basis = meta.get("facts")
    if not inherited or not meta.get("entity_id") or not isinstance(basis, list) or meta.get(SUPERSEDED_BY_KEY):
        return False
    hit = next((str(b) for b in basis if str(b) in inherited), None)
    if hit is None:
        return False
    fact = inherited[hit]
    meta.update({SUPERSEDED_BY_KEY: fact[SUPERSEDED_BY_KEY], VALID_UNTIL_KEY: fact[VALID_UNTIL_KEY],
                 SUPERSESSION_KEY: {"by": "rests on", "memory": hit}})
    return True
