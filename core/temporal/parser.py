"""The pipeline: gated rules, leftmost-longest selection, the dateparser fallback, composition; public entry points."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from ..models import TimeRange
from .anchors import _R_ANCHOR, _R_WHILE, _h_anchor, _h_while
from .compose import _compose
from .hits import _Handler, _Hit, _reject
from .model import TemporalConstraint, Tense
from .rules_calendar import (
    _R_DAY_RANGE,
    _R_DMY,
    _R_FALLBACK,
    _R_ISO,
    _R_MDY,
    _R_MONTH,
    _R_MONTH_RANGE,
    _R_NUMERIC,
    _R_SEASON,
    _R_YEAR,
    _R_YEAR_RANGE,
    _h_day_range,
    _h_fallback,
    _h_iso,
    _h_month,
    _h_month_range,
    _h_named_date,
    _h_numeric,
    _h_season,
    _h_year,
    _h_year_range,
)
from .rules_holiday import _R_HOLIDAY, _h_holiday
from .rules_holiday import GATE as _HOLIDAY_GATE
from .rules_month_day import (
    _R_BARE_DAY,
    _R_BARE_DAY_RANGE,
    _R_DAY_OF_REL_MONTH,
    _h_bare_day,
    _h_bare_day_range,
    _h_day_of_rel_month,
)
from .rules_relative import (
    _R_AFTER_NEXT,
    _R_AGO,
    _R_BARE_OFFSET,
    _R_CAL,
    _R_DAYWORD,
    _R_EARLIER,
    _R_IN_COUNT,
    _R_RECENT,
    _R_ROLL,
    _R_WEEKDAY,
    _R_WEEKEND,
    _h_after_next,
    _h_ago,
    _h_bare_offset,
    _h_cal,
    _h_dayword,
    _h_earlier,
    _h_in_count,
    _h_recent,
    _h_roll,
    _h_weekday,
    _h_weekend,
)
from .timestamps import read_free_date
from .units import _context, _Ctx, _days, _months, _Win
from .vocabulary import _FLAGS, _PREFILTER

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
    (_R_DAY_RANGE, _h_day_range, _G_MONTH),
    (_R_MDY, _h_named_date, _G_MONTH),
    (_R_DAY_OF_REL_MONTH, _h_day_of_rel_month, ("month",)),
    (_R_BARE_DAY_RANGE, _h_bare_day_range, ("from", "between")),
    (_R_BARE_DAY, _h_bare_day, ("st", "nd", "rd", "th")),
    (_R_MONTH_RANGE, _h_month_range, ("from", "between")),
    (_R_YEAR_RANGE, _h_year_range, ("from", "between")),
    (_R_DAYWORD, _h_dayword, ("yesterday", "today", "tomorrow", "tonight", "this", "last")),
    (_R_BARE_OFFSET, _h_bare_offset, ("before",)),
    (_R_AGO, _h_ago, ("ago", "back", "from")),
    (_R_IN_COUNT, _h_in_count, ("in ",)),
    (_R_AFTER_NEXT, _h_after_next, ("after",)),
    (_R_ROLL, _h_roll, _G_RELATIVE),
    (_R_CAL, _h_cal, _G_RELATIVE),
    (_R_WEEKEND, _h_weekend, ("weekend",)),
    (_R_WEEKDAY, _h_weekday, _G_WEEKDAY),
    (_R_SEASON, _h_season, ("spring", "summer", "autumn", "fall", "winter")),
    (_R_HOLIDAY, _h_holiday, _HOLIDAY_GATE),
    (_R_MONTH, _h_month, _G_MONTH),
    (_R_YEAR, _h_year, _G_YEAR),
    (_R_RECENT, _h_recent, ("recent", "lately", "late", "other")),
    (_R_EARLIER, _h_earlier, ("earlier", "later")),
    (_R_ANCHOR, _h_anchor, ("before", "after", "since", "until", "till", "during", "prior")),
    (_R_WHILE, _h_while, ("while", "whilst")),
    (_R_FALLBACK, _h_fallback, _G_MONTH),
)


# --------------------------------------------------------------------------------------------------
# pipeline


# "since X" always looks back, whatever the sentence's tense ("she will stay since March" means no plan).
_SINCE = re.compile(r"\bsince\s+$|^(?:ever\s+)?since\b", _FLAGS)


def _rule_context(ctx: _Ctx, untensed: _Ctx, m: re.Match[str], text: str) -> _Ctx:
    """The context one match is resolved in: without the tense hint when "since" governs it."""
    if ctx.tense is None:
        return ctx
    before = text[max(0, m.start() - 16) : m.start()]
    return untensed if _SINCE.search(before) or _SINCE.search(m.group(0)) else ctx


def _candidates(text: str, ctx: _Ctx, skip: set[tuple[int, int]]) -> list[tuple[int, int, int, _Hit]]:
    out: list[tuple[int, int, int, _Hit]] = []
    low = text.lower()
    untensed = replace(ctx, tense=None)
    for order, (pattern, handler, gate) in enumerate(_RULES):
        if not any(g in low for g in gate):
            continue
        for m in pattern.finditer(text):
            try:
                hit = handler(m, _rule_context(ctx, untensed, m, text), text)
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


def _free_window(span: str, ctx: _Ctx) -> _Win | None:
    """An explicit date string the rules leave to the one free-form fallback (``timestamps.read_free_date``)."""
    found = read_free_date(span, now=ctx.now, prefer="future" if ctx.ahead else "past")
    if found is None:
        return None
    d = found.day
    if "day" in found.parts or found.period == "day":
        return _days(ctx, d, d)
    if "month" in found.parts and "year" in found.parts:
        return _months(ctx, d.year, d.month, d.year, d.month)
    return None


def _find(text: str, ctx: _Ctx) -> list[_Hit]:
    skip: set[tuple[int, int]] = set()
    cands = _candidates(text, ctx, skip)
    while True:
        hits = _select(list(cands))
        failed = False
        for h in hits:
            if h.kind == "lazy":
                win = _free_window(text[h.start : h.end], ctx)
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
        expression=text[h.start : h.end].strip().rstrip(".,"),
        range=rng,
        relation=h.relation,
        anchor=h.anchor,
        deictic=rng is not None and not h.absolute,
    )


# --------------------------------------------------------------------------------------------------
# public API


def find_temporal_expressions(
    text: str, reference_time: datetime, *, tense: Tense | None = None
) -> list[TemporalConstraint]:
    """All time expressions in ``text``, in text order, resolved against ``reference_time``.

    ``reference_time`` is "now" for the text (a query's time, a message's timestamp); calendar units are
    computed in its timezone, a naive value being UTC. ``tense`` says whether the text speaks about the
    past or the future where the caller knows it (``detect_tense``); it only changes expressions whose
    direction English leaves open ("on Monday", "this Monday", "this weekend", "in June", "over the
    summer"). ``None`` is the recall default: past preferred. Never raises on odd text; returns ``[]``
    when nothing temporal is found.
    """
    if not text or not _PREFILTER.search(text):
        return []
    try:
        ctx = _context(reference_time, tense)
        hits = _find(text, ctx)
    except (ValueError, OverflowError):  # references near datetime's limits
        return []
    out = []
    for h in hits:
        c = _constraint(text, h)
        if c is not None:
            out.append(c)
    return out


def parse_temporal(
    text: str, reference_time: datetime, *, tense: Tense | None = None
) -> TemporalConstraint | None:
    """The time constraint of ``text`` relative to ``reference_time``, or ``None`` if it has none.

    With several expressions, the first one that resolves to a range wins (what a filter can use);
    failing that, the first event-relative one ("after the wedding"), whose ``range`` is ``None``.
    ``tense`` is as for ``find_temporal_expressions``.
    """
    found = find_temporal_expressions(text, reference_time, tense=tense)
    for c in found:
        if c.range is not None:
            return c
    return found[0] if found else None



