"""The verb-tense rule (``hindsight_core.temporal.detect_tense``) and what the tense hint changes."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hindsight_core.temporal import Tense, detect_tense, parse_temporal

WED = datetime(2023, 5, 10, 13, 56, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "tense"),
    [
        # future and plan markers
        ("I'll visit in June", "future"),
        ("Caroline will move to Boston next year", "future"),
        ("We shall see in March", "future"),
        ("I'm gonna paint on Saturday", "future"),
        ("I'm going to Paris in June", "future"),
        ("Melanie plans to go camping over the summer", "future"),
        ("Caroline is planning a trip for June", "future"),
        ("She hopes to adopt a dog in the spring", "future"),
        ("I'm looking forward to the concert on Friday", "future"),
        ("I can't wait for the weekend", "future"),
        ("the upcoming race in June", "future"),
        # the present progressive describes an arrangement
        ("We're going to the lake this Monday", "future"),
        ("Caroline is visiting Paris in June", "future"),
        ("Are you doing anything this weekend?", "future"),
        # a reported plan is still a plan
        ("Caroline said she will go in June", "future"),
        # past forms
        ("What did Caroline do in June?", "past"),
        ("I painted a sunrise last Friday", "past"),
        ("Caroline went to a support group", "past"),
        ("We were at the beach", "past"),
        ("I was going to the gym", "past"),  # a past progressive, not a plan
        ("I was going to call you on Monday", "past"),
        ("I adopted a dog two years ago", "past"),
        # neither
        ("I love hiking with my dog", None),
        ("That is amazing", None),  # an adjective in -ing is no progressive
        ("Caroline is excited about the trip", None),  # nor is an adjective in -ed a past
        ("I need a new bike", None),
        ("Caroline's painting is beautiful", None),  # a possessive, not "is painting"
        ("", None),
    ],
)
def test_detect_tense(text: str, tense: Tense | None) -> None:
    assert detect_tense(text) == tense


def _days(text: str, tense: Tense | None, ref: datetime = WED) -> tuple[date, date]:
    c = parse_temporal(text, ref, tense=tense)
    assert c is not None and c.range is not None and c.range.start and c.range.end
    return c.range.start.date(), c.range.end.date()


@pytest.mark.parametrize(
    ("text", "default", "past", "future"),
    [
        # the default is what recall has always used; "past" differs only where the default looks ahead
        ("this Monday", date(2023, 5, 8), date(2023, 5, 8), date(2023, 5, 15)),
        ("this Friday", date(2023, 5, 12), date(2023, 5, 5), date(2023, 5, 12)),
        ("this Wednesday", date(2023, 5, 10), date(2023, 5, 10), date(2023, 5, 10)),
        ("on Monday", date(2023, 5, 8), date(2023, 5, 8), date(2023, 5, 15)),
        ("on Wednesday", date(2023, 5, 10), date(2023, 5, 10), date(2023, 5, 10)),
        ("on 7 May", date(2023, 5, 7), date(2023, 5, 7), date(2024, 5, 7)),
        ("on 12 May", date(2022, 5, 12), date(2022, 5, 12), date(2023, 5, 12)),
        ("in June", date(2022, 6, 1), date(2022, 6, 1), date(2023, 6, 1)),
        ("in May", date(2023, 5, 1), date(2023, 5, 1), date(2023, 5, 1)),
        ("this June", date(2023, 6, 1), date(2022, 6, 1), date(2023, 6, 1)),
        ("over the summer", date(2022, 6, 1), date(2022, 6, 1), date(2023, 6, 1)),
        ("this weekend", date(2023, 5, 13), date(2023, 5, 6), date(2023, 5, 13)),
        ("over the weekend", date(2023, 5, 6), date(2023, 5, 6), date(2023, 5, 13)),
        # a day of the month with no month: the last one, or in a plan the coming one (today included)
        ("on the 14th", date(2023, 4, 14), date(2023, 4, 14), date(2023, 5, 14)),
        ("on the 3rd", date(2023, 5, 3), date(2023, 5, 3), date(2023, 6, 3)),
        ("on the 10th", date(2023, 5, 10), date(2023, 5, 10), date(2023, 5, 10)),
        ("from the 2nd to the 4th", date(2023, 5, 2), date(2023, 5, 2), date(2023, 6, 2)),
    ],
)
def test_tense_steers_only_open_directions(text: str, default: date, past: date, future: date) -> None:
    assert _days(text, None)[0] == default
    assert _days(text, "past")[0] == past
    assert _days(text, "future")[0] == future


@pytest.mark.parametrize(
    "text",
    ["yesterday", "tomorrow", "last Friday", "next Friday", "this coming Friday", "last weekend", "next weekend",
     "3 days ago", "a few days ago", "last week", "next month", "last summer", "next summer", "in 2022",
     "7 May 2023", "June 2022", "the weekend before", "recently", "the other day", "since March",
     "the 14th of next month", "next month on the 14th", "the 3rd of last month"],
)
def test_directed_expressions_ignore_the_tense(text: str) -> None:
    assert _days(text, None) == _days(text, "past") == _days(text, "future")


def test_a_day_of_the_month_in_the_present_looks_ahead() -> None:
    # "The party is on the 14th" said on 10 May: the coming 14th, as "the party is on Friday" is the coming Friday.
    assert _days("The party is on the 14th", "present") == (date(2023, 5, 14), date(2023, 5, 14))
    assert _days("The party is on the 3rd", "present") == (date(2023, 6, 3), date(2023, 6, 3))


def test_since_always_looks_back() -> None:
    # "since X" starts in the past even in a sentence about the future.
    for text in ("I will keep painting since March", "she'll stay as she has since the summer",
                 "we'll go on as we have ever since June"):
        first, last = _days(text, "future")
        assert first < WED.date() and last == WED.date(), text
