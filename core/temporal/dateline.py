"""When a note says it was written: the date line it opens with ("Written on 3 November 2026", "Date: 2026-11-03",
a heading "3 November 2026" on a line of its own, "Tuesday, 3 November 2026: ...").

A note retained without a time (a LangGraph store value, a tool call, ``retain(text)``) would otherwise be taken as
said at the moment of the retain, and its "last Tuesday" counted back from that day: a note written on 3 November
2026 and retained in December had its "last Tuesday" stored as 1 December. Its own date line is the better
evidence, so retain takes it as the note's time (``find_dateline``), and the note's occurrence is read from what it
tells, not from that line (``strip_dateline``).

Only a full date at the very start counts (day, month and year: "3 November" alone could be any year, and a date
later in the text is what the note tells about): bare, followed by a line break or by ":", "-", "|" or ")" (an ISO
date needs nothing after it: "2026-11-03 Alice called" is a log line); or after a word that says it is the writing
date ("written", "dated", "posted", "sent", "recorded", "logged", "updated", "entry", "date:", "as of"), up to three
words in ("Note written on", "Journal entry,"). "On 3 November 2026 we signed" and "3 November 2026 was a Tuesday"
tell about the day instead, and are not date lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..models import as_utc
from .parser import find_temporal_expressions

__all__ = ["Dateline", "find_dateline", "strip_dateline"]

_HEAD_CHARS = 160  # a date line is short: only the text's first line, up to this many characters, is read
_FLAGS = re.IGNORECASE
# A cheap look at the start before any parse (retain asks this of every message): a date line opens with a date
# (a digit, a month or a weekday) or with a cue word and a digit soon after it.
_GATE = re.compile(
    r"[\s#>*_\-\[(]*(?:(?:[A-Za-z][\w'’-]*,?\s+){0,3}?(?:written|dated|posted|sent|recorded|logged|updated|entry|date"
    r"|as\s+of)\b[^\n]{0,16}?[0-9]|(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?(?:[0-9]|jan|feb|mar|apr|may"
    r"|jun|jul|aug|sep|oct|nov|dec))",
    _FLAGS,
)
# Markdown and list decoration before the date: "# 3 November 2026", "[2026-11-03]", "> Date: ...".
_DECORATION = r"[\s#>*_\-\[(]*"
_CUE = re.compile(
    _DECORATION + r"(?:(?:[A-Za-z][\w'’-]*,?\s+){0,3}?(?:written|dated|posted|sent|recorded|logged|updated|entry)"
    r"(?:\s+(?:on|at))?|date|as\s+of)\s*[:,\-–—]?\s*$",
    _FLAGS,
)
_YEAR = re.compile(r"(?<![0-9])[12][0-9]{3}(?![0-9])")
_ISO_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # "2026-11-03 Alice called": a log line's own date
_BARE = re.compile(_DECORATION + r"$")
# What ends a date line: the line, a separator, or a closing bracket ("[2026-11-03] ...", "3 November 2026: ...").
_HEADING_END = re.compile(r"[\s*_]*(?:[\])][\s*_]*(?:[:|\-–—]\s*)?|[:|\-–—]\s*|$|\n)")
_PREPOSITION = re.compile(r"(?:on|in|during|over|throughout|since|from|by|until)\b", _FLAGS)


@dataclass(frozen=True)
class Dateline:
    """A note's own date line: where it is in the text and the day it names (midnight UTC)."""

    start: int
    end: int
    time: datetime


def find_dateline(text: str, now: datetime | None = None) -> Dateline | None:
    """The date line ``text`` opens with, or None (see the module docstring for what counts).

    ``now`` (default: the clock) bounds it: a note is not written after it is retained, so a date more than a day
    after ``now`` is no date line.
    """
    head = text[:_HEAD_CHARS].split("\n", 1)[0]
    if not _GATE.match(head) or not _YEAR.search(head):
        return None  # most texts: they open with no date and a year, so no date line (and no parse)
    now = as_utc(now) if now is not None else datetime.now(UTC)
    found = find_temporal_expressions(head, now)
    if not found:
        return None
    first = found[0]
    if first.deictic or first.relation != "during" or first.range is None or first.range.start is None:
        return None  # a date that names no year, "since 2020", "before the trip": not a date line
    if first.range.end is None or first.range.end - first.range.start >= timedelta(days=1):
        return None  # a month or a year ("June 2026") names no day
    at = head.find(first.expression)
    if at < 0 or (at > 0 and head[at - 1].isalnum()):
        return None
    before, expression = head[:at], first.expression
    end = at + len(expression)
    cued = _CUE.fullmatch(before) is not None
    # Bare, it must stand alone as a heading: nothing but decoration before it (a weekday is part of the date), no
    # preposition ("On 3 November 2026 we signed"), and the line or a separator right after it.
    if not cued and (not _BARE.fullmatch(before) or _PREPOSITION.match(expression)):
        return None
    closing = _HEADING_END.match(text, end)
    if closing is None and not cued and not _ISO_START.match(expression):
        return None  # "3 November 2026 was a Tuesday": the text tells about that day
    day = first.range.start.date()  # resolved in UTC (``now`` is UTC): the named day itself
    if day > (now + timedelta(days=1)).date() or day.year < 1800:
        return None
    return Dateline(0, closing.end() if closing else end, datetime(day.year, day.month, day.day, tzinfo=UTC))


def strip_dateline(text: str, said_at: datetime) -> str:
    """``text`` without the date line it opens with when that line names the day ``said_at`` falls on (then it
    says when the note was written, not when what it tells happened); otherwise ``text`` unchanged."""
    line = find_dateline(text, said_at)
    if line is None or line.time.date() != said_at.astimezone(UTC).date():
        return text
    return " " * line.end + text[line.end :]  # same length: spans found in it are spans of the text
