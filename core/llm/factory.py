"""Pick the LLM backend from the environment: a configured endpoint, else the bundled local model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError, LLMError
from .base import LLM
from .chat_model import ChatModelLLM
from .llama_index_llm import LlamaIndexLLM, is_llama_index_llm
from .local import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalLLM
from .openai_compat import OpenAICompatibleLLM

__all__ = ["ENV_LOCAL_MODEL", "default_llm", "make_llm"]

ENV_LOCAL_MODEL = "HINDSIGHT_LLM_LOCAL_MODEL"
"""Environment variable choosing the local model (``qwen2.5-1.5b``, ``qwen2.5-0.5b``, ``smollm2-135m``)."""


def default_llm(environ: Mapping[str, str] | None = None) -> LLM:
    """The LLM to use when the caller names none.

    ``HINDSIGHT_LLM_BASE_URL`` (+ ``_MODEL``, ``_API_KEY``) selects an OpenAI-compatible endpoint;
    otherwise the offline ``LocalLLM`` (``HINDSIGHT_LLM_LOCAL_MODEL``, default ``qwen2.5-1.5b``). Nothing
    is contacted or loaded here: the local server starts on the first request.
    """
    env = os.environ if environ is None else environ
    remote = OpenAICompatibleLLM.from_env(env)
    if remote is not None:
        return remote
    local_model = (env.get(ENV_LOCAL_MODEL) or "").strip().lower() or DEFAULT_LOCAL_MODEL
    if local_model not in LOCAL_MODELS:
        raise LLMError(
            f"{ENV_LOCAL_MODEL}={local_model!r} is not a known local model; "
            f"choose one of {', '.join(sorted(LOCAL_MODELS))}"
        )
    return LocalLLM(local_model)


def make_llm(llm: Any) -> LLM:
    """``llm`` as an ``LLM``: one already (it has ``generate``) as is, a LangChain chat model
    (``with_structured_output``) wrapped in ``ChatModelLLM``, a LlamaIndex LLM (``chat``/``achat``/``complete``)
    in ``LlamaIndexLLM``. Neither framework is imported: objects are recognised by their methods.

    Raises ``InvalidInputError`` for anything else.
    """
    # Frameworks first: a LangChain chat model also has generate/agenerate (with another meaning).
    if callable(getattr(llm, "with_structured_output", None)):
        return ChatModelLLM(llm)
    if is_llama_index_llm(llm):
        return LlamaIndexLLM(llm)
    if callable(getattr(llm, "generate", None)):
        return llm  # an LLM by its method (a Protocol isinstance would say no more; agenerate is checked on use)
    raise InvalidInputError(f"{type(llm).__name__} is not an LLM: pass a hindsight_core LLM, a LangChain chat "
                            "model or a LlamaIndex LLM")
