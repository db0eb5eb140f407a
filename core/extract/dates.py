"""When an extracted fact happened: the model's ``start``/``end`` strings and the fact's own words.

Every time expression is resolved by the shared resolver (``hindsight_core.temporal``, the one recall uses
for queries), against the *source message's* time and in the tense of its sentence (``statement_expressions``:
"Caroline is going to Paris in June" said in May is this June, "Caroline went to Paris in June" the last one,
"The race is on 13 April" said in March the coming one). What stays here is what only model output needs:

* ``start``/``end`` are read as ISO dates first (``YYYY-MM`` and ``YYYY`` become month/year ranges), then
  as any expression the shared resolver reads ("yesterday", "last Friday", "a few days ago", "June
  2022"), then, for free-form dates it does not read, through dateparser. Blanks and "unknown"-style
  placeholders count as not given; unparseable or absurd dates (before 1800, 50+ years after the message,
  1970-01-01 placeholders) become None.
* The source message's time is the time of the cited message that says the fact's time words (``said_at``): a
  fact citing a question from October and the answer "last Tuesday" from November counts from November.
* Only when the model gave nothing for either end does the occurrence default to the source message's time;
  one given end copies to the other; reversed ends are swapped. If the fact text names a period
  ("yesterday", "in June", "in 2022") while the model gave no date, merely copied the message date, or gave
  dates that are unreadable or overlap no period the text names, the (first) phrase wins: a unit whose text
  reads "last Saturday (20 May 2023)" must not be dated 25-26 May.
* Such phrases left in the text get the absolute date appended ("yesterday (7 May 2023)"), so the fact
  still reads right when recalled at another time.

Ranges are whole days: a part of a day ("last night", "this morning") counts as the day it starts on, and
the end of a day is 23:59:59.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from dateutil.relativedelta import relativedelta

from ..temporal import (
    TemporalConstraint,
    Tense,
    find_temporal_expressions,
    parse_temporal,
    statement_expressions,
    statement_tense,
)
from ..temporal.timestamps import read_free_date

__all__ = [
    "DateRange", "annotate_relative", "constraint_days", "occurrence", "parse_model_date", "phrase_range",
    "phrase_ranges", "said_at",
]

DateRange = tuple[date, date]
"""First and last day, inclusive."""

_BLANK_DATES = {"", "none", "null", "unknown", "n/a", "na", "-", "?", "unspecified", "nil", "tbd"}
_ISO_DAY = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
_ISO_MONTH = re.compile(r"^(\d{4})-(\d{1,2})$")
_ISO_YEAR = re.compile(r"^(\d{4})$")
_PLACEHOLDER_DAYS = {date(1970, 1, 1), date(1900, 1, 1)}  # defaults small models emit for "don't know"


def _month_range(d: date) -> DateRange:
    first = d.replace(day=1)
    return first, first + relativedelta(months=1) - timedelta(days=1)


def _week_range(d: date) -> DateRange:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def constraint_days(constraint: TemporalConstraint | None, ref: datetime) -> DateRange | None:
    """The days of a resolved "during" constraint in the reference's timezone; open or anchored ones: None."""
    if constraint is None or constraint.relation != "during" or constraint.range is None:
        return None
    start, end = constraint.range.start, constraint.range.end
    if start is None or end is None:
        return None
    tz = ref.tzinfo or UTC
    first, last = start.astimezone(tz), end.astimezone(tz)
    if last - first < timedelta(days=1):
        return first.date(), first.date()  # a part of a day ("last night", "3 hours ago"): its first day
    return first.date(), last.date()


def _free_range(expr: str, ref: datetime, tense: Tense | None) -> DateRange | None:
    """Free-form dates the shared resolver does not read, through the one fallback (``read_free_date``)."""
    found = read_free_date(expr, now=ref, prefer="future" if tense == "future" else "past")
    if found is None:
        return None
    day = found.day
    if found.period == "year":
        return date(day.year, 1, 1), date(day.year, 12, 31)
    if found.period == "month":
        return _month_range(day)
    if found.period == "week":
        return _week_range(day)
    return day, day


def parse_model_date(value: str, ref: datetime, tense: Tense | None = None) -> DateRange | None:
    """One model-written date (ISO, partial ISO, any expression the shared resolver reads, or free-form).

    ``ref`` is the source message's time, ``tense`` the fact's (see ``hindsight_core.temporal.detect_tense``).
    """
    text = value.strip().strip(".").strip()
    if m := _ISO_DAY.match(text):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return day, day
    if m := _ISO_MONTH.match(text):
        if not 1 <= int(m.group(2)) <= 12:
            return None
        return _month_range(date(int(m.group(1)), int(m.group(2)), 1))
    if m := _ISO_YEAR.match(text):
        year = int(m.group(1))
        return (date(year, 1, 1), date(year, 12, 31)) if year >= 1 else None
    if not re.search(r"[A-Za-z]", text) or len(text) > 60:
        return None  # digits-only oddities ("0", "20230507") and rambling are not dates we trust
    shared = constraint_days(parse_temporal(text, ref, tense=tense), ref)
    if shared is None:
        # The field holds nothing but a date, so a bare "May" or "June" is the month; in free text the
        # resolver rightly wants a cue ("in May") before reading one ("I may go", "a letter from June").
        shared = constraint_days(parse_temporal(f"in {text}", ref, tense=tense), ref)
    return shared if shared is not None else _free_range(text, ref, tense)


def _deictic_phrases(text: str, ref: datetime) -> list[tuple[int, int, DateRange]]:
    """Spans and days of the phrases in ``text`` that the reference time resolves ("yesterday", "in June"),
    each in the tense of its sentence (``statement_expressions``).

    Phrases that name their year ("June 2022") need no help; possessives ("yesterday's game") and phrases
    already followed by a parenthesis (an earlier annotation) are left alone.
    """
    found: list[tuple[int, int, DateRange]] = []
    pos = 0
    for c in statement_expressions(text, ref):
        start = _locate(text, c.expression, pos)
        if start < 0:
            continue
        end = start + len(c.expression)
        pos = end
        rng = constraint_days(c, ref) if c.deictic else None
        if rng is None or re.match(r"['’]|\s?\(", text[end:]) or c.expression.endswith(("'s", "’s")):
            continue
        found.append((start, end, rng))
    return found


def _locate(text: str, expression: str, pos: int) -> int:
    """Where ``expression`` (a slice of ``text``) starts at or after ``pos``, on word boundaries; -1 if not."""
    start = text.find(expression, pos)
    while start >= 0:
        end = start + len(expression)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return start
        start = text.find(expression, start + 1)
    return -1


def phrase_range(text: str, ref: datetime, tense: Tense | None = None) -> DateRange | None:
    """The days of the first time phrase in ``text`` that names a period ("yesterday", "in June", "in 2022").

    Open ("before 2020") and event-relative ("after the trip") phrases do not count; ``ref`` is the time the
    text was said, ``tense`` its tense. This is what raw retain uses for a message's occurrence as well.
    """
    ranges = phrase_ranges(text, ref, tense)
    return ranges[0] if ranges else None


def phrase_ranges(text: str, ref: datetime, tense: Tense | None = None) -> list[DateRange]:
    """The days of every time phrase in ``text`` that names a period, in order (see ``phrase_range``)."""
    ranges = (constraint_days(c, ref) for c in find_temporal_expressions(text, ref, tense=tense))
    return [rng for rng in ranges if rng is not None]


def _overlaps(a: DateRange, b: DateRange) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _fmt_day(day: date) -> str:
    return f"{day.day} {day:%B %Y}"


def _fmt_range(rng: DateRange) -> str:
    start, end = rng
    if start == end:
        return _fmt_day(start)
    if (start.month, start.day, end.month, end.day) == (1, 1, 12, 31) and start.year == end.year:
        return str(start.year)
    if start.day == 1 and _month_range(start)[1] == end:
        return f"{start:%B %Y}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}-{end.day} {start:%B %Y}"
    if start.year == end.year:
        return f"{start.day} {start:%B} - {_fmt_day(end)}"
    return f"{_fmt_day(start)} - {_fmt_day(end)}"


def annotate_relative(text: str, ref: datetime) -> str:
    """Append the absolute date to phrases resolved against ``ref`` ("yesterday (7 May 2023)")."""
    out: list[str] = []
    pos = 0
    for _start, end, rng in _deictic_phrases(text, ref):
        out.append(f"{text[pos:end]} ({_fmt_range(rng)})")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _squashed(text: str) -> str:
    return " ".join(text.lower().split())


def said_at(text: str, sources: Sequence[tuple[str, datetime]]) -> datetime:
    """When the time words of the fact ``text`` were said: the time of the source message that says them.

    ``sources`` are the cited messages' ``(text, time)`` in order. A fact citing a question asked on 1 October and
    the answer "I went last Tuesday" given on 3 November counts "last Tuesday" from 3 November: the first source
    holding one of the fact's time phrases word for word, else the first that holds any time phrase (the model
    reworded it), else the earliest source (the fact names no time, or none of its sources does).
    """
    earliest = min(when for _, when in sources)
    if len(sources) == 1 or len({when for _, when in sources}) == 1:
        return earliest
    phrases = [_squashed(c.expression) for c in statement_expressions(text, earliest)]
    if phrases:
        for line, when in sources:
            said = _squashed(line)
            if any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", said) for p in phrases if p):
                return when
    for line, when in sources:
        if statement_expressions(line, when):
            return when
    return earliest


def _plausible(day: date, ref: datetime) -> bool:
    """Reject absurd dates: placeholders, the distant past, or far beyond the conversation's time."""
    return day not in _PLACEHOLDER_DAYS and 1800 <= day.year <= ref.year + 50


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _day_end(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)


def occurrence(
    text: str, start_raw: str, end_raw: str, mentioned: datetime
) -> tuple[datetime | None, datetime | None]:
    """When the fact ``text`` happened, from the model's ``start``/``end`` and the text's own phrases.

    ``mentioned`` is the time of the source message that says the fact's time words (``said_at``), never the time
    of the retain; see the module docstring for the rules.
    """
    tense = statement_tense(text)  # "Maya booked Porto for June" with start "June": the coming June
    start_raw, end_raw = start_raw.strip(), end_raw.strip()
    gave_start = start_raw.lower() not in _BLANK_DATES
    gave_end = end_raw.lower() not in _BLANK_DATES
    start_rng = parse_model_date(start_raw, mentioned, tense) if gave_start else None
    end_rng = parse_model_date(end_raw, mentioned, tense) if gave_end else None
    phrases = [rng for rng in (constraint_days(c, mentioned) for c in statement_expressions(text, mentioned)) if rng]
    said = phrases[0] if phrases else None
    today = (mentioned.date(), mentioned.date())
    given = [rng for rng, gave in ((start_rng, gave_start), (end_rng, gave_end)) if gave]
    readable = [rng for rng in given if rng is not None]
    model_days = (min(r[0] for r in readable), max(r[1] for r in readable)) if readable else None
    if said is not None and (
        (said != today and all(rng == today for rng in given))
        or (given and (model_days is None or not any(_overlaps(model_days, p) for p in phrases)))
    ):
        # The fact itself says "yesterday"/"last Saturday" but the model gave no date, just copied the
        # message date, or gave dates that are unreadable or contradict every period the text names (a
        # common small-model slip: "last Saturday" said on Thursday 25 May answered as 25-26 May). The
        # phrase in the text is the better evidence, and the text is annotated with its date.
        start_rng = end_rng = said
        gave_start = gave_end = True
    start = _day_start(start_rng[0]) if start_rng and _plausible(start_rng[0], mentioned) else None
    end = _day_end(end_rng[1]) if end_rng and _plausible(end_rng[1], mentioned) else None
    if not gave_start and not gave_end:
        start = end = mentioned  # nothing said about when: it is known to hold at the mention
    elif start is not None and end is None and not gave_end:
        end = _day_end(start_rng[1]) if start_rng else None  # one end given: a range of that date
    elif end is not None and start is None and not gave_start:
        start = _day_start(end_rng[0]) if end_rng else None
    if start is not None and end is not None and start > end:
        start, end = _day_start(end.date()), _day_end(start.date())  # swapped ends
    return start, end
