"""Temporal expressions: turn "last week", "yesterday", "in March" or "before the trip" into time ranges.

Used in two places:

* recall: a query such as "what did Emma do last week?" gets a time constraint relative to the caller's
  reference time (``parse_temporal``);
* retain without an LLM: "I went to a support group yesterday", sent on 8 May 2023, gets the occurrence
  range 7 May 2023 (``parse_temporal`` with the message time as reference).

Design:

* Ranges are whole calendar units (days, Monday-Sunday weeks, months, years, seasons) computed in the
  reference time's timezone (a naive reference is UTC) and returned as aware-UTC ``TimeRange`` values;
  a day is ``[00:00, 23:59:59.999999]``.
* ``TemporalConstraint.range`` is always the *effective window* a filter should use: "before 2020" is
  ``(None, 2019-12-31T23:59:59.999999)``, "after the summer" is ``(1 Sep, None)``; ``relation`` says on
  which side of the referenced period the events lie. Event-relative expressions ("after the wedding")
  carry ``anchor`` and ``range=None`` until ``resolve_anchor`` is given the event's range.
* Speed: one compiled pre-filter regex rejects ordinary chat text before any rule runs; the common forms
  are handled by compiled regex rules; ``dateparser`` (imported lazily) is only a fallback for explicit
  date strings the rules do not cover (e.g. "08May2023", "2023 May 8").
* Conservative: numbers are years only with a cue ("in 2023", "since 2023", "2023's", a month name);
  "may"/"march" need a cue and a plausible continuation; durations ("for 3 weeks", "in 3 hours") are
  not times; invalid dates ("31 February 2023") are rejected.

Ambiguities, resolved as follows (past is preferred, as memories are mostly about the past):

* numeric dates: ``8/5/2023`` and ``8-5-2023`` are US month/day (5 August) unless the first number
  cannot be a month (``13/5/2023`` is 13 May); dotted ``8.5.2023`` is day.month (European style);
* "in March" / "8 May" without a year: the most recent one at or before the reference day;
* "on Monday" / "Monday": the most recent Monday, today included; "last Monday": the most recent one
  strictly before today; "this Monday": the Monday of the current week; "next Monday": the Monday of
  next week; "this coming Monday": the first one after today;
* "last weekend" / "the weekend before": the last Saturday-Sunday that ended before today; "this
  weekend": the current week's; "next weekend": next week's; "the weekend" / "over the weekend": the
  most recent one that has begun;
* seasons are northern-hemisphere meteorological (spring Mar-May, summer Jun-Aug, autumn/fall Sep-Nov,
  winter Dec-Feb); "winter 2022" is Dec 2022-Feb 2023; "the summer" / "over the summer" is the most
  recent summer that has begun, "last summer" the most recent one that has ended;
* "N days ago" is that one day, "N weeks/months/years ago" the calendar week/month/year containing that
  day; fuzzy counts are windows: "a couple" 2-3, "a few" 2-5, "several" 3-7 units;
* "last week/month/year" is the previous calendar unit, while "the past two weeks", "the last 3 months"
  and "the past week" are rolling windows ending at the end of the reference day;
* "recently" / "lately" are the last 30 days, "the other day" is 1-7 days ago;
* day parts: morning 05-12h, afternoon 12-17h, evening 17-24h, night 18h-06h next day ("tonight",
  "last night" = yesterday 18h to today 06h); "3 hours ago" is that whole clock hour;
* "early/mid/late" (and "the beginning/middle/end of") split a year into thirds (Jan-Apr, May-Aug,
  Sep-Dec), a month into days 1-10, 11-20, 21-end, a season into its three months;
* "since March" is ``[1 March, end of the reference day]`` with relation "during"; "until/by X" is
  ``(None, end of X)`` with relation "before";
* the bare "the day/week/weekend/month/year/Friday before" is relative to the reference; the bare
  "... after" is left alone (it almost always refers to a narrated event, not to the reference).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .models import TimeRange, as_utc

__all__ = ["TemporalConstraint", "find_temporal_expressions", "parse_temporal", "resolve_anchor"]

Relation = Literal["during", "before", "after"]


class TemporalConstraint(BaseModel):
    """A time expression found in text and its resolution.

    ``range`` is the effective window (aware UTC; either end may be open for before/after constraints);
    it is ``None`` only for event-relative expressions, whose ``anchor`` names the event
    ("before the trip" -> ``anchor="the trip"``) and which ``resolve_anchor`` turns into a window.
    """

    model_config = ConfigDict(frozen=True)

    expression: str
    range: TimeRange | None
    relation: Relation = "during"
    anchor: str | None = None


# --------------------------------------------------------------------------------------------------
# vocabulary

_FLAGS = re.IGNORECASE | re.ASCII  # ASCII: "\d"/"\w" must not match other scripts' digits and letters
_US = timedelta(microseconds=1)

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
_FULL_MONTHS = frozenset(calendar.month_name[i].lower() for i in range(1, 13))
# Full names that are no common English word or first name: fine without a cue ("Emma's January trip").
_BARE_MONTHS = frozenset({"january", "february", "july", "september", "october", "november", "december"})
_NAME_MONTHS = frozenset({"april", "may", "june", "august"})  # also first names: "a letter from June"
_VERB_MONTHS = frozenset({"may", "march", "mar"})  # also verbs: "this may be", "we march on"
_WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
}
_NUM_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50,
}
_FUZZY: dict[str, tuple[int, int]] = {"couple": (2, 3), "few": (2, 5), "several": (3, 7)}
# Hours of the day parts, [first, last) with 24+ reaching into the next day.
_DAY_PARTS: dict[str, tuple[int, int]] = {
    "morning": (5, 12), "afternoon": (12, 17), "evening": (17, 24), "night": (18, 30),
}
_SEASONS: dict[str, int] = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
_PARTS = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}

_MON = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR = r"[12][0-9]{3}"
_NUM = (
    r"(?:[0-9]{1,4}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|an?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
    r"|twenty|thirty|forty|fifty)"
)
_UNIT = r"(?:minute|hour|day|week|fortnight|month|year)"
_SEASON = r"(?:spring|summer|autumn|fall|winter)"
_DET = r"(?:the|my|our|his|her|their|your|its)"

# Cheap gate: text without any of these cannot hold an expression, so most chat messages stop here.
_PREFILTER = re.compile(
    r"[0-9]|\b(?:yesterday|today|tonight|tomorrow|day|week|month|year|fortnight|hour|minute|recent|lately"
    r"|late|other|earlier|later|spring|summer|autumn|fall|winter|morning|afternoon|evening|night|before"
    r"|after|since|until|till|during|prior|" + _MON[3:-1] + r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day)",
    _FLAGS,
)

# --------------------------------------------------------------------------------------------------
# calendar helpers (all local: dates and datetimes in the reference's timezone)

_Win = tuple[datetime | None, datetime | None]


@dataclass(frozen=True, slots=True)
class _Ctx:
    tz: tzinfo
    now: datetime  # aware, in tz
    today: date


def _context(reference_time: datetime) -> _Ctx:
    now = reference_time if reference_time.tzinfo is not None else reference_time.replace(tzinfo=UTC)
    return _Ctx(tz=now.tzinfo or UTC, now=now, today=now.date())


def _days(ctx: _Ctx, first: date, last: date) -> _Win:
    return datetime.combine(first, time.min, ctx.tz), datetime.combine(last, time.max, ctx.tz)


def _day_end(ctx: _Ctx, d: date) -> datetime:
    return datetime.combine(d, time.max, ctx.tz)


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month_add(y: int, m: int, k: int) -> tuple[int, int]:
    y2, m0 = divmod(y * 12 + (m - 1) + k, 12)
    return y2, m0 + 1


def _month_last(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _months(ctx: _Ctx, y1: int, m1: int, y2: int, m2: int) -> _Win:
    return _days(ctx, date(y1, m1, 1), _month_last(y2, m2))


def _years(ctx: _Ctx, y1: int, y2: int) -> _Win:
    return _days(ctx, date(y1, 1, 1), date(y2, 12, 31))


def _shift(d: date, unit: str, k: int) -> date:
    """``d`` moved by ``k`` units (months and years clamp the day: 31 Mar - 1 month = 29 Feb)."""
    if unit == "day":
        return d + timedelta(days=k)
    if unit in ("week", "fortnight"):
        return d + timedelta(days=k * (14 if unit == "fortnight" else 7))
    months = k * (12 if unit == "year" else 1)
    y, m = _month_add(d.year, d.month, months)
    return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


def _day_part(ctx: _Ctx, d: date, part: str) -> _Win:
    h0, h1 = _DAY_PARTS[part]
    start = datetime.combine(d, time(h0), ctx.tz)
    end = datetime.combine(d + timedelta(days=h1 // 24), time(h1 % 24), ctx.tz) - _US
    return start, end


def _weekday_before(d: date, wd: int) -> date:
    """Most recent weekday ``wd`` strictly before ``d``."""
    return d - timedelta(days=((d.weekday() - wd - 1) % 7) + 1)


def _weekday_after(d: date, wd: int) -> date:
    """First weekday ``wd`` strictly after ``d``."""
    return d + timedelta(days=((wd - d.weekday() - 1) % 7) + 1)


def _season(ctx: _Ctx, name: str, y: int) -> _Win:
    """The season instance starting in year ``y`` (winter ``y`` is Dec y - Feb y+1)."""
    m = _SEASONS[name]
    ye, me = _month_add(y, m, 2)
    return _months(ctx, y, m, ye, me)


def _season_dates(ctx: _Ctx, name: str, y: int) -> tuple[date, date]:
    s, e = _season(ctx, name, y)
    assert s is not None and e is not None
    return s.date(), e.date()


def _offset(
    ctx: _Ctx, unit: str, direction: str, lo: int, hi: int, pivot_start: date, pivot_end: date
) -> _Win:
    """``lo..hi`` units before ``pivot_start`` or after ``pivot_end``, as whole calendar units.

    ``unit`` is day, week, fortnight, weekend, month, year or a weekday name ("the Friday before X").
    Days count from the pivot day, weeks are the Monday-Sunday weeks ``lo..hi`` before/after the pivot's
    week, weekends the ``lo``-th..``hi``-th Saturday-Sunday wholly before/after the pivot day.
    """
    if direction == "before":
        p = pivot_start
        if unit == "day":
            return _days(ctx, p - timedelta(days=hi), p - timedelta(days=lo))
        if unit in ("week", "fortnight"):
            k = 2 if unit == "fortnight" else 1
            ws = _week_start(p)
            return _days(ctx, ws - timedelta(days=7 * k * hi), ws - timedelta(days=7 * k * lo - 6))
        if unit == "weekend":
            sunday = _weekday_before(p, 6)
            first_saturday = sunday - timedelta(days=7 * (hi - 1) + 1)
            return _days(ctx, first_saturday, sunday - timedelta(days=7 * (lo - 1)))
        if unit in ("month", "year"):
            k = 12 if unit == "year" else 1
            y1, m1 = _month_add(p.year, p.month, -hi * k)
            y2, m2 = _month_add(p.year, p.month, -lo * k)
            return _months(ctx, y1, m1, y2, m2) if k == 1 else _years(ctx, p.year - hi, p.year - lo)
        wd = _WEEKDAYS[unit]
        d = _weekday_before(p, wd) - timedelta(days=7 * (lo - 1))
        return _days(ctx, d, d)
    p = pivot_end
    if unit == "day":
        return _days(ctx, p + timedelta(days=lo), p + timedelta(days=hi))
    if unit in ("week", "fortnight"):
        k = 2 if unit == "fortnight" else 1
        ws = _week_start(p)
        return _days(ctx, ws + timedelta(days=7 * k * lo), ws + timedelta(days=7 * k * hi + 6))
    if unit == "weekend":
        saturday = _weekday_after(p, 5)
        last_sunday = saturday + timedelta(days=7 * (hi - 1) + 1)
        return _days(ctx, saturday + timedelta(days=7 * (lo - 1)), last_sunday)
    if unit in ("month", "year"):
        if unit == "year":
            return _years(ctx, p.year + lo, p.year + hi)
        y1, m1 = _month_add(p.year, p.month, lo)
        y2, m2 = _month_add(p.year, p.month, hi)
        return _months(ctx, y1, m1, y2, m2)
    d = _weekday_after(p, _WEEKDAYS[unit]) + timedelta(days=7 * (lo - 1))
    return _days(ctx, d, d)


def _thirds(ctx: _Ctx, win: _Win, kind: str, part: int) -> _Win:
    """Early/mid/late third of a year (4 months each), month (days 1-10, 11-20, 21-end) or other span."""
    s, e = win
    assert s is not None and e is not None
    first, last = s.date(), e.date()
    if kind == "year":
        return _months(ctx, first.year, 1 + 4 * part, first.year, 4 + 4 * part)
    if kind == "month":
        lo = (first, first.replace(day=11), first.replace(day=21))[part]
        hi = (first.replace(day=10), first.replace(day=20), last)[part]
        return _days(ctx, lo, hi)
    if kind == "season":
        y, m = _month_add(first.year, first.month, part)
        return _months(ctx, y, m, y, m)
    n = (last - first).days + 1
    step = max(n // 3, 1)
    lo = first + timedelta(days=min(step * part, n - 1))
    hi = last if part == 2 else first + timedelta(days=min(step * (part + 1), n) - 1)
    return _days(ctx, lo, max(lo, hi))


def _num(text: str) -> tuple[int, int]:
    """A count word or number as a (low, high) window: "3" -> (3, 3), "a few" -> (2, 5)."""
    words = text.lower().split()
    if words[-1].isdigit():
        n = int(words[-1])
        return n, n
    for w in words:
        if w in _FUZZY:
            return _FUZZY[w]
    n = _NUM_WORDS[words[-1]]
    return n, n


def _unit(word: str) -> str:
    return word.lower()


def _two_digit_year(yy: int, ctx: _Ctx) -> int:
    # The latest century that does not put the year more than 10 years after the reference.
    for century in (2100, 2000, 1900):
        if century + yy <= ctx.today.year + 10:
            return century + yy
    return 1900 + yy


def _year_of(text: str | None, ctx: _Ctx) -> int | None:
    if not text:
        return None
    if text.startswith("'"):
        return _two_digit_year(int(text[1:]), ctx)
    return int(text)


# --------------------------------------------------------------------------------------------------
# hits and rules


@dataclass(slots=True)
class _Hit:
    start: int
    end: int
    win: _Win | None  # None and no anchor: rejected (consumes its span, yields nothing)
    kind: str = "day"  # granularity; "bare" = "the week before", "anchor", "lazy" = dateparser fallback
    relation: Relation = "during"
    anchor: str | None = None
    offset: tuple[str, int] | None = None  # bare offsets: (unit, count)
    dead: bool = False


def _reject(m: re.Match[str]) -> _Hit:
    return _Hit(m.start(), m.end(), None, kind="reject")


_Handler = Any  # Callable[[re.Match[str], _Ctx, str], _Hit | None]; Any keeps the table readable

_R_DAYWORD = re.compile(
    r"\b(?:(?P<d>yesterday|today|tomorrow)(?:'s)?(?:\s+(?P<part>morning|afternoon|evening|night))?"
    r"|(?P<tonight>tonight)|this\s+(?P<this>morning|afternoon|evening)|last\s+(?P<last>night|evening))\b",
    _FLAGS,
)


def _h_dayword(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    t = ctx.today
    if m.group("d"):
        d = t + timedelta(days={"yesterday": -1, "today": 0, "tomorrow": 1}[m.group("d").lower()])
        part = m.group("part")
        win = _day_part(ctx, d, part.lower()) if part else _days(ctx, d, d)
        return _Hit(m.start(), m.end(), win, "part" if part else "day")
    if m.group("tonight"):
        return _Hit(m.start(), m.end(), _day_part(ctx, t, "night"), "part")
    if m.group("this"):
        return _Hit(m.start(), m.end(), _day_part(ctx, t, m.group("this").lower()), "part")
    return _Hit(m.start(), m.end(), _day_part(ctx, t - timedelta(days=1), m.group("last").lower()), "part")


_R_RECENT = re.compile(r"\b(?:(?P<recent>recently|lately|of\s+late)|the\s+other\s+day)\b", _FLAGS)


def _h_recent(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    t = ctx.today
    if m.group("recent"):
        return _Hit(m.start(), m.end(), _days(ctx, t - timedelta(days=30), t), "span")
    return _Hit(m.start(), m.end(), _days(ctx, t - timedelta(days=7), t - timedelta(days=1)), "span")


_R_EARLIER = re.compile(
    r"\b(?P<w>earlier|later)\s+(?:(?P<today>today)|this\s+(?P<unit>week|month|year))\b", _FLAGS
)


def _h_earlier(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    t = ctx.today
    unit = (m.group("unit") or "day").lower()
    if unit == "day":
        first, last = t, t
    elif unit == "week":
        first, last = _week_start(t), _week_start(t) + timedelta(days=6)
    elif unit == "month":
        first, last = t.replace(day=1), _month_last(t.year, t.month)
    else:
        first, last = date(t.year, 1, 1), date(t.year, 12, 31)
    if m.group("w").lower() == "earlier":
        return _Hit(m.start(), m.end(), _days(ctx, first, t), "span")
    return _Hit(m.start(), m.end(), _days(ctx, t, last), "span")


_R_AGO = re.compile(
    rf"\b(?P<n>{_NUM})\s+(?P<unit>{_UNIT})s?(?:\s+or\s+(?P<n2>so|two|three|four|five|[0-9]{{1,3}}))?"
    rf"\s+(?:ago|back)\b"
    rf"|\b(?P<fn>{_NUM})\s+(?P<funit>{_UNIT})s?\s+from\s+(?:now|today)\b",
    _FLAGS,
)


def _h_ago(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    future = m.group("fn") is not None
    lo, hi = _num(m.group("fn") if future else m.group("n"))
    unit = _unit(m.group("funit") if future else m.group("unit"))
    n2 = m.group("n2")
    if n2:
        hi = lo + 1 if n2.lower() == "so" else max(hi, _num(n2)[1])
    if unit in ("minute", "hour"):
        step = timedelta(minutes=1) if unit == "minute" else timedelta(hours=1)
        sign = 1 if future else -1
        a, b = ctx.now + sign * hi * step, ctx.now + sign * lo * step
        first, last = min(a, b), max(a, b)
        # Whole minutes/hours: truncate to the unit, end at the unit's last microsecond.
        trunc = {"second": 0, "microsecond": 0} | ({"minute": 0} if unit == "hour" else {})
        return _Hit(m.start(), m.end(), (first.replace(**trunc), last.replace(**trunc) + step - _US), unit)
    direction = "after" if future else "before"
    win = _offset(ctx, unit, direction, lo, hi, ctx.today, ctx.today)
    return _Hit(m.start(), m.end(), win, "week" if unit == "fortnight" else unit)


_R_CAL = re.compile(
    r"\b(?P<mod>last|previous|the\s+previous|this|current|the\s+current|next|coming|the\s+coming"
    r"|this\s+coming)\s+(?P<unit>week|month|year|fortnight)\b(?!\s+of\b)",
    _FLAGS,
)


def _h_cal(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    mod = m.group("mod").lower().split()[-1]
    unit = _unit(m.group("unit"))
    t = ctx.today
    if mod in ("last", "previous"):
        win = _offset(ctx, unit, "before", 1, 1, t, t)
    elif mod in ("next", "coming"):
        win = _offset(ctx, unit, "after", 1, 1, t, t)
    elif unit in ("week", "fortnight"):
        win = _days(ctx, _week_start(t), _week_start(t) + timedelta(days=6))
    elif unit == "month":
        win = _months(ctx, t.year, t.month, t.year, t.month)
    else:
        win = _years(ctx, t.year, t.year)
    return _Hit(m.start(), m.end(), win, "week" if unit == "fortnight" else unit)


_R_ROLL = re.compile(
    rf"\b(?:(?:in|over|within|during|for|throughout)\s+)?(?P<the>the\s+|this\s+)?"
    rf"(?P<mod>last|past|previous|next|coming)\s+(?:(?P<n>{_NUM})\s+)?(?P<unit>{_UNIT})(?P<pl>s)?\b",
    _FLAGS,
)


def _h_roll(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    mod = m.group("mod").lower()
    the = (m.group("the") or "").strip().lower()
    n = m.group("n")
    if not n and not (the == "the" or mod == "past"):
        return None  # "last week" is the calendar week (_R_CAL)
    if not n and mod == "previous":
        return None  # "the previous week" is the calendar week too
    if the == "this" and mod != "past":
        return None
    hi = _num(n)[1] if n else (5 if m.group("pl") else 1)  # "the past weeks": as "the past few weeks"
    unit = _unit(m.group("unit"))
    future = mod in ("next", "coming")
    if unit in ("minute", "hour"):
        span = hi * (timedelta(minutes=1) if unit == "minute" else timedelta(hours=1))
        win = (ctx.now, ctx.now + span) if future else (ctx.now - span, ctx.now)
        return _Hit(m.start(), m.end(), win, "span")
    t = ctx.today
    # Rolling windows run from the same day N units back to the end of the reference day (or mirrored).
    win = _days(ctx, t, _shift(t, unit, hi)) if future else _days(ctx, _shift(t, unit, -hi), t)
    return _Hit(m.start(), m.end(), win, "span")


_R_WEEKEND = re.compile(
    r"\b(?P<mod>last|this\s+past|the\s+past|this\s+coming|the\s+coming|this|next|coming|over\s+the"
    r"|during\s+the|on\s+the|at\s+the|the)\s+weekend(?P<pl>s)?\b",
    _FLAGS,
)


def _h_weekend(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    if m.group("pl"):
        return _reject(m)  # "on the weekends": habitual, no single time
    mod = " ".join(m.group("mod").lower().split())
    t = ctx.today
    ws = _week_start(t)
    if mod in ("last", "this past", "the past"):
        win = _offset(ctx, "weekend", "before", 1, 1, t, t)
    elif mod == "this":
        win = _days(ctx, ws + timedelta(days=5), ws + timedelta(days=6))
    elif mod == "next":
        win = _days(ctx, ws + timedelta(days=12), ws + timedelta(days=13))
    elif mod in ("this coming", "the coming", "coming"):
        win = _offset(ctx, "weekend", "after", 1, 1, t, t)
    elif t.weekday() >= 5:  # "the weekend" while it is the weekend: this one
        win = _days(ctx, ws + timedelta(days=5), ws + timedelta(days=6))
    else:
        win = _offset(ctx, "weekend", "before", 1, 1, t, t)
    return _Hit(m.start(), m.end(), win, "weekend")


_R_WEEKDAY = re.compile(
    rf"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|past|coming)\s+)?(?P<wd>{_WD})(?P<pl>s)?\b"
    r"(?:\s+(?P<part>morning|afternoon|evening|night)\b)?",
    _FLAGS,
)


def _h_weekday(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    if m.group("pl"):
        return _reject(m)  # "on Mondays": habitual
    wd = _WEEKDAYS[m.group("wd").lower()]
    mod = " ".join((m.group("mod") or "").lower().split())
    t = ctx.today
    if mod in ("last", "past", "this past"):
        d = _weekday_before(t, wd)
    elif mod == "this":
        d = _week_start(t) + timedelta(days=wd)
    elif mod == "next":
        d = _week_start(t) + timedelta(days=7 + wd)
    elif mod in ("coming", "this coming"):
        d = _weekday_after(t, wd)
    else:
        d = t - timedelta(days=(t.weekday() - wd) % 7)  # most recent, today included
    part = m.group("part")
    win = _day_part(ctx, d, part.lower()) if part else _days(ctx, d, d)
    return _Hit(m.start(), m.end(), win, "part" if part else "day")


# Words that may follow a lowercase "may"/"march" used as a month ("in may we went", "until march.").
_MONTH_TAIL = re.compile(
    r"\s*(?:$|[^\w\s]|(?:and|or|but|when|because|so|to|with|for|until|since|before|after|in|at|on|of|the"
    r"|i|we|he|she|they|you|it|my|our|his|her|their|was|is|will|last|this|next|that|which|where|while|as"
    r"|too|again|already|though)\b)",
    _FLAGS,
)
_NEUTRAL_CUES = frozenset({"in", "during", "throughout", "over"})
_STRONG_RELATION_CUES = frozenset({"since", "before", "after", "until", "till", "through"})

_R_MONTH = re.compile(
    rf"\b(?:(?P<cue>in|during|throughout|over|since|before|after|until|till|through|from|by|last|this|next"
    rf"|early|mid|late|(?:the\s+)?(?:very\s+)?(?:beginning|start|middle|end)\s+of)[\s-]+)?"
    rf"(?P<body>(?:the\s+month\s+of\s+)?(?P<mon>{_MON})(?P<dot>\.)?(?:,?\s+(?:of\s+)?(?P<y>{_YEAR}))?)"
    rf"(?![\w'])(?!\s*(?:the\s+)?[0-9]{{1,2}}(?:st|nd|rd|th)?\b)",
    _FLAGS,
)


def _h_month(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    tok = m.group("mon")
    low = tok.lower()
    month = _MONTHS[low]
    cue = " ".join((m.group("cue") or "").lower().split())
    cue_word = cue.split()[-1] if cue else ""
    year = _year_of(m.group("y"), ctx)
    if year is None:
        abbreviated = low not in _FULL_MONTHS
        semantic = cue_word in ("last", "this", "next")
        part = cue_word in ("early", "mid", "late", "of")
        strong = cue_word in _NEUTRAL_CUES or cue_word in _STRONG_RELATION_CUES or semantic or part
        weak = cue_word in ("from", "by")
        if strong or (weak and low not in _NAME_MONTHS and not abbreviated):
            if low in _VERB_MONTHS and not _MONTH_TAIL.match(text, m.end()):
                return None
            if abbreviated and not tok[0].isupper():
                return None
        elif not (not cue and low in _BARE_MONTHS):
            return None
    t = ctx.today
    if year is None:
        if cue_word == "last":
            year = t.year if month < t.month else t.year - 1
        elif cue_word == "next":
            year = t.year if month > t.month else t.year + 1
        elif cue_word == "this":
            year = t.year
        else:  # the most recent such month at or before the reference
            year = t.year if month <= t.month else t.year - 1
    # Neutral and semantic cues belong to the expression; relation/part cues are composed later.
    keep_cue = cue_word in _NEUTRAL_CUES or cue_word in ("last", "this", "next")
    start = m.start() if keep_cue else m.start("body")
    return _Hit(start, m.end(), _months(ctx, year, month, year, month), "month")


_R_MONTH_RANGE = re.compile(
    rf"\b(?:from|between)\s+(?P<a>{_MON})\.?(?:,?\s+(?P<ya>{_YEAR}))?\s*(?:to|until|till|through|thru|and|-|–|—)"
    rf"\s*(?P<b>{_MON})\.?(?:,?\s+(?P<yb>{_YEAR}))?(?![\w'])",
    _FLAGS,
)


def _h_month_range(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    a, b = _MONTHS[m.group("a").lower()], _MONTHS[m.group("b").lower()]
    ya, yb = _year_of(m.group("ya"), ctx), _year_of(m.group("yb"), ctx)
    t = ctx.today
    if yb is None and ya is not None:
        yb = ya if b >= a else ya + 1
    if yb is None:
        yb = t.year if b <= t.month else t.year - 1
    if ya is None:
        ya = yb if a <= b else yb - 1
    return _Hit(m.start(), m.end(), _months(ctx, ya, a, yb, b), "span")


_YEAR_TAIL = (
    r"(?![0-9]|'(?!s\b)|\s*(?:%|[/.:,-]?[0-9]|(?:years?|yrs?|days?|weeks?|months?|hours?|minutes?|people"
    r"|persons|times|words|dollars|euros|pounds|miles|km|kg|lbs|calories|steps|feet|meters|metres|points"
    r"|followers|items|units|pages|students|members|employees)\b))"
)
_R_YEAR = re.compile(
    rf"\b(?:(?P<cue>in|during|throughout|over|since|before|after|until|till|through|from|by|between|early"
    rf"|mid|late|(?:the\s+)?(?:very\s+)?(?:beginning|start|middle|end)\s+of|back\s+in|the\s+year|year)"
    rf"[\s-]+)(?P<y>{_YEAR}){_YEAR_TAIL}"
    rf"|\b(?P<y2>{_YEAR})'s\b",
    _FLAGS,
)


def _h_year(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    if m.group("y2"):
        y = int(m.group("y2"))
        return _Hit(m.start(), m.end(), _years(ctx, y, y), "year")
    cue = " ".join(m.group("cue").lower().split())
    y = int(m.group("y"))
    neutral = cue in _NEUTRAL_CUES or cue in ("back in", "the year", "year")
    return _Hit(m.start() if neutral else m.start("y"), m.end(), _years(ctx, y, y), "year")


_R_YEAR_RANGE = re.compile(
    rf"\b(?:from|between)\s+(?P<a>{_YEAR})\s*(?:to|until|till|through|thru|and|-|–|—)\s*"
    rf"(?:(?P<b>{_YEAR}|[0-9]{{2}})|(?P<now>now|today|the\s+present|present))\b(?![/.:-]?[0-9])",
    _FLAGS,
)


def _h_year_range(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    a = int(m.group("a"))
    if m.group("now"):
        return _Hit(m.start(), m.end(), (_years(ctx, a, a)[0], _day_end(ctx, ctx.today)), "span")
    b_text = m.group("b")
    b = int(b_text) if len(b_text) == 4 else a // 100 * 100 + int(b_text)
    if b < a:
        return _reject(m)
    return _Hit(m.start(), m.end(), _years(ctx, a, b), "span")


_R_SEASON = re.compile(
    rf"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|past|coming|over\s+the|during\s+the|in\s+the"
    rf"|through\s+the|throughout\s+the|for\s+the|the)\s+)?(?:(?P<part>early|mid|late)[\s-]+)?"
    rf"(?P<s>{_SEASON})(?:\s+(?:of\s+)?(?P<y>{_YEAR}))?\b(?!')",
    _FLAGS,
)


def _h_season(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    name = m.group("s").lower()
    mod = " ".join((m.group("mod") or "").lower().split())
    part = (m.group("part") or "").lower()
    y = _year_of(m.group("y"), ctx)
    if y is None and not mod and not part:
        return None  # "I love summer": generic
    if y is None and mod in ("", "the") and name in ("fall", "spring"):
        return None  # "the spring in my step", "the fall": common words; "in the fall" is a season
    t = ctx.today
    if y is None:
        if mod in ("last", "past", "this past"):  # the most recent one that has ended
            y = t.year
            while _season_dates(ctx, name, y)[1] >= t:
                y -= 1
        elif mod in ("next", "coming", "this coming"):  # the first one that has not begun
            y = t.year - 1
            while _season_dates(ctx, name, y)[0] <= t:
                y += 1
        elif mod == "this":  # the current one, else the one starting this calendar year
            y = t.year - 1 if name == "winter" and t.month <= 2 else t.year
        else:  # "the summer", "over the summer": the most recent one that has begun
            y = t.year if _season_dates(ctx, name, t.year)[0] <= t else t.year - 1
    win = _season(ctx, name, y)
    if part:
        win = _thirds(ctx, win, "season", _PARTS[part])
    return _Hit(m.start(), m.end(), win, "season")


_R_DMY = re.compile(
    rf"\b(?:(?P<wd>{_WD}),?\s+)?(?P<the>the\s+)?(?P<d>[0-9]{{1,2}})(?P<ord>st|nd|rd|th)?(?P<of>\s+of)?[\s-]+"
    rf"(?P<mon>{_MON})\.?(?:,?[\s-]+(?P<y>{_YEAR}|'[0-9]{{2}}))?(?![\w'])",
    _FLAGS,
)
_R_MDY = re.compile(
    rf"\b(?:(?P<wd>{_WD}),?\s+)?(?P<mon>{_MON})\.?[\s-]+(?P<the>the\s+)?(?P<d>[0-9]{{1,2}})(?P<ord>st|nd|rd|th)?"
    rf"(?:,?[\s-]+(?P<y>{_YEAR}|'[0-9]{{2}}))?(?![\w'])(?!:|[.,/][0-9])",
    _FLAGS,
)


def _date_hit(m: re.Match[str], ctx: _Ctx, y: int | None, month: int, day: int) -> _Hit:
    if y is None:  # the most recent such date at or before the reference day
        y = ctx.today.year
        if (month, day) > (ctx.today.month, ctx.today.day):
            y -= 1
        if month == 2 and day == 29:
            while not calendar.isleap(y):
                y -= 1
        wd = m.groupdict().get("wd")
        if wd and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(y, month)[1]:
            # "Sunday 7th May": the most recent year in which that date was a Sunday (within 28 years).
            for candidate in range(y, y - 28, -1):
                try:
                    if date(candidate, month, day).weekday() == _WEEKDAYS[wd.lower()]:
                        y = candidate
                        break
                except ValueError:
                    continue
    try:
        d = date(y, month, day)
    except ValueError:
        return _reject(m)  # "31 February 2023"
    return _Hit(m.start(), m.end(), _days(ctx, d, d), "day")


def _h_named_date(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    tok = m.group("mon")
    y = _year_of(m.group("y"), ctx)
    cued = m.group("ord") or m.groupdict().get("of") or m.group("the")
    ambiguous = tok.lower() in _VERB_MONTHS or tok.lower() not in _FULL_MONTHS
    if y is None and not cued and ambiguous and not tok[0].isupper():
        # "2 may be enough", "march 10 miles": without a year or an ordinal the month must look like one.
        return None
    return _date_hit(m, ctx, y, _MONTHS[tok.lower()], int(m.group("d")))


_R_ISO = re.compile(
    rf"(?<![\w./-])(?P<y>{_YEAR})(?P<sep>[-/.])(?P<m>[0-9]{{1,2}})(?:(?P=sep)(?P<d>[0-9]{{1,2}}))?"
    r"(?!(?!t[0-9])[\w/]|[.-][0-9])",
    _FLAGS,
)


def _h_iso(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    y, month = int(m.group("y")), int(m.group("m"))
    if m.group("d") is None:
        if m.group("sep") != "-" or len(m.group("m")) != 2:
            return None  # "2023.5" is a number, "2023-5" a range; only "2023-05" is a month
        if not 1 <= month <= 12:
            return _reject(m)
        return _Hit(m.start(), m.end(), _months(ctx, y, month, y, month), "month")
    return _date_hit(m, ctx, y, month, int(m.group("d")))


_R_NUMERIC = re.compile(
    r"(?<![\w./-])(?P<a>[0-9]{1,2})(?P<sep>[/.-])(?P<b>[0-9]{1,2})(?P=sep)(?P<y>[0-9]{4}|[0-9]{2})"
    r"(?![\w/]|[.-][0-9])",
    _FLAGS,
)


def _h_numeric(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    a, b, y_text, sep = int(m.group("a")), int(m.group("b")), m.group("y"), m.group("sep")
    if len(y_text) == 4:
        y = int(y_text)
        if not 1000 <= y <= 2999:
            return None
    elif sep == ".":
        return None  # "1.2.34" is a version number
    else:
        y = _two_digit_year(int(y_text), ctx)
    if sep == ".":
        day, month = a, b  # dotted dates are European: day.month.year
    elif a > 12:
        day, month = a, b  # impossible as US month/day: read as day/month
    else:
        month, day = a, b  # US month/day by default
    if not 1 <= month <= 12:
        return _reject(m)
    return _date_hit(m, ctx, y, month, day)


_R_BARE_OFFSET = re.compile(
    rf"\bthe\s+(?P<unit>day|week|weekend|month|year|fortnight|{_WD})\s+before(?:\s+(?P<last>last)"
    rf"(?!\s+(?:week|weekend|month|year|night|{_WD}|{_MON}|{_SEASON})\b))?\b",
    _FLAGS,
)


def _h_bare_offset(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    unit = m.group("unit").lower()
    k = 2 if m.group("last") else 1
    win = _offset(ctx, unit, "before", k, k, ctx.today, ctx.today)
    return _Hit(m.start(), m.end(), win, "bare", offset=(unit, k))


# Event-relative: "before the trip", "the week after my birthday", "since Emma's wedding".
_TEMPORAL_NP = (
    rf"{_DET}\s+(?:(?:very\s+)?(?:end|beginning|start|middle)\s+of\s+(?:[0-9]|{_MON}\b|last\b|this\b|next\b"
    rf"|the\s+(?:year|month|week|day)\b)|(?:summer|winter|spring|autumn|fall|weekend|week|month|year|day|days"
    rf"|morning|afternoon|evening|night|past|last|next|previous|same|following|holidays?|other\s+day)\b)"
)
_R_ANCHOR = re.compile(
    rf"\b(?P<rel>(?:the\s+(?P<ou>day|week|weekend|month|year|fortnight|{_WD})|(?P<on>{_NUM})\s+"
    rf"(?P<ou2>day|week|month|year|fortnight)s?)\s+(?P<od>before|after)"
    rf"|(?:(?:right|just|shortly|soon|immediately|long)\s+)?(?:before|after)|ever\s+since|since|prior\s+to"
    rf"|until|till|during)\s+(?!{_TEMPORAL_NP})"
    rf"(?P<np>{_DET}\s+[a-z][\w'-]*(?:\s+[a-z][\w'-]*){{0,4}}"
    rf"|(?!(?:it|that|he|she|there|what|who|here|let|where|everyone|everything)'s)[a-z][\w-]*'s\s+[a-z][\w'-]*"
    rf"(?:\s+[a-z][\w'-]*){{0,3}}"
    rf"|(?:high\s+school|school|work|college|university|graduation|lunch|dinner|breakfast|class|retirement"
    rf"|childhood|covid|kindergarten)\b)",
    _FLAGS,
)
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ANCHOR_STOP = _words(
    "and or but so because when while where which who whom that then than if is was were are am be been "
    "being has had have will would shall should can could may might must did do does i you he she we they "
    "it me him us them last next this these those yesterday today tonight tomorrow ago recently in on at "
    "for from during since before after until till with about as into by"
) | frozenset(_WEEKDAYS)
_AUX = _words("is was were are am has had have will would can could did does do")
_NOT_TEMPORAL_BEFORE_AFTER = _words(
    "look looks looking looked named name take takes taking took run runs running ran chase chased "
    "chasing go goes going went gone ask asked asking"
)


def _h_anchor(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    rel = " ".join(m.group("rel").lower().split())
    head = rel.split()[-1]
    if head == "after" and m.group("od") is None:
        before = text[max(0, m.start() - 20) : m.start()].split()
        if before and before[-1].lower() in _NOT_TEMPORAL_BEFORE_AFTER:
            return None  # "looking after my kids"
    words = m.group("np").split()
    kept = words[:1]
    for w in words[1:]:
        if w.lower() in _ANCHOR_STOP:
            break
        kept.append(w)
    if len(kept) == 1 and kept[0].lower() in ("the", "my", "our", "his", "her", "their", "your", "its"):
        return None
    # End of the kept phrase in the text: walk the words of the np span.
    np_start = m.start("np")
    pos = np_start
    for w in kept:
        pos = text.index(w, pos) + len(w)
    if head in ("since",):
        nxt = text[pos:].split(maxsplit=1)
        if nxt and nxt[0].lower().strip(",.;!?") in _AUX:
            return None  # "since the weather was bad": causal "since"
    if rel.startswith(("since", "ever since")) or head == "after":
        relation: Relation = "after"
    elif head == "during":
        relation = "during"
    else:
        relation = "before"
    return _Hit(m.start(), pos, None, "anchor", relation=relation, anchor=text[np_start:pos])


# dateparser fallback candidates: compact or year-first dates the rules do not read ("08May2023").
_R_FALLBACK = re.compile(
    rf"(?<![a-z0-9])(?:[0-9]{{1,2}}(?:st|nd|rd|th)?[-./ ]?{_MON}\.?[-./ ]?(?:[0-9]{{4}}|[0-9]{{2}})"
    rf"|{_YEAR}[-./ ]?{_MON}\.?[-./ ]?[0-9]{{1,2}}(?:st|nd|rd|th)?)(?![a-z0-9])",
    _FLAGS,
)


def _h_fallback(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    return _Hit(m.start(), m.end(), None, "lazy")


# Cheap substring gates (checked on the lowercased text) decide which rules run at all: most
# messages that pass the pre-filter need only a few of the twenty regexes.
_G_DIGIT = tuple("0123456789")
_G_MONTH = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_G_YEAR = ("1", "2")
_G_WEEKDAY = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_G_RELATIVE = ("last", "past", "previous", "next", "coming", "this", "current")

# Order matters only to break ties between equally long matches at the same position.
_RULES: tuple[tuple[re.Pattern[str], _Handler, tuple[str, ...]], ...] = (
    (_R_ISO, _h_iso, _G_YEAR),
    (_R_NUMERIC, _h_numeric, _G_DIGIT),
    (_R_DMY, _h_named_date, _G_MONTH),
    (_R_MDY, _h_named_date, _G_MONTH),
    (_R_MONTH_RANGE, _h_month_range, ("from", "between")),
    (_R_YEAR_RANGE, _h_year_range, ("from", "between")),
    (_R_DAYWORD, _h_dayword, ("yesterday", "today", "tomorrow", "tonight", "this", "last")),
    (_R_BARE_OFFSET, _h_bare_offset, ("before",)),
    (_R_AGO, _h_ago, ("ago", "back", "from")),
    (_R_ROLL, _h_roll, _G_RELATIVE),
    (_R_CAL, _h_cal, _G_RELATIVE),
    (_R_WEEKEND, _h_weekend, ("weekend",)),
    (_R_WEEKDAY, _h_weekday, _G_WEEKDAY),
    (_R_SEASON, _h_season, ("spring", "summer", "autumn", "fall", "winter")),
    (_R_MONTH, _h_month, _G_MONTH),
    (_R_YEAR, _h_year, _G_YEAR),
    (_R_RECENT, _h_recent, ("recent", "lately", "late", "other")),
    (_R_EARLIER, _h_earlier, ("earlier", "later")),
    (_R_ANCHOR, _h_anchor, ("before", "after", "since", "until", "till", "during", "prior")),
    (_R_FALLBACK, _h_fallback, _G_MONTH),
)

# Composition: prefixes read backwards from a base expression.
_P_PART = re.compile(
    r"\b(?:(?P<p>early|mid|late)[\s-]*|(?:the\s+)?(?:very\s+)?(?P<q>beginning|start|middle|end)\s+of\s+)$",
    _FLAGS,
)
_P_OFFSET = re.compile(
    rf"\b(?:the\s+(?P<ou>day|week|weekend|month|year|fortnight|{_WD})|(?P<on>{_NUM})\s+"
    rf"(?P<ou2>day|week|weekend|month|year|fortnight)s?)\s+(?P<od>before|after|prior\s+to)\s+$",
    _FLAGS,
)
_P_NEUTRAL = re.compile(r"\b(?:in|on|during|over|throughout)\s+$", _FLAGS)
_P_RANGE_START = re.compile(r"\b(?:from|between)\s+$", _FLAGS)
_P_CONNECTOR = re.compile(r"\s*(?:to|until|till|through|thru|and|-|–|—)\s*", _FLAGS)
_P_RELATION = re.compile(
    r"\b(?P<r>ever\s+since|since|before|prior\s+to|after|until|till|up\s+to|by|from)\s+$", _FLAGS
)
_PARTABLE = frozenset({"year", "month", "season", "week"})
_LOOKBACK = 80  # characters of text searched for a prefix


# --------------------------------------------------------------------------------------------------
# pipeline


def _candidates(text: str, ctx: _Ctx, skip: set[tuple[int, int]]) -> list[tuple[int, int, int, _Hit]]:
    out: list[tuple[int, int, int, _Hit]] = []
    low = text.lower()
    for order, (pattern, handler, gate) in enumerate(_RULES):
        if not any(g in low for g in gate):
            continue
        for m in pattern.finditer(text):
            try:
                hit = handler(m, ctx, text)
            except (ValueError, OverflowError, KeyError):
                hit = _reject(m)  # out-of-range dates and the like: consume the span, yield nothing
            if hit is not None and (hit.start, hit.end) not in skip:
                out.append((hit.start, -hit.end, order, hit))
    return out


def _select(cands: list[tuple[int, int, int, _Hit]]) -> list[_Hit]:
    """Leftmost-longest non-overlapping hits, in text order."""
    cands.sort(key=lambda c: c[:3])
    chosen: list[_Hit] = []
    last_end = -1
    for start, _neg_end, _order, hit in cands:
        if start >= last_end and hit.end > start:
            chosen.append(hit)
            last_end = hit.end
    return chosen


def _dateparser_window(span: str, ctx: _Ctx) -> _Win | None:
    """Parse an explicit date string with dateparser (lazy import: it is slow to load)."""
    try:
        from dateparser.date import DateDataParser

        # The reference's wall clock with TIMEZONE=UTC: dateparser shifts nothing, dates stay local.
        settings = {
            "RELATIVE_BASE": ctx.now.replace(tzinfo=None),
            "PREFER_DATES_FROM": "past",
            "RETURN_AS_TIMEZONE_AWARE": True,
            "TIMEZONE": "UTC",
            "DATE_ORDER": "MDY",
        }
        data = DateDataParser(languages=["en"], settings=settings).get_date_data(span)
    except Exception:  # dateparser is a best-effort fallback: never let it break parsing
        return None
    if data is None or data.date_obj is None:
        return None
    d = data.date_obj.date()
    parts = set(getattr(data, "parts", None) or ())
    if "day" in parts or data.period == "day":
        return _days(ctx, d, d)
    if "month" in parts and "year" in parts:
        return _months(ctx, d.year, d.month, d.year, d.month)
    return None


def _prev_alive(hits: list[_Hit], i: int) -> int:
    for j in range(i - 1, -1, -1):
        if not hits[j].dead:
            return j
    return -1


def _segment(text: str, hits: list[_Hit], i: int) -> tuple[int, str]:
    """The text between the previous live hit and hit ``i`` (at most ``_LOOKBACK`` characters)."""
    j = _prev_alive(hits, i)
    lo = max(hits[j].end if j >= 0 else 0, hits[i].start - _LOOKBACK)
    return lo, text[lo : hits[i].start]


def _apply_relation(word: str, win: _Win, ctx: _Ctx) -> tuple[_Win, Relation]:
    s, e = win
    assert s is not None and e is not None
    if word in ("before", "prior to"):
        return (None, s - _US), "before"
    if word in ("until", "till", "up to", "by"):
        return (None, e), "before"
    if word == "after":
        return (e + _US, None), "after"
    # since / ever since / from: from the start of X to the end of the reference day.
    return (s, max(_day_end(ctx, ctx.today), s)), "during"


def _compose(text: str, ctx: _Ctx, hits: list[_Hit]) -> None:
    """Fold prefixes into base hits: parts ("early 2023"), offsets ("the week before X"), neutral
    prepositions ("in March"), ranges ("from X to Y") and relations ("since X", "before 2020")."""
    # Right to left, so that a hit's own prefixes are settled before its left neighbour looks at them.
    for i in range(len(hits) - 1, -1, -1):
        h = hits[i]
        if h.dead or h.win is None or h.kind in ("anchor", "bare", "reject"):
            continue
        lo, seg = _segment(text, hits, i)
        m = _P_PART.search(seg)
        if m and h.kind in _PARTABLE:
            h.win = _thirds(ctx, h.win, h.kind, _PARTS[(m.group("p") or m.group("q")).lower()])
            h.start, h.kind = lo + m.start(), "span"
            lo, seg = _segment(text, hits, i)
        s, e = h.win
        assert s is not None and e is not None
        j = _prev_alive(hits, i)
        if j >= 0 and hits[j].kind == "bare" and not text[hits[j].end : h.start].strip():
            unit, k = hits[j].offset or ("day", 1)
            h.win = _offset(ctx, unit, "before", k, k, s.date(), e.date())
            h.start, h.kind = hits[j].start, unit
            hits[j].dead = True
            lo, seg = _segment(text, hits, i)
        else:
            m = _P_OFFSET.search(seg)
            if m:
                unit = (m.group("ou") or m.group("ou2")).lower()
                n_lo, n_hi = _num(m.group("on")) if m.group("on") else (1, 1)
                direction = "after" if m.group("od").lower() == "after" else "before"
                h.win = _offset(ctx, unit, direction, n_lo, n_hi, s.date(), e.date())
                h.start, h.kind = lo + m.start(), unit
                lo, seg = _segment(text, hits, i)
        m = _P_NEUTRAL.search(seg)
        if m:
            h.start = lo + m.start()
    # Left to right: ranges first ("from March to May"), then single relations ("since March").
    alive = [h for h in hits if not h.dead]
    for idx, h in enumerate(alive):
        if h.dead or h.win is None or h.kind in ("anchor", "reject") or idx + 1 >= len(alive):
            continue
        nxt = alive[idx + 1]
        if nxt.win is None or nxt.kind in ("anchor", "reject"):
            continue
        lo = max(0, h.start - _LOOKBACK)
        start_m = _P_RANGE_START.search(text[lo : h.start])
        if start_m and _P_CONNECTOR.fullmatch(text[h.end : nxt.start]):
            s, e = h.win[0], nxt.win[1]
            if s is not None and e is not None and s <= e:
                h.win, h.start, h.end, h.kind = (s, e), lo + start_m.start(), nxt.end, "span"
                nxt.dead = True
    alive = [h for h in hits if not h.dead]
    for i, h in enumerate(alive):
        if h.win is None or h.kind in ("anchor", "reject", "bare") or h.win[0] is None or h.win[1] is None:
            continue
        lo = max(alive[i - 1].end if i else 0, h.start - _LOOKBACK)
        m = _P_RELATION.search(text[lo : h.start])
        if m:
            word = " ".join(m.group("r").lower().split())
            h.win, h.relation = _apply_relation(word, h.win, ctx)
            h.start = lo + m.start()


def _find(text: str, ctx: _Ctx) -> list[_Hit]:
    skip: set[tuple[int, int]] = set()
    cands = _candidates(text, ctx, skip)
    while True:
        hits = _select(list(cands))
        failed = False
        for h in hits:
            if h.kind == "lazy":
                win = _dateparser_window(text[h.start : h.end], ctx)
                if win is None:  # not a date after all: drop it and let shorter rule matches compete
                    skip.add((h.start, h.end))
                    failed = True
                else:
                    h.win, h.kind = win, "day"
        if not failed:
            break
        cands = [c for c in cands if (c[3].start, c[3].end) not in skip]
    _compose(text, ctx, hits)
    return [h for h in hits if not h.dead and (h.win is not None or h.anchor is not None)]


def _constraint(text: str, h: _Hit) -> TemporalConstraint | None:
    try:
        rng = TimeRange(start=h.win[0], end=h.win[1]) if h.win is not None else None
    except (ValueError, OverflowError):
        return None
    return TemporalConstraint(
        expression=text[h.start : h.end].strip().rstrip(".,"), range=rng, relation=h.relation, anchor=h.anchor
    )


# --------------------------------------------------------------------------------------------------
# public API


def find_temporal_expressions(text: str, reference_time: datetime) -> list[TemporalConstraint]:
    """All time expressions in ``text``, in text order, resolved against ``reference_time``.

    ``reference_time`` is "now" for the text (a query's time, a message's timestamp); calendar units are
    computed in its timezone, a naive value being UTC. Never raises on odd text; returns ``[]`` when
    nothing temporal is found.
    """
    if not text or not _PREFILTER.search(text):
        return []
    try:
        ctx = _context(reference_time)
        hits = _find(text, ctx)
    except (ValueError, OverflowError):  # references near datetime's limits
        return []
    out = []
    for h in hits:
        c = _constraint(text, h)
        if c is not None:
            out.append(c)
    return out


def parse_temporal(text: str, reference_time: datetime) -> TemporalConstraint | None:
    """The time constraint of ``text`` relative to ``reference_time``, or ``None`` if it has none.

    With several expressions, the first one that resolves to a range wins (what a filter can use);
    failing that, the first event-relative one ("after the wedding"), whose ``range`` is ``None``.
    """
    found = find_temporal_expressions(text, reference_time)
    for c in found:
        if c.range is not None:
            return c
    return found[0] if found else None


_OFFSET_HEAD = re.compile(
    rf"^(?:the\s+(?P<ou>day|week|weekend|month|year|fortnight|{_WD})|(?P<on>{_NUM})\s+"
    rf"(?P<ou2>day|week|month|year|fortnight)s?)\s+(?P<od>before|after)\b",
    _FLAGS,
)


def resolve_anchor(
    constraint: TemporalConstraint, event: TimeRange, *, horizon: timedelta | None = None
) -> TimeRange:
    """The window of an event-relative constraint, given the anchor event's range.

    * "the week before the trip", "two days after the party": that calendar unit next to the event
      (computed in UTC), e.g. the Monday-Sunday week before the week the trip starts in;
    * "before/until the trip": ``(None, event.start)`` (``until`` includes the start instant, ``before``
      stops one microsecond earlier); "after the wedding": ``(event.end, None)``; "since the move":
      ``(event.start, None)``; "during the trip": the event itself.

    The open side stays ``None`` (nothing is invented) unless ``horizon`` bounds it, e.g.
    ``horizon=timedelta(days=365)`` gives "up to a year before the trip". A constraint that already has
    a range (or no anchor) is returned as is. An event with neither start nor end raises ``ValueError``.
    """
    if constraint.range is not None:
        return constraint.range
    if constraint.anchor is None:
        raise ValueError("constraint has neither a range nor an anchor")
    first = event.start or event.end
    last = event.end or event.start
    if first is None or last is None:
        raise ValueError("the anchor event has neither a start nor an end")
    first, last = as_utc(first), as_utc(last)
    expr = " ".join(constraint.expression.lower().split())
    m = _OFFSET_HEAD.match(expr)
    if m:
        ctx = _Ctx(tz=UTC, now=last, today=last.date())
        unit = (m.group("ou") or m.group("ou2")).lower()
        lo, hi = _num(m.group("on")) if m.group("on") else (1, 1)
        s, e = _offset(ctx, unit, m.group("od"), lo, hi, first.date(), last.date())
        return TimeRange(start=s, end=e)
    if constraint.relation == "during":
        return TimeRange(start=first, end=last)
    if constraint.relation == "before":
        end = first if expr.startswith(("until", "till")) else first - _US
        return TimeRange(start=end - horizon if horizon else None, end=end)
    start = first if expr.startswith(("since", "ever since")) else last + _US
    return TimeRange(start=start, end=start + horizon if horizon else None)
