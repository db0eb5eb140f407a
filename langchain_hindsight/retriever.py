"""``HindsightRetriever``: a LangChain retriever over a bank's recall (four channels, fused, budget-packed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from hindsight_core import Bank, TimeRange
from hindsight_core.recall.deadline import MAX_DEADLINE_MS

from ._convert import memory_to_document


class HindsightRetriever(BaseRetriever):
    """Retrieve memories of a Hindsight bank as LangChain ``Document`` objects, best first.

    Each document's ``page_content`` is the memory text and ``id`` the memory id; ``metadata`` holds
    ``id``, ``network``, ``occurred_start``/``occurred_end``/``mentioned_at`` (ISO strings),
    ``confidence`` (opinions), ``entities``, ``sources`` (message ids), ``document_id`` and ``score``.
    Every field can be overridden per call: ``retriever.invoke("query", k=3, budget=500)``.

    Example:
        ```python
        from hindsight_core import Hindsight
        from langchain_hindsight import HindsightRetriever

        bank = Hindsight.open("./memory").bank("support-bot")
        retriever = HindsightRetriever(bank=bank, k=5)
        docs = retriever.invoke("Where does Emma live?")
        ```
    """

    bank: Bank
    """The memory bank to recall from."""
    k: int | None = Field(default=10, ge=1)
    """Maximum number of memories (recall's ``max_memories``); ``None``: as many as fit ``budget``."""
    budget: int = Field(default=2000, ge=1)
    """Token budget: memories are packed best first until their texts fill it."""
    networks: list[str] | None = None
    """Only these networks (``world``, ``experience``, ``opinion``, ``observation``); ``None``: all."""
    time_range: TimeRange | tuple[Any, Any] | None = None
    """Only memories whose occurrence overlaps this interval."""
    reference_time: datetime | str | None = None
    """"Now" for relative time expressions in queries ("last week"); default: the current time."""
    deadline_ms: int | None = Field(default=None, ge=1, le=MAX_DEADLINE_MS)
    """Recall returns what finished within this many milliseconds (channels not done are left out); None: no
    deadline."""

    def _recall_kwargs(
        self,
        k: int | None,
        budget: int | None,
        networks: list[str] | None,
        time_range: TimeRange | tuple[Any, Any] | None,
        reference_time: datetime | str | None,
        deadline_ms: int | None = None,
    ) -> dict[str, Any]:
        return {
            "max_memories": k if k is not None else self.k,
            "budget": budget if budget is not None else self.budget,
            "networks": networks if networks is not None else self.networks,
            "time_range": time_range if time_range is not None else self.time_range,
            "reference_time": reference_time if reference_time is not None else self.reference_time,
            "deadline_ms": deadline_ms if deadline_ms is not None else self.deadline_ms,
        }

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        budget: int | None = None,
        networks: list[str] | None = None,
        time_range: TimeRange | tuple[Any, Any] | None = None,
        reference_time: datetime | str | None = None,
        deadline_ms: int | None = None,
        **_: Any,  # invoke() forwards every keyword (e.g. ``verbose``); recall takes only the ones above
    ) -> list[Document]:
        recall = self.bank.recall(
            query, **self._recall_kwargs(k, budget, networks, time_range, reference_time, deadline_ms)
        )
        return [memory_to_document(m) for m in recall.memories]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        budget: int | None = None,
        networks: list[str] | None = None,
        time_range: TimeRange | tuple[Any, Any] | None = None,
        reference_time: datetime | str | None = None,
        deadline_ms: int | None = None,
        **_: Any,
    ) -> list[Document]:
        recall = await self.bank.arecall(
            query, **self._recall_kwargs(k, budget, networks, time_range, reference_time, deadline_ms)
        )
        return [memory_to_document(m) for m in recall.memories]
