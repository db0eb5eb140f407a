"""Occurrence times of LLM-extracted facts (``hindsight_core.extract.dates``): what only model output needs
(ISO strings, blanks, placeholders, bare month names, whole days) on top of the shared temporal resolver."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hindsight_core.extract.dates import annotate_relative, occurrence, parse_model_date, phrase_range

REF = datetime(2023, 5, 10, 13, 56, tzinfo=UTC)  # a Wednesday
D = date


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-05-07", (D(2023, 5, 7), D(2023, 5, 7))),
        ("2023-05-07T10:00:00Z", (D(2023, 5, 7), D(2023, 5, 7))),
        ("2023-5-7.", (D(2023, 5, 7), D(2023, 5, 7))),
        ("2023-05", (D(2023, 5, 1), D(2023, 5, 31))),
        ("2022", (D(2022, 1, 1), D(2022, 12, 31))),
        ("2023-13-40", None),
        ("2023-13", None),
        ("0", None),
        ("20230507", None),
        ("x" * 61, None),
        # everything else is read by the shared resolver, against the message time
        ("yesterday", (D(2023, 5, 9), D(2023, 5, 9))),
        ("a few days ago", (D(2023, 5, 5), D(2023, 5, 8))),
        ("this Monday", (D(2023, 5, 8), D(2023, 5, 8))),
        ("around last week", (D(2023, 5, 1), D(2023, 5, 7))),
        ("2023-05-07 (yesterday)", (D(2023, 5, 7), D(2023, 5, 7))),
        ("June 2022", (D(2022, 6, 1), D(2022, 6, 30))),
        ("June", (D(2022, 6, 1), D(2022, 6, 30))),  # a bare month is a month here
        ("last night", (D(2023, 5, 9), D(2023, 5, 9))),  # a part of a day: the day it starts on
        ("this morning", (D(2023, 5, 10), D(2023, 5, 10))),
        # open and event-relative phrases are no occurrence
        ("before 2020", None),
        ("after the trip", None),
        # free-form dates the resolver does not read go through dateparser
        ("in 3 days", (D(2023, 5, 13), D(2023, 5, 13))),
        ("sometime", None),
    ],
)
def test_parse_model_date(value: str, expected: tuple[date, date] | None) -> None:
    assert parse_model_date(value, REF) == expected


def test_parse_model_date_follows_the_tense() -> None:
    assert parse_model_date("June", REF, "future") == (D(2023, 6, 1), D(2023, 6, 30))
    assert parse_model_date("this Monday", REF, "future") == (D(2023, 5, 15), D(2023, 5, 15))
    assert parse_model_date("2022-06", REF, "future") == (D(2022, 6, 1), D(2022, 6, 30))  # ISO is ISO


def test_phrase_range_takes_the_first_named_period() -> None:
    assert phrase_range("Caroline moved before 2020 to Boston after the trip in 2021", REF) == (
        D(2021, 1, 1), D(2021, 12, 31)
    )
    assert phrase_range("Caroline loves painting", REF) is None
    assert phrase_range("Caroline is going to Paris in June", REF, "future") == (D(2023, 6, 1), D(2023, 6, 30))


def test_annotation_marks_only_phrases_that_depend_on_the_reference() -> None:
    text = (
        "Caroline went there yesterday and again on 7 May 2023, yesterday's game, "
        "last week (1-7 May 2023) and before 2020 after the trip."
    )
    assert annotate_relative(text, REF) == (
        "Caroline went there yesterday (9 May 2023) and again on 7 May 2023, yesterday's game, "
        "last week (1-7 May 2023) and before 2020 after the trip."
    )
    assert annotate_relative("Melanie is going to Paris in June.", REF) == (
        "Melanie is going to Paris in June (June 2023)."
    )
    assert annotate_relative("What did Caroline do in June?", REF) == "What did Caroline do in June (June 2022)?"
    assert annotate_relative("a few days ago, this Monday", REF) == (
        "a few days ago (5-8 May 2023), this Monday (8 May 2023)"
    )


def _occ(text: str, start: str = "", end: str = "") -> tuple[datetime | None, datetime | None]:
    return occurrence(text, start, end, REF)


def _day(d: date, end: bool = False) -> datetime:
    return datetime(d.year, d.month, d.day, *((23, 59, 59) if end else (0, 0, 0)), tzinfo=UTC)


def test_occurrence_rules() -> None:
    # nothing said: it holds at the mention
    assert _occ("Caroline loves painting") == (REF, REF)
    assert _occ("Caroline loves painting", "unknown", "N/A") == (REF, REF)
    # one end given: a range of that date; reversed ends are swapped
    assert _occ("Caroline painted", "2023-05") == (_day(D(2023, 5, 1)), _day(D(2023, 5, 31), True))
    assert _occ("Caroline painted", "", "2023-05-02") == (_day(D(2023, 5, 2)), _day(D(2023, 5, 2), True))
    assert _occ("Caroline painted", "2023-05-09", "2023-05-02") == (_day(D(2023, 5, 2)), _day(D(2023, 5, 9), True))
    # placeholders and absurd dates are unknown, not defaults
    assert _occ("Caroline painted", "1970-01-01") == (None, None)
    assert _occ("Caroline painted", "9999-12-31") == (None, None)
    # the text names a period and the model copied the message date: the text wins
    assert _occ("Caroline moved to Boston in 2022", "2023-05-10") == (_day(D(2022, 1, 1)), _day(D(2022, 12, 31), True))
    # the model's own different date stands
    assert _occ("Caroline moved to Boston in 2022", "2022-03-01") == (_day(D(2022, 3, 1)), _day(D(2022, 3, 1), True))
