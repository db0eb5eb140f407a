"""Holidays: "at Christmas", "on Valentine's Day", "for Easter", "last Thanksgiving", "Halloween 2023".

Each holiday is one day, computed per year: fixed dates (Christmas 25 Dec, Halloween 31 Oct, ...), Easter and
the days around it (Gregorian computus), and weekday rules (US Thanksgiving the fourth Thursday of November,
Labor Day the first Monday of September, Memorial Day the last Monday of May, Mother's Day the second Sunday
and Father's Day the third Sunday of May and June, as in the US). Which year: a year in the text wins; "last" is
the most recent one strictly before the reference day, "next" the first strictly after it, "this" the one of
the reference's year; otherwise the tense decides as for a month name (past: the latest at or before the
reference day; plan: the next, today included; present: the nearest).

Generic objects named after a holiday ("a Christmas tree", "an Easter egg") are not times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from dateutil.easter import easter

from .hits import _Hit
from .units import _Ctx, _days, _pick_year
from .vocabulary import _FLAGS, _YEAR


def _fixed(month: int, day: int) -> Callable[[int], date]:
    return lambda y: date(y, month, day)


def _nth_weekday(month: int, weekday: int, n: int) -> Callable[[int], date]:
    """The ``n``-th ``weekday`` (0 = Monday) of ``month``; ``n = -1`` is the last one."""

    def day(y: int) -> date:
        if n > 0:
            first = date(y, month, 1)
            return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
        last = date(y + (month == 12), month % 12 + 1, 1) - timedelta(days=1)
        return last - timedelta(days=(last.weekday() - weekday) % 7)

    return day


def _easter(offset: int) -> Callable[[int], date]:
    return lambda y: easter(y) + timedelta(days=offset)


_APOS = r"['’]?"
# (pattern, day of the holiday in a year); longer names first so that "Christmas Eve" beats "Christmas".
_HOLIDAYS: tuple[tuple[str, Callable[[int], date]], ...] = (
    (r"christmas\s+eve|xmas\s+eve", _fixed(12, 24)),
    (r"(?:christmas|xmas)(?:\s+day)?", _fixed(12, 25)),
    (r"boxing\s+day", _fixed(12, 26)),
    (rf"new\s+year{_APOS}s?\s+eve", _fixed(12, 31)),
    (rf"new\s+year{_APOS}s?\s+day|new\s+year{_APOS}s", _fixed(1, 1)),
    (rf"(?:st\.?|saint)\s+valentine{_APOS}s?\s+day|valentine{_APOS}s?(?:\s+day)?", _fixed(2, 14)),
    (rf"(?:st\.?|saint)\s+patrick{_APOS}s?\s+day|paddy{_APOS}s\s+day", _fixed(3, 17)),
    (r"good\s+friday", _easter(-2)),
    (r"easter\s+monday", _easter(1)),
    (r"easter(?:\s+sunday|\s+day)?", _easter(0)),
    (r"may\s+day", _fixed(5, 1)),
    (r"memorial\s+day", _nth_weekday(5, 0, -1)),
    (rf"mother{_APOS}s\s+day", _nth_weekday(5, 6, 2)),
    (rf"father{_APOS}s\s+day", _nth_weekday(6, 6, 3)),
    (r"(?:the\s+)?fourth\s+of\s+july|independence\s+day", _fixed(7, 4)),
    (r"labou?r\s+day", _nth_weekday(9, 0, 1)),
    (r"hallowe?['’]?en", _fixed(10, 31)),
    (r"bonfire\s+night|guy\s+fawkes(?:\s+night|\s+day)?", _fixed(11, 5)),
    (r"thanksgiving(?:\s+day)?", _nth_weekday(11, 3, 4)),
)
_R_HOLIDAY = re.compile(
    r"\b(?:(?P<mod>last|this|next|this\s+past|this\s+coming|the\s+coming)\s+)?(?P<name>"
    + "|".join(f"(?P<h{i}>{pattern})" for i, (pattern, _) in enumerate(_HOLIDAYS))
    + rf")(?![\w'’])(?:,?\s+(?:of\s+)?(?P<y>{_YEAR})\b)?"
    # Things named after the holiday, not its day: "a Christmas tree", "Easter eggs", "Thanksgiving traditions".
    r"(?!\s+(?:trees?|cards?|eggs?|bunny|hunt|lights|jumpers?|sweaters?|songs?|music|carols?|movies?|films?"
    r"|decorations?|costumes?|candy|sweets|pudding|cakes?|cookies|presents?|gifts?|list|markets?|traditions?"
    r"|potluck|party|parties|dinners?|lunch|meal|feast|food|menu|recipes?|leftovers|magic|spirit|vibes?|specials?"
    r"|sales?|shopping|parade|episode|themed?|jokes?|cheer|mood|card)\b)",
    _FLAGS,
)
# Habits name no single day: "During Thanksgiving, we usually watch a few movies", "my favourite Christmas".
_HABITUAL = re.compile(r"\b(?:usually|always|every|each\s+year|favou?rite|traditionally|tend\s+to)\b", _FLAGS)
_MAY_DAY = next(i for i, (pattern, _) in enumerate(_HOLIDAYS) if pattern.startswith("may"))
GATE = ("christmas", "xmas", "boxing", "new year", "valentine", "patrick", "paddy", "good friday", "easter",
        "may day", "memorial", "mother", "father", "july", "independence", "labor", "labour", "hallow", "bonfire",
        "fawkes", "thanksgiving")


def _h_holiday(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    index = next(i for i in range(len(_HOLIDAYS)) if m.group(f"h{i}") is not None)
    day_of = _HOLIDAYS[index][1]
    if index == _MAY_DAY and not m.group("name")[0].isupper():
        return None  # "may day-trip", "you may day..." in lower case: the verb, not 1 May
    mod = " ".join((m.group("mod") or "").lower().split())
    if not m.group("y") and not mod and _HABITUAL.search(text):
        return None
    t = ctx.today
    if m.group("y"):
        d = day_of(int(m.group("y")))
    elif mod in ("last", "this past"):
        d = day_of(t.year) if day_of(t.year) < t else day_of(t.year - 1)
    elif mod in ("next", "this coming", "the coming"):
        d = day_of(t.year) if day_of(t.year) > t else day_of(t.year + 1)
    elif mod == "this":
        d = day_of(t.year)
    else:
        d = day_of(_pick_year(ctx, lambda y: (day_of(y), day_of(y))))
    return _Hit(m.start(), m.end(), _days(ctx, d, d), "day", absolute=m.group("y") is not None)
