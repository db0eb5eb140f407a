"""Adapter: any LlamaIndex LLM (``llama_index.core.llms.LLM``: ``chat``/``achat``) as a Hindsight ``LLM``.

Duck-typed like ``chat_model.py``: LlamaIndex is imported only inside a call, to build its ``ChatMessage``
objects, so that path runs only when the caller handed in a LlamaIndex object (LlamaIndex is then installed).

Structured output, per backend: LLMs that forward request fields to an OpenAI-compatible API (``OpenAI``,
``OpenAILike``, this project's ``OpenAILikeLLM``) get the ``json_schema`` response format, which constrained
decoders (llama.cpp, vLLM, OpenAI) enforce; any other LLM gets the schema in the system message and its answer
parsed leniently (fences stripped). A malformed answer raises ``MalformedOutputError`` either way, so
``structured.structured_call`` retries once with a corrective note.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import LLMError
from .base import ChatMessage, T
from .openai_compat import parse_structured, response_format_for
from .redact import scrub

__all__ = ["JSON_SCHEMA_CLASSES", "LlamaIndexLLM", "is_llama_index_llm"]

JSON_SCHEMA_CLASSES = frozenset({"OpenAI", "OpenAILike", "OpenAILikeLLM", "AzureOpenAI"})
"""LlamaIndex LLM classes whose ``chat(**kwargs)`` sends extra fields (``response_format``) to the API."""

_MAX_TOKEN_FIELDS = ("max_tokens", "max_new_tokens", "num_output", "max_output_tokens")
_SCHEMA_NOTE = "Answer with one JSON object, and nothing else, that matches this JSON schema:\n"


def is_llama_index_llm(obj: Any) -> bool:
    """Whether ``obj`` looks like a LlamaIndex LLM: ``chat``, ``achat`` and ``complete`` methods and ``metadata``."""
    return all(callable(getattr(obj, m, None)) for m in ("chat", "achat", "complete")) and hasattr(obj, "metadata")


def _model_name(llm: Any) -> str:
    for attr in ("model", "model_name"):
        value = getattr(llm, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    meta_name = getattr(getattr(llm, "metadata", None), "model_name", None)
    if isinstance(meta_name, str) and meta_name.strip() and meta_name != "unknown":
        return meta_name.strip()
    return type(llm).__name__


class LlamaIndexLLM:
    """Wrap a LlamaIndex LLM (``OpenAI``, ``Ollama``, ``LlamaCPP``, a ``CustomLLM``...) as an ``LLM``.

    ``json_schema``: send the ``json_schema`` response format (default: for ``JSON_SCHEMA_CLASSES``), else
    describe the schema in the prompt. Per-call ``temperature`` and ``max_tokens`` are applied by copying the
    LLM with those fields updated where it has them; ``apply_generation_params=False`` keeps its own.
    """

    def __init__(self, llm: Any, *, name: str | None = None, json_schema: bool | None = None,
                 apply_generation_params: bool = True) -> None:
        """Wrap ``llm`` (see the class docstring)."""
        if not is_llama_index_llm(llm):
            raise TypeError(f"{type(llm).__name__} is not a LlamaIndex LLM (chat/achat/complete and metadata)")
        self.llm = llm
        self._name = name or _model_name(llm)
        self.json_schema = type(llm).__name__ in JSON_SCHEMA_CLASSES if json_schema is None else json_schema
        self.apply_generation_params = apply_generation_params

    def __repr__(self) -> str:
        return f"LlamaIndexLLM({self._name!r}, json_schema={self.json_schema})"

    @property
    def name(self) -> str:
        """The wrapped LLM's model name, else its class name."""
        return self._name

    def _configured(self, max_tokens: int | None, temperature: float) -> Any:
        llm = self.llm
        if not self.apply_generation_params or not hasattr(llm, "model_copy"):
            return llm
        fields = getattr(type(llm), "model_fields", {}) or {}
        update: dict[str, Any] = {"temperature": temperature} if "temperature" in fields else {}
        if max_tokens is not None:
            key = next((k for k in _MAX_TOKEN_FIELDS if k in fields), None)
            if key is not None:
                update[key] = max_tokens
        return llm.model_copy(update=update) if update else llm

    def _request(self, messages: Sequence[ChatMessage], schema: type[T]) -> tuple[list[Any], dict[str, Any]]:
        """LlamaIndex messages (with the schema in the system message unless the API enforces it) and kwargs."""
        from llama_index.core.base.llms.types import ChatMessage as LIMessage
        from llama_index.core.base.llms.types import MessageRole

        roles = {"system": MessageRole.SYSTEM, "user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
        out = []
        for m in messages:
            if m["role"] not in roles:
                raise LLMError(f"unsupported chat role {m['role']!r}")
            out.append(LIMessage(role=roles[m["role"]], content=m["content"]))
        if self.json_schema:
            return out, {"response_format": response_format_for(schema)}
        note = _SCHEMA_NOTE + json.dumps(schema.model_json_schema(), separators=(",", ":"))
        if out and out[0].role == MessageRole.SYSTEM:
            out[0] = LIMessage(role=MessageRole.SYSTEM, content=f"{out[0].content}\n\n{note}")
        else:
            out.insert(0, LIMessage(role=MessageRole.SYSTEM, content=note))
        return out, {}

    def generate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                 temperature: float = 0.0) -> T:
        """``chat`` for one answer, parsed into ``schema`` (``MalformedOutputError`` when it does not parse)."""
        chat_messages, kwargs = self._request(messages, schema)
        try:
            response = self._configured(max_tokens, temperature).chat(chat_messages, **kwargs)
        except Exception as exc:
            raise self._wrap_error(exc) from exc
        return self._parse(response, schema)

    async def agenerate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                        temperature: float = 0.0) -> T:
        """Async twin of ``generate`` (``achat``)."""
        chat_messages, kwargs = self._request(messages, schema)
        try:
            response = await self._configured(max_tokens, temperature).achat(chat_messages, **kwargs)
        except Exception as exc:
            raise self._wrap_error(exc) from exc
        return self._parse(response, schema)

    def _parse(self, response: Any, schema: type[T]) -> T:
        message = getattr(response, "message", None)
        content = getattr(message, "content", None)
        if content is None:
            content = getattr(response, "text", None)
        return parse_structured(content if isinstance(content, str) else None, schema,
                                source=f"LlamaIndex LLM {self._name}")

    def _wrap_error(self, exc: Exception) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        return LLMError(f"LlamaIndex LLM {self._name} failed: {type(exc).__name__}: {scrub(str(exc))}")
