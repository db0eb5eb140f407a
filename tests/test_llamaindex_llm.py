"""LlamaIndex adapters with the real local model (Qwen2.5-Coder-1.5B served by llama.cpp), fully offline.

A query engine answers from memory and cites the memory nodes; a chat engine whose ``Memory`` holds a
``HindsightMemoryBlock`` recalls in a new session what the user said in an earlier one. Generation is kept
short (CPU, about 30 tokens/s). A missing runtime or missing weights is a failure, not a skip.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from llama_index.core import Settings
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from llama_index_hindsight import HindsightMemoryBlock, HindsightRetriever, OpenAILikeLLM, local_llm

pytestmark = pytest.mark.llm

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
MODEL = "qwen2.5-1.5b"


@pytest.fixture(scope="module")
def li_llm(qwen: LocalLLM) -> OpenAILikeLLM:
    """The LlamaIndex LLM over the same local server, with short answers."""
    return local_llm(MODEL, max_tokens=64)


def test_llm_chat_complete_and_stream_sync_and_async(li_llm: OpenAILikeLLM) -> None:
    import asyncio

    prompt = [ChatMessage(role="system", content="Answer with one word."),
              ChatMessage(role="user", content="What is the capital of France?")]
    assert "paris" in li_llm.chat(prompt, max_tokens=8).message.content.lower()

    async def run() -> tuple[str, str]:
        answer = await li_llm.achat(prompt, max_tokens=8)
        streamed = ""
        async for part in await li_llm.astream_chat(prompt, max_tokens=8):
            streamed += part.delta or ""
        return answer.message.content or "", streamed

    answer, streamed = asyncio.run(run())
    assert "paris" in answer.lower() and streamed == answer  # temperature 0: same text either way
    deltas = [r.delta for r in li_llm.stream_complete("Count from 1 to 3, digits only.", max_tokens=12)]
    assert "1" in "".join(d or "" for d in deltas) and len(deltas) > 1


def test_query_engine_answers_from_memory_and_cites_memory_nodes(tmp_path: Path, li_llm: OpenAILikeLLM) -> None:
    with Hindsight.open(tmp_path / "m") as hs:
        bank = hs.bank("sam")
        bank.retain(
            [{"speaker": "Sam", "text": "My sister Emma moved to Lisbon last spring.", "id": "c1:1"},
             {"speaker": "Sam", "text": "I adopted a grey cat named Miso.", "id": "c1:2"},
             {"speaker": "Sam", "text": "I work night shifts as a nurse.", "id": "c1:3"}],
            timestamp=T0, document_id="chat-1", extract=False,
        )
        engine = RetrieverQueryEngine.from_args(HindsightRetriever(bank, k=3), llm=li_llm)
        response = engine.query("Where does Sam's sister Emma live?")
        assert "lisbon" in str(response).lower()
        top = response.source_nodes[0]
        assert "Lisbon" in top.node.get_content()
        assert top.node.node_id == top.node.metadata["id"] and bank.get(top.node.node_id) is not None
        assert top.node.metadata["sources"] == ["c1:1"] and top.node.metadata["document_id"] == "chat-1"
    assert Settings._llm is None and Settings._embed_model is None


async def test_chat_memory_carries_a_fact_into_a_new_session(
    tmp_path: Path, qwen: LocalLLM, li_llm: OpenAILikeLLM
) -> None:
    with Hindsight.open(tmp_path / "m", llm=qwen) as hs:
        bank = hs.bank("assistant")
        # Raw retain: the core's LLM extraction has its own real-model tests and costs over a minute on CPU.
        block = HindsightMemoryBlock(bank=bank, extract=False, user_name="Sam")

        first = Memory.from_defaults(session_id="monday", memory_blocks=[block])
        chat = SimpleChatEngine.from_defaults(llm=li_llm, memory=first)
        reply = await chat.achat("Hi! Remember this: my sister Emma moved to Lisbon last spring.")
        assert reply.response.strip()
        # End of session: retain what is still in short-term memory (Memory flushes only when full).
        result = await block.aretain_messages(await first.aget_all())
        assert result is not None and any(m.text.startswith("Sam: ") and "Lisbon" in m.text for m in result.memories)
        assert all(m.document_id == result.document_id for m in result.memories)

        second = Memory.from_defaults(session_id="tuesday", memory_blocks=[block])
        context = await second.aget(input="Which city does my sister Emma live in?")
        assert "Lisbon" in (context[0].content or "")  # recalled into the new session's system message
        chat = SimpleChatEngine.from_defaults(llm=li_llm, memory=second)
        answer = await chat.achat("Which city does my sister Emma live in? Answer with the city name.")
        assert "lisbon" in answer.response.lower()
    assert Settings._llm is None and Settings._embed_model is None
