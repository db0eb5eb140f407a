"""LlamaIndex integration for Hindsight Memory: a retriever, a ``Memory`` block, a tool spec and an offline LLM.

::

    from hindsight_core import Hindsight
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index_hindsight import HindsightRetriever, local_llm

    bank = Hindsight.open("./memory").bank("assistant")
    engine = RetrieverQueryEngine.from_args(HindsightRetriever(bank), llm=local_llm())

The adapters only translate between LlamaIndex and ``hindsight_core`` types; all memory logic is in the core.
"""

from __future__ import annotations

# LlamaIndex is the [llamaindex] extra: without it, say which extra to install rather than let a bare
# ModuleNotFoundError from deep inside an adapter module reach the user.
_EXTRA = "llamaindex"
_FRAMEWORK = ("llama_index",)

try:
    from .convert import format_memories, format_memory, memory_metadata, memory_to_node, messages_to_retain
    from .local_llm import OpenAILikeLLM, local_llm
    from .memory_block import HindsightMemoryBlock
    from .retriever import HindsightRetriever
    from .tools import HindsightToolSpec
except ModuleNotFoundError as exc:
    if (exc.name or "").partition(".")[0] not in _FRAMEWORK:
        raise
    raise ImportError(
        f"llama_index_hindsight needs LlamaIndex ({exc.name} is missing): pip install 'hindsight-memory[{_EXTRA}]'",
        name=exc.name,
    ) from exc

__all__ = [
    "HindsightMemoryBlock",
    "HindsightRetriever",
    "HindsightToolSpec",
    "OpenAILikeLLM",
    "format_memories",
    "format_memory",
    "local_llm",
    "memory_metadata",
    "memory_to_node",
    "messages_to_retain",
]
