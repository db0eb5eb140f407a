"""``HindsightToolSpec``: retain, recall and reflect as LlamaIndex tools for agents.

No ``from __future__ import annotations`` here: LlamaIndex shows each signature to the LLM, and real types
read better than quoted ones.
"""

import inspect

from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec

from hindsight_core.bank import Bank
from hindsight_core.models import Disposition, Recall, Reflection, RetainResult

from .convert import format_memory

__all__ = ["HindsightToolSpec"]


def _retained(result: RetainResult) -> str:
    if not result.memories:
        return "Nothing new was stored."
    lines = "\n".join(f"- {m.text} (id {m.id})" for m in result.memories)
    return f"Stored {len(result.memories)} memories:\n{lines}"


def _recalled(recall: Recall) -> str:
    if not recall.memories:
        return "No relevant memories."
    return "\n".join(f"{format_memory(m)} (id {m.id})" for m in recall.memories)


def _reflected(reflection: Reflection) -> str:
    if not reflection.known:
        return reflection.answer or "I don't know: nothing in memory answers that."
    cited = f"\n(based on memories: {', '.join(reflection.based_on)})" if reflection.based_on else ""
    return f"{reflection.answer}{cited}"


class HindsightToolSpec(BaseToolSpec):
    """Long-term memory tools over one Hindsight bank: ``retain``, ``recall`` and ``reflect``.

    ``to_tool_list()`` gives three ``FunctionTool`` objects, each with a sync and a native async function
    (the async ones await ``bank.aretain`` / ``arecall`` / ``areflect``). Results are short plain text that
    an LLM can read; memory ids are included so answers can cite them.
    """

    spec_functions: list[SPEC_FUNCTION_TYPE] = [  # noqa: RUF012 - BaseToolSpec declares it a class attribute
        ("retain", "aretain"),
        ("recall", "arecall"),
        ("reflect", "areflect"),
    ]

    def __init__(
        self,
        bank: Bank,
        *,
        extract: bool = True,
        budget: int = 1000,
        max_memories: int | None = 10,
        disposition: Disposition | None = None,
    ) -> None:
        """Bind the tools to ``bank``.

        ``extract`` chooses LLM fact extraction (True) or raw storage (False) for ``retain``; ``budget`` and
        ``max_memories`` bound what ``recall`` and ``reflect`` read; ``disposition`` overrides the bank's
        for ``reflect``.
        """
        if not isinstance(bank, Bank):
            raise TypeError(f"HindsightToolSpec needs a hindsight_core Bank, got {type(bank).__name__}")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive number of tokens, not {budget!r}")
        if max_memories is not None and (not isinstance(max_memories, int) or max_memories < 1):
            raise ValueError(f"max_memories must be a positive integer or None, not {max_memories!r}")
        self.bank = bank
        self.extract = extract
        self.budget = budget
        self.max_memories = max_memories
        self.disposition = disposition

    def retain(self, content: str, context: str | None = None) -> str:
        """Store information in long-term memory so it can be recalled in later conversations.

        Use it for facts worth remembering: who someone is, what happened and when, preferences, plans.

        Args:
            content (str): The information to remember, as one or more complete sentences.
            context (str | None): Optional short note on where the information comes from.
        """
        return _retained(self.bank.retain(content, context=context, extract=self.extract))

    async def aretain(self, content: str, context: str | None = None) -> str:
        """Store information in long-term memory so it can be recalled in later conversations.

        Args:
            content (str): The information to remember, as one or more complete sentences.
            context (str | None): Optional short note on where the information comes from.
        """
        return _retained(await self.bank.aretain(content, context=context, extract=self.extract))

    def recall(self, query: str) -> str:
        """Search long-term memory and list the stored facts most relevant to the query, best first.

        Args:
            query (str): What to look for, e.g. a question or the name of a person, place or event.
        """
        return _recalled(self.bank.recall(query, budget=self.budget, max_memories=self.max_memories))

    async def arecall(self, query: str) -> str:
        """Search long-term memory and list the stored facts most relevant to the query, best first.

        Args:
            query (str): What to look for, e.g. a question or the name of a person, place or event.
        """
        return _recalled(await self.bank.arecall(query, budget=self.budget, max_memories=self.max_memories))

    def reflect(self, query: str) -> str:
        """Answer a question by reasoning over everything in long-term memory; cites the memories used.

        Use it for questions that need judgment or several facts combined ("Is Ana a committed runner?").

        Args:
            query (str): The question to answer from memory.
        """
        return _reflected(self.bank.reflect(query, disposition=self.disposition, budget=self.budget))

    async def areflect(self, query: str) -> str:
        """Answer a question by reasoning over everything in long-term memory; cites the memories used.

        Args:
            query (str): The question to answer from memory.
        """
        return _reflected(await self.bank.areflect(query, disposition=self.disposition, budget=self.budget))


# LlamaIndex shows each method's docstring to the LLM verbatim; Python 3.11 keeps the source indentation.
for _name in ("retain", "aretain", "recall", "arecall", "reflect", "areflect"):
    _method = getattr(HindsightToolSpec, _name)
    _method.__doc__ = inspect.cleandoc(_method.__doc__ or "")
