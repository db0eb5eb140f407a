"""LangChain / LangGraph acceptance with the real local model (Qwen2.5-Coder-1.5B via llama.cpp).

A LangGraph graph, a ``create_agent`` agent and a ``RunnableWithMessageHistory`` chain each remember a
fact across threads or turns. Answers are short (max_tokens 64). A missing model is a failure, not a skip.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from hindsight_core.models import JobStatus
from langchain_hindsight import (
    HindsightChatMessageHistory,
    HindsightMiddleware,
    create_recall_node,
    create_retain_node,
    local_chat_model,
)

pytestmark = pytest.mark.llm

SYSTEM = "You are a helpful assistant. Answer in one short sentence."
TOLD = "My sister Emma moved to Lisbon last spring."
ASKED = "Where does my sister live?"


@pytest.fixture(scope="module")
def chat(qwen: LocalLLM) -> ChatOpenAI:
    return local_chat_model("qwen2.5-1.5b", max_tokens=64)


class MemoryState(MessagesState):
    memories: list[dict[str, Any]]


def test_langgraph_graph_remembers_across_threads(tmp_path: Path, qwen: LocalLLM, chat: ChatOpenAI) -> None:
    with Hindsight.open(tmp_path / "m", llm=qwen) as hs:

        def call_model(state: MemoryState) -> dict[str, Any]:
            return {"messages": [chat.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

        builder = StateGraph(MemoryState)
        builder.add_node("recall", create_recall_node(hs, state_key="memories", system_message=True))
        builder.add_node("model", call_model)
        builder.add_node("retain", create_retain_node(hs, extract=False))
        builder.add_edge(START, "recall")
        builder.add_edge("recall", "model")
        builder.add_edge("model", "retain")
        builder.add_edge("retain", END)
        app = builder.compile(checkpointer=InMemorySaver())

        app.invoke({"messages": [HumanMessage(TOLD)]}, {"configurable": {"thread_id": "1"}}, context={"bank_id": "me"})
        out = app.invoke({"messages": [HumanMessage(ASKED)]}, {"configurable": {"thread_id": "2", "bank_id": "me"}})

        answer = out["messages"][-1]
        assert isinstance(answer, AIMessage) and "lisbon" in answer.text.lower()
        told = [m for m in out["memories"] if "Lisbon" in m["text"]]
        assert told and told[0]["sources"] and told[0]["document_id"].startswith("lg:")
        assert hs.bank("me").document(told[0]["document_id"])  # provenance leads to the stored exchange


def test_create_agent_with_middleware_remembers_across_threads(
    tmp_path: Path, qwen: LocalLLM, chat: ChatOpenAI
) -> None:
    with Hindsight.open(tmp_path / "m", llm=qwen) as hs:
        agent = create_agent(chat, tools=[], system_prompt=SYSTEM, checkpointer=InMemorySaver(),
                             middleware=[HindsightMiddleware(hs, extract=False)])
        agent.invoke({"messages": [HumanMessage(TOLD)]}, {"configurable": {"thread_id": "1"}},
                     context={"bank_id": "me"})
        out = agent.invoke({"messages": [HumanMessage(ASKED)]}, {"configurable": {"thread_id": "2"}},
                           context={"bank_id": "me"})
        assert "lisbon" in out["messages"][-1].text.lower()
        assert any("Lisbon" in m["text"] and m["sources"] for m in out["memories"])
        # the conversation itself holds no injected system message
        assert not any(isinstance(m, SystemMessage) for m in out["messages"])


def test_chat_history_with_runnable_with_message_history(tmp_path: Path, qwen: LocalLLM, chat: ChatOpenAI) -> None:
    path = tmp_path / "m"
    prompt = ChatPromptTemplate.from_messages(
        [("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with Hindsight.open(path, llm=qwen) as hs:
        bank = hs.bank("me")
        chain = RunnableWithMessageHistory(
            prompt | chat,
            lambda session_id: HindsightChatMessageHistory(bank, session_id, extract=False),
            input_messages_key="question",
            history_messages_key="history",
        )
        config = {"configurable": {"session_id": "s1"}}
        chain.invoke({"question": "My name is Ana and I live in Porto."}, config)
        reply = chain.invoke({"question": "In which city do I live?"}, config)
        assert "porto" in reply.text.lower()
        before = HindsightChatMessageHistory(bank, "s1").messages
        assert [m.type for m in before] == ["human", "ai", "human", "ai"]
        assert before[-1].id == reply.id and before[-1].response_metadata == reply.response_metadata
        assert any("Porto" in m.text for m in bank.recall("Where does Ana live?").memories)
    with Hindsight.open(path) as hs:
        after = HindsightChatMessageHistory(hs.bank("me", create=False), "s1").messages
        assert after == before  # exact: types, ids, content, additional_kwargs, response metadata


def test_chat_history_llm_extraction_in_the_background(tmp_path: Path, qwen: LocalLLM) -> None:
    with Hindsight.open(tmp_path / "m", llm=qwen) as hs:
        bank = hs.bank("me")
        history = HindsightChatMessageHistory(bank, "s1", background=True)  # extract=True: the paper's path
        history.add_messages([HumanMessage(TOLD, id="u1"), AIMessage("That sounds exciting!", id="a1")])
        assert history.last_result is not None and history.last_result.queued
        assert [m.id for m in history.messages] == ["u1", "a1"]  # stored before any model call
        document_id = history.last_result.document_id
        deadline = time.monotonic() + 600

        def facts_done() -> bool:
            # the deferred retain stores the raw messages, then queues the facts job of the document
            return any(j.kind == "facts" and j.payload.get("document_id") == document_id
                       and j.status == JobStatus.DONE for j in bank.jobs())

        # wait for the facts job only (the observation jobs it queues next are not this test's business)
        while not facts_done():
            assert time.monotonic() < deadline, "facts job did not finish"
            time.sleep(0.5)
        memories = bank.recall(ASKED).memories
        raw = next(m for m in memories if m.cites is None and "u1" in m.sources)
        assert raw.text.startswith("user:")  # the message itself is a memory
        extracted = next(m for m in memories if m.cites is not None and "Lisbon" in m.text)
        assert "u1" in extracted.sources and extracted.document_id == document_id
        assert raw.id in extracted.cites and not extracted.text.startswith("user:")  # a fact beside the message
