"""A fact's citations as both stores edit them (in a fact's metadata): lent by restating facts, taken back.

A fact cites the raw messages it was made of (``FACT_CITES_KEY``). When a later retain says the same thing again,
the restating fact is not stored and the held fact gains its citations, recorded as lent (``FACT_LENT_KEY``): the
fact was made of its own messages, so forgetting a lent message takes the citation back and leaves the fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..models import FACT_CITES_KEY, FACT_LENT_KEY

__all__ = ["lend", "own_citations", "take_back"]


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
