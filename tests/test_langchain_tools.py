"""create_memory_tools: schemas an LLM can use, sync and async execution, compact outputs with ids."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from langchain_hindsight import create_memory_tools


def test_schemas_and_descriptions(hs: Hindsight) -> None:
    retain, recall, reflect = create_memory_tools(hs.bank("u"))
    assert [t.name for t in (retain, recall, reflect)] == ["retain_memory", "recall_memory", "reflect_memory"]
    assert retain.tool_call_schema.model_json_schema()["required"] == ["content"]
    recall_schema = recall.tool_call_schema.model_json_schema()
    assert recall_schema["required"] == ["query"] and recall_schema["properties"]["max_results"]["maximum"] == 50
    assert reflect.args == {"query": reflect.args["query"]} and reflect.args["query"]["description"]
    assert all(t.description and t.coroutine is not None and t.func is not None for t in (retain, recall, reflect))
    with pytest.raises(ValidationError):
        recall.invoke({"query": "x", "max_results": 0})


async def test_retain_then_recall_sync_and_async(hs: Hindsight) -> None:
    bank = hs.bank("u")
    retain, recall, _ = create_memory_tools(bank, extract=False)
    stored = retain.invoke({"content": "Ana's favourite tea is sencha."})
    ids = re.findall(r"[0-9a-f-]{36}", stored)
    assert stored.startswith("Stored 1 memory:\n[") and len(ids) == 1 and bank.get(ids[0]) is not None
    await retain.ainvoke({"content": "Ben rides a red bicycle to work.", "context": "commute chat"})
    listing = recall.invoke({"query": "What tea does Ana like?", "max_results": 1})
    assert listing.count("\n") == 0 and f"[{ids[0]}]" in listing and "sencha" in listing and "(world, " in listing
    assert "bicycle" in await recall.ainvoke({"query": "How does Ben get to work?"})
    assert create_memory_tools(hs.bank("empty"))[1].invoke({"query": "anything"}) == "No relevant memories found."


def test_background_retain_queues(hs: Hindsight) -> None:
    bank = hs.bank("u")
    retain = create_memory_tools(bank, extract=False, background=True)[0]
    assert retain.invoke({"content": "The office moves to Lyon in May."}).startswith("Queued for memory")
    assert bank.wait_idle(120) and bank.recall("Lyon").memories


async def test_reflect_returns_answer_with_citations(tmp_path: Path) -> None:
    llm = ScriptedLLM([{"known": True, "based_on": [1], "answer": "Yes, Ana runs daily.", "opinions": []}])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("u")
        memory = bank.retain("Ana runs every morning before work.", extract=False, background=False).memories[0]
        reflect = create_memory_tools(bank)[2]
        text = await reflect.ainvoke({"query": "Does Ana run in the morning?"})
        assert text.startswith("Yes, Ana runs daily.") and f"[{memory.id}] Ana runs every morning" in text
        assert len(llm.calls) == 1 and llm.calls[0].is_async
