"""Pick the LLM backend from the environment: a configured endpoint, else the bundled local model."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import LLMError
from .base import LLM
from .local import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, LocalLLM
from .openai_compat import OpenAICompatibleLLM

__all__ = ["ENV_LOCAL_MODEL", "default_llm"]

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
