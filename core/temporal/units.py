"""Calendar arithmetic in the reference's timezone: days, weeks, months, seasons and offsets between them."""

from __future__ import annotations

import calendar
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from .model import Tense
from .vocabulary import _DAY_PARTS, _FUZZY, _NUM_WORDS, _SEASONS, _US, _WEEKDAYS

# All local: dates and datetimes in the reference's timezone.
_Win = tuple[datetime | None, datetime | None]


@dataclass(frozen=True, slots=True)
class _Ctx:
    tz: tzinfo
    now: datetime  # aware, in tz
    today: date
    tense: Tense | None = None  # None: the recall default, past preferred where English leaves it open

    @property
    def future(self) -> bool:
        return self.tense == "future"

    @property
    def ahead(self) -> bool:
        """Weekdays, weekends and counts from now look forward: a plan, or a present-tense statement."""
        return self.tense in ("future", "present")

    @property
    def nearest(self) -> bool:
        """Months, dates, holidays and seasons take the instance nearest to the reference (present tense)."""
        return self.tense == "present"


def _context(reference_time: datetime, tense: Tense | None = None) -> _Ctx:
    now = reference_time if reference_time.tzinfo is not None else reference_time.replace(tzinfo=UTC)
    return _Ctx(tz=now.tzinfo or UTC, now=now, today=now.date(), tense=tense)


def _pick_year(ctx: _Ctx, span: Callable[[int], tuple[date, date] | None]) -> int:
    """The year whose instance ``span(year)`` (first and last day; ``None`` where there is none) the tense picks.

    Past: the latest that has begun by the reference day; future: the earliest that has not ended; present: the
    one containing the reference day, else the nearest (ties go ahead); no tense: as past.
    """
    t = ctx.today
    years = [y for y in range(t.year - 2, t.year + 3) if span(y) is not None]

    def bounds(y: int) -> tuple[date, date]:
        found = span(y)
        assert found is not None
        return found

    if ctx.future:
        return min((y for y in years if bounds(y)[1] >= t), default=t.year)
    if ctx.nearest:
        def distance(y: int) -> tuple[int, int]:
            first, last = bounds(y)
            gap = 0 if first <= t <= last else min(abs((first - t).days), abs((last - t).days))
            return gap, -y  # ties: the later one
        return min(years, key=distance, default=t.year)
    return max((y for y in years if bounds(y)[0] <= t), default=t.year)


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


