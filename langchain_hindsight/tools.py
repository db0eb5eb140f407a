"""``create_memory_tools``: retain / recall / reflect as LangChain tools an agent can call."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from hindsight_core import Bank, Memory, Recall, Reflection, RetainResult


class RetainArgs(BaseModel):
    """Arguments of the retain tool."""

    content: str = Field(description="The information to remember, as one or more complete sentences.")
    context: str | None = Field(
        default=None, description="Optional: where this information comes from or what it is about."
    )


class RecallArgs(BaseModel):
    """Arguments of the recall tool."""

    query: str = Field(description="What to look up in long-term memory, as a question or keywords.")
    max_results: int = Field(default=8, ge=1, le=50, description="Maximum number of memories to return.")


class ReflectArgs(BaseModel):
    """Arguments of the reflect tool."""

    query: str = Field(description="The question to answer from long-term memory (may ask for a judgment).")


def format_recall(recall: Recall) -> str:
    """A compact listing: one line per memory with its id, network, date and text."""
    if not recall.memories:
        return "No relevant memories found."
    return "\n".join(_memory_line(m) for m in recall.memories)


def _memory_line(memory: Memory) -> str:
    when = memory.occurred_start or memory.mentioned_at
    date = f", {when:%Y-%m-%d}" if when else ""
    confidence = f", confidence {memory.confidence:.2f}" if memory.confidence is not None else ""
    return f"[{memory.id}] ({memory.network.value}{date}{confidence}) {memory.text}"


def format_retain(result: RetainResult) -> str:
    """What a retain stored, for the model."""
    if getattr(result, "queued", False):
        return f"Queued for memory (document {result.document_id})."
    count = len(result.memories)
    lines = [f"Stored {count} {'memory' if count == 1 else 'memories'}:"]
    lines.extend(f"[{m.id}] {m.text}" for m in result.memories)
    return "\n".join(lines)


def format_reflection(reflection: Reflection) -> str:
    """The answer followed by the memories it cites (id and text)."""
    cited = {m.id: m for m in reflection.memories}
    lines = [reflection.answer]
    sources = [cited[i] for i in reflection.based_on if i in cited]
    if sources:
        lines.append("")
        lines.append("Based on:")
        lines.extend(f"[{m.id}] {m.text}" for m in sources)
    elif not reflection.known:
        lines.append("(no relevant memories)")
    return "\n".join(lines)


def create_memory_tools(
    bank: Bank,
    *,
    budget: int = 1500,
    extract: bool = True,
    background: bool = False,
    names: Sequence[str] = ("retain_memory", "recall_memory", "reflect_memory"),
) -> list[StructuredTool]:
    """Three tools over ``bank``: ``[retain, recall, reflect]``, each with a sync and an async function.

    ``extract`` chooses LLM extraction or raw ingest for retain; ``background=True`` makes retain return as
    soon as the text is stored (extraction is queued). ``budget`` bounds recall and reflect in tokens.
    """
    retain_name, recall_name, reflect_name = names

    def retain(content: str, context: str | None = None) -> str:
        return format_retain(bank.retain(content, context=context, extract=extract, defer=background))

    async def aretain(content: str, context: str | None = None) -> str:
        return format_retain(await bank.aretain(content, context=context, extract=extract, defer=background))

    def recall(query: str, max_results: int = 8) -> str:
        return format_recall(bank.recall(query, budget=budget, max_memories=max_results))

    async def arecall(query: str, max_results: int = 8) -> str:
        return format_recall(await bank.arecall(query, budget=budget, max_memories=max_results))

    def reflect(query: str) -> str:
        return format_reflection(bank.reflect(query, budget=budget))

    async def areflect(query: str) -> str:
        return format_reflection(await bank.areflect(query, budget=budget))

    return [
        StructuredTool.from_function(
            func=retain, coroutine=aretain, name=retain_name, args_schema=RetainArgs,
            description="Save information to long-term memory so it can be recalled in later conversations "
                        "(facts about the user, people, plans, preferences, events).",
        ),
        StructuredTool.from_function(
            func=recall, coroutine=arecall, name=recall_name, args_schema=RecallArgs,
            description="Search long-term memory. Returns matching memories, one per line: "
                        "[memory id] (network, date) text.",
        ),
        StructuredTool.from_function(
            func=reflect, coroutine=areflect, name=reflect_name, args_schema=ReflectArgs,
            description="Answer a question by reasoning over long-term memory; returns the answer and the "
                        "ids and texts of the memories it is based on.",
        ),
    ]
