"""LangGraph nodes: recall -> model -> retain graphs (sync and async), bank resolution, reflect inline and queued.

The model node here is a scripted echo of the system prompt it received (plumbing only); the real-model
version of the same graph is in test_langchain_llm.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.models import JobStatus
from langchain_hindsight import (
    BankNotConfiguredError,
    create_recall_node,
    create_reflect_node,
    create_retain_node,
)
from langchain_hindsight.nodes import RECALL_MESSAGE_PREFIX


class EchoSystem(BaseChatModel):
    """Answers with the system messages it was given, so tests can see what reached the model."""

    @property
    def _llm_type(self) -> str:
        return "echo-system"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        seen = " | ".join(m.text for m in messages if isinstance(m, SystemMessage))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"seen: {seen}"))])


class MemoryState(MessagesState):
    memories: list[dict[str, Any]]


def build(hs: Hindsight, **recall: Any) -> Any:
    model = EchoSystem()

    def call_model(state: MemoryState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MemoryState)
    builder.add_node("recall", create_recall_node(hs, **recall))
    builder.add_node("model", call_model)
    builder.add_node("retain", create_retain_node(hs, extract=False))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "model")
    builder.add_edge("model", "retain")
    builder.add_edge("retain", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_graph_recalls_in_a_new_thread_what_another_thread_retained(hs: Hindsight) -> None:
    app = build(hs)
    app.invoke({"messages": [HumanMessage("My sister Emma moved to Lisbon.")]},
               {"configurable": {"thread_id": "1"}}, context={"bank_id": "me"})
    docs = hs.bank("me").documents()
    assert len(docs) == 1 and docs[0].id.startswith("lg:")
    out = app.invoke({"messages": [HumanMessage("Where does my sister live?")]},
                     {"configurable": {"thread_id": "2"}}, context={"bank_id": "me"})
    recall_msgs = [m for m in out["messages"] if isinstance(m, SystemMessage)]
    assert len(recall_msgs) == 1 and recall_msgs[0].id.startswith(RECALL_MESSAGE_PREFIX)
    assert "- user: My sister Emma moved to Lisbon." in recall_msgs[0].text
    assert "Lisbon" in out["messages"][-1].text  # the model saw it
    # the retained exchange leaves the injected system message out
    retained = hs.bank("me").recall("memories", budget=10_000).memories
    assert retained and not any(m.text.startswith("system:") for m in retained)
    # a second turn in the same thread replaces the recall message instead of piling them up
    out = app.invoke({"messages": [HumanMessage("And Emma's job?")]}, {"configurable": {"thread_id": "2"}},
                     context={"bank_id": "me"})
    assert sum(isinstance(m, SystemMessage) for m in out["messages"]) == 1


async def test_async_graph_with_state_key_and_bank_from_configurable(hs: Hindsight) -> None:
    app = build(hs, state_key="memories")
    config = {"configurable": {"thread_id": "1", "bank_id": "me"}}
    await app.ainvoke({"messages": [HumanMessage("I bought a green kayak.")]}, config)
    out = await app.ainvoke({"messages": [HumanMessage("What colour is my kayak?")]},
                            {"configurable": {"thread_id": "2", "bank_id": "me"}})
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])  # state only
    kayak = next(m for m in out["memories"] if "kayak" in m["text"])
    assert kayak["sources"] and kayak["document_id"].startswith("lg:") and kayak["network"] == "world"
    assert set(kayak) >= {"id", "text", "sources", "document_id", "score", "mentioned_at"}


@dataclass
class Context:
    bank_id: str


def test_bank_resolution_order_and_missing_bank_error(hs: Hindsight) -> None:
    app = build(hs)
    ask = {"messages": [HumanMessage("hello")]}
    # context (attribute) beats configurable, which beats the static bank
    static = StateGraph(MessagesState)
    static.add_node("retain", create_retain_node(hs, bank_id="static", extract=False))
    static.add_edge(START, "retain")
    static.add_edge("retain", END)
    graph = static.compile()
    graph.invoke(ask, {"configurable": {"bank_id": "from-config"}}, context=Context(bank_id="from-context"))
    graph.invoke(ask, {"configurable": {"bank_id": "from-config"}})
    graph.invoke(ask)
    counts = {b: len(hs.bank(b).documents()) for b in ("from-context", "from-config", "static")}
    assert counts == {"from-context": 1, "from-config": 1, "static": 1}
    with pytest.raises(BankNotConfiguredError, match="bank_id"):
        app.invoke(ask, {"configurable": {"thread_id": "x"}})
    with pytest.raises(TypeError):
        create_recall_node("not a hindsight")  # type: ignore[arg-type]


def test_retain_node_is_idempotent_per_turn(hs: Hindsight) -> None:
    node_graph = StateGraph(MessagesState)
    node_graph.add_node("retain", create_retain_node(hs.bank("me"), extract=False))
    node_graph.add_edge(START, "retain")
    node_graph.add_edge("retain", END)
    graph = node_graph.compile()
    turn = [HumanMessage("I like tea.", id="h1"), AIMessage("Noted.", id="a1")]
    graph.invoke({"messages": turn})
    graph.invoke({"messages": turn})
    docs = hs.bank("me").documents()
    assert [d.id for d in docs] == ["lg:h1"]
    assert sorted(m.text for m in hs.bank("me").recall("tea").memories) == ["assistant: Noted.", "user: I like tea."]


async def test_reflect_node_inline_and_in_background(tmp_path: Path) -> None:
    llm = ScriptedLLM([{"known": True, "based_on": [1], "answer": "Ana lives in Porto.", "opinions": []}] * 2)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("me")
        memory = bank.retain("Ana moved to Porto in 2023.", extract=False, background=False).memories[0]

        builder = StateGraph(MessagesState)
        builder.add_node("reflect", create_reflect_node(hs, bank_id="me"))
        builder.add_edge(START, "reflect")
        builder.add_edge("reflect", END)
        out = await builder.compile().ainvoke({"messages": [HumanMessage("Where does Ana live?")]})
        answer = out["messages"][-1]
        assert isinstance(answer, AIMessage) and answer.text == "Ana lives in Porto."
        assert answer.response_metadata["hindsight"]["based_on"] == [memory.id]

        class JobState(MessagesState):
            reflect_job: str

        queued = StateGraph(JobState)
        queued.add_node("reflect", create_reflect_node(hs, bank_id="me", background=True, state_key="reflect_job"))
        queued.add_edge(START, "reflect")
        queued.add_edge("reflect", END)
        out = queued.compile().invoke({"messages": [HumanMessage("Where does Ana live?")]})
        assert len(out["messages"]) == 1  # nothing appended: it runs in the background
        assert bank.wait_idle(60)
        job = next(j for j in bank.jobs() if j.id == out["reflect_job"])
        assert job.status == JobStatus.DONE and len(llm.calls) == 2
