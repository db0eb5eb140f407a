"""The time of a stated text: each sentence resolved in its own tense, the most specific period chosen.

This is what retain uses for a message's or a fact's occurrence (recall's queries use ``parse_temporal`` with
no tense, past preferred). One sentence, one tense (``statement_tense``): "They approved the redesign on
Tuesday. Construction should start in August." reads Tuesday backward and August forward, while "Flights in
June were ridiculous, so we booked Porto from 14 to 21 June" is a plan as a whole ("booked" arranges what
comes). A sentence with neither a past form nor a plan marker is in the present: weekdays and counts look
ahead, months, dates, holidays and seasons take the nearest instance.
"""

from __future__ import annotations

from datetime import datetime

from .dateline import strip_dateline
from .model import TemporalConstraint
from .parser import find_temporal_expressions
from .tense import sentence_spans, statement_tense
from .vocabulary import _PREFILTER

__all__ = ["statement_expressions", "statement_time"]


def statement_expressions(text: str, reference_time: datetime) -> list[TemporalConstraint]:
    """Every time expression of ``text`` in text order, each resolved in the tense of its sentence.

    ``reference_time`` is when the text was said. Never raises on odd text; ``[]`` when nothing is temporal.
    """
    if not text or not _PREFILTER.search(text):
        return []
    found: list[TemporalConstraint] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if _PREFILTER.search(sentence):
            found += find_temporal_expressions(sentence, reference_time, tense=statement_tense(sentence))
    return found


def _within(inner: TemporalConstraint, outer: TemporalConstraint) -> bool:
    """Whether ``inner``'s closed range lies inside ``outer``'s and is narrower ("14-21 June" in "June")."""
    a, b = inner.range, outer.range
    if a is None or b is None or a.start is None or a.end is None or b.start is None or b.end is None:
        return False
    return b.start <= a.start and a.end <= b.end and (a.start, a.end) != (b.start, b.end)


def statement_time(text: str, reference_time: datetime) -> TemporalConstraint | None:
    """When the stated ``text`` happens: its first period with both ends ("during"), narrowed by a later one that
    lies inside it ("in June ... from 14 to 21 June" is 14-21 June); ``None`` when it names no such period.

    Open ("before 2020") and event-relative ("after the trip") expressions do not count, and neither does a date
    line the text opens with that names the day it was said ("3 November 2026: went to the dentist last Tuesday"
    happened last Tuesday; ``dateline``).
    """
    text = strip_dateline(text, reference_time)
    best: TemporalConstraint | None = None
    for c in statement_expressions(text, reference_time):
        if c.relation != "during" or c.range is None or c.range.start is None or c.range.end is None:
            continue
        if best is None or _within(c, best):
            best = c
    return best
