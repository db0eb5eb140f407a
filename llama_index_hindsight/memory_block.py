"""``HindsightMemoryBlock``: long-term memory for LlamaIndex's ``Memory`` (agents, chat engines).

``Memory`` keeps recent messages in its short-term FIFO; when the FIFO passes its token limit the oldest
messages are flushed to every memory block (``aput``), and each turn asks every block for content
(``aget``) that it renders into the system message inside ``<memory><{name}>...</{name}></memory>``.
This block retains what is flushed into a Hindsight bank and recalls, for the latest user message, what
fits its token budget. Banks outlive sessions, so a new ``Memory`` (new session) sees earlier facts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from hindsight_core.bank import Bank
from hindsight_core.errors import EmptyExtractionError
from hindsight_core.models import Network, RetainResult
from hindsight_core.text.tokens import count_tokens

from .convert import document_id_for, format_memories, latest_user_text, messages_to_retain

__all__ = ["HindsightMemoryBlock"]

logger = logging.getLogger(__name__)


class HindsightMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block backed by a Hindsight bank.

    - ``aget``: recalls memories for the latest user message, as many as fit ``budget`` tokens (capped by
      ``max_memories``), and returns them as lines ``- [date] text``; empty when there is nothing to say.
    - ``aput``: retains the messages ``Memory`` flushes (``user``/``assistant`` turns; roles map to the
      speakers ``user_name``/``assistant_name``), as one document per flush whose id is derived from the
      session and the messages, so retaining the same messages twice never duplicates memories.
      The messages become memories at once; ``extract=True`` has a background job add the LLM's facts
      beside them (``bank.wait_idle()``), ``extract=False`` makes no model call at all.

    ``priority`` defaults to 1: when ``Memory`` must shrink its blocks, the lowest-ranked memories go first
    (``atruncate``); 0 would mean never truncate.
    """

    name: str = Field(default="long_term_memory", description="Block name; the tag the memory appears under.")
    description: str | None = Field(
        default="Facts recalled from long-term memory (Hindsight), most relevant first.",
        description="A description of the memory block.",
    )
    priority: int = Field(default=1, description="0 = never truncate; higher numbers are truncated first.")
    bank: Bank = Field(description="The Hindsight bank to recall from and retain into.")
    budget: int = Field(default=1000, gt=0, description="Token budget of the recalled memories.")
    max_memories: int | None = Field(default=None, gt=0, description="Cap on the number of recalled memories.")
    networks: list[Network] | None = Field(default=None, description="Networks to recall from (default all).")
    extract: bool = Field(default=True, description="Retain with LLM fact extraction (False: raw messages).")
    user_name: str = Field(default="user", description="Speaker name stored for user messages.")
    assistant_name: str = Field(default="assistant", description="Speaker name stored for assistant messages.")
    context: str | None = Field(default=None, description="Context passed to retain (what the conversation is).")
    background: bool | None = Field(
        default=None,
        description="Queue the core's background LLM work (observations, opinions) after retain; default: extract.",
    )

    @field_validator("bank", mode="before")
    @classmethod
    def _is_bank(cls, value: Any) -> Bank:
        if not isinstance(value, Bank):
            raise ValueError(f"bank must be a hindsight_core Bank, got {type(value).__name__}")
        return value

    def _speakers(self) -> dict[str, str]:
        return {"user": self.user_name, "assistant": self.assistant_name}

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """Memories relevant to the latest user message, formatted; ``""`` when none (block omitted)."""
        query = latest_user_text(messages)
        if not query:
            return ""
        recall = await self.bank.arecall(
            query, budget=self.budget, max_memories=self.max_memories, networks=self.networks
        )
        return format_memories(recall.memories)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Retain flushed messages; a flush with nothing worth remembering is not an error."""
        await self.aretain_messages(messages)

    async def aretain_messages(self, messages: Sequence[ChatMessage]) -> RetainResult | None:
        """Retain ``messages`` now (for example what is still in short-term memory when a session ends).

        Returns the core's ``RetainResult``, or ``None`` when no message had text in a retained role or the
        extractor found no fact in them.
        """
        session_id = next((m.additional_kwargs.get("session_id") for m in messages
                           if m.additional_kwargs.get("session_id")), None)
        items = messages_to_retain(messages, speakers=self._speakers())
        if not items:
            return None
        document_id = document_id_for(session_id, items)
        for n, item in enumerate(items):
            item.setdefault("id", f"{document_id}:{n}")
        metadata = {"source": "llamaindex", **({"session_id": str(session_id)} if session_id else {})}
        try:
            return await self.bank.aretain(
                items, document_id=document_id, extract=self.extract, context=self.context, metadata=metadata,
                background=self.background,
            )
        except EmptyExtractionError:
            # Small talk yields no facts; the raw document is still stored by the core.
            logger.info("no facts extracted from %d flushed messages (document %s)", len(items), document_id)
            return None

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the lowest-ranked memory lines until about ``tokens_to_truncate`` tokens are freed."""
        lines = content.splitlines()
        freed = 0
        while lines and freed < tokens_to_truncate:
            freed += count_tokens(lines.pop()) + 1  # +1 for the newline
        return "\n".join(lines) or None
