"""One table of time expressions, and every path that resolves them held to it.

Facts are stored with the ranges that retain resolves and found by the ranges that recall resolves, so
both must read "this Monday" or "in June" the same way. Each row is a sentence, the moment it was said or
asked, its tense (what ``detect_tense`` must find), the phrase a model would copy into a fact's ``start``,
and the expected days. Every row runs through:

* recall: ``parse_temporal`` / ``find_temporal_expressions`` with the row's tense; for rows that are not
  about the future also without a tense hint, exactly as the recall pipeline calls it;
* LLM retain: the model's ``start`` value (``parse_model_date``), the fact's own words when the model gave
  no date (``occurrence``), and the whole ``LLMExtractor`` with a scripted model;
* raw retain: ``RawExtractor`` on the sentence as a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from hindsight_core.extract.dates import occurrence, parse_model_date
from hindsight_core.extract.llm_extractor import LLMExtractor as _LLMExtractor
from hindsight_core.extract.ner import EntityRecognizer
from hindsight_core.extract.raw_extractor import RawExtractor
from hindsight_core.models import Message
from hindsight_core.temporal import Tense, detect_tense, find_temporal_expressions, parse_temporal

try:  # tests/ may or may not become a package; both layouts work
    from tests.scripted_llm import ScriptedLLM
except ImportError:  # pragma: no cover
    from scripted_llm import ScriptedLLM

WED = datetime(2023, 5, 10, 13, 56, tzinfo=UTC)  # Wednesday 10 May 2023, the reference of most rows
SUN = datetime(2023, 5, 14, 18, 0, tzinfo=UTC)  # Sunday 14 May 2023
AUG = datetime(2023, 8, 20, 10, 0, tzinfo=UTC)  # a question asked after the summer
D = date


def LLMExtractor(llm: Any, **kwargs: Any) -> _LLMExtractor:
    """The extractor with the full schema (every field from the model): what these tests exercise. The lean
    default is tested in ``test_llm_extractor_lean.py``."""
    return _LLMExtractor(llm, **{"lean": False, **kwargs})


@dataclass(frozen=True)
class Case:
    """One row: ``text`` said at ``ref`` in ``tense``; ``phrase`` is its time expression; days first..last."""

    text: str
    ref: datetime
    tense: Tense | None
    phrase: str
    first: date
    last: date

    @property
    def days(self) -> tuple[date, date]:
        return self.first, self.last


CASES: list[Case] = [
    # week-day references: a plan looks ahead, a question or a narrated event looks back
    Case("We're going to the lake this Monday.", WED, "future", "this Monday", D(2023, 5, 15), D(2023, 5, 15)),
    Case("What did you do this Monday?", WED, "past", "this Monday", D(2023, 5, 8), D(2023, 5, 8)),
    Case("I painted a sunrise last Friday.", WED, "past", "last Friday", D(2023, 5, 5), D(2023, 5, 5)),
    Case("What did Melanie paint last Friday?", WED, "past", "last Friday", D(2023, 5, 5), D(2023, 5, 5)),
    Case("I went hiking on Tuesday.", WED, "past", "on Tuesday", D(2023, 5, 9), D(2023, 5, 9)),
    Case("I'm meeting my sister on Tuesday.", WED, "future", "on Tuesday", D(2023, 5, 16), D(2023, 5, 16)),
    Case("I'll call the counselor next Wednesday.", WED, "future", "next Wednesday", D(2023, 5, 17), D(2023, 5, 17)),
    Case("I'll see her next Friday.", WED, "future", "next Friday", D(2023, 5, 19), D(2023, 5, 19)),
    # fuzzy counts are windows, not one guessed day
    Case("I went to a support group a few days ago.", WED, "past", "a few days ago", D(2023, 5, 5), D(2023, 5, 8)),
    Case("What did Caroline do a few days ago?", WED, "past", "a few days ago", D(2023, 5, 5), D(2023, 5, 8)),
    Case("I joined a gym a couple of weeks ago.", WED, "past", "a couple of weeks ago", D(2023, 4, 17), D(2023, 4, 30)),
    Case("I finished the painting 3 days ago.", WED, "past", "3 days ago", D(2023, 5, 7), D(2023, 5, 7)),
    # weekends
    Case("We went camping the weekend before.", WED, "past", "the weekend before", D(2023, 5, 6), D(2023, 5, 7)),
    Case("We went camping the weekend before last.", WED, "past", "the weekend before last", D(2023, 4, 29),
         D(2023, 4, 30)),
    Case("I went to the beach last weekend.", WED, "past", "last weekend", D(2023, 5, 6), D(2023, 5, 7)),
    Case("I went to the beach last weekend.", SUN, "past", "last weekend", D(2023, 5, 6), D(2023, 5, 7)),
    Case("I'm going to the beach this weekend.", WED, "future", "this weekend", D(2023, 5, 13), D(2023, 5, 14)),
    Case("What did you do this weekend?", SUN, "past", "this weekend", D(2023, 5, 13), D(2023, 5, 14)),
    Case("We're painting the fence over the weekend.", WED, "future", "over the weekend", D(2023, 5, 13),
         D(2023, 5, 14)),
    Case("What did Caroline do over the weekend?", WED, "past", "over the weekend", D(2023, 5, 6), D(2023, 5, 7)),
    # days and weeks
    Case("I went to a LGBTQ support group yesterday.", WED, "past", "yesterday", D(2023, 5, 9), D(2023, 5, 9)),
    Case("What did Melanie paint yesterday?", WED, "past", "yesterday", D(2023, 5, 9), D(2023, 5, 9)),
    Case("I got a new job last week.", WED, "past", "last week", D(2023, 5, 1), D(2023, 5, 7)),
    Case("Melanie is moving next month.", WED, "future", "next month", D(2023, 6, 1), D(2023, 6, 30)),
    # bare years
    Case("I moved to Boston in 2022.", WED, "past", "in 2022", D(2022, 1, 1), D(2022, 12, 31)),
    Case("What did Caroline do in 2022?", WED, "past", "in 2022", D(2022, 1, 1), D(2022, 12, 31)),
    Case("I'll graduate in 2024.", WED, "future", "in 2024", D(2024, 1, 1), D(2024, 12, 31)),
    Case("I adopted a dog two years ago.", WED, "past", "two years ago", D(2021, 1, 1), D(2021, 12, 31)),
    # month names: a plan made in May means the coming June; a question means a June that has happened
    Case("I'm going to Paris in June.", WED, "future", "in June", D(2023, 6, 1), D(2023, 6, 30)),
    Case("What did Caroline do in June?", AUG, "past", "in June", D(2023, 6, 1), D(2023, 6, 30)),
    Case("What did Caroline do in June?", WED, "past", "in June", D(2022, 6, 1), D(2022, 6, 30)),
    Case("I'll visit my parents in May.", WED, "future", "in May", D(2023, 5, 1), D(2023, 5, 31)),
    Case("When did Melanie go to Rome in March?", WED, "past", "in March", D(2023, 3, 1), D(2023, 3, 31)),
    # seasons
    Case("We went to the coast last summer.", WED, "past", "last summer", D(2022, 6, 1), D(2022, 8, 31)),
    Case("We're going camping over the summer.", WED, "future", "over the summer", D(2023, 6, 1), D(2023, 8, 31)),
    Case("What did Caroline do over the summer?", WED, "past", "over the summer", D(2022, 6, 1), D(2022, 8, 31)),
    Case("What did Caroline do over the summer?", AUG, "past", "over the summer", D(2023, 6, 1), D(2023, 8, 31)),
    # a day of the month is one day, never the month (issue 36): named relative to this month, or the tense picks
    Case("The party is on the 14th of next month.", WED, None, "on the 14th of next month", D(2023, 6, 14),
         D(2023, 6, 14)),
    Case("The exam is the 3rd of next month.", WED, None, "the 3rd of next month", D(2023, 6, 3), D(2023, 6, 3)),
    Case("Next month on the 14th we fly to Oslo.", WED, None, "Next month on the 14th", D(2023, 6, 14),
         D(2023, 6, 14)),
    Case("I met her on the 20th of last month.", WED, "past", "on the 20th of last month", D(2023, 4, 20),
         D(2023, 4, 20)),
    Case("I'll see her on the 14th.", WED, "future", "on the 14th", D(2023, 5, 14), D(2023, 5, 14)),
    Case("I saw her on the 14th.", WED, "past", "on the 14th", D(2023, 4, 14), D(2023, 4, 14)),
    Case("I'll call the bank on the 3rd.", WED, "future", "on the 3rd", D(2023, 6, 3), D(2023, 6, 3)),
]

IDS = [f"{c.text} @{c.ref:%Y-%m-%d}" for c in CASES]


def _days(start: datetime | None, end: datetime | None) -> tuple[date | None, date | None]:
    return (start.date() if start else None), (end.date() if end else None)


# --- recall -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_recall_path(case: Case) -> None:
    hints: list[Tense | None] = [case.tense] if case.tense == "future" else [case.tense, None]
    for tense in hints:  # recall itself passes no hint: past and unknown must agree
        c = parse_temporal(case.text, case.ref, tense=tense)
        assert c is not None and c.range is not None, tense
        assert c.expression.lower() == case.phrase.lower()
        assert _days(c.range.start, c.range.end) == case.days, tense
        found = [x for x in find_temporal_expressions(case.text, case.ref, tense=tense) if x.range is not None]
        assert found[0] == c


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tense_is_detected(case: Case) -> None:
    assert detect_tense(case.text) == case.tense


# --- LLM retain ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_model_date_path(case: Case) -> None:
    # The model copied the phrase into ``start``: it is resolved with the fact's tense.
    assert parse_model_date(case.phrase, case.ref, detect_tense(case.text)) == case.days
    start, end = occurrence(case.text, case.phrase, "", case.ref)
    assert _days(start, end) == case.days


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fact_text_path(case: Case) -> None:
    # The model gave no date (or copied the message's): the phrase in the fact decides.
    for copied in ("", f"{case.ref:%Y-%m-%d}"):
        start, end = occurrence(case.text, copied, copied, case.ref)
        assert _days(start, end) == case.days


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_llm_extractor(case: Case) -> None:
    message = Message(id="D1:1", speaker="Caroline", text=case.text, timestamp=case.ref)
    for start in (case.phrase, ""):
        fact = {"text": case.text, "src": ["D1:1"], "net": "world", "start": start, "end": "", "conf": 0,
                "who": ["Caroline"], "ents": [], "rel": []}
        (extracted,) = LLMExtractor(ScriptedLLM([{"facts": [fact]}])).extract(
            [message], document_time=case.ref - timedelta(days=3)
        )
        assert _days(extracted.occurred_start, extracted.occurred_end) == case.days
        assert extracted.mentioned_at == case.ref


# --- raw retain ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_raw_extractor(case: Case) -> None:
    message = Message(id="D1:1", speaker="Caroline", text=case.text, timestamp=case.ref)
    extractor = RawExtractor(recognizer=EntityRecognizer(use_spacy=False))
    (fact,) = extractor.extract([message], document_time=case.ref - timedelta(days=3))
    assert _days(fact.occurred_start, fact.occurred_end) == case.days
