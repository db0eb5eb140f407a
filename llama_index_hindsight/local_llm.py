"""A LlamaIndex ``LLM`` over any OpenAI-compatible chat endpoint, and ``local_llm()`` for the offline model.

LlamaIndex needs an LLM for query engines, chat engines and agents. ``llama-index-llms-openai-like`` cannot
be installed next to this project (it requires ``openai<3``, the core pins ``openai==3.57.0``), so this
module is a small first-party replacement built on the ``openai`` client the core already depends on. It
never fetches tiktoken encodings and never touches ``llama_index.core.Settings``.

``local_llm("qwen2.5-1.5b")`` points it at the core's bundled llama.cpp server (started lazily, shared by the
whole process, restarted transparently after ``shutdown_local_servers()``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.generic_utils import (
    achat_to_completion_decorator,
    astream_chat_to_completion_decorator,
    chat_to_completion_decorator,
    stream_chat_to_completion_decorator,
)
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.llm import LLM

from hindsight_core.errors import LLMError

if TYPE_CHECKING:  # pragma: no cover
    from openai import AsyncOpenAI, OpenAI

    from hindsight_core.llm import LocalLLM

__all__ = ["OpenAILikeLLM", "local_llm", "to_openai_messages"]

# LlamaIndex roles an OpenAI-compatible server understands, by LlamaIndex role.
_ROLE_MAP: dict[MessageRole, str] = {
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
}


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """LlamaIndex chat messages as OpenAI ``{"role", "content"}`` dicts (text blocks only).

    Tool and function results become user turns: this LLM does not declare native tool calling, so agents
    that use it (ReAct) send observations as plain text.
    """
    return [{"role": _ROLE_MAP.get(m.role, "user"), "content": m.content or ""} for m in messages]


class OpenAILikeLLM(LLM):
    """Chat LLM for any OpenAI-compatible ``/v1/chat/completions`` endpoint (llama.cpp, vLLM, Ollama...).

    Sync and async, plain and streaming. ``api_base`` is the ``.../v1`` URL; build one for the bundled
    offline model with ``local_llm()``.
    """

    model: str = Field(description="Model name sent with each request.")
    api_base: str | None = Field(default=None, description="Base URL ending in /v1 (resolved lazily for local_llm).")
    api_key: str = Field(default="not-needed", description="API key; local servers ignore it.")
    max_tokens: int = Field(default=256, gt=0, description="Answer budget in tokens.")
    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature.")
    timeout: float = Field(default=600.0, gt=0, description="Seconds one request may take (CPU is slow).")
    max_retries: int = Field(default=0, ge=0, description="Client retries; retrying a local timeout only queues work.")
    context_window: int = Field(default=8192, gt=0, description="Prompt + answer tokens the model accepts.")
    additional_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra request body fields.")

    _local: LocalLLM | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """Name used by LlamaIndex serialisation."""
        return "HindsightOpenAILikeLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """A chat model without native function calling (use ReAct-style agents)."""
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_tokens,
            is_chat_model=True,
            is_function_calling_model=False,
            model_name=self.model,
        )

    # -- endpoint and clients ----------------------------------------------------------------------

    def _base_url(self) -> str:
        if self._local is not None:
            # Ask every time: the shared server starts on first use and gets a new port after a restart.
            return self._local.server.openai_base_url
        if not self.api_base:
            raise LLMError(f"OpenAILikeLLM for model {self.model!r} has no api_base")
        return self.api_base.rstrip("/")

    async def _abase_url(self) -> str:
        if self._local is not None:
            return await asyncio.to_thread(self._base_url)  # may start the server: keep it off the loop
        return self._base_url()

    def _client(self) -> OpenAI:
        from openai import OpenAI

        return OpenAI(base_url=self._base_url(), api_key=self.api_key, timeout=self.timeout,
                      max_retries=self.max_retries)

    async def _aclient(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        # A client per call: LlamaIndex runs sync entry points in fresh event loops, and pooled
        # connections must not outlive the loop that opened them.
        return AsyncOpenAI(base_url=await self._abase_url(), api_key=self.api_key, timeout=self.timeout,
                           max_retries=self.max_retries)

    def _request(self, messages: Sequence[ChatMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "max_tokens": kwargs.pop("max_tokens", self.max_tokens),
            "temperature": kwargs.pop("temperature", self.temperature),
        }
        extra = {**self.additional_kwargs, **kwargs}
        for key in ("stop", "top_p", "seed", "presence_penalty", "frequency_penalty"):
            if key in extra:
                request[key] = extra.pop(key)
        if extra:
            request["extra_body"] = extra
        return request

    def _error(self, exc: Exception) -> LLMError:
        return LLMError(f"chat request to model {self.model!r} failed: {type(exc).__name__}: {exc}")

    @staticmethod
    def _response(completion: Any) -> ChatResponse:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise LLMError("chat endpoint returned no choices")
        content = choices[0].message.content or ""
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=content), raw=completion)

    @staticmethod
    def _delta(chunk: Any) -> str:
        choices = getattr(chunk, "choices", None) or []
        return (choices[0].delta.content or "") if choices and choices[0].delta else ""

    # -- chat ------------------------------------------------------------------------------------

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """One chat completion."""
        request = self._request(messages, kwargs)
        try:
            with self._client() as client:
                completion = client.chat.completions.create(**request)
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        return self._response(completion)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Async twin of ``chat`` (never blocks the event loop)."""
        request = self._request(messages, kwargs)
        try:
            async with await self._aclient() as client:
                completion = await client.chat.completions.create(**request)
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        return self._response(completion)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        """Stream a chat completion; each response carries the text so far and the new ``delta``."""
        request = self._request(messages, kwargs)

        def gen() -> Generator[ChatResponse, None, None]:
            text = ""
            try:
                with self._client() as client:
                    for chunk in client.chat.completions.create(stream=True, **request):
                        delta = self._delta(chunk)
                        text += delta
                        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
                                           delta=delta, raw=chunk)
            except LLMError:
                raise
            except Exception as exc:
                raise self._error(exc) from exc

        return gen()

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        """Async twin of ``stream_chat``."""
        request = self._request(messages, kwargs)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            text = ""
            try:
                async with await self._aclient() as client:
                    stream = await client.chat.completions.create(stream=True, **request)
                    async for chunk in stream:
                        delta = self._delta(chunk)
                        text += delta
                        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
                                           delta=delta, raw=chunk)
            except LLMError:
                raise
            except Exception as exc:
                raise self._error(exc) from exc

        return gen()

    # -- completion (a single user turn through the chat endpoint) -------------------------------

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Complete ``prompt`` as one user message."""
        return chat_to_completion_decorator(self.chat)(prompt, **kwargs)

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Async twin of ``complete``."""
        return await achat_to_completion_decorator(self.achat)(prompt, **kwargs)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """Stream the completion of ``prompt``."""
        return stream_chat_to_completion_decorator(self.stream_chat)(prompt, **kwargs)

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        """Async twin of ``stream_complete``."""
        return await astream_chat_to_completion_decorator(self.astream_chat)(prompt, **kwargs)


def local_llm(
    model: str = "qwen2.5-1.5b",
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    timeout: float = 600.0,
    **kwargs: Any,
) -> OpenAILikeLLM:
    """A LlamaIndex LLM for a bundled offline model served by the core's llama.cpp server.

    ``model`` is a local model name known to ``hindsight_core.llm.LocalLLM`` (``"qwen2.5-1.5b"``,
    ``"qwen2.5-0.5b"``, ``"smollm2-135m"``). Nothing starts here: the shared server starts on the first
    request (and again after ``shutdown_local_servers()``). Other keyword arguments go to ``OpenAILikeLLM``.
    """
    from hindsight_core.llm import LocalLLM

    backend = LocalLLM(model)  # validates the name; starts nothing
    llm = OpenAILikeLLM(model=backend.spec.name, max_tokens=max_tokens, temperature=temperature,
                        timeout=timeout, **kwargs)
    llm._local = backend
    return llm
