"""HindsightChatMessageHistory: exact durable transcripts, retention into the bank, sessions, clear, async."""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from hindsight_core import Hindsight
from hindsight_core.models import JobStatus
from langchain_hindsight import HindsightChatMessageHistory
from langchain_hindsight.chat_history import session_prefix

TURN = [
    HumanMessage("My sister Emma moved to Lisbon.", id="h1", additional_kwargs={"lang": "en"}),
    AIMessage("Nice! Lisbon is lovely.", id="a1", response_metadata={"model": "x"},
              tool_calls=[{"name": "note", "args": {"city": "Lisbon"}, "id": "call-1"}]),
    ToolMessage("saved", tool_call_id="call-1", id="t1"),
]


def test_exact_round_trip_across_a_reopen_and_retained_as_memory(tmp_path: Path) -> None:
    path = tmp_path / "m"
    with Hindsight.open(path) as hs:
        history = HindsightChatMessageHistory(hs.bank("u"), "s1", extract=False)
        history.add_messages(TURN)
        history.add_message(HumanMessage("And my brother?"))  # no id: kept as None, cited by position
        memories = hs.bank("u").recall("Where does Emma live?").memories
        told = next(m for m in memories if "Lisbon." in m.text)
        assert told.text == "user: My sister Emma moved to Lisbon." and told.sources == ["h1"]
        assert told.document_id is not None and told.document_id.startswith(session_prefix("s1"))
        tool_call = next(m for m in memories if "called note" in m.text)
        assert tool_call.network.value == "experience"  # the assistant's own action
    with Hindsight.open(path) as hs:
        again = HindsightChatMessageHistory(hs.bank("u", create=False), "s1").messages
    assert again == [*TURN, HumanMessage("And my brother?")]
    assert [type(m) for m in again] == [HumanMessage, AIMessage, ToolMessage, HumanMessage]
    assert again[0].additional_kwargs == {"lang": "en"} and again[1].tool_calls[0]["id"] == "call-1"
    assert again[3].id is None


def test_sessions_are_isolated_even_with_prefix_like_ids(hs: Hindsight) -> None:
    bank = hs.bank("u")
    a = HindsightChatMessageHistory(bank, "a", extract=False)
    ab = HindsightChatMessageHistory(bank, "a:b", extract=False)
    pct = HindsightChatMessageHistory(bank, "a%3Ab", extract=False)
    a.add_messages([HumanMessage("one", id="1")])
    ab.add_messages([HumanMessage("two", id="2")])
    pct.add_messages([HumanMessage("three", id="3")])
    assert [m.id for m in a.messages] == ["1"]
    assert [m.id for m in ab.messages] == ["2"]
    assert [m.id for m in pct.messages] == ["3"]


def test_order_is_kept_over_many_batches(hs: Hindsight) -> None:
    history = HindsightChatMessageHistory(hs.bank("u"), "s", extract=False)
    for i in range(12):
        history.add_messages([HumanMessage(f"message {i}", id=f"m{i}")])
    assert [m.id for m in history.messages] == [f"m{i}" for i in range(12)]


def test_clear_keeps_long_term_memories_unless_asked(hs: Hindsight) -> None:
    bank = hs.bank("u")
    keep = HindsightChatMessageHistory(bank, "keep", extract=False)
    keep.add_messages([HumanMessage("I play the cello.", id="k1")])
    drop = HindsightChatMessageHistory(bank, "drop", extract=False, forget_memories=True)
    drop.add_messages([HumanMessage("I collect stamps.", id="d1")])
    keep.clear()
    drop.clear()
    assert keep.messages == [] and drop.messages == []
    texts = [m.text for m in bank.recall("hobbies cello stamps").memories]
    assert "user: I play the cello." in texts
    assert "user: I collect stamps." not in texts
    keep.add_messages([HumanMessage("I also sing.", id="k2")])
    keep.clear(forget_memories=True)
    assert "user: I also sing." not in [m.text for m in bank.recall("sing").memories]


def test_background_stores_the_transcript_at_once_and_extracts_in_the_worker(hs: Hindsight) -> None:
    bank = hs.bank("u")
    history = HindsightChatMessageHistory(bank, "bg", extract=False, background=True)
    history.add_messages([HumanMessage("I am training for the Porto marathon.", id="b1")])
    result = history.last_result
    assert result is not None and result.queued and result.job_id and result.memories == []
    assert [m.id for m in history.messages] == ["b1"]  # durable before extraction
    assert bank.wait_idle(120)
    assert any(j.id == result.job_id and j.status == JobStatus.DONE for j in bank.jobs())
    assert any(m.sources == ["b1"] for m in bank.recall("marathon").memories)


async def test_async_twins(hs: Hindsight) -> None:
    history = HindsightChatMessageHistory(hs.bank("u"), "async", extract=False)
    await history.aadd_messages([HumanMessage("hello", id="x1"), AIMessage("hi there", id="x2")])
    assert [m.id for m in await history.aget_messages()] == ["x1", "x2"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_empty_messages_are_still_stored_exactly(hs: Hindsight) -> None:
    history = HindsightChatMessageHistory(hs.bank("u"), "empty", extract=False)
    history.add_messages([AIMessage("", id="e1")])
    history.add_messages([])
    assert history.messages == [AIMessage("", id="e1")]


def test_works_with_runnable_with_message_history(hs: Hindsight) -> None:
    bank = hs.bank("u")
    model = FakeListChatModel(responses=["Hello Ana.", "You live in Porto."])
    prompt = ChatPromptTemplate.from_messages(
        [SystemMessage("Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: HindsightChatMessageHistory(bank, session_id, extract=False),
        input_messages_key="question",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "chat"}}
    chain.invoke({"question": "I am Ana from Porto."}, config)
    chain.invoke({"question": "Where do I live?"}, config)
    messages = HindsightChatMessageHistory(bank, "chat").messages
    assert [(m.type, m.text) for m in messages] == [
        ("human", "I am Ana from Porto."), ("ai", "Hello Ana."),
        ("human", "Where do I live?"), ("ai", "You live in Porto."),
    ]
    assert len(bank.documents(prefix=session_prefix("chat"))) == 2  # one document per turn (batch)
