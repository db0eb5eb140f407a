"""LangChain and LangGraph integration for Hindsight Memory.

Thin adapters over ``hindsight_core``: they translate framework types to and from the core API and hold
no memory logic.

- ``HindsightRetriever``: a ``BaseRetriever`` over a bank's recall.
- ``HindsightChatMessageHistory``: an exact, durable chat transcript that is also retained as memory.
- ``create_memory_tools``: retain / recall / reflect tools for agents.
- ``HindsightMiddleware``: recall before the model and retain after the run, for ``create_agent``.
- ``create_recall_node`` / ``create_retain_node`` / ``create_reflect_node``: LangGraph nodes.
- ``HindsightStore``: a LangGraph ``BaseStore`` (langmem's memory tools work on it unchanged).
- ``local_chat_model``: ``ChatOpenAI`` on the bundled offline model.
"""

from __future__ import annotations

# The LangChain packages are the [langchain] extra: without them, say which extra to install rather than let a bare
# ModuleNotFoundError from deep inside an adapter module reach the user.
_EXTRA = "langchain"
_FRAMEWORK = ("langchain_core", "langchain", "langgraph", "langchain_openai")

try:
    from ._bank import BankNotConfiguredError
    from ._convert import format_memories, memories_system_message, memory_to_dict, memory_to_document
    from .chat_history import HindsightChatMessageHistory
    from .chat_model import local_chat_model
    from .middleware import HindsightAgentState, HindsightMiddleware
    from .nodes import create_recall_node, create_reflect_node, create_retain_node
    from .retriever import HindsightRetriever
    from .store import HindsightStore, bank_id_to_namespace, namespace_to_bank_id
    from .tools import create_memory_tools
except ModuleNotFoundError as exc:
    if (exc.name or "").partition(".")[0] not in _FRAMEWORK:
        raise
    raise ImportError(
        f"langchain_hindsight needs the LangChain packages ({exc.name} is missing): "
        f"pip install 'hindsight-memory[{_EXTRA}]'",
        name=exc.name,
    ) from exc

__all__ = [
    "BankNotConfiguredError",
    "HindsightAgentState",
    "HindsightChatMessageHistory",
    "HindsightMiddleware",
    "HindsightRetriever",
    "HindsightStore",
    "bank_id_to_namespace",
    "create_memory_tools",
    "create_recall_node",
    "create_reflect_node",
    "create_retain_node",
    "format_memories",
    "local_chat_model",
    "memories_system_message",
    "memory_to_dict",
    "memory_to_document",
    "namespace_to_bank_id",
]
