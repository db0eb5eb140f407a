"""Temporal expressions: turn "last week", "yesterday", "in March" or "before the trip" into time ranges.

The one resolver of time expressions, so that stored facts and the queries looking for them agree:

* recall: a query such as "what did Emma do last week?" gets a time constraint relative to the caller's
  reference time (``parse_temporal``);
* raw retain: "I went to a support group yesterday", sent on 8 May 2023, gets the occurrence range
  7 May 2023 (``statement_time``: each sentence resolved in its own tense, ``statement_tense``, against the
  message time; "we booked Porto from 14 to 21 June", said in April, is this June);
* LLM retain: the dates the model writes for a fact ("last Friday") and the time phrases in the fact
  itself go through the same functions (``hindsight_core.extract.dates``).

Modules: ``model`` (``TemporalConstraint``), ``vocabulary`` (words and regex fragments), ``units``
(calendar arithmetic, ``_pick_year``: which instance a tense picks), ``rules_relative`` / ``rules_calendar`` /
``rules_holiday`` (one regex and handler per form), ``anchors`` (event-relative expressions,
``resolve_anchor``), ``compose`` (prefixes such as "early", "the week before", "since"; ranges), ``parser``
(the pipeline and the public functions), ``tense`` (``detect_tense``, ``statement_tense``, sentences),
``statement`` (``statement_time``: the time of a stated text), ``dateline`` (the date a note says it was written,
``find_dateline``: retain's time for a note given none), ``rules_month_day`` (a day of the month without a month
name: "the 14th of next month", "on the 14th").

Design:

* Ranges are whole calendar units (days, Monday-Sunday weeks, months, years, seasons) computed in the
  reference time's timezone (a naive reference is UTC) and returned as aware-UTC ``TimeRange`` values;
  a day is ``[00:00, 23:59:59.999999]``.
* ``TemporalConstraint.range`` is always the *effective window* a filter should use: "before 2020" is
  ``(None, 2019-12-31T23:59:59.999999)``, "after the summer" is ``(1 Sep, None)``; ``relation`` says on
  which side of the referenced period the events lie. Event-relative expressions ("after the wedding")
  carry ``anchor`` and ``range=None`` until ``resolve_anchor`` is given the event's range. A past "while"
  clause is one too: "while Maya was in Porto" is "during" the event ``"Maya was in Porto"``; "while camping"
  and "while she writes" name no event, and a clause ends at a date of its own ("while I was in Lisbon last
  May" is May).
* Speed: one compiled pre-filter regex rejects ordinary chat text before any rule runs; the common forms
  are handled by compiled regex rules; ``dateparser`` (imported lazily) is only a fallback for explicit
  date strings the rules do not cover (e.g. "08May2023", "2023 May 8").
* Conservative: numbers are years only with a cue ("in 2023", "since 2023", "2023's", a month name);
  "may"/"march" need a cue and a plausible continuation; durations ("for 3 weeks", "in 3 hours") are
  not times; invalid dates ("31 February 2023") are rejected.

Ambiguities, resolved as follows (past is preferred, as memories are mostly about the past, unless the
caller passes ``tense="future"`` for a plan; ``tense="past"`` changes only "this Monday" / "this weekend" /
"this June" / "this summer", which then mean the most recent one instead of the current week's, month's or
season's; ``tense="present"``, a statement with neither a past form nor a plan marker, looks ahead for
weekdays, weekends and counts and takes the nearest month, date, holiday or season; "since X" ignores the
tense, as it always looks back):

* holidays are one day: fixed ones (Christmas, Boxing Day, New Year's Eve/Day, Valentine's, St Patrick's,
  Halloween, Bonfire Night, the Fourth of July, May Day), Easter with Good Friday and Easter Monday, and US
  weekday rules (Thanksgiving, Labor Day, Memorial Day, Mother's Day, Father's Day); the year as for "in June";
* "in 3 days", "in two weeks' time", "in a fortnight", "in 6 months" are times only in a plan or the present
  (the day, or the calendar week/month holding it); in a report or a query they are durations;
* "from 14 to 21 June", "12-15 October", "June 14-21", "between 2 and 4 December" are one range, and so are
  two explicit dates joined by a dash or "to" ("28 March - 2 April");

* numeric dates: ``8/5/2023`` and ``8-5-2023`` are US month/day (5 August) unless the first number
  cannot be a month (``13/5/2023`` is 13 May); dotted ``8.5.2023`` is day.month (European style);
* "in March" / "8 May" without a year: the most recent one at or before the reference day (in a plan:
  the first one at or after it, so "in June" said in May is this June);
* a day of the month without a month name is one day: "the 14th of next month" (or "next month on the 14th")
  is the 14th of the month after the reference's; "on the 14th" the last 14th at or before the reference day
  (in a plan or the present: the coming one, today included); a month lacking the day is skipped (named: rejected);
* "on Monday" / "Monday": the most recent Monday, today included (in a plan: the next one, today
  included); "last Monday": the most recent one strictly before today; "this Monday": the Monday of the
  current week (in a plan: the next one, today included; in the past: the most recent one); "next
  Monday": the Monday of next week; "this coming Monday": the first one after today;
* "last weekend" / "the weekend before": the last Saturday-Sunday that ended before today; "this
  weekend": the current week's; "next weekend": next week's; "the weekend" / "over the weekend": the
  most recent one that has begun (in a plan: the current week's);
* seasons are northern-hemisphere meteorological (spring Mar-May, summer Jun-Aug, autumn/fall Sep-Nov,
  winter Dec-Feb); "winter 2022" is Dec 2022-Feb 2023; "the summer" / "over the summer" is the most
  recent summer that has begun (in a plan: the current one, else the next), "last summer" the most
  recent one that has ended;
* "N days ago" is that one day, "N weeks/months/years ago" the calendar week/month/year containing that
  day; fuzzy counts are windows: "a couple" 2-3, "a few" 2-5, "several" 3-7 units;
* "last week/month/year" is the previous calendar unit, while "the past two weeks", "the last 3 months"
  and "the past week" are rolling windows ending at the end of the reference day;
* "recently" / "lately" are the last 30 days, "the other day" is 1-7 days ago;
* day parts: morning 05-12h, afternoon 12-17h, evening 17-24h, night 18h-06h next day ("tonight",
  "last night" = yesterday 18h to today 06h); "3 hours ago" is that whole clock hour;
* "early/mid/late" (and "the beginning/middle/end of") split a year into thirds (Jan-Apr, May-Aug,
  Sep-Dec), a month into days 1-10, 11-20, 21-end, a season into its three months;
* "since March" is ``[1 March, end of the reference day]`` with relation "during"; "until/by X" is
  ``(None, end of X)`` with relation "before";
* the bare "the day/week/weekend/month/year/Friday before" is relative to the reference; the bare
  "... after" is left alone (it almost always refers to a narrated event, not to the reference).
"""

from __future__ import annotations

from .anchors import resolve_anchor
from .dateline import Dateline, find_dateline, strip_dateline
from .model import Relation, TemporalConstraint, Tense
from .parser import find_temporal_expressions, parse_temporal
from .statement import statement_expressions, statement_time
from .tense import detect_tense, sentence_spans, statement_tense

__all__ = [
    "Dateline",
    "Relation",
    "TemporalConstraint",
    "Tense",
    "detect_tense",
    "find_dateline",
    "find_temporal_expressions",
    "parse_temporal",
    "resolve_anchor",
    "sentence_spans",
    "statement_expressions",
    "statement_tense",
    "statement_time",
    "strip_dateline",
]
