"""Event-relative expressions ("before the trip") and their resolution once the event's time is known."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

from ..models import TimeRange, as_utc
from .hits import _Hit
from .model import Relation, TemporalConstraint
from .rules_holiday import _R_HOLIDAY
from .units import _Ctx, _num, _offset
from .vocabulary import _DET, _FLAGS, _MON, _NUM, _US, _WD, _WEEKDAYS

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


def _phrase_end(text: str, start: int, words: list[str]) -> int:
    """Where the phrase of ``words`` (the first words of the text from ``start``) ends in ``text``."""
    pos = start
    for w in words:
        pos = text.index(w, pos) + len(w)
    return pos


def _h_anchor(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    rel = " ".join(m.group("rel").lower().split())
    head = rel.split()[-1]
    if head == "after" and m.group("od") is None:
        before = text[max(0, m.start() - 20) : m.start()].split()
        if before and before[-1].lower() in _NOT_TEMPORAL_BEFORE_AFTER:
            return None  # "looking after my kids"
    if _R_HOLIDAY.match(text, m.start("np")):
        return None  # "two days before Valentine's Day": a date, which the holiday rule and composition read
    words = m.group("np").split()
    kept = words[:1]
    for w in words[1:]:
        if w.lower() in _ANCHOR_STOP:
            break
        kept.append(w)
    if len(kept) == 1 and kept[0].lower() in ("the", "my", "our", "his", "her", "their", "your", "its"):
        return None
    np_start = m.start("np")
    pos = _phrase_end(text, np_start, kept)
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


# "while Maya was in Porto": a past clause names the event ("during" it). Only "was"/"were" clauses: "while
# camping" and "while she writes" describe an activity, not a time.
_R_WHILE = re.compile(
    r"\b(?:while|whilst)\s+(?P<np>(?:[a-z][\w'-]*\s+){1,3}?(?:was|were)\s+[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,5})",
    _FLAGS,
)
# A clause ends at a conjunction or at a time expression of its own ("while I was in Lisbon last May": the date
# is the better constraint and must stay visible to the other rules).
_WHILE_CUT = _words(
    "and but so because when then where which who whom if last next this yesterday today tonight tomorrow ago "
    "early late recently"
)
_WHILE_TRAILING = _words("in on at to for from with by of the a an my our his her their your its")
_R_TIME_WORD = re.compile(rf"(?:{_MON}|{_WD}|[0-9][\w-]*)", _FLAGS)


def _h_while(m: re.Match[str], ctx: _Ctx, text: str) -> _Hit | None:
    kept: list[str] = []
    for w in m.group("np").split():
        if w.lower() in _WHILE_CUT or _R_TIME_WORD.fullmatch(w):
            break
        kept.append(w)
    while kept and kept[-1].lower() in _WHILE_TRAILING:
        kept.pop()
    verb = next((i for i, w in enumerate(kept) if w.lower() in ("was", "were")), None)
    if verb is None or verb == len(kept) - 1:
        return None  # "while I was": no event left to look for
    np_start = m.start("np")
    pos = _phrase_end(text, np_start, kept)
    return _Hit(m.start(), pos, None, "anchor", relation="during", anchor=text[np_start:pos])


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


