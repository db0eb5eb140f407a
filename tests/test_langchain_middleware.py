"""HindsightMiddleware in create_agent: recall once per turn into state and the system prompt, retain after.

The chat model is a scripted echo of the system prompt it receives (plumbing); the real-model agent test is
in test_langchain_llm.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from hindsight_core import Hindsight
from langchain_hindsight import BankNotConfiguredError, HindsightMiddleware
from langchain_hindsight.middleware import unretained_messages


class EchoSystem(GenericFakeChatModel):
    """Replies with the system prompt it saw; can be scripted to call a tool first."""

    tool_first: bool = False
    seen: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        system = " | ".join(m.text for m in messages if isinstance(m, SystemMessage))
        self.seen.append(system)
        if self.tool_first and not any(m.type == "tool" for m in messages):
            call = {"name": "clock", "args": {}, "id": f"c{len(self.seen)}"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"seen: {system}"))])


@tool
def clock() -> str:
    """The current time."""
    return "noon"


def agent_for(hs: Hindsight, model: EchoSystem, **options: Any) -> Any:
    return create_agent(model, tools=[clock], system_prompt="Be brief.", checkpointer=InMemorySaver(),
                        middleware=[HindsightMiddleware(hs, extract=False, **options)])


def test_recall_reaches_the_model_and_state_and_runs_once_per_turn(hs: Hindsight) -> None:
    model = EchoSystem(messages=iter([]), seen=[], tool_first=True)
    agent = agent_for(hs, model)
    agent.invoke({"messages": [HumanMessage("My sister Emma moved to Lisbon.")]},
                 {"configurable": {"thread_id": "1"}}, context={"bank_id": "me"})
    retained = hs.bank("me").recall("Emma", budget=10_000).memories
    texts = {m.text for m in retained}
    assert "user: My sister Emma moved to Lisbon." in texts
    assert any("called clock" in t for t in texts) and "tool: noon" in texts  # the whole run, tool steps too
    model.seen.clear()
    out = agent.invoke({"messages": [HumanMessage("Where does my sister live?")]},
                       {"configurable": {"thread_id": "2"}}, context={"bank_id": "me"})
    assert len(model.seen) == 2  # tool step + answer
    assert all(s.startswith("Be brief.\n\nRelevant long-term memories") and "Lisbon" in s for s in model.seen)
    assert any("Lisbon" in m["text"] and m["sources"] for m in out["memories"])
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])
    assert "hindsight_recalled_for" not in out  # private bookkeeping stays out of the output


async def test_async_agent_retains_only_new_messages_each_turn(hs: Hindsight) -> None:
    agent = agent_for(hs, EchoSystem(messages=iter([]), seen=[]))
    config = {"configurable": {"thread_id": "t", "bank_id": "me"}}
    await agent.ainvoke({"messages": [HumanMessage("I play chess on Sundays.")]}, config)
    await agent.ainvoke({"messages": [HumanMessage("I also like go.")]}, config)
    docs = hs.bank("me").documents()
    assert len(docs) == 2 and all(d.id.startswith("agent:") for d in docs)
    chess = [m for m in hs.bank("me").recall("chess", budget=10_000).memories if m.text.startswith("user:")]
    assert sorted(m.text for m in chess) == ["user: I also like go.", "user: I play chess on Sundays."]


def test_missing_bank_is_an_error_and_options_switch_parts_off(hs: Hindsight) -> None:
    agent = agent_for(hs, EchoSystem(messages=iter([]), seen=[]))
    with pytest.raises(BankNotConfiguredError):
        agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "1"}})
    quiet = agent_for(hs, EchoSystem(messages=iter([]), seen=[]), bank_id="static", retain=False)
    quiet.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "1"}})
    assert hs.bank("static").documents() == []


def test_unretained_messages_follow_the_cursor() -> None:
    msgs = [HumanMessage("a", id="1"), SystemMessage("s", id="s"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    assert [m.id for m in unretained_messages(msgs, None)] == ["1", "2", "3"]
    assert [m.id for m in unretained_messages(msgs, "2")] == ["3"]
    assert unretained_messages(msgs, "3") == []
    assert [m.id for m in unretained_messages(msgs, "gone")] == ["1", "2", "3"]


def test_background_retain_does_not_wait_for_extraction(hs: Hindsight) -> None:
    agent = agent_for(hs, EchoSystem(messages=iter([]), seen=[]), background=True)
    agent.invoke({"messages": [HumanMessage("I keep bees on my roof.")]}, {"configurable": {"thread_id": "1"}},
                 context={"bank_id": "me"})
    bank = hs.bank("me")
    assert len(bank.documents()) == 1 and any(j.kind == "retain" for j in bank.jobs())
    assert bank.wait_idle(120)
    assert "user: I keep bees on my roof." in [m.text for m in bank.recall("bees").memories]
