"""Composition: fold prefixes ("early", "the week before", "since", "from X to Y") into the base hits."""

from __future__ import annotations

import re

from .hits import _Hit
from .model import Relation
from .units import _Ctx, _day_end, _num, _offset, _thirds, _Win
from .vocabulary import _FLAGS, _NUM, _PARTS, _US, _WD

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
_P_DATE_CONNECTOR = re.compile(r"\s*(?:to|until|till|through|thru|-|–|—)\s*", _FLAGS)
_P_DIGIT = re.compile(r"[0-9]")
_P_RELATION = re.compile(
    r"\b(?P<r>ever\s+since|since|before|prior\s+to|after|until|till|up\s+to|by|from)\s+$", _FLAGS
)
_PARTABLE = frozenset({"year", "month", "season", "week"})
_LOOKBACK = 80  # characters of text searched for a prefix


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
        _fold_prefixes(text, ctx, hits, i)
    # Left to right: ranges first ("from March to May"), then single relations ("since March").
    _join_ranges(text, [h for h in hits if not h.dead])
    _apply_relations(text, ctx, [h for h in hits if not h.dead])


def _fold_prefixes(text: str, ctx: _Ctx, hits: list[_Hit], i: int) -> None:
    """Fold hit ``i``'s own prefixes, nearest last: a part, then an offset (a bare offset hit just before it, or
    one in the text), then a neutral preposition, which only widens the hit."""
    h = hits[i]
    assert h.win is not None
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


def _join_ranges(text: str, alive: list[_Hit]) -> None:
    """Merge two neighbouring live hits joined as a range ("from X to Y", "28 March - 2 April") into the first."""
    for idx, h in enumerate(alive):
        if h.dead or h.win is None or h.kind in ("anchor", "reject") or idx + 1 >= len(alive):
            continue
        nxt = alive[idx + 1]
        if nxt.win is None or nxt.kind in ("anchor", "reject"):
            continue
        lo = max(0, h.start - _LOOKBACK)
        start_m = _P_RANGE_START.search(text[lo : h.start])
        between = text[h.end : nxt.start]
        # Without "from"/"between", two explicit dates joined by a dash or "to" are a range too ("28 March -
        # 2 April"); weekdays are not ("Monday to Friday" is usually a habit).
        dated = h.kind == nxt.kind == "day" and _P_DIGIT.search(text[h.start : h.end] + text[nxt.start : nxt.end])
        if (start_m or (dated and _P_DATE_CONNECTOR.fullmatch(between))) and _P_CONNECTOR.fullmatch(between):
            s, e = h.win[0], nxt.win[1]
            if s is not None and e is not None and s <= e:
                h.win, h.end, h.kind = (s, e), nxt.end, "span"
                h.start = lo + start_m.start() if start_m else h.start
                h.absolute = h.absolute and nxt.absolute
                nxt.dead = True


def _apply_relations(text: str, ctx: _Ctx, alive: list[_Hit]) -> None:
    """Turn a live hit with a relation word before it ("since X", "before 2020") into that relation's window."""
    for i, h in enumerate(alive):
        if h.win is None or h.kind in ("anchor", "reject", "bare") or h.win[0] is None or h.win[1] is None:
            continue
        lo = max(alive[i - 1].end if i else 0, h.start - _LOOKBACK)
        m = _P_RELATION.search(text[lo : h.start])
        if m:
            word = " ".join(m.group("r").lower().split())
            h.win, h.relation = _apply_relation(word, h.win, ctx)
            h.start = lo + m.start()
