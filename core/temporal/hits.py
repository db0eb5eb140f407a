"""A rule's match before composition: its span, window and granularity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .model import Relation
from .units import _Win


@dataclass(slots=True)
class _Hit:
    """One rule's match; composition later widens its span and reshapes its window."""

    start: int
    end: int
    win: _Win | None  # None and no anchor: rejected (consumes its span, yields nothing)
    kind: str = "day"  # granularity; "bare" = "the week before", "anchor", "lazy" = dateparser fallback
    relation: Relation = "during"
    anchor: str | None = None
    offset: tuple[str, int] | None = None  # bare offsets: (unit, count)
    dead: bool = False
    absolute: bool = False  # the text names the year: the window does not depend on the reference


def _reject(m: re.Match[str]) -> _Hit:
    """A match that consumes its span and yields nothing ("31 February 2023", "on Mondays")."""
    return _Hit(m.start(), m.end(), None, kind="reject")


_Handler = Any  # Callable[[re.Match[str], _Ctx, str], _Hit | None]; Any keeps the table readable
