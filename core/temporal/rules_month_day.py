"""Rules for a day of the month without a month name: "the 14th of next month", "next month on the 14th",
"on the 14th", "from the 20th to the 24th".

Each names one day (or one span of days), never the whole month: "the 14th of next month" said in December 2026 is
14 January 2027. A day with no month ("on the 14th") is the 14th of a month near the reference, the tense choosing
which: a plan or a present statement the coming one (today included: "the party is on the 14th" said on 5 December
is 14 December, said on the 20th it is 14 January), a report or a question the last one (today included: "I saw her
on the 14th" said on 5 December is 14 November). A month without that day is skipped ("on the 31st" said in a plan
on 5 November is 31 December) and rejected when it was named ("the 31st of next month" said in January).

An ordinal with no month is a date only where English makes it one: after a preposition ("on", "by", "until",
"from", "to", "before", "after", "since", "for", "through", "between") and followed by the end of the clause or a
connector ("on the 14th.", "by the 14th we need", "on the 14th at noon"); "on the 14th floor", "the 14th time",
"she finished 14th" and "the 14th of each month" are not dates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from .hits import _Hit, _reject
from .units import _Ctx, _days, _month_add
from .vocabulary import _FLAGS, _MON

__all__: list[str] = []

_ORD = r"(?:st|nd|rd|th)"
# "this/next/last month" and its variants: the month a day of the month is taken from.
_MONTH_MOD = r"(?P<mod>(?:the\s+)?(?:last|previous|this|current|next|coming))"
# What may follow a bare ordinal for it to be a date: the end of a clause or a connector, never a noun ("floor").
_TAIL = re.compile(
    r"\s*(?:$|[^\w\s]|(?:and|or|but|when|because|so|to|with|for|until|till|since|before|after|in|at|on|the|i|we"
    r"|he|she|they|you|it|my|our|his|her|their|was|is|are|will|would|then|that|which|where|while|as|too|again"
    r"|already|though|instead|please|if|morning|afternoon|evening|night|noon|midday|midnight|around|about"
    r"|between|from|this|next|last)\b)",
    _FLAGS,
)
_CUE = r"(?P<cue>on|by|until|till|before|after|since|from|for|to|through|between)"
# Not when "of", a month or a joined number follows: "the 14th of March" and "the 14th of next month" are read by
# the rules for them, "the 14th of each month" is a habit, "the 14th-15th" is no single day.
_NO_MONTH_AFTER = rf"(?!\s*of\b|\s*{_MON}\b|[-–—/.][0-9])"

_R_DAY_OF_REL_MONTH = re.compile(
    rf"\b(?:the\s+)?(?P<d>[0-9]{{1,2}}){_ORD}(?:\s+of)?\s+{_MONTH_MOD}\s+month\b"
    rf"|\b(?P<mod2>last|this|next)\s+month,?\s+on\s+the\s+(?P<d2>[0-9]{{1,2}}){_ORD}?\b",
    _FLAGS,
)
_R_BARE_DAY = re.compile(
    rf"\b{_CUE}\s+(?P<body>(?:the\s+)?(?P<d>[0-9]{{1,2}}){_ORD})\b{_NO_MONTH_AFTER}",
    _FLAGS,
)
_R_BARE_DAY_RANGE = re.compile(
    rf"\b(?P<cue>from|between)\s+(?P<body>the\s+(?P<d1>[0-9]{{1,2}}){_ORD}\s*(?:-|–|—|to|until|till|through|and)"
    rf"\s*(?:the\s+)?(?P<d2>[0-9]{{1,2}}){_ORD})\b{_NO_MONTH_AFTER}",
    _FLAGS,
)

_Span = tuple[date, date]


def _valid(year: int, month: int, first: int, last: int) -> _Span | None:
    """Days ``first..last`` of one month, or None where the month lacks one (the 31st of April)."""
    try:
        return date(year, month, first), date(year, month, last)
    except ValueError:
        return None


def _nearby_month(ctx: _Ctx, span: Callable[[int, int], _Span | None]) -> _Span | None:
    """The instance of ``span(year, month)`` the tense picks among the months around the reference: ahead (a plan,
    the present) the first that has not ended by the reference day, else the latest that has begun by it."""
    t = ctx.today
    found = [s for k in range(-13, 14) if (s := span(*_month_add(t.year, t.month, k))) is not None]
    if ctx.ahead:
        return min((s for s in found if s[1] >= t), default=None)
    return max((s for s in found if s[0] <= t), default=None)


def _tail_ok(text: str, end: int) -> bool:
    return _TAIL.match(text, end) is not None


def _h_day_of_rel_month(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    mod = (m.group("mod") or m.group("mod2")).lower().split()[-1]
    shift = {"last": -1, "previous": -1, "next": 1, "coming": 1}.get(mod, 0)  # this / current: 0
    year, month = _month_add(ctx.today.year, ctx.today.month, shift)
    day = int(m.group("d") or m.group("d2"))
    found = _valid(year, month, day, day)
    if found is None:
        return _reject(m)  # "the 31st of next month" in January: no such day, and no other month is meant
    return _Hit(m.start(), m.end(), _days(ctx, *found), "day")


def _h_bare_day(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    if not _tail_ok(text, m.end()):
        return None  # "on the 14th floor", "for the 3rd time"
    day = int(m.group("d"))
    if not 1 <= day <= 31:
        return _reject(m)
    found = _nearby_month(ctx, lambda y, mo: _valid(y, mo, day, day))
    if found is None:
        return _reject(m)
    # The preposition is left to composition: "on" widens the span, "by"/"since"/"before" make a relation.
    return _Hit(m.start("body"), m.end(), _days(ctx, *found), "day")


def _h_bare_day_range(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    if not _tail_ok(text, m.end()):
        return None
    first, last = int(m.group("d1")), int(m.group("d2"))
    if not 1 <= first < last <= 31:
        return None  # "between the 24th and the 2nd" crosses a month: the days alone are read instead
    found = _nearby_month(ctx, lambda y, mo: _valid(y, mo, first, last))
    if found is None:
        return _reject(m)
    return _Hit(m.start(), m.end(), _days(ctx, *found), "span")
