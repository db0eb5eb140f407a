"""Translations between Hindsight types and LlamaIndex types. No memory logic lives here.

- ``memory_to_node``: a recalled ``Memory`` as a ``NodeWithScore`` (node id = memory id, provenance in metadata).
- ``messages_to_retain``: LlamaIndex ``ChatMessage`` objects as the core's message dicts (role -> speaker).
- ``format_memories``: recalled memories as prompt text for memory blocks and tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

from hindsight_core.models import Memory

__all__ = [
    "DATE_KEYS",
    "METADATA_KEYS",
    "document_id_for",
    "format_memories",
    "format_memory",
    "latest_user_text",
    "memory_metadata",
    "memory_to_node",
    "messages_to_retain",
]

METADATA_KEYS: tuple[str, ...] = (
    "id", "network", "occurred_start", "occurred_end", "mentioned_at", "confidence", "entities", "sources",
    "document_id", "score",
)
"""Metadata keys every memory node carries (values may be ``None``)."""

DATE_KEYS: tuple[str, ...] = ("occurred_start", "occurred_end", "mentioned_at")
"""The only metadata an LLM sees next to a node's text (when set): dates help temporal questions, ids do not."""


def memory_metadata(memory: Memory) -> dict[str, Any]:
    """The node metadata of ``memory``: ids, network, ISO times, confidence, entities, provenance, score."""
    return memory.provenance()


def memory_to_node(memory: Memory) -> NodeWithScore:
    """A recalled memory as a LlamaIndex node: stable id (the memory id), text, metadata and score.

    The node's SOURCE relationship points at the memory's document id, the raw input it was extracted from.
    Only the dates are shown to LLMs and embedders; ids and provenance stay in metadata for auditing.
    """
    metadata = memory_metadata(memory)
    hidden = [key for key in METADATA_KEYS if key not in DATE_KEYS or metadata[key] is None]
    relationships = {}
    if memory.document_id:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=memory.document_id, metadata={"bank_id": memory.bank_id}
        )
    node = TextNode(
        id_=memory.id,
        text=memory.text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(METADATA_KEYS),
        relationships=relationships,
    )
    return NodeWithScore(node=node, score=memory.score)


def format_memory(memory: Memory) -> str:
    """One memory as a prompt line: ``- [date] text`` (opinions add their confidence)."""
    when = memory.occurred_start or memory.mentioned_at
    prefix = f"[{when.date().isoformat()}] " if when is not None else ""
    suffix = f" (opinion, confidence {memory.confidence:.2f})" if memory.confidence is not None else ""
    return f"- {prefix}{memory.text}{suffix}"


def format_memories(memories: Sequence[Memory]) -> str:
    """Memories as prompt text, one line each, best first; empty string for none."""
    return "\n".join(format_memory(m) for m in memories)


def latest_user_text(messages: Sequence[ChatMessage] | None) -> str:
    """Text of the most recent user message with any text, or ``""``."""
    for message in reversed(messages or []):
        if message.role == MessageRole.USER and (message.content or "").strip():
            return (message.content or "").strip()
    return ""


def messages_to_retain(
    messages: Sequence[ChatMessage],
    *,
    speakers: Mapping[str, str],
    id_prefix: str | None = None,
) -> list[dict[str, Any]]:
    """Chat messages as the core's message dicts, keeping only roles named in ``speakers``.

    ``speakers`` maps a LlamaIndex role (``"user"``, ``"assistant"``...) to the speaker name stored in
    memory. A message's ``additional_kwargs`` may carry ``id`` (kept as provenance) and ``timestamp``;
    with ``id_prefix``, messages without an id get ``{id_prefix}:{n}`` (n counts kept messages) so every
    memory still names its sources. Messages with no text are skipped.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.role.value
        text = (message.content or "").strip()
        if role not in speakers or not text:
            continue
        extra = message.additional_kwargs or {}
        item: dict[str, Any] = {"speaker": speakers[role], "text": text}
        given = extra.get("id") or extra.get("message_id")
        if given is not None:
            item["id"] = str(given)
        elif id_prefix is not None:
            item["id"] = f"{id_prefix}:{len(out)}"
        if extra.get("timestamp") is not None:
            item["timestamp"] = extra["timestamp"]
        out.append(item)
    return out


def document_id_for(session_id: str | None, messages: Sequence[Mapping[str, Any]]) -> str:
    """A document id that is the same whenever the same messages are retained for the same session.

    Re-retaining a document id replaces what it produced, so flushing the same messages twice (for example
    at the end of a session and again by the memory's own flush) never duplicates memories.
    """
    digest = hashlib.sha256(
        json.dumps([[m.get("speaker"), m.get("text")] for m in messages], ensure_ascii=False).encode()
    ).hexdigest()[:16]
    return f"llamaindex:{session_id or 'default'}:{digest}"
