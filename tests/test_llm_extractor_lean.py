"""The lean extraction schema (the default): the model writes each fact's text and sources; dates, entities, people
and networks are found in code. A scripted model; the real one runs in ``test_raw_first_llm.py``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from scripted_llm import ScriptedLLM

from hindsight_core.extract.llm_extractor import LLMExtractor
from hindsight_core.models import EntityType, Message, Network

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _msgs() -> list[Message]:
    return [
        Message(id="D1:1", speaker="Caroline", text="I went to a support group in Boston yesterday.", timestamp=T0),
        Message(id="D1:2", speaker="assistant", text="I booked you a table at Luigi's for Friday.", timestamp=T0),
        Message(id="D1:3", speaker="Melanie", text="I painted a lake sunrise.", timestamp=T0 - timedelta(days=2)),
    ]


def _lean(*facts: tuple[str, list[str]]) -> dict[str, Any]:
    return {"facts": [{"text": t, "src": s} for t, s in facts]}


def test_the_lean_schema_asks_for_text_and_sources_only_and_bounds_every_list() -> None:
    extractor = LLMExtractor(ScriptedLLM())
    schema = extractor.schema.model_json_schema()
    (fact,) = schema["$defs"].values()
    assert set(fact["properties"]) == {"text", "src"} and fact["required"] == ["text", "src"]
    assert schema["properties"]["facts"]["maxItems"] == 6 and fact["properties"]["src"]["maxItems"] == 4
    assert extractor.max_output_tokens < LLMExtractor(ScriptedLLM(), lean=False).max_output_tokens


def test_the_lean_prompt_has_no_example_people_and_states_each_time_once() -> None:
    llm = ScriptedLLM([_lean(("Caroline went to a support group in Boston yesterday.", ["D1:1"]))])
    LLMExtractor(llm).extract(_msgs(), document_time=T0)
    (call,) = llm.calls
    # The worked examples' people leaked into real facts with the 1.5B model: the lean prompt has none.
    assert "Tom" not in call.system and "Lea" not in call.system and '"text"' in call.system
    assert "[D1:1] Caroline: I went to a support group" in call.user  # said at the reference time
    assert "[D1:3] (2023-05-06 13:56) Melanie: I painted" in call.user  # said at another time: shown


def test_lean_facts_get_dates_entities_people_and_networks_in_code() -> None:
    answer = _lean(("Caroline went to a support group in Boston yesterday.", ["D1:1"]),
                   ("I booked a table at Luigi's for Friday.", ["D1:2"]),
                   ("Melanie painted a lake sunrise.", ["D1:3"]))
    group, booking, painting = LLMExtractor(ScriptedLLM([answer])).extract(_msgs(), document_time=T0)
    # "yesterday" said on 8 May is 7 May, and the text says so
    assert group.occurred_start == datetime(2023, 5, 7, tzinfo=UTC) and "(7 May 2023)" in group.text
    assert ("Caroline", EntityType.PERSON) in [(e.name, e.type) for e in group.entities]
    assert "Boston" in [e.name for e in group.entities]  # found by NER, not named by the model
    assert group.network is Network.WORLD and group.participants == ["Caroline"]
    assert booking.network is Network.EXPERIENCE  # the assistant's own action, in its own voice
    assert painting.mentioned_at == T0 - timedelta(days=2)  # no time words: when its message was said
    assert painting.occurred_start == painting.mentioned_at


def test_a_looping_lean_answer_keeps_its_distinct_facts_without_a_second_generation() -> None:
    loop = _lean(*[("Caroline went to a support group in Boston yesterday.", ["D1:1"])] * 4,
                 ("Melanie painted a lake sunrise.", ["D1:3"]))
    llm = ScriptedLLM([loop])
    facts = LLMExtractor(llm).extract(_msgs(), document_time=T0)
    assert len(llm.calls) == 1 and [f.sources for f in facts] == [["D1:1"], ["D1:3"]]
    retried = ScriptedLLM([loop, loop, loop])
    LLMExtractor(retried, retry_loops=True).extract(_msgs(), document_time=T0)
    assert len(retried.calls) == 3  # asked for, loops are retried as with the full schema


def test_an_answer_in_the_full_shape_still_reads_under_the_lean_schema() -> None:
    full = {"facts": [{"text": "Caroline went to a support group yesterday.", "src": ["D1:1"], "net": "opinion",
                       "start": "2020-01-01", "end": "", "conf": 0.9, "who": ["Zed"], "ents": [], "rel": []}]}
    (fact,) = LLMExtractor(ScriptedLLM([json.dumps(full)])).extract(_msgs(), document_time=T0)
    # Fields the lean schema does not ask for are ignored, not trusted.
    assert fact.network is Network.WORLD and fact.occurred_start == datetime(2023, 5, 7, tzinfo=UTC)
    assert fact.participants == ["Caroline"]
