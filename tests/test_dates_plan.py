"""Time that follows tense and calendar: plans resolve forward, reports backward, holidays and counts resolve.

Unit tests for the rules of ``hindsight_core.temporal`` that decide a stated sentence's time
(``statement_time``, ``statement_tense``, holidays, counts ahead, day ranges), the labelled date benchmark, and
the demo's plans retained raw (real stores, the real embedder) landing in 2025.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_bench.cli import main
from hindsight_bench.dates import load_sentences, run_date_bench, statement_days
from hindsight_core import Hindsight
from hindsight_core.cli.demo import load_conversation
from hindsight_core.cli.formats import locomo_sessions
from hindsight_core.extract.dates import annotate_relative, occurrence
from hindsight_core.temporal import (
    parse_temporal,
    sentence_spans,
    statement_expressions,
    statement_tense,
    statement_time,
)

FRI = datetime(2025, 4, 18, 16, 5, tzinfo=UTC)  # Friday 18 April 2025, when Maya booked Porto
MON = datetime(2025, 3, 3, 10, 15, tzinfo=UTC)  # Monday 3 March 2025
NOV = datetime(2024, 11, 20, 9, 0, tzinfo=UTC)  # Wednesday 20 November 2024


def days(text: str, ref: datetime) -> tuple[date, date] | None:
    return statement_days(text, ref)


def d(y: int, m: int, day: int) -> tuple[date, date]:
    return date(y, m, day), date(y, m, day)


def span(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[date, date]:
    return date(*a), date(*b)


# ------------------------------------------------------------------------------------------------
# tense of a statement
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tense"),
    [
        ("We booked Porto for June.", "future"),  # an arrangement made in the past is about what comes
        ("I signed up for the Bristol Half Marathon in April.", "future"),
        ("Construction should start in August.", "future"),
        ("Mum wants to come and stay in April.", "future"),
        ("Let's grab lunch on Monday.", "future"),
        ("The clinic moved my appointment to 3 December.", "future"),
        ("We moved to Leeds in March.", "past"),  # moved to a place, not to a time
        ("I should have gone in June.", "past"),
        ("The race is on 13 April.", "present"),  # neither a past form nor a plan marker
        ("Rent goes up on 1 October.", "present"),
    ],
)
def test_statement_tense(text: str, tense: str) -> None:
    assert statement_tense(text) == tense


def test_sentences_split_at_ends_but_not_after_titles() -> None:
    text = "I saw Dr. Okafor on Monday. Then St. Patrick's Day came! Fine; done"
    assert [text[a:b].strip() for a, b in sentence_spans(text)] == [
        "I saw Dr. Okafor on Monday.", "Then St. Patrick's Day came!", "Fine;", "done"]
    assert sentence_spans("") == []


def test_each_sentence_has_its_own_tense() -> None:
    text = "They approved the Castle Green redesign on Tuesday. Construction should start in August."
    found = [(c.expression, c.range) for c in statement_expressions(text, FRI)]
    assert [e for e, _ in found] == ["on Tuesday", "in August"]
    assert found[0][1] is not None and found[0][1].start is not None
    assert found[0][1].start.date() == date(2025, 4, 15)  # the Tuesday that has passed
    assert found[1][1] is not None and found[1][1].start is not None
    assert found[1][1].start.date() == date(2025, 8, 1)  # the August to come


# ------------------------------------------------------------------------------------------------
# months, dates and weekdays: forward in a plan, backward in a report, nearest in the present
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ref", "expected"),
    [
        ("We booked Porto for June.", FRI, span((2025, 6, 1), (2025, 6, 30))),
        ("We went to Lisbon in June.", FRI, span((2024, 6, 1), (2024, 6, 30))),
        ("I signed up for the Bristol Half Marathon in April.", MON, span((2025, 4, 1), (2025, 4, 30))),
        ("I ran the Bristol Half Marathon in April.", MON, span((2024, 4, 1), (2024, 4, 30))),
        ("The race is on 13 April.", MON, d(2025, 4, 13)),
        ("Her party was on the 21st of February.", MON, d(2025, 2, 21)),
        ("I came back from Rome on 28 December.", MON, d(2024, 12, 28)),
        ("Our anniversary is on 14 February.", NOV, d(2025, 2, 14)),  # nearest: 3 months ahead, not 9 back
        ("Registration opens in January.", datetime(2025, 9, 27, tzinfo=UTC), span((2026, 1, 1), (2026, 1, 31))),
        ("I'm meeting Sam on Friday.", NOV, d(2024, 11, 22)),
        ("I met Sam on Friday.", NOV, d(2024, 11, 15)),
        ("Let's grab lunch on Monday.", FRI, d(2025, 4, 21)),
        ("We're going camping this summer.", FRI, span((2025, 6, 1), (2025, 8, 31))),
        ("Last spring I ran my first 10k.", FRI, span((2024, 3, 1), (2024, 5, 31))),
        ("We're redecorating between May and July.", FRI, span((2025, 5, 1), (2025, 7, 31))),
        ("I worked in Paris from March to May 2019.", FRI, span((2019, 3, 1), (2019, 5, 31))),
    ],
)
def test_plans_look_ahead_and_reports_look_back(text: str, ref: datetime, expected: tuple[date, date]) -> None:
    assert days(text, ref) == expected


def test_recall_default_still_prefers_the_past() -> None:
    # A query keeps tense=None: "in June" asked in April is last June, "in 3 days" is no time at all.
    c = parse_temporal("What did Maya do in June?", FRI)
    assert c is not None and c.range is not None and c.range.start is not None
    assert c.range.start.date() == date(2024, 6, 1)
    assert parse_temporal("What can be done in 3 days?", FRI) is None


def test_habits_are_not_times() -> None:
    assert days("That'll make Thursday nights at the wall interesting.", FRI) is None
    assert days("I've been going to classes on Wednesdays.", FRI) is None


# ------------------------------------------------------------------------------------------------
# holidays
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ref", "expected"),
    [
        ("We're going to my gran's for Easter.", FRI, d(2025, 4, 20)),
        ("We hunted for eggs at Easter.", datetime(2025, 7, 9, tzinfo=UTC), d(2025, 4, 20)),
        ("I'm off work on Good Friday.", MON, d(2025, 4, 18)),
        ("We spent Christmas with my parents.", datetime(2024, 1, 15, tzinfo=UTC), d(2023, 12, 25)),
        ("We're spending Christmas Eve with my parents.", NOV, d(2024, 12, 24)),
        ("We'll host Thanksgiving this year.", NOV, d(2024, 11, 28)),  # the fourth Thursday of November
        ("I'm taking Dad fishing on Father's Day.", FRI, d(2025, 6, 15)),  # the third Sunday of June
        ("We went to the beach on Labor Day.", datetime(2025, 9, 27, tzinfo=UTC), d(2025, 9, 1)),
        ("Last Christmas I gave you my heart.", NOV, d(2023, 12, 25)),
        ("Halloween 2019 was the best one.", NOV, d(2019, 10, 31)),
        ("We met two days before Valentine's Day.", MON, span((2025, 2, 12), (2025, 2, 12))),
    ],
)
def test_holidays(text: str, ref: datetime, expected: tuple[date, date]) -> None:
    assert days(text, ref) == expected


def test_things_named_after_holidays_are_not_times() -> None:
    assert days("We put up the Christmas tree.", NOV) is None
    assert days("The kids ate all the Easter eggs.", FRI) is None
    assert days("you may day-dream all you like", FRI) is None


# ------------------------------------------------------------------------------------------------
# counts from now and ranges
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ref", "expected"),
    [
        ("The package arrives in three days.", FRI, d(2025, 4, 21)),
        ("My cousin arrives in a couple of days.", FRI, span((2025, 4, 20), (2025, 4, 21))),
        ("She flies home the day after tomorrow.", MON, d(2025, 3, 5)),
        ("I lost my wallet the day before yesterday.", MON, d(2025, 3, 1)),
        ("I start physio in two weeks.", FRI, span((2025, 4, 28), (2025, 5, 4))),  # the week holding 2 May
        ("I'm off to Crete in a fortnight.", FRI, span((2025, 4, 28), (2025, 5, 4))),
        ("The week after next we fly to Rome.", FRI, span((2025, 4, 28), (2025, 5, 4))),
        ("In 3 months we'll be in Australia.", FRI, span((2025, 7, 1), (2025, 7, 31))),
        ("We booked Porto instead, from 14 to 21 June.", FRI, span((2025, 6, 14), (2025, 6, 21))),
        ("We stayed in Porto from 14 to 21 June.", FRI, span((2024, 6, 14), (2024, 6, 21))),
        ("We'll be in Madrid 12-15 October.", FRI, span((2025, 10, 12), (2025, 10, 15))),
        ("Between 2 and 4 December I'm in Prague.", NOV, span((2024, 12, 2), (2024, 12, 4))),
        ("The festival runs June 14-21.", FRI, span((2025, 6, 14), (2025, 6, 21))),
        ("we're away 28 march - 2 april", MON, span((2025, 3, 28), (2025, 4, 2))),
        ("From 20 December to 3 January we'll be in Goa.", NOV, span((2024, 12, 20), (2025, 1, 3))),
    ],
)
def test_counts_and_ranges(text: str, ref: datetime, expected: tuple[date, date]) -> None:
    assert days(text, ref) == expected


def test_counts_in_a_report_are_durations() -> None:
    assert days("I finished the puzzle in three days.", FRI) is None
    assert days("It took me two weeks to finish the quilt.", FRI) is None


def test_a_range_is_not_a_list_and_must_run_forward() -> None:
    assert days("I met them on 3 and 4 May.", FRI) != span((2025, 5, 3), (2025, 5, 4))
    assert days("The shop is shut 21-14 June.", FRI) == d(2025, 6, 14)  # no range; the date itself stays


def test_the_most_specific_period_of_a_statement_wins() -> None:
    text = "Flights to Lisbon in June were ridiculous, so we booked Porto instead, from 14 to 21 June."
    c = statement_time(text, FRI)
    assert c is not None and c.expression == "from 14 to 21 June"
    # A later period outside the first does not replace it.
    c = statement_time("Last week I presented to the council, and we hear back in April.", MON)
    assert c is not None and c.expression == "Last week"
    assert statement_time("", FRI) is None and statement_time("Nothing temporal here", FRI) is None


# ------------------------------------------------------------------------------------------------
# the LLM extractor's dates go through the same rules
# ------------------------------------------------------------------------------------------------
def test_model_dates_and_annotations_follow_the_sentence_tense() -> None:
    start, end = occurrence("Maya booked a trip to Porto for June.", "June", "", FRI)
    assert start is not None and end is not None
    assert (start.date(), end.date()) == (date(2025, 6, 1), date(2025, 6, 30))
    start, end = occurrence("Jonah's race is on 13 April.", "", "", MON)  # no model date: the text's own
    assert start is not None and end is not None and start.date() == end.date() == date(2025, 4, 13)
    assert annotate_relative("They approved it on Tuesday. Work should start in August.", FRI) == (
        "They approved it on Tuesday (15 April 2025). Work should start in August (August 2025).")


# ------------------------------------------------------------------------------------------------
# the benchmark
# ------------------------------------------------------------------------------------------------
def test_the_labelled_set_is_large_split_and_covers_every_kind() -> None:
    rows = load_sentences()
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    kinds = {r["kind"] for r in rows}
    assert {"plan", "report", "holiday", "date_year", "date_no_year", "weekday", "day_count", "week_count",
            "season", "range"} <= kinds
    for kind in kinds:
        assert {r["split"] for r in rows if r["kind"] == kind} == {"dev", "test"}
    for r in rows:  # gold days are real dates, in order, or both empty
        assert (r["start"] is None) == (r["end"] is None)
        if r["start"] is not None:
            assert date.fromisoformat(r["start"]) <= date.fromisoformat(r["end"])


def test_bench_dates_reaches_the_acceptance_on_the_test_half() -> None:
    result = run_date_bench("all")
    assert set(result["splits"]) == {"dev", "test", "all"}
    assert result["splits"]["test"]["accuracy"] >= 0.95, result["errors"]
    assert result["splits"]["dev"]["n"] + result["splits"]["test"]["n"] == result["splits"]["all"]["n"]
    with pytest.raises(ValueError, match="split"):
        run_date_bench("train")


def test_bench_dates_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = tmp_path / "dates.jsonl"
    rows = [{"id": "a", "split": "dev", "kind": "plan", "reference_time": "2025-04-18T16:00:00+00:00",
             "text": "We booked Porto for June.", "start": "2025-06-01", "end": "2025-06-30"},
            {"id": "b", "split": "test", "kind": "report", "reference_time": "2025-04-18T16:00:00+00:00",
             "text": "We went to Porto in June.", "start": "2025-06-01", "end": "2025-06-30"}]  # wrong on purpose
    small.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(["dates", "--data", str(small), "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert result["splits"]["dev"]["accuracy"] == 1.0 and result["splits"]["test"]["accuracy"] == 0.0
    assert [e["id"] for e in result["errors"]] == ["b"]
    assert main(["dates", "--data", str(small), "--split", "dev"]) == 0
    printed = capsys.readouterr().out
    assert "| plan |" in printed and "report" not in printed
    assert main(["dates", "--data", str(tmp_path / "missing.jsonl")]) == 2
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    assert main(["dates", "--data", str(tmp_path / "bad.jsonl")]) == 2


# ------------------------------------------------------------------------------------------------
# the demo's plans, retained raw
# ------------------------------------------------------------------------------------------------
def test_the_demo_plans_land_in_2025_and_the_porto_question_gets_the_trip(tmp_path: Path) -> None:
    wanted = {"D1:14", "D2:7", "D3:5", "D3:9", "D4:1", "D4:2"}
    with Hindsight.open(tmp_path / "m") as hs:
        bank = hs.bank("demo")
        occurred: dict[str, tuple[date, date]] = {}
        for s in locomo_sessions(load_conversation()):
            messages = [m for m in s.messages if m["id"] in wanted]
            result = bank.retain(messages, timestamp=s.timestamp, document_id=s.document_id, extract=False)
            for memory in bank.memories([m.id for m in result.memories]):
                assert memory.occurred_start is not None and memory.occurred_end is not None
                occurred[memory.sources[0]] = (memory.occurred_start.date(), memory.occurred_end.date())
        # Said 3 March 2025: "I signed up for the Bristol Half Marathon in April".
        assert occurred["D1:14"] == span((2025, 4, 1), (2025, 4, 30))
        # Said 22 March: "I ran 16 kilometres along the harbour on Sunday. The race is on 13 April": the run.
        assert occurred["D2:7"] == d(2025, 3, 16)
        # Said 18 April: "They approved ... on Tuesday. Construction should start in August.".
        assert occurred["D3:5"] == d(2025, 4, 15)
        # Said 18 April: "Flights to Lisbon in June were ridiculous, so we booked Porto instead, from 14 to 21 June".
        assert occurred["D3:9"] == span((2025, 6, 14), (2025, 6, 21))
        # "Who looked after Pepper while Maya was in Porto?" names no date: the event anchor resolves to the
        # trip's dates, not to the instant "How was Porto?" (D4:1, undated) was said.
        rec = bank.recall("Who looked after Pepper while Maya was in Porto?", trace=True)
        assert rec.trace is not None and rec.trace.time_range is not None
        window = rec.trace.time_range
        assert window.start is not None and window.end is not None
        assert (window.start.date(), window.end.date()) == (date(2025, 6, 14), date(2025, 6, 21))
        assert window.end - window.start > timedelta(days=7)
