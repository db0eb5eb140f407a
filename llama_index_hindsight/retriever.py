"""``HindsightRetriever``: a LlamaIndex retriever over a Hindsight bank's recall."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from hindsight_core.bank import Bank
from hindsight_core.models import Network, Recall, TimeRange
from hindsight_core.recall.deadline import check_deadline_ms

from .convert import memory_to_node

__all__ = ["HindsightRetriever"]


class HindsightRetriever(BaseRetriever):
    """Retrieve memories of a Hindsight bank as ``NodeWithScore`` objects, best first.

    Each node's id is the memory id, its text the memory text, its score the fused recall score, and its
    metadata carries ``id``, ``network``, ``occurred_start``/``occurred_end``/``mentioned_at`` (ISO),
    ``confidence`` (opinions), ``entities``, ``sources`` (message ids), ``document_id`` and ``score``; the
    SOURCE relationship points at the document the memory came from. Works anywhere a retriever does, for
    example ``RetrieverQueryEngine.from_args(HindsightRetriever(bank), llm=...)``.

    ``budget`` is in tokens: recall returns as many memories as fit, best first; ``k`` additionally caps their
    number. ``networks``, ``time_range`` and ``reference_time`` (the "now" of relative time expressions)
    are passed to recall unchanged. ``deadline_ms`` makes recall return what finished within that many
    milliseconds (channels not done are left out); None: no deadline.
    """

    def __init__(
        self,
        bank: Bank,
        *,
        k: int | None = None,
        budget: int = 2000,
        networks: Sequence[Network | str] | None = None,
        time_range: TimeRange | tuple[Any, Any] | None = None,
        reference_time: datetime | str | None = None,
        deadline_ms: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        """Bind the retriever to ``bank`` with fixed recall options (validated on construction)."""
        if not isinstance(bank, Bank):
            raise TypeError(f"HindsightRetriever needs a hindsight_core Bank, got {type(bank).__name__}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be a positive integer or None, not {k!r}")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive number of tokens, not {budget!r}")
        deadline_ms = check_deadline_ms(deadline_ms)  # InvalidInputError (a ValueError) when it is not one
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.bank = bank
        self.k = k
        self.budget = budget
        self.networks = list(networks) if networks is not None else None
        self.time_range = time_range
        self.reference_time = reference_time
        self.deadline_ms = deadline_ms

    def __repr__(self) -> str:
        return f"HindsightRetriever(bank={self.bank.id!r}, k={self.k}, budget={self.budget})"

    def _options(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "max_memories": self.k,
            "networks": self.networks,
            "time_range": self.time_range,
            "reference_time": self.reference_time,
            "deadline_ms": self.deadline_ms,
        }

    @staticmethod
    def _nodes(recall: Recall) -> list[NodeWithScore]:
        return [memory_to_node(m) for m in recall.memories]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Recall for ``query_bundle.query_str``."""
        return self._nodes(self.bank.recall(query_bundle.query_str, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async recall (``bank.arecall``) for ``query_bundle.query_str``."""
        return self._nodes(await self.bank.arecall(query_bundle.query_str, **self._options()))
