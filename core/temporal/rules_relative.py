"""Rules for expressions relative to the reference: day words, "N ago", "last week", weekdays, weekends."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from .hits import _Hit, _reject
from .units import (
    _Ctx,
    _day_part,
    _days,
    _month_last,
    _months,
    _num,
    _offset,
    _shift,
    _unit,
    _week_start,
    _weekday_after,
    _weekday_before,
    _Win,
    _years,
)
from .vocabulary import _FLAGS, _MON, _NUM, _SEASON, _UNIT, _US, _WD, _WEEKDAYS

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


def _truncate(moment: datetime, unit: str) -> datetime:
    """``moment`` at the start of its minute, or of its hour when ``unit`` is "hour"."""
    minute = 0 if unit == "hour" else moment.minute
    return moment.replace(minute=minute, second=0, microsecond=0)


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
        first, last = _truncate(first, unit), _truncate(last, unit)
        return _Hit(m.start(), m.end(), (first, last + step - _US), unit)
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
        moments: _Win = (ctx.now, ctx.now + span) if future else (ctx.now - span, ctx.now)
        return _Hit(m.start(), m.end(), moments, "span")
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
    elif mod == "next":
        win = _days(ctx, ws + timedelta(days=12), ws + timedelta(days=13))
    elif mod in ("this coming", "the coming", "coming"):
        win = _offset(ctx, "weekend", "after", 1, 1, t, t)
    elif ctx.nearest and mod != "this" and t.weekday() <= 1:
        # "Anything fun over the weekend?" said on a Monday: with no tense, the weekend just gone is nearer
        win = _offset(ctx, "weekend", "before", 1, 1, t, t)
    elif (mod == "this" and ctx.tense != "past") or ctx.ahead:
        # "this weekend", and "over the weekend" in a plan: the current week's (the current or the coming one)
        win = _days(ctx, ws + timedelta(days=5), ws + timedelta(days=6))
    elif t.weekday() >= 5:  # "the weekend" (or "this weekend" in the past) while it is the weekend: this one
        win = _days(ctx, ws + timedelta(days=5), ws + timedelta(days=6))
    else:
        win = _offset(ctx, "weekend", "before", 1, 1, t, t)
    return _Hit(m.start(), m.end(), win, "weekend")


_R_WEEKDAY = re.compile(
    rf"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|past|coming)\s+)?(?P<wd>{_WD})(?P<pl>s)?\b"
    r"(?:\s+(?P<part>morning|afternoon|evening|night)(?P<pl2>s)?\b)?",
    _FLAGS,
)


def _h_weekday(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    if m.group("pl") or m.group("pl2"):
        return _reject(m)  # "on Mondays", "Thursday nights": habitual
    wd = _WEEKDAYS[m.group("wd").lower()]
    mod = " ".join((m.group("mod") or "").lower().split())
    t = ctx.today
    if mod in ("last", "past", "this past"):
        d = _weekday_before(t, wd)
    elif mod == "this" and ctx.tense is None:
        d = _week_start(t) + timedelta(days=wd)
    elif mod == "next":
        d = _week_start(t) + timedelta(days=7 + wd)
    elif mod in ("coming", "this coming"):
        d = _weekday_after(t, wd)
    elif ctx.ahead:  # "on Monday", "this Monday" in a plan or the present: the next one, today included
        d = t + timedelta(days=(wd - t.weekday()) % 7)
    else:
        d = t - timedelta(days=(t.weekday() - wd) % 7)  # most recent, today included
    part = m.group("part")
    win = _day_part(ctx, d, part.lower()) if part else _days(ctx, d, d)
    return _Hit(m.start(), m.end(), win, "part" if part else "day")


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





# Counts ahead of now: "in 3 days", "in two weeks' time", "in a fortnight", "in 6 months". Only a plan or a
# present-tense statement makes them times ("The package arrives in three days"); in a report or a query they
# are durations ("I finished it in three days"). Weeks, months and years are whole calendar units, the mirror
# of "N weeks ago".
_R_IN_COUNT = re.compile(
    rf"\bin\s+(?:(?:just|only|about|around|roughly|another)\s+)?(?P<n>{_NUM})\s+(?P<unit>day|week|fortnight"
    rf"|month|year)s?(?:['’]s?\s+time)?\b(?!\s+(?:ago|later|earlier|before|after|from|of|or)\b)",
    _FLAGS,
)


def _h_in_count(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    if not ctx.ahead:
        return None
    lo, hi = _num(m.group("n"))
    unit = _unit(m.group("unit"))
    win = _offset(ctx, unit, "after", lo, hi, ctx.today, ctx.today)
    return _Hit(m.start(), m.end(), win, "week" if unit == "fortnight" else unit)


# "the day after tomorrow", "the week/weekend/month/year after next".
_R_AFTER_NEXT = re.compile(
    r"\bthe\s+(?:(?P<d>day)\s+after\s+tomorrow|(?P<unit>week|weekend|month|year)\s+after\s+next)\b", _FLAGS
)


def _h_after_next(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    t = ctx.today
    if m.group("d"):
        d = t + timedelta(days=2)
        return _Hit(m.start(), m.end(), _days(ctx, d, d), "day")
    unit = m.group("unit").lower()
    if unit == "weekend":  # next weekend is the one of next week (see _h_weekend): one week later
        ws = _week_start(t)
        return _Hit(m.start(), m.end(), _days(ctx, ws + timedelta(days=19), ws + timedelta(days=20)), "weekend")
    return _Hit(m.start(), m.end(), _offset(ctx, unit, "after", 2, 2, t, t), unit)
