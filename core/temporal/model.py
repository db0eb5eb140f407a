"""The parser's result type: an expression, its window, and on which side of it events lie."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..models import TimeRange

Relation = Literal["during", "before", "after"]
"""On which side of the referenced period the events lie ("before 2020" is "before")."""

Tense = Literal["past", "future", "present"]
"""Whether the text speaks about what happened or about a plan; it only matters for expressions whose direction
English leaves open ("on Monday", "this Monday", "in June", "over the summer", "at Christmas", "in 3 days").
``"present"`` is a statement with neither a past form nor a plan marker ("The race is on 13 April", "Let's meet on
Monday"): weekdays, weekends and counts ("in 3 days") then look ahead, while months, dates, holidays and seasons
take the instance nearest to the reference. See ``detect_tense`` and ``statement_tense``."""


class TemporalConstraint(BaseModel):
    """A time expression found in text and its resolution.

    ``range`` is the effective window (aware UTC; either end may be open for before/after constraints);
    it is ``None`` only for event-relative expressions, whose ``anchor`` names the event
    ("before the trip" -> ``anchor="the trip"``) and which ``resolve_anchor`` turns into a window.
    ``deictic`` is true when the range was computed from the reference time ("yesterday", "last week",
    "in June") rather than read from the text ("7 May 2023", "June 2022", "in 2022"): such a phrase means
    something else once the text is read at another time.
    """

    model_config = ConfigDict(frozen=True)

    expression: str
    range: TimeRange | None
    relation: Relation = "during"
    anchor: str | None = None
    deictic: bool = False
