"""Rules for calendar names: dates, months, years, seasons and their ranges."""

from __future__ import annotations

import calendar
import re
from datetime import date

from .hits import _Hit, _reject
from .units import (
    _Ctx,
    _day_end,
    _days,
    _month_last,
    _months,
    _pick_year,
    _season,
    _season_dates,
    _thirds,
    _two_digit_year,
    _year_of,
    _years,
)
from .vocabulary import (
    _BARE_MONTHS,
    _FLAGS,
    _FULL_MONTHS,
    _MON,
    _MONTHS,
    _NAME_MONTHS,
    _PARTS,
    _SEASON,
    _VERB_MONTHS,
    _WD,
    _WEEKDAYS,
    _YEAR,
)

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
    rf"\b(?:(?P<cue>in|during|throughout|over|since|before|after|until|till|through|from|by|for|last|this|next"
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
        # "booked Porto for June": in a plan "for" names the month; elsewhere it may name a person ("for June").
        strong = strong or (cue_word == "for" and ctx.future)
        weak = cue_word in ("from", "by", "for")
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
        elif cue_word == "this" and ctx.tense in (None, "present"):
            year = t.year
        else:  # past: the latest begun; plan: the next, the current month included; present: the nearest
            year = _pick_year(ctx, lambda y: (date(y, month, 1), _month_last(y, month)))
    # Neutral and semantic cues belong to the expression; relation/part cues are composed later.
    keep_cue = cue_word in _NEUTRAL_CUES or cue_word in ("last", "this", "next")
    start = m.start() if keep_cue else m.start("body")
    win = _months(ctx, year, month, year, month)
    return _Hit(start, m.end(), win, "month", absolute=m.group("y") is not None)


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
    if yb is None and ctx.ahead:  # a plan or the present: the next (or the nearest) such span
        ya = _pick_year(ctx, lambda y: (date(y, a, 1), _month_last(y if b >= a else y + 1, b)))
        yb = ya if b >= a else ya + 1
    if yb is None:  # past: the most recent span that has ended by this month
        yb = t.year if b <= t.month else t.year - 1
    if ya is None:
        ya = yb if a <= b else yb - 1
    absolute = m.group("ya") is not None or m.group("yb") is not None
    return _Hit(m.start(), m.end(), _months(ctx, ya, a, yb, b), "span", absolute=absolute)


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
        return _Hit(m.start(), m.end(), _years(ctx, y, y), "year", absolute=True)
    cue = " ".join(m.group("cue").lower().split())
    y = int(m.group("y"))
    neutral = cue in _NEUTRAL_CUES or cue in ("back in", "the year", "year")
    return _Hit(m.start() if neutral else m.start("y"), m.end(), _years(ctx, y, y), "year", absolute=True)


_R_YEAR_RANGE = re.compile(
    rf"\b(?:from|between)\s+(?P<a>{_YEAR})\s*(?:to|until|till|through|thru|and|-|–|—)\s*"
    rf"(?:(?P<b>{_YEAR}|[0-9]{{2}})|(?P<now>now|today|the\s+present|present))\b(?![/.:-]?[0-9])",
    _FLAGS,
)


def _h_year_range(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    a = int(m.group("a"))
    if m.group("now"):
        return _Hit(m.start(), m.end(), (_years(ctx, a, a)[0], _day_end(ctx, ctx.today)), "span", absolute=True)
    b_text = m.group("b")
    b = int(b_text) if len(b_text) == 4 else a // 100 * 100 + int(b_text)
    if b < a:
        return _reject(m)
    return _Hit(m.start(), m.end(), _years(ctx, a, b), "span", absolute=True)


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
    given = y is not None
    if y is None:
        if mod in ("last", "past", "this past"):  # the most recent one that has ended
            y = t.year
            while _season_dates(ctx, name, y)[1] >= t:
                y -= 1
        elif mod in ("next", "coming", "this coming"):  # the first one that has not begun
            y = t.year - 1
            while _season_dates(ctx, name, y)[0] <= t:
                y += 1
        elif mod == "this" and ctx.tense in (None, "present"):  # the current one, else the one starting this year
            y = t.year - 1 if name == "winter" and t.month <= 2 else t.year
        else:  # "over the summer": past, the latest begun; plan, the current else the next; present, the nearest
            y = _pick_year(ctx, lambda year: _season_dates(ctx, name, year))
    win = _season(ctx, name, y)
    if part:
        win = _thirds(ctx, win, "season", _PARTS[part])
    return _Hit(m.start(), m.end(), win, "season", absolute=given)


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


def _valid_day(year: int, month: int, day: int) -> tuple[date, date] | None:
    """The day as a one-day span, or None where it does not exist in that year (29 February)."""
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return d, d


def _date_hit(m: re.Match[str], ctx: _Ctx, y: int | None, month: int, day: int) -> _Hit:
    given = y is not None
    if y is None:  # the most recent such date at or before the reference day (plan: the next; present: nearest)
        step = 1 if ctx.ahead else -1
        if not 1 <= month <= 12:
            return _reject(m)
        y = _pick_year(ctx, lambda year: _valid_day(year, month, day))
        if month == 2 and day == 29:
            while not calendar.isleap(y):
                y += step
        wd = m.groupdict().get("wd")
        if wd and 1 <= month <= 12 and 1 <= day <= calendar.monthrange(y, month)[1]:
            # "Sunday 7th May": the nearest year in which that date was a Sunday (within 28 years).
            for candidate in range(y, y + 28 * step, step):
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
    return _Hit(m.start(), m.end(), _days(ctx, d, d), "day", absolute=given)


def _h_named_date(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    tok = m.group("mon")
    y = _year_of(m.group("y"), ctx)
    cued = m.group("ord") or m.groupdict().get("of") or m.group("the")
    ambiguous = tok.lower() in _VERB_MONTHS or tok.lower() not in _FULL_MONTHS
    if y is None and not cued and ambiguous and not tok[0].isupper():
        # "2 may be enough", "march 10 miles": without a year or an ordinal the month must look like one; a day
        # before it and an end or a connector after it do ("away 28 march - 2 april", "on 2 may.").
        day_first = m.re is _R_DMY
        if not (day_first and _MONTH_TAIL.match(text, m.end())):
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
        return _Hit(m.start(), m.end(), _months(ctx, y, month, y, month), "month", absolute=True)
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



# dateparser fallback candidates: compact or year-first dates the rules do not read ("08May2023").
_R_FALLBACK = re.compile(
    rf"(?<![a-z0-9])(?:[0-9]{{1,2}}(?:st|nd|rd|th)?[-./ ]?{_MON}\.?[-./ ]?(?:[0-9]{{4}}|[0-9]{{2}})"
    rf"|{_YEAR}[-./ ]?{_MON}\.?[-./ ]?[0-9]{{1,2}}(?:st|nd|rd|th)?)(?![a-z0-9])",
    _FLAGS,
)


def _h_fallback(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit:
    return _Hit(m.start(), m.end(), None, "lazy", absolute=True)  # the candidates all name a year






# Day ranges inside one month: "from 14 to 21 June", "12-15 October", "between 2 and 4 December", "June 14-21",
# "from the 20th to the 24th of January". ("from 2 January to 10 February" is two dates joined by composition.)
_DAY_TO = r"\s*(?P<conn{n}>-|–|—|to|until|till|through|thru|and)\s*(?:the\s+)?"
_R_DAY_RANGE = re.compile(
    rf"\b(?:(?P<cue>from|between)\s+)?(?:the\s+)?(?P<d1>[0-9]{{1,2}})(?:st|nd|rd|th)?{_DAY_TO.format(n=1)}"
    rf"(?P<d2>[0-9]{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?[\s-]+(?P<mon>{_MON})\.?(?:,?\s+(?P<y>{_YEAR}))?(?![\w'])"
    rf"|\b(?:(?P<cue2>from|between)\s+)?(?P<mon2>{_MON})\.?\s+(?:the\s+)?(?P<e1>[0-9]{{1,2}})(?:st|nd|rd|th)?"
    rf"{_DAY_TO.format(n=2)}(?P<e2>[0-9]{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<y2>{_YEAR}))?(?![\w'])(?!:|[.,/][0-9])",
    _FLAGS,
)


def _h_day_range(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    first = m.group("d1") is not None
    cue = (m.group("cue") if first else m.group("cue2")) or ""
    conn = (m.group("conn1") if first else m.group("conn2")).lower()
    if conn == "and" and cue.lower() != "between":
        return None  # "3 and 4 May" without "between" is a list, not a range
    tok = m.group("mon") if first else m.group("mon2")
    low = tok.lower()
    year_text = m.group("y") if first else m.group("y2")
    if year_text is None and (low in _VERB_MONTHS or low not in _FULL_MONTHS) and not tok[0].isupper():
        return None  # "march 3-4 miles": a lowercase verb or abbreviation must look like a month
    month = _MONTHS[low]
    a, b = (int(m.group("d1")), int(m.group("d2"))) if first else (int(m.group("e1")), int(m.group("e2")))
    if not a < b:
        return None  # "21-14 June" is no range; the date after it still counts

    def span(year: int) -> tuple[date, date] | None:
        try:
            return date(year, month, a), date(year, month, b)
        except ValueError:
            return None

    year = int(year_text) if year_text else _pick_year(ctx, span)
    found = span(year)
    if found is None:
        return _reject(m)  # "30-31 February"
    return _Hit(m.start(), m.end(), _days(ctx, *found), "span", absolute=year_text is not None)
