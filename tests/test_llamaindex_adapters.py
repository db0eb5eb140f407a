"""LlamaIndex adapters without a language model: conversions, errors, retriever, memory block, tool spec.

Real stores and the real embedder throughout (raw ingest, ``extract=False``); the scripted LLM only forces
the extractor and reflect outcomes. The same adapters run against the real local model in
``test_llamaindex_llm.py``.
"""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText
from llama_index.core.schema import MetadataMode, NodeRelationship, QueryBundle
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight, InvalidInputError, LLMError
from hindsight_core.models import Memory as HMemory
from hindsight_core.models import Network
from llama_index_hindsight import (
    HindsightMemoryBlock,
    HindsightRetriever,
    HindsightToolSpec,
    OpenAILikeLLM,
    format_memories,
    local_llm,
    memory_to_node,
    messages_to_retain,
)
from llama_index_hindsight.convert import DATE_KEYS, METADATA_KEYS, document_id_for, latest_user_text
from llama_index_hindsight.local_llm import to_openai_messages

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
FAMILY = [
    {"speaker": "Sam", "text": "My sister Emma moved to Lisbon last spring.", "id": "D1:1"},
    {"speaker": "Sam", "text": "I adopted a grey cat named Miso in 2023.", "id": "D1:2"},
    {"speaker": "Sam", "text": "I work as a nurse at the children's hospital.", "id": "D1:3"},
]


@pytest.fixture()
def bank(hs: Hindsight) -> Any:
    """A bank holding three raw memories from document ``family``."""
    b = hs.bank("sam")
    b.retain(FAMILY, timestamp=T0, document_id="family", extract=False)
    return b


def _memory(**kw: Any) -> HMemory:
    base: dict[str, Any] = {"id": "m-1", "bank_id": "b", "text": "Emma lives in Lisbon."}
    return HMemory(**{**base, **kw})


# -- conversions ---------------------------------------------------------------------------------


def test_memory_to_node_keeps_id_score_metadata_and_source_document() -> None:
    memory = _memory(
        network=Network.OPINION, confidence=0.8, entities=["Emma", "Lisbon"], sources=["D1:1"],
        document_id="family", score=0.5, occurred_start=T0, mentioned_at=T0,
    )
    nws = memory_to_node(memory)
    node = nws.node
    assert node.node_id == "m-1" and nws.score == 0.5 and node.get_content() == "Emma lives in Lisbon."
    assert set(node.metadata) == set(METADATA_KEYS)
    assert node.metadata["network"] == "opinion" and node.metadata["confidence"] == 0.8
    assert node.metadata["occurred_start"] == T0.isoformat() and node.metadata["occurred_end"] is None
    assert node.metadata["sources"] == ["D1:1"] and node.metadata["entities"] == ["Emma", "Lisbon"]
    assert node.relationships[NodeRelationship.SOURCE].node_id == "family"
    assert node.ref_doc_id == "family"
    # The LLM sees the text and the dates that are set, never ids or provenance.
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "occurred_start" in llm_view and "mentioned_at" in llm_view
    assert "occurred_end" not in llm_view and "D1:1" not in llm_view and "m-1" not in llm_view
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == "Emma lives in Lisbon."
    assert set(DATE_KEYS) <= set(METADATA_KEYS)


def test_memory_without_document_has_no_source_relationship() -> None:
    node = memory_to_node(_memory()).node
    assert NodeRelationship.SOURCE not in node.relationships and node.metadata["document_id"] is None


def test_format_memories_dates_lines_and_marks_opinions() -> None:
    text = format_memories([_memory(occurred_start=T0), _memory(text="Sam is kind.", confidence=0.75)])
    assert text.splitlines() == ["- [2024-03-01] Emma lives in Lisbon.", "- Sam is kind. (opinion, confidence 0.75)"]
    assert format_memories([]) == ""


def test_messages_to_retain_maps_roles_keeps_ids_and_skips_the_rest() -> None:
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="You are helpful."),
        ChatMessage(role=MessageRole.USER, content="I love jazz.", additional_kwargs={"id": "u1"}),
        ChatMessage(role=MessageRole.ASSISTANT, content="Noted!", additional_kwargs={"timestamp": "2024-03-01"}),
        ChatMessage(role=MessageRole.TOOL, content="{}"),
        ChatMessage(role=MessageRole.USER, content="   "),
    ]
    items = messages_to_retain(messages, speakers={"user": "Sam", "assistant": "Bot"}, id_prefix="doc")
    assert items == [
        {"speaker": "Sam", "text": "I love jazz.", "id": "u1"},
        {"speaker": "Bot", "text": "Noted!", "id": "doc:1", "timestamp": "2024-03-01"},
    ]
    assert "id" not in messages_to_retain(messages[2:3], speakers={"assistant": "Bot"})[0]


def test_document_id_is_stable_per_session_and_content() -> None:
    a = [{"speaker": "user", "text": "hi"}]
    assert document_id_for("s1", a) == document_id_for("s1", [dict(a[0])])
    assert document_id_for("s1", a) != document_id_for("s2", a)
    assert document_id_for("s1", a) != document_id_for("s1", [{"speaker": "user", "text": "hello"}])
    assert document_id_for(None, a).startswith("llamaindex:default:")


def test_latest_user_text_skips_assistant_and_empty_messages() -> None:
    messages = [ChatMessage(role="user", content="first"), ChatMessage(role="user", content=" "),
                ChatMessage(role="assistant", content="reply")]
    assert latest_user_text(messages) == "first"
    assert latest_user_text([]) == "" and latest_user_text(None) == ""


# -- retriever -----------------------------------------------------------------------------------


def test_retriever_returns_memory_nodes_with_provenance(bank: Any) -> None:
    nodes = HindsightRetriever(bank, k=2).retrieve("Where does my sister Emma live?")
    assert len(nodes) == 2
    top = nodes[0]
    assert "Lisbon" in top.node.get_content()
    assert top.node.metadata["sources"] == ["D1:1"] and top.node.metadata["document_id"] == "family"
    assert bank.get(top.node.node_id) is not None  # the node id is the memory id
    assert top.score is not None and top.score >= (nodes[1].score or 0)
    assert top.node.metadata["mentioned_at"] == T0.isoformat()


async def test_async_retriever_matches_sync(bank: Any) -> None:
    retriever = HindsightRetriever(bank, k=3, budget=500)
    sync_ids = [n.node.node_id for n in retriever.retrieve("cat named Miso")]
    async_nodes = await retriever.aretrieve(QueryBundle("cat named Miso"))
    assert [n.node.node_id for n in async_nodes] == sync_ids
    assert "Miso" in async_nodes[0].node.get_content()


def test_retriever_budget_networks_and_time_range_reach_recall(bank: Any) -> None:
    one = HindsightRetriever(bank, budget=15).retrieve("Emma Lisbon cat nurse")
    assert len(one) == 1  # a 15-token budget holds a single memory
    assert HindsightRetriever(bank, networks=["opinion"]).retrieve("Emma") == []
    future = (datetime(2030, 1, 1, tzinfo=UTC), datetime(2031, 1, 1, tzinfo=UTC))
    assert HindsightRetriever(bank, time_range=future).retrieve("Emma") == []


def test_retriever_validates_its_options(bank: Any) -> None:
    with pytest.raises(TypeError, match="Bank"):
        HindsightRetriever("sam")  # type: ignore[arg-type]
    for bad in ({"k": 0}, {"k": True}, {"budget": 0}, {"budget": 2.5}):
        with pytest.raises(ValueError):
            HindsightRetriever(bank, **bad)
    with pytest.raises(InvalidInputError, match="unknown network"):
        HindsightRetriever(bank, networks=["nope"]).retrieve("Emma")
    with pytest.raises(InvalidInputError, match="empty"):
        HindsightRetriever(bank).retrieve("   ")


def test_retriever_works_inside_a_query_engine_without_calling_the_llm(bank: Any) -> None:
    # NoText skips synthesis, so the (never started) local LLM is only needed to build the engine. It is
    # built directly: from_args(response_mode="no_text") drops llm= and resolves the global Settings.llm.
    engine = RetrieverQueryEngine(HindsightRetriever(bank, k=2), response_synthesizer=NoText(llm=local_llm()))
    response = engine.query("Where does Emma live?")
    assert [n.node.metadata["id"] for n in response.source_nodes] == [n.node.node_id for n in response.source_nodes]
    assert "Lisbon" in response.source_nodes[0].node.get_content()
    assert Settings._llm is None and Settings._embed_model is None  # the global defaults were never resolved


# -- memory block ---------------------------------------------------------------------------------


def _turns() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="My sister Emma moved to Lisbon last spring and loves the tram rides."),
        ChatMessage(role="assistant", content="That sounds exciting, Lisbon is a beautiful city!"),
        ChatMessage(role="user", content="Also I adopted a grey cat named Miso."),
        ChatMessage(role="assistant", content="Lovely name."),
    ]


def test_memory_flush_retains_and_a_new_session_recalls(hs: Hindsight) -> None:
    bank = hs.bank("chat")
    block = HindsightMemoryBlock(bank=bank, extract=False, user_name="Sam")
    first = Memory.from_defaults(session_id="s1", token_limit=30, memory_blocks=[block])
    first.put_messages(_turns())  # over the limit: Memory flushes the oldest turn into the block
    docs = bank.documents()
    assert len(docs) == 1 and docs[0].id.startswith("llamaindex:s1:")
    stored = bank.memories(sorted(hs.store.unit_ids("chat")))
    assert any(m.text == "Sam: My sister Emma moved to Lisbon last spring and loves the tram rides." for m in stored)
    assert all(m.metadata == {"source": "llamaindex", "session_id": "s1"} for m in stored)
    assert all(m.sources and m.sources[0].startswith(docs[0].id) for m in stored)

    second = Memory.from_defaults(session_id="s2", memory_blocks=[block])
    messages = second.get(input="Where does my sister Emma live?")
    system = messages[0]
    assert system.role == MessageRole.SYSTEM
    assert "<long_term_memory>" in system.content and "Lisbon" in system.content


async def test_block_aget_is_empty_without_a_user_message_and_put_is_idempotent(hs: Hindsight) -> None:
    bank = hs.bank("chat")
    block = HindsightMemoryBlock(bank=bank, extract=False)
    assert await block.aget([]) == ""
    assert await block.aget([ChatMessage(role="assistant", content="Hello!")]) == ""
    await block.aput(_turns()[:2], session_id="s1")
    await block.aput(_turns()[:2], session_id="s1")  # the same messages again: same document, replaced
    assert len(bank.documents()) == 1 and len(hs.store.unit_ids("chat")) == 2
    await block.aput([ChatMessage(role="system", content="Be brief.")])
    assert len(bank.documents()) == 1  # nothing retainable: no document
    text = await block.aget([ChatMessage(role="user", content="Where does Emma live?")])
    assert text.startswith("- [") and "Lisbon" in text.splitlines()[0]


async def test_block_refuses_short_term_flushes_when_told_to(hs: Hindsight) -> None:
    bank = hs.bank("chat")
    block = HindsightMemoryBlock(bank=bank, extract=False, accept_short_term_memory=False)
    await block.aput(_turns(), from_short_term_memory=True)
    assert bank.documents() == []


async def test_block_truncates_lowest_ranked_memories_first(bank: Any) -> None:
    block = HindsightMemoryBlock(bank=bank, extract=False)
    content = await block.aget([ChatMessage(role="user", content="Emma Lisbon cat nurse")])
    lines = content.splitlines()
    assert len(lines) == 3
    assert await block.atruncate(content, 5) == "\n".join(lines[:2])
    assert await block.atruncate(content, 10_000) is None
    # Through Memory: a small token limit makes it shrink this block (priority 1) instead of failing.
    memory = Memory.from_defaults(session_id="t", token_limit=35, memory_blocks=[block])
    shown = (await memory.aget(input="Emma Lisbon cat nurse"))[0].content
    kept = [line for line in shown.splitlines() if line.startswith("- ")]
    assert kept == lines[: len(kept)] and 1 <= len(kept) < 3


async def test_block_tolerates_flushes_without_facts(tmp_path: Path) -> None:
    llm = ScriptedLLM([{"facts": []}] * 20)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("chat")
        block = HindsightMemoryBlock(bank=bank, extract=True)
        result = await block.aretain_messages([ChatMessage(role="user", content="Hi there!")])
        assert result is not None and len(result.memories) == 1  # the message is a memory at once
        assert await bank.await_idle(60)
        assert llm.calls and "Hi there!" in llm.calls[0].user  # extract=True went to the LLM extractor
        units = bank.memories(sorted(hs.store.unit_ids("chat")))
        assert [m.id for m in units] == [result.memories[0].id] and units[0].cites is None  # no facts, no error
        assert len(bank.documents()) == 1


def test_block_validates_bank() -> None:
    with pytest.raises(ValueError, match="Bank"):
        HindsightMemoryBlock(bank="chat")  # type: ignore[arg-type]


# -- tool spec ---------------------------------------------------------------------------------------


def test_tool_spec_builds_sync_and_async_tools_with_documented_parameters(bank: Any) -> None:
    tools = {t.metadata.name: t for t in HindsightToolSpec(bank).to_tool_list()}
    assert set(tools) == {"retain", "recall", "reflect"}
    schema = tools["recall"].metadata.fn_schema.model_json_schema()
    assert schema["required"] == ["query"] and schema["properties"]["query"]["description"]
    assert "long-term memory" in tools["retain"].metadata.description
    assert "\nUse it for" in tools["reflect"].metadata.description  # docstrings reach the LLM dedented
    assert asyncio.iscoroutinefunction(tools["recall"].async_fn)
    assert tools["recall"].async_fn.__name__ == "arecall"


async def test_tool_spec_retain_and_recall_sync_and_async(bank: Any) -> None:
    tools = {t.metadata.name: t for t in HindsightToolSpec(bank, extract=False).to_tool_list()}
    stored = tools["retain"].call(content="Sam's favourite band is Radiohead.")
    assert stored.content.startswith("Stored 1 memories") and "Radiohead" in stored.content
    found = await tools["recall"].acall(query="favourite band")
    assert "Radiohead" in found.content.splitlines()[0] and "(id " in found.content
    assert "Lisbon" in tools["recall"].call(query="Emma").content
    stored_async = await tools["retain"].acall(content="Sam plays tennis on Sundays.", context="chat")
    assert "tennis" in stored_async.content


def test_tool_spec_reflect_cites_memories(tmp_path: Path) -> None:
    answer = {"known": True, "answer": "Emma lives in Lisbon.", "based_on": [1], "opinions": []}
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([answer, answer])) as hs:
        bank = hs.bank("sam")
        bank.retain(FAMILY, timestamp=T0, extract=False)
        spec = HindsightToolSpec(bank)
        text = spec.reflect("Where does Emma live?")
        assert text.startswith("Emma lives in Lisbon.") and "based on memories:" in text
        cited = text.rsplit(": ", 1)[1].rstrip(")")
        assert bank.get(cited) is not None
        assert asyncio.run(spec.areflect("Where does Emma live?")).startswith("Emma lives in Lisbon.")
        empty = HindsightToolSpec(hs.bank("empty")).reflect("Where does Emma live?")
        assert "know" in empty


def test_tool_spec_validates_options(bank: Any) -> None:
    with pytest.raises(TypeError):
        HindsightToolSpec(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HindsightToolSpec(bank, budget=0)
    with pytest.raises(ValueError):
        HindsightToolSpec(bank, max_memories=0)


# -- the OpenAI-compatible LLM (no model needed for these) -----------------------------------------


def test_openai_messages_map_roles() -> None:
    messages = [ChatMessage(role=r, content=r.value) for r in
                (MessageRole.SYSTEM, MessageRole.DEVELOPER, MessageRole.USER, MessageRole.ASSISTANT,
                 MessageRole.CHATBOT, MessageRole.TOOL)]
    assert [m["role"] for m in to_openai_messages(messages)] == [
        "system", "system", "user", "assistant", "assistant", "user"]


def test_local_llm_metadata_and_requests_start_nothing() -> None:
    llm = local_llm("qwen2.5-0.5b", max_tokens=32)
    meta = llm.metadata
    assert meta.is_chat_model and not meta.is_function_calling_model and meta.model_name == "qwen2.5-0.5b"
    assert meta.num_output == 32 and meta.context_window == 8192
    request = llm._request([ChatMessage(role="user", content="hi")], {"stop": ["\n"], "top_k": 5})
    assert request["stop"] == ["\n"] and request["extra_body"] == {"top_k": 5} and request["max_tokens"] == 32
    with pytest.raises(LLMError, match="unknown local model"):
        local_llm("gpt-99")


def test_unreachable_endpoint_and_missing_base_raise_llm_error() -> None:
    with pytest.raises(LLMError, match="no api_base"):
        OpenAILikeLLM(model="m").chat([ChatMessage(role="user", content="hi")])
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = OpenAILikeLLM(model="m", api_base=f"http://127.0.0.1:{port}/v1", timeout=5)
    with pytest.raises(LLMError, match="failed"):
        llm.complete("hi")
    with pytest.raises(LLMError, match="failed"):
        asyncio.run(llm.achat([ChatMessage(role="user", content="hi")]))
    with pytest.raises(LLMError, match="failed"):
        list(llm.stream_chat([ChatMessage(role="user", content="hi")]))
