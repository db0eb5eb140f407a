"""``local_chat_model``: LangChain's ``ChatOpenAI`` pointed at the bundled local llama.cpp server."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

from hindsight_core.llm import LocalLLM


def local_chat_model(model: str = "qwen2.5-1.5b", **kwargs: Any) -> ChatOpenAI:
    """A chat model served offline by the core's local llama.cpp server (started on first use).

    ``model`` is a local model name (``"qwen2.5-1.5b"``, ``"qwen2.5-0.5b"``, ``"smollm2-135m"``); other
    keyword arguments go to ``ChatOpenAI`` (``max_tokens``, ``temperature`` (default 0), ...). The server
    is shared with ``LocalLLM`` in the same process; ``hindsight_core.llm.shutdown_local_servers()`` stops it.
    """
    llm = LocalLLM(model)
    kwargs.setdefault("temperature", 0.0)
    kwargs.setdefault("max_retries", 0)  # a local timeout retried only queues the same work twice
    return ChatOpenAI(base_url=llm.server.openai_base_url, model=llm.spec.name, api_key="local", **kwargs)
