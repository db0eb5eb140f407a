"""LLM backends behind one protocol: structured (pydantic) output from chat messages, sync and async.

- ``OpenAICompatibleLLM``: any OpenAI-compatible endpoint (``json_schema`` response format).
- ``LocalLLM``: the offline default, a bundled GGUF served by llama.cpp (``xllamacpp``) on loopback.
- ``ChatModelLLM``: any LangChain chat model.
- ``LlamaIndexLLM``: any LlamaIndex LLM; ``make_llm`` wraps either kind of object (duck-typed).
- ``default_llm()``: picks one from the environment.

Importing this package is cheap: ``openai`` and ``xllamacpp`` are imported on first use, never here.
"""

from __future__ import annotations

from .base import LLM, ChatMessage, MalformedOutputError
from .chat_model import ChatModelLLM
from .factory import ENV_LOCAL_MODEL, default_llm, make_llm
from .llama_index_llm import LlamaIndexLLM
from .local import (
    DEFAULT_LOCAL_MODEL,
    ENV_CACHE_DIR,
    ENV_THREADS,
    LOCAL_MODELS,
    QWEN_0_5B,
    QWEN_1_5B,
    SMOLLM2_135M,
    ChunkResolver,
    LocalLLM,
    LocalLLMServer,
    LocalModelSpec,
    default_cache_dir,
    default_threads,
    ensure_gguf,
    get_local_server,
    resolve_chunk,
    shutdown_local_servers,
)
from .openai_compat import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ENV_TIMEOUT,
    OpenAICompatibleLLM,
    parse_structured,
    response_format_for,
    strip_code_fences,
)

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_CACHE_DIR",
    "ENV_LOCAL_MODEL",
    "ENV_MODEL",
    "ENV_THREADS",
    "ENV_TIMEOUT",
    "LLM",
    "LOCAL_MODELS",
    "QWEN_0_5B",
    "QWEN_1_5B",
    "SMOLLM2_135M",
    "ChatMessage",
    "ChatModelLLM",
    "ChunkResolver",
    "LlamaIndexLLM",
    "LocalLLM",
    "LocalLLMServer",
    "LocalModelSpec",
    "MalformedOutputError",
    "OpenAICompatibleLLM",
    "default_cache_dir",
    "default_llm",
    "default_threads",
    "ensure_gguf",
    "get_local_server",
    "make_llm",
    "parse_structured",
    "resolve_chunk",
    "response_format_for",
    "shutdown_local_servers",
    "strip_code_fences",
]
