"""Translation between Hindsight core types and LangChain types (documents, messages, prompt text)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from hindsight_core.models import Memory

# LangChain message types -> the speaker role the core understands (the raw extractor treats "assistant"
# as the agent's own words, i.e. the experience network, and never turns a role into an entity).
_ROLE_BY_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}

MEMORY_PROMPT_HEADER = "Relevant long-term memories (from earlier conversations; use them if they help):"


def memory_metadata(memory: Memory) -> dict[str, Any]:
    """The metadata a retrieved memory carries: provenance, time, network, confidence and score."""
    return memory.provenance()


def memory_to_document(memory: Memory) -> Document:
    """A LangChain ``Document`` for one memory: its text as page content, its id, and its metadata."""
    return Document(page_content=memory.text, id=memory.id, metadata=memory_metadata(memory))


def memory_to_dict(memory: Memory) -> dict[str, Any]:
    """A JSON-friendly dict of a memory (text plus ``memory_metadata``), for graph state and tool artifacts."""
    return {"text": memory.text, **memory_metadata(memory)}


def message_role(message: BaseMessage) -> str:
    """The core speaker for a LangChain message: a human message's ``name`` when set (a person), else its
    role (a tool message's name is the tool's, and an AI message must stay the agent's own voice)."""
    if message.type == "human" and message.name:
        return message.name
    if message.type == "chat":
        return str(getattr(message, "role", "user"))
    return _ROLE_BY_TYPE.get(message.type, message.type)


def message_text(message: BaseMessage) -> str:
    """The text a message contributes to memory: its text content, plus the tool calls an AI message made."""
    text = message.text.strip()
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = "; ".join(f"called {c['name']}({json.dumps(c.get('args', {}), ensure_ascii=False)})"
                          for c in message.tool_calls)
        text = f"{text}\n{calls}".strip()
    return text


class RecallOptions(TypedDict):
    """The recall arguments a node or middleware is configured with (passed to ``Bank.recall``)."""

    budget: int
    max_memories: int | None
    networks: Sequence[str] | None
    deadline_ms: int | None


class RetainArgs(TypedDict, total=False):
    """The retain arguments a node, middleware or chat history builds for one batch of messages."""

    content: list[dict[str, Any]]
    document_id: str
    document_metadata: dict[str, Any]
    extract: bool
    defer: bool
    context: str | None


def messages_to_core(messages: Sequence[BaseMessage], id_prefix: str) -> list[dict[str, Any]]:
    """Core message dicts (speaker, text, id) for the messages that carry text.

    A message without an id gets ``<id_prefix>:<position>`` so every memory still cites where it came from.
    """
    out: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        text = message_text(message)
        if text:
            out.append({"speaker": message_role(message), "text": text, "id": message.id or f"{id_prefix}:{position}"})
    return out


def latest_human_message(messages: Sequence[BaseMessage]) -> HumanMessage | None:
    """The last human message of a conversation, or None."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def latest_exchange(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The last human message and everything after it, without system messages (injected context)."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            start = i
            break
    return [m for m in messages[start:] if not isinstance(m, SystemMessage)]


def format_memory_line(memory: Memory | dict[str, Any]) -> str:
    """One prompt line: the memory text and, when known, the date it refers to."""
    data = memory_to_dict(memory) if isinstance(memory, Memory) else memory
    when = data.get("occurred_start") or data.get("mentioned_at")
    date = f" ({str(when)[:10]})" if when else ""
    return f"- {data['text']}{date}"


def format_memories(memories: Sequence[Memory | dict[str, Any]], header: str = MEMORY_PROMPT_HEADER) -> str:
    """Memories as a block of prompt text under ``header`` (empty string when there are none)."""
    if not memories:
        return ""
    return "\n".join([header, *(format_memory_line(m) for m in memories)])


def memories_system_message(
    memories: Sequence[Memory | dict[str, Any]], *, header: str = MEMORY_PROMPT_HEADER, id: str | None = None
) -> SystemMessage | None:
    """A system message carrying the memories, or None when there are none."""
    text = format_memories(memories, header)
    return SystemMessage(content=text, id=id) if text else None

