"""Tests of the temporal expression parser (``hindsight_core.temporal``): table-driven forms, negatives,
event anchors, timezones, speed, and hypothesis properties over the supported grammar."""

from __future__ import annotations

import re
import subprocess
import sys
import time as clock
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_core import models, temporal
from hindsight_core.temporal import parser as temporal_parser

TemporalConstraint = temporal.TemporalConstraint
TimeRange = models.TimeRange
parse_temporal = temporal.parse_temporal
find_temporal_expressions = temporal.find_temporal_expressions
resolve_anchor = temporal.resolve_anchor

REF = datetime(2024, 7, 17, 15, 0, tzinfo=UTC)  # a Wednesday
LOCOMO_REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023", a Monday
US = timedelta(microseconds=1)


def days(first: date, last: date | None = None, tz: tzinfo = UTC) -> tuple[datetime, datetime]:
    """Whole days ``first..last`` in ``tz`` as aware UTC datetimes."""
    last = last or first
    return (
        datetime.combine(first, time.min, tz).astimezone(UTC),
        datetime.combine(last, time.max, tz).astimezone(UTC),
    )


def hours(d: date, h0: int, d2: date, h1: int) -> tuple[datetime, datetime]:
    return datetime.combine(d, time(h0), UTC), datetime.combine(d2, time(h1), UTC) - US


def span(text: str, ref: datetime = REF) -> tuple[datetime | None, datetime | None]:
    c = parse_temporal(text, ref)
    assert c is not None, f"no expression found in {text!r}"
    assert c.range is not None, f"{text!r} has no range: {c}"
    return c.range.start, c.range.end


D = date
# (text, expected (start, end)) for REF = Wednesday 2024-07-17 15:00 UTC.
FORMS: list[tuple[str, tuple[datetime | None, datetime | None]]] = [
    ("what did Emma do last week?", days(D(2024, 7, 8), D(2024, 7, 14))),
    ("yesterday", days(D(2024, 7, 16))),
    ("today", days(D(2024, 7, 17))),
    ("tomorrow", days(D(2024, 7, 18))),
    ("tonight", hours(D(2024, 7, 17), 18, D(2024, 7, 18), 6)),
    ("this morning", hours(D(2024, 7, 17), 5, D(2024, 7, 17), 12)),
    ("this afternoon", hours(D(2024, 7, 17), 12, D(2024, 7, 17), 17)),
    ("last night", hours(D(2024, 7, 16), 18, D(2024, 7, 17), 6)),
    ("yesterday morning", hours(D(2024, 7, 16), 5, D(2024, 7, 16), 12)),
    ("the day before yesterday", days(D(2024, 7, 15))),
    ("the day after tomorrow", days(D(2024, 7, 19))),
    ("this week", days(D(2024, 7, 15), D(2024, 7, 21))),
    ("next week", days(D(2024, 7, 22), D(2024, 7, 28))),
    ("the previous week", days(D(2024, 7, 8), D(2024, 7, 14))),
    ("last month", days(D(2024, 6, 1), D(2024, 6, 30))),
    ("this month", days(D(2024, 7, 1), D(2024, 7, 31))),
    ("next month", days(D(2024, 8, 1), D(2024, 8, 31))),
    ("last year", days(D(2023, 1, 1), D(2023, 12, 31))),
    ("this year", days(D(2024, 1, 1), D(2024, 12, 31))),
    ("next year", days(D(2025, 1, 1), D(2025, 12, 31))),
    ("last weekend", days(D(2024, 7, 13), D(2024, 7, 14))),
    ("this weekend", days(D(2024, 7, 20), D(2024, 7, 21))),
    ("next weekend", days(D(2024, 7, 27), D(2024, 7, 28))),
    ("over the weekend", days(D(2024, 7, 13), D(2024, 7, 14))),
    ("this past weekend", days(D(2024, 7, 13), D(2024, 7, 14))),
    ("the weekend before", days(D(2024, 7, 13), D(2024, 7, 14))),
    ("the weekend before last", days(D(2024, 7, 6), D(2024, 7, 7))),
    ("two days ago", days(D(2024, 7, 15))),
    ("2 days ago", days(D(2024, 7, 15))),
    ("a few days ago", days(D(2024, 7, 12), D(2024, 7, 15))),
    ("a couple of days ago", days(D(2024, 7, 14), D(2024, 7, 15))),
    ("a day or two ago", days(D(2024, 7, 15), D(2024, 7, 16))),
    ("a week ago", days(D(2024, 7, 8), D(2024, 7, 14))),
    ("3 weeks ago", days(D(2024, 6, 24), D(2024, 6, 30))),
    ("a few weeks back", days(D(2024, 6, 10), D(2024, 7, 7))),
    ("a month ago", days(D(2024, 6, 1), D(2024, 6, 30))),
    ("six months ago", days(D(2024, 1, 1), D(2024, 1, 31))),
    ("5 years ago", days(D(2019, 1, 1), D(2019, 12, 31))),
    ("3 hours ago", hours(D(2024, 7, 17), 12, D(2024, 7, 17), 13)),
    ("3 days from now", days(D(2024, 7, 20))),
    ("recently", days(D(2024, 6, 17), D(2024, 7, 17))),
    ("lately", days(D(2024, 6, 17), D(2024, 7, 17))),
    ("the other day", days(D(2024, 7, 10), D(2024, 7, 16))),
    ("in March", days(D(2024, 3, 1), D(2024, 3, 31))),
    ("in August", days(D(2023, 8, 1), D(2023, 8, 31))),  # August 2024 has not begun
    ("in July", days(D(2024, 7, 1), D(2024, 7, 31))),
    ("last March", days(D(2024, 3, 1), D(2024, 3, 31))),
    ("last July", days(D(2023, 7, 1), D(2023, 7, 31))),
    ("next March", days(D(2025, 3, 1), D(2025, 3, 31))),
    ("in may", days(D(2024, 5, 1), D(2024, 5, 31))),
    ("March 2024", days(D(2024, 3, 1), D(2024, 3, 31))),
    ("June 2024", days(D(2024, 6, 1), D(2024, 6, 30))),
    ("in June of 2019", days(D(2019, 6, 1), D(2019, 6, 30))),
    ("dec 2020", days(D(2020, 12, 1), D(2020, 12, 31))),
    ("in 2022", days(D(2022, 1, 1), D(2022, 12, 31))),
    ("back in 2015", days(D(2015, 1, 1), D(2015, 12, 31))),
    ("2023's best album", days(D(2023, 1, 1), D(2023, 12, 31))),
    ("on 8 May 2023", days(D(2023, 5, 8))),
    ("8th of May, 2023", days(D(2023, 5, 8))),
    ("May 8th, 2023", days(D(2023, 5, 8))),
    ("May 8 2023", days(D(2023, 5, 8))),
    ("Monday, May 8th, 2023", days(D(2023, 5, 8))),
    ("Sunday 7th May", days(D(2023, 5, 7))),  # the most recent year where 7 May was a Sunday
    ("on the 3rd of June", days(D(2024, 6, 3))),
    ("June 5", days(D(2024, 6, 5))),
    ("Jan 5, '22", days(D(2022, 1, 5))),
    ("2023-05-08", days(D(2023, 5, 8))),
    ("2023-05-08T13:56:00Z", days(D(2023, 5, 8))),
    ("2023/05/08", days(D(2023, 5, 8))),
    ("2023-05", days(D(2023, 5, 1), D(2023, 5, 31))),
    ("8/5/2023", days(D(2023, 8, 5))),  # US month/day
    ("13/5/2023", days(D(2023, 5, 13))),  # day/month: 13 cannot be a month
    ("5/13/2023", days(D(2023, 5, 13))),
    ("8/5/23", days(D(2023, 8, 5))),
    ("12.05.2023", days(D(2023, 5, 12))),  # dotted dates are day.month.year
    ("08May2023", days(D(2023, 5, 8))),  # dateparser fallback
    ("2023 May 8", days(D(2023, 5, 8))),  # dateparser fallback
    ("last Friday", days(D(2024, 7, 12))),
    ("on Monday", days(D(2024, 7, 15))),
    ("Wednesday", days(D(2024, 7, 17))),  # most recent, today included
    ("this Friday", days(D(2024, 7, 19))),
    ("next Friday", days(D(2024, 7, 26))),
    ("this coming Friday", days(D(2024, 7, 19))),
    ("Friday night", hours(D(2024, 7, 12), 18, D(2024, 7, 13), 6)),
    ("over the summer", days(D(2024, 6, 1), D(2024, 8, 31))),
    ("the summer", days(D(2024, 6, 1), D(2024, 8, 31))),
    ("last summer", days(D(2023, 6, 1), D(2023, 8, 31))),
    ("this summer", days(D(2024, 6, 1), D(2024, 8, 31))),
    ("next summer", days(D(2025, 6, 1), D(2025, 8, 31))),
    ("last spring", days(D(2024, 3, 1), D(2024, 5, 31))),
    ("last winter", days(D(2023, 12, 1), D(2024, 2, 29))),
    ("in the fall", days(D(2023, 9, 1), D(2023, 11, 30))),
    ("last autumn", days(D(2023, 9, 1), D(2023, 11, 30))),
    ("winter 2022", days(D(2022, 12, 1), D(2023, 2, 28))),
    ("the summer of 2019", days(D(2019, 6, 1), D(2019, 8, 31))),
    ("early summer", days(D(2024, 6, 1), D(2024, 6, 30))),
    ("since March", days(D(2024, 3, 1), D(2024, 7, 17))),
    ("since 2019", days(D(2019, 1, 1), D(2024, 7, 17))),
    ("since yesterday", days(D(2024, 7, 16), D(2024, 7, 17))),
    ("since early 2023", days(D(2023, 1, 1), D(2024, 7, 17))),
    ("before 2020", (None, days(D(2019, 12, 31))[1])),
    ("after 2020", (days(D(2021, 1, 1))[0], None)),
    ("until 2021", (None, days(D(2021, 12, 31))[1])),
    ("after the summer", (days(D(2024, 9, 1))[0], None)),
    ("earlier this year", days(D(2024, 1, 1), D(2024, 7, 17))),
    ("earlier this month", days(D(2024, 7, 1), D(2024, 7, 17))),
    ("later this week", days(D(2024, 7, 17), D(2024, 7, 21))),
    ("late 2022", days(D(2022, 9, 1), D(2022, 12, 31))),
    ("early 2023", days(D(2023, 1, 1), D(2023, 4, 30))),
    ("mid-2023", days(D(2023, 5, 1), D(2023, 8, 31))),
    ("the end of 2022", days(D(2022, 9, 1), D(2022, 12, 31))),
    ("late March", days(D(2024, 3, 21), D(2024, 3, 31))),
    ("the beginning of March 2023", days(D(2023, 3, 1), D(2023, 3, 10))),
    ("the past two weeks", days(D(2024, 7, 3), D(2024, 7, 17))),
    ("the past week", days(D(2024, 7, 10), D(2024, 7, 17))),
    ("in the last 3 months", days(D(2024, 4, 17), D(2024, 7, 17))),
    ("over the past few months", days(D(2024, 2, 17), D(2024, 7, 17))),
    ("last 3 weeks", days(D(2024, 6, 26), D(2024, 7, 17))),
    ("in the past 24 hours", (REF - timedelta(hours=24), REF)),
    ("from March to May", days(D(2024, 3, 1), D(2024, 5, 31))),
    ("from November to February", days(D(2023, 11, 1), D(2024, 2, 29))),
    ("between 2019 and 2021", days(D(2019, 1, 1), D(2021, 12, 31))),
    ("from 8 May 2023 to 10 May 2023", days(D(2023, 5, 8), D(2023, 5, 10))),
    ("the week before 9 June 2023", days(D(2023, 5, 29), D(2023, 6, 4))),
    ("the Friday before 15 July 2023", days(D(2023, 7, 14))),
    ("two days after 8 May 2023", days(D(2023, 5, 10))),
    ("the month after June 2023", days(D(2023, 7, 1), D(2023, 7, 31))),
    # a day of the month without a month name is one day, never the month (issue 36)
    ("the 14th of next month", days(D(2024, 8, 14))),
    ("on the 3rd of next month", days(D(2024, 8, 3))),
    ("the 14th next month", days(D(2024, 8, 14))),
    ("next month on the 14th", days(D(2024, 8, 14))),
    ("the 14th of last month", days(D(2024, 6, 14))),
    ("on the 21st of this month", days(D(2024, 7, 21))),
    ("on the 14th", days(D(2024, 7, 14))),  # no tense: the last 14th
    ("on the 20th", days(D(2024, 6, 20))),
    ("on the 17th", days(D(2024, 7, 17))),  # today included
    ("on the 31st", days(D(2024, 5, 31))),  # June has no 31st
    ("on 14th", days(D(2024, 7, 14))),
    ("from the 2nd to the 5th", days(D(2024, 7, 2), D(2024, 7, 5))),
    ("since the 2nd", days(D(2024, 7, 2), D(2024, 7, 17))),
    ("by the 14th", (None, days(D(2024, 7, 14))[1])),
]


@pytest.mark.parametrize(("text", "expected"), FORMS, ids=[f[0] for f in FORMS])
def test_forms(text: str, expected: tuple[datetime | None, datetime | None]) -> None:
    assert span(text) == expected


def test_forms_are_case_insensitive() -> None:
    for text, expected in FORMS[:40]:
        assert span(text.upper()) == expected, text


LOCOMO: list[tuple[str, tuple[datetime | None, datetime | None]]] = [
    ("I went to a LGBTQ support group yesterday and it was so powerful.", days(D(2023, 5, 7))),
    ("I took my kids to a pottery workshop last week, they loved it.", days(D(2023, 5, 1), D(2023, 5, 7))),
    ("We went camping the weekend before.", days(D(2023, 5, 6), D(2023, 5, 7))),
    ("Last Friday I painted a sunrise.", days(D(2023, 5, 5))),
    ("last Saturday", days(D(2023, 5, 6))),
    ("I joined a new gym two weeks ago", days(D(2023, 4, 24), D(2023, 4, 30))),
    ("1:56 pm on 8 May, 2023", days(D(2023, 5, 8))),
    ("7 May 2023", days(D(2023, 5, 7))),
    ("over the summer", days(D(2022, 6, 1), D(2022, 8, 31))),  # summer 2023 has not begun
    ("this month", days(D(2023, 5, 1), D(2023, 5, 31))),
]


@pytest.mark.parametrize(("text", "expected"), LOCOMO, ids=[f[0] for f in LOCOMO])
def test_locomo_reference(text: str, expected: tuple[datetime | None, datetime | None]) -> None:
    assert span(text, LOCOMO_REF) == expected


NEGATIVES = [
    "",
    "   ",
    "What is Emma's favourite colour?",
    "I have 3 kids",
    "room 2023",
    "She scored 2023 points",
    "Call me at 555-12-34",
    "version 1.2.3 is out",
    "I may go to the party",
    "This may be true",
    "2 may be enough",
    "we march on",
    "The spring in my step",
    "I will fall asleep",
    "I love summer",
    "On Mondays I go swimming",
    "We usually relax on the weekends",
    "I trained for 3 weeks",
    "I ran 5 miles in 3 hours",
    "She is looking after my kids",
    "Since the weather was bad, we stayed in",
    "After all, it was fine",
    "I have never seen it before.",
    "31 February 2023",
    "2/30/2024",
    "13/13/2023",
    "2020-21 season",
    "a letter from June",
    "in 2000 years",
    "We live on the 14th floor",
    "It was the 3rd time she called",
    "She finished 14th",
    "We pay rent on the 1st of each month",
    "for the 2nd year running",
    "a house from the 14th century",
    "on the 14th-15th",
    "🙂 ñandú ٣ days ago",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_negatives(text: str) -> None:
    assert parse_temporal(text, REF) is None
    assert find_temporal_expressions(text, REF) == []


def test_a_day_of_the_month_the_month_lacks() -> None:
    jan = datetime(2027, 1, 20, 9, tzinfo=UTC)
    # A named month without that day: no date (never the whole of February, never 3 March).
    assert parse_temporal("the 31st of next month", jan) is None
    assert parse_temporal("the 29th of next month", jan) is None
    # An unnamed one is skipped: the last 31st before 20 January 2027 is 31 December, the next one 31 January.
    assert span("on the 31st", jan) == days(D(2026, 12, 31))
    plan = parse_temporal("on the 31st", datetime(2027, 2, 5, tzinfo=UTC), tense="future")
    assert plan is not None and plan.range is not None and (plan.range.start, plan.range.end) == days(D(2027, 3, 31))


def test_invalid_date_is_rejected_not_reinterpreted() -> None:
    # The invalid span must not fall back to "February 2023" or to dateparser.
    assert parse_temporal("on 31 February 2023 we met", REF) is None
    assert parse_temporal("on 2023-02-30", REF) is None


def test_expression_span_and_relation() -> None:
    c = parse_temporal("What did Emma do last week?", REF)
    assert c is not None
    assert (c.expression, c.relation, c.anchor) == ("last week", "during", None)
    assert parse_temporal("what happened before 2020?", REF).relation == "before"  # type: ignore[union-attr]
    assert parse_temporal("what happened after 2020?", REF).relation == "after"  # type: ignore[union-attr]
    assert parse_temporal("in March", REF).expression == "in March"  # type: ignore[union-attr]


def test_constraint_is_frozen() -> None:
    c = parse_temporal("yesterday", REF)
    assert c is not None
    with pytest.raises(ValueError):
        c.expression = "today"  # type: ignore[misc]


def test_find_all_in_text_order() -> None:
    text = "Emma turned 30 in 2023, moved in June 2024 and visited us yesterday."
    found = find_temporal_expressions(text, REF)
    assert [c.expression for c in found] == ["in 2023", "in June 2024", "yesterday"]
    assert [c.range.start.date() for c in found if c.range and c.range.start] == [
        D(2023, 1, 1),
        D(2024, 6, 1),
        D(2024, 7, 16),
    ]


@pytest.mark.parametrize(
    ("text", "deictic"),
    [
        ("yesterday", True), ("last week", True), ("a few days ago", True), ("in June", True),
        ("on 8 May", True), ("this Monday", True), ("over the summer", True), ("since March", True),
        ("the week before 8 May", True), ("in 2022", False), ("June 2022", False), ("8 May 2023", False),
        ("2023-05-08", False), ("5/8/2023", False), ("summer 2022", False), ("from March to May 2023", False),
        ("the week before 8 May 2023", False), ("since 2020", False), ("08May2023", False),
    ],
)
def test_deictic_marks_ranges_computed_from_the_reference(text: str, deictic: bool) -> None:
    c = parse_temporal(text, REF)
    assert c is not None and c.range is not None
    assert c.deictic is deictic
    anchored = parse_temporal("after the wedding", REF)
    assert anchored is not None and anchored.deictic is False


def test_parse_prefers_a_resolved_range() -> None:
    c = parse_temporal("what did she do before the trip last year?", REF)
    assert c is not None and c.expression == "last year"
    both = find_temporal_expressions("what did she do before the trip last year?", REF)
    assert [(x.expression, x.anchor) for x in both] == [("before the trip", "the trip"), ("last year", None)]


# --- event anchors ----------------------------------------------------------------------------------

ANCHORS = [
    ("what did Emma do after the wedding?", "after the wedding", "after", "the wedding"),
    ("before the trip", "before the trip", "before", "the trip"),
    ("since the move", "since the move", "after", "the move"),
    ("during the trip to Paris", "during the trip to Paris", "during", "the trip to Paris"),
    ("after Emma's wedding", "after Emma's wedding", "after", "Emma's wedding"),
    ("until the move", "until the move", "before", "the move"),
    ("what did we do after work?", "after work", "after", "work"),
    ("the week before the wedding", "the week before the wedding", "before", "the wedding"),
    ("two days after my birthday party", "two days after my birthday party", "after", "my birthday party"),
    ("right before the exam, I panicked", "right before the exam", "before", "the exam"),
    # A past "while" clause names the event it happened during.
    ("who looked after Pepper while Maya was in Porto?", "while Maya was in Porto", "during", "Maya was in Porto"),
    ("what did Nate do while Joanna was on her road trip?", "while Joanna was on her road trip", "during",
     "Joanna was on her road trip"),
    ("whilst my sister was away, and then", "whilst my sister was away", "during", "my sister was away"),
]


@pytest.mark.parametrize(("text", "expected"), [
    ("what did Melanie do while camping?", None),  # an activity, not an event in time
    ("what does Joanna do while she writes?", None),  # habitual: no past clause
    ("while I was", None),  # nothing left to look for
    ("what did I eat while I was in Lisbon last May?", "last May"),  # the clause ends at its own date
    ("what did we cook while the kids were at school on Monday?", "on Monday"),
])
def test_while_clauses_that_name_no_event_or_hold_a_date(text: str, expected: str | None) -> None:
    c = parse_temporal(text, REF)
    assert (c.expression if c is not None else None) == expected
    assert c is None or (c.anchor is None and c.range is not None)


@pytest.mark.parametrize(("text", "expression", "relation", "anchor"), ANCHORS, ids=[a[0] for a in ANCHORS])
def test_anchors(text: str, expression: str, relation: str, anchor: str) -> None:
    c = parse_temporal(text, REF)
    assert c is not None
    assert (c.expression, c.relation, c.anchor, c.range) == (expression, relation, anchor, None)


EVENT = TimeRange(start=datetime(2024, 5, 8, tzinfo=UTC), end=datetime(2024, 5, 13, tzinfo=UTC) - US)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("after the wedding", (datetime(2024, 5, 13, tzinfo=UTC), None)),
        ("before the trip", (None, datetime(2024, 5, 8, tzinfo=UTC) - US)),
        ("until the move", (None, datetime(2024, 5, 8, tzinfo=UTC))),
        ("since the move", (datetime(2024, 5, 8, tzinfo=UTC), None)),
        ("during the trip", (EVENT.start, EVENT.end)),
        ("the week before the trip", days(D(2024, 4, 29), D(2024, 5, 5))),  # the trip starts on a Wednesday
        ("the weekend after the trip", days(D(2024, 5, 18), D(2024, 5, 19))),
        ("two days after the party", days(D(2024, 5, 14))),
        ("the day before the party", days(D(2024, 5, 7))),
        ("the month after the trip", days(D(2024, 6, 1), D(2024, 6, 30))),
    ],
)
def test_resolve_anchor(text: str, expected: tuple[datetime | None, datetime | None]) -> None:
    c = parse_temporal(text, REF)
    assert c is not None and c.anchor is not None
    r = resolve_anchor(c, EVENT)
    assert (r.start, r.end) == expected


def test_resolve_anchor_horizon_and_passthrough() -> None:
    c = parse_temporal("before the trip", REF)
    assert c is not None
    r = resolve_anchor(c, EVENT, horizon=timedelta(days=365))
    assert r.end == datetime(2024, 5, 8, tzinfo=UTC) - US
    assert r.start == r.end - timedelta(days=365)
    after = resolve_anchor(parse_temporal("after the trip", REF), EVENT, horizon=timedelta(days=30))  # type: ignore[arg-type]
    assert after.end is not None and after.start is not None and after.end - after.start == timedelta(days=30)
    resolved = parse_temporal("yesterday", REF)
    assert resolved is not None
    assert resolve_anchor(resolved, EVENT) == resolved.range  # nothing to resolve
    # An open-ended event still resolves from whichever end it has.
    assert resolve_anchor(c, TimeRange(start=None, end=EVENT.end)).end == EVENT.end - US
    with pytest.raises(ValueError):
        resolve_anchor(c, TimeRange())


# --- timezones --------------------------------------------------------------------------------------


def test_calendar_units_follow_the_reference_timezone() -> None:
    est = timezone(timedelta(hours=-5))
    ref = datetime(2024, 7, 17, 1, 0, tzinfo=est)  # 06:00 UTC, still 17 July locally
    assert span("yesterday", ref) == days(D(2024, 7, 16), tz=est)
    assert span("last week", ref) == days(D(2024, 7, 8), D(2024, 7, 14), tz=est)
    start, end = span("yesterday", ref)
    assert start is not None and end is not None
    assert start.tzinfo == UTC and end.tzinfo == UTC


def test_dst_zone_and_naive_reference() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    ref = datetime(2024, 3, 31, 12, 0, tzinfo=berlin)  # the day clocks go forward: 23 hours long
    start, end = span("today", ref)
    assert start is not None and end is not None
    assert end - start == timedelta(hours=23) - US
    assert span("yesterday", datetime(2024, 7, 17, 1, 0)) == days(D(2024, 7, 16))  # naive = UTC


def test_references_at_the_limits_do_not_raise() -> None:
    plus5 = timezone(timedelta(hours=5))
    limits = (datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59), datetime(1, 1, 1, tzinfo=plus5))
    for ref in limits:
        for text in ("yesterday", "tomorrow", "3 years ago", "next year", "in 2022", "last week", "recently"):
            c = parse_temporal(text, ref)
            assert c is None or isinstance(c, TemporalConstraint)


# --- speed and laziness -----------------------------------------------------------------------------

CHAT = [
    "Hey Mel! How are you doing?",
    "That sounds amazing, I love hiking with my dog.",
    "I think painting helps me relax and express myself.",
    "What is Emma's favourite colour?",
    "Thanks so much for the support, it means a lot to me!",
    "My kids love the beach, we should all go together sometime.",
    "I'm thinking of studying counseling so I can help people like me.",
    "Wow, that is so inspiring. Keep going!",
    "Haha, totally agree with you on that one.",
    "Have you read any good books or are you just busy?",
]


def test_plain_chat_throughput() -> None:
    messages = CHAT * 300
    t0 = clock.perf_counter()
    for m in messages:
        parse_temporal(m, LOCOMO_REF)
    rate = len(messages) / (clock.perf_counter() - t0)
    assert rate >= 2000, f"{rate:.0f} messages/s"


def test_dateparser_is_only_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = temporal_parser._free_window

    def spy(text: str, ctx: object) -> object:
        calls.append(text)
        return real(text, ctx)

    monkeypatch.setattr(temporal_parser, "_free_window", spy)
    for text in [*CHAT, *(f[0] for f in FORMS if f[0] not in ("08May2023", "2023 May 8"))]:
        parse_temporal(text, REF)
    assert calls == []
    assert span("08May2023") == days(D(2023, 5, 8))
    assert calls == ["08May2023"]


def test_import_does_not_load_dateparser() -> None:
    code = (
        "import sys\n"
        "import hindsight_core.temporal as t\n"
        "from datetime import datetime\n"
        "t.parse_temporal('I went there last week', datetime(2024, 7, 17))\n"
        "assert 'dateparser' not in sys.modules, 'dateparser imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- properties -------------------------------------------------------------------------------------

ZONES = [
    UTC, timezone(timedelta(hours=-8)), timezone(timedelta(hours=5, minutes=30)), ZoneInfo("Europe/Berlin"),
]
references = st.one_of(
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 12, 31)),  # naive = UTC
    st.datetimes(
        min_value=datetime(1990, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.sampled_from(ZONES)
    ),
)
MONTH_NAMES = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
]
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 7: "seven", 10: "ten", 12: "twelve"}
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _local(ref: datetime) -> datetime:
    return ref if ref.tzinfo is not None else ref.replace(tzinfo=UTC)


def _end_of_day(ref: datetime) -> datetime:
    local = _local(ref)
    return datetime.combine(local.date(), time.max, local.tzinfo)


def _check(c: TemporalConstraint | None) -> TimeRange:
    assert c is not None
    assert c.range is not None
    r = c.range
    assert r.start is not None and r.end is not None
    assert r.start <= r.end
    assert r.start.utcoffset() == timedelta(0) and r.end.utcoffset() == timedelta(0)
    return r


def _local_dates(r: TimeRange, ref: datetime) -> tuple[date, date]:
    tz = _local(ref).tzinfo
    assert r.start is not None and r.end is not None
    return r.start.astimezone(tz).date(), r.end.astimezone(tz).date()


@PROPS
@given(ref=references, n=st.integers(0, 500), spell=st.booleans())
def test_prop_days_ago(ref: datetime, n: int, spell: bool) -> None:
    number = WORDS.get(n, str(n)) if spell else str(n)
    r = _check(parse_temporal(f"{number} days ago", ref))
    target = _local(ref).date() - timedelta(days=n)
    assert _local_dates(r, ref) == (target, target)
    assert r.end <= _end_of_day(ref)  # type: ignore[operator]


@PROPS
@given(ref=references, n=st.integers(1, 80), unit=st.sampled_from(["week", "month", "year"]))
def test_prop_units_ago(ref: datetime, n: int, unit: str) -> None:
    r = _check(parse_temporal(f"{n} {unit}{'s' if n > 1 else ''} ago", ref))
    first, last = _local_dates(r, ref)
    today = _local(ref).date()
    assert r.end <= _end_of_day(ref)  # type: ignore[operator]
    if unit == "week":
        assert first.weekday() == 0 and (last - first).days == 6
        assert first <= today - timedelta(weeks=n) <= last
    elif unit == "month":
        months_back = (today.year * 12 + today.month) - (first.year * 12 + first.month)
        assert months_back == n and first.day == 1 and (last + timedelta(days=1)).day == 1
    else:
        assert (first, last) == (date(today.year - n, 1, 1), date(today.year - n, 12, 31))


@PROPS
@given(
    ref=references,
    mod=st.sampled_from(["last", "this", "next"]),
    unit=st.sampled_from(["week", "month", "year"]),
)
def test_prop_calendar_units(ref: datetime, mod: str, unit: str) -> None:
    this = _check(parse_temporal(f"this {unit}", ref))
    r = _check(parse_temporal(f"{mod} {unit}", ref))
    first, last = _local_dates(r, ref)
    today = _local(ref).date()
    if mod == "this":
        assert first <= today <= last
    elif mod == "last":
        assert r.end + US == this.start and r.end <= _end_of_day(ref)  # type: ignore[operator]
    else:
        assert this.end + US == r.start  # type: ignore[operator]
    if unit == "week":
        assert first.weekday() == 0 and (last - first).days == 6
    elif unit == "month":
        assert first.day == 1 and first.month == last.month and (last + timedelta(days=1)).day == 1
    else:
        assert (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year


@PROPS
@given(ref=references, month=st.integers(1, 12), year=st.one_of(st.none(), st.integers(1990, 2100)))
def test_prop_month_names(ref: datetime, month: int, year: int | None) -> None:
    name = MONTH_NAMES[month - 1]
    text = f"in {name}" if year is None else f"{name} {year}"
    r = _check(parse_temporal(text, ref))
    first, last = _local_dates(r, ref)
    assert first == date(first.year, month, 1) and last.month == month and (last + timedelta(days=1)).day == 1
    if year is None:
        today = _local(ref).date()
        assert first <= today < date(first.year + 1, month, 1)  # the most recent one that has begun
        assert r.start <= _end_of_day(ref)  # type: ignore[operator]
    else:
        assert first.year == year


@PROPS
@given(
    ref=references, year=st.integers(1000, 2999), cue=st.sampled_from(["in", "during", "back in", "the year"])
)
def test_prop_years(ref: datetime, year: int, cue: str) -> None:
    r = _check(parse_temporal(f"{cue} {year}", ref))
    assert _local_dates(r, ref) == (date(year, 1, 1), date(year, 12, 31))


@PROPS
@given(ref=references, d=st.dates(min_value=date(1000, 1, 1), max_value=date(2999, 12, 31)))
def test_prop_iso_dates(ref: datetime, d: date) -> None:
    r = _check(parse_temporal(f"on {d.isoformat()}", ref))
    assert _local_dates(r, ref) == (d, d)
    r2 = _check(parse_temporal(f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}", ref))
    assert _local_dates(r2, ref) == (d, d)


@settings(max_examples=400, deadline=None)
@given(text=st.text())
def test_prop_never_raises_on_arbitrary_text(text: str) -> None:
    c = parse_temporal(text, REF)
    assert c is None or isinstance(c, TemporalConstraint)
    if c is not None and c.range is not None and c.range.start is not None and c.range.end is not None:
        assert c.range.start <= c.range.end


GRAMMAR_TOKENS = [
    "last", "this", "next", "past", "the", "week", "weekend", "month", "year", "ago", "days", "two", "3",
    "a few", "before", "after", "since", "until", "from", "to", "between", "and", "in", "on", "early", "late",
    "mid-", "end of", "May", "march", "June", "2023", "1999", "8th", "31", "/", "-", "2023-02-30",
    "12/13/2024",
    "Friday", "summer", "winter", "the trip", "my birthday", "yesterday", "tonight", "morning", "of", "'s",
    ",", ".", "recently", "the other day", "earlier", "later", "today", "08May2023",
]


@settings(max_examples=400, deadline=None)
@given(ref=references, words=st.lists(st.sampled_from(GRAMMAR_TOKENS), min_size=1, max_size=8))
def test_prop_grammar_soup_is_well_formed(ref: datetime, words: list[str]) -> None:
    text = " ".join(words)
    found = find_temporal_expressions(text, ref)
    last_end = -1
    for c in found:
        assert c.expression and c.expression in text
        assert (c.range is None) == (c.anchor is not None)
        if c.range is not None and c.range.start is not None and c.range.end is not None:
            assert c.range.start <= c.range.end
        pos = text.find(c.expression, max(last_end, 0))
        assert pos >= last_end
        last_end = pos + len(c.expression)


@settings(max_examples=300, deadline=None)
@given(ref=references, words=st.lists(st.sampled_from(GRAMMAR_TOKENS), min_size=1, max_size=8))
def test_prop_prefilter_and_gates_lose_nothing(ref: datetime, words: list[str]) -> None:
    # The speed shortcuts (pre-filter regex, per-rule substring gates) must not change any result.
    text = " ".join(words)
    fast = find_temporal_expressions(text, ref)
    saved = temporal_parser._PREFILTER, temporal_parser._RULES
    try:
        temporal_parser._PREFILTER = re.compile("")
        temporal_parser._RULES = tuple((pattern, handler, ("",)) for pattern, handler, _gate in saved[1])
        slow = find_temporal_expressions(text, ref)
    finally:
        temporal_parser._PREFILTER, temporal_parser._RULES = saved
    assert fast == slow


def test_one_free_date_fallback_bounds_its_input() -> None:
    from hindsight_core.errors import InvalidInputError
    from hindsight_core.temporal.timestamps import MAX_DATE_CHARS, parse_timestamp, read_free_date

    assert read_free_date("2023 May 8") is not None
    assert read_free_date("8 May 2023 " * 100) is None  # refused before dateparser, not parsed for seconds
    t0 = clock.perf_counter()
    with pytest.raises(InvalidInputError) as caught:
        parse_timestamp("5 March 2025 " + "x" * 1_000_000)
    assert clock.perf_counter() - t0 < 1.0
    message = str(caught.value)
    assert len(message) < 300 and f"{MAX_DATE_CHARS} characters at most" in message
    assert parse_timestamp("March 2025").day == 1  # the first of the month when none is given
