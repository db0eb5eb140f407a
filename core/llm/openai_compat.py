"""An ``LLM`` backed by any OpenAI-compatible chat-completions endpoint (OpenAI, llama.cpp, vLLM, Ollama...).

Structured output is requested with the ``json_schema`` response format; llama.cpp's server turns that schema
into a decoding grammar (LLGuidance in xllamacpp), so even tiny local models return parseable JSON. The
answer is always re-validated with pydantic because grammars do not enforce every keyword (numeric bounds,
for one, are not enforced by llama.cpp; ``minItems``/``maxItems`` are).

The ``openai`` package is imported lazily, on the first request, so importing this module stays cheap.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..errors import LLMError
from .base import ChatMessage, MalformedOutputError, T
from .redact import display_url, scrub, url_secrets

if TYPE_CHECKING:  # pragma: no cover
    from openai import AsyncOpenAI, OpenAI

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_TIMEOUT",
    "OpenAICompatibleLLM",
    "parse_structured",
    "response_format_for",
    "strip_code_fences",
]

ENV_BASE_URL = "HINDSIGHT_LLM_BASE_URL"
"""Environment variable naming the endpoint's base URL (e.g. ``http://localhost:8080/v1``)."""
ENV_MODEL = "HINDSIGHT_LLM_MODEL"
"""Environment variable naming the model to request."""
ENV_API_KEY = "HINDSIGHT_LLM_API_KEY"
"""Environment variable holding the API key (optional for local servers)."""
ENV_TIMEOUT = "HINDSIGHT_LLM_TIMEOUT"
"""Optional environment variable: request timeout in seconds."""

_FENCE_WHOLE = re.compile(r"^```[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```$", re.DOTALL)
_FENCE_ANY = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)\r?\n?[ \t]*```", re.DOTALL)
_SCHEMA_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]")
_RAW_PREVIEW = 300


def strip_code_fences(text: str) -> str:
    """Return ``text`` without a Markdown code fence around it (```` ```json ... ``` ````).

    Small models sometimes wrap JSON in fences even when asked not to. Text that is not fenced is
    returned stripped but otherwise unchanged; when prose surrounds a fenced block, the first block wins.
    """
    stripped = text.strip()
    match = _FENCE_WHOLE.match(stripped)
    if match:
        return match.group(1).strip()
    if not stripped.startswith(("{", "[")):
        match = _FENCE_ANY.search(stripped)
        if match:
            return match.group(1).strip()
    return stripped


def _preview(raw: str) -> str:
    return raw if len(raw) <= _RAW_PREVIEW else raw[:_RAW_PREVIEW] + "..."


def parse_structured(
    content: str | None,
    schema: type[T],
    *,
    source: str = "model",
    finish_reason: str | None = None,
) -> T:
    """Parse a model's text answer into ``schema``; raise ``MalformedOutputError`` (keeping ``raw``) if not.

    Code fences are stripped first. ``finish_reason="length"`` turns a parse failure into a message that
    points at ``max_tokens``, the usual cause of truncated JSON.
    """
    if content is None or not content.strip():
        raise MalformedOutputError(f"{source} returned no content for schema {schema.__name__}", raw=content)
    text = strip_code_fences(content)
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        truncated = finish_reason == "length"
        json_broken = any(err.get("type") == "json_invalid" for err in exc.errors())
        if truncated:
            why = "output was cut off by max_tokens (finish_reason=length)"
        elif json_broken:
            why = "output is not valid JSON"
        else:
            why = "output does not match the schema"
        raise MalformedOutputError(
            f"{source}: {why} for schema {schema.__name__}: {exc.error_count()} error(s), "
            f"first: {_first_error(exc)}; raw: {_preview(content)!r}",
            raw=content,
        ) from exc


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    err = errors[0]
    loc = ".".join(str(part) for part in err.get("loc", ())) or "<root>"
    return f"{loc}: {err.get('msg', '')}"


def response_format_for(schema: type[BaseModel], *, strict: bool = True) -> dict[str, Any]:
    """The OpenAI ``response_format`` payload asking for JSON that follows ``schema``."""
    name = _SCHEMA_NAME_BAD.sub("_", schema.__name__)[:64] or "output"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema.model_json_schema(), "strict": strict},
    }


class OpenAICompatibleLLM:
    """An ``LLM`` that talks to an OpenAI-compatible ``/chat/completions`` endpoint.

    Clients (sync and async) are created on first use and reused; the instance is safe to share
    between threads.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        *,
        timeout: float = 120.0,
        max_tokens: int = 1024,
        max_retries: int = 2,
        strict: bool = True,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        """Configure the endpoint; nothing is contacted until the first ``generate``.

        ``max_tokens`` is the default answer budget when a call passes none. ``strict`` is forwarded in the
        ``json_schema`` response format (OpenAI proper requires strict-compatible schemas when it is true:
        every property required, ``additionalProperties: false``). ``extra_body`` adds server-specific
        request fields. ``name`` overrides the display name (defaults to ``model``).
        """
        if not base_url:
            raise LLMError("OpenAICompatibleLLM needs a base_url")
        if not model:
            raise LLMError(f"OpenAICompatibleLLM needs a model name (base_url {display_url(base_url)})")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.strict = strict
        self.extra_body = dict(extra_body or {})
        self._name = name or model
        self._lock = threading.Lock()
        self._usage = threading.local()
        self._client: OpenAI | None = None
        # One async client per event loop: pooled httpx connections are bound to the loop that opened
        # them, and callers (pytest, notebooks) often run several loops in one process.
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(base_url={display_url(self.base_url)!r}, model={self.model!r})"

    @property
    def name(self) -> str:
        """Display name of the model (for traces and errors)."""
        return self._name

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAICompatibleLLM | None:
        """Build from ``HINDSIGHT_LLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY`` (/ ``_TIMEOUT``).

        Returns ``None`` when no base URL is configured. A base URL without a model is a configuration
        error (``LLMError``) rather than a silent guess.
        """
        env = os.environ if environ is None else environ
        base_url = (env.get(ENV_BASE_URL) or "").strip()
        if not base_url:
            return None
        model = (env.get(ENV_MODEL) or "").strip()
        if not model:
            raise LLMError(
                f"{ENV_BASE_URL} is set ({display_url(base_url)}) but {ENV_MODEL} is not; set the model name"
            )
        api_key = (env.get(ENV_API_KEY) or "").strip() or "not-needed"
        kwargs: dict[str, Any] = {}
        timeout = (env.get(ENV_TIMEOUT) or "").strip()
        if timeout:
            try:
                kwargs["timeout"] = float(timeout)
            except ValueError as exc:
                raise LLMError(f"{ENV_TIMEOUT} must be a number of seconds, got {timeout!r}") from exc
        return cls(base_url, model, api_key, **kwargs)

    # -- clients ---------------------------------------------------------------------------------

    def _sync_client(self) -> OpenAI:
        with self._lock:
            if self._client is None:
                from openai import OpenAI  # lazy: keep `import hindsight_core.llm` light

                self._client = OpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            return self._client

    def _async_client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._aclients.get(loop)
            if client is None:
                from openai import AsyncOpenAI

                client = AsyncOpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
                self._aclients[loop] = client
            return client

    def close(self) -> None:
        """Close the sync HTTP client; async clients are dropped (they die with their event loops)."""
        with self._lock:
            client, self._client = self._client, None
            self._aclients.clear()
        if client is not None:
            client.close()

    # -- requests --------------------------------------------------------------------------------

    def build_request(
        self,
        messages: Sequence[ChatMessage],
        schema: type[BaseModel],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> dict[str, Any]:
        """The keyword arguments passed to ``chat.completions.create`` (exposed for tests and debugging)."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "response_format": response_format_for(schema, strict=self.strict),
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens,
            "temperature": temperature,
        }
        if self.extra_body:
            request["extra_body"] = dict(self.extra_body)
        return request

    def generate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Ask the endpoint for JSON following ``schema`` and return it validated.

        Raises ``MalformedOutputError`` (with ``raw``) when the answer does not parse, and ``LLMError``
        when the endpoint cannot be reached or rejects the request.
        """
        request = self.build_request(messages, schema, max_tokens=max_tokens, temperature=temperature)
        client = self._sync_client()
        try:
            completion = client.chat.completions.create(**request)
        except Exception as exc:
            raise self._wrap_error(exc) from exc
        return self._parse_completion(completion, schema)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate`` (uses ``AsyncOpenAI``; never blocks the event loop on I/O)."""
        request = self.build_request(messages, schema, max_tokens=max_tokens, temperature=temperature)
        client = self._async_client()
        try:
            completion = await client.chat.completions.create(**request)
        except Exception as exc:
            raise self._wrap_error(exc) from exc
        return self._parse_completion(completion, schema)

    @property
    def last_usage(self) -> dict[str, Any] | None:
        """What the endpoint reported for this thread's last answered call: ``prompt_tokens``,
        ``completion_tokens``, ``cached_tokens`` (prompt tokens it reused) and llama.cpp's ``timings`` when given."""
        return getattr(self._usage, "value", None)

    def _note_usage(self, completion: Any) -> None:
        usage = getattr(completion, "usage", None)
        extra = getattr(completion, "model_extra", None) or {}
        found = extra.get("timings")
        timings: dict[str, Any] = found if isinstance(found, dict) else {}
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        self._usage.value = {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
            "cached_tokens": cached if cached is not None else timings.get("cache_n"),
            "timings": timings,
        }

    def _parse_completion(self, completion: Any, schema: type[T]) -> T:
        self._note_usage(completion)
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise MalformedOutputError(f"{self._where()} returned no choices", raw=None)
        choice = choices[0]
        message = choice.message
        content = message.content
        if not content and getattr(message, "refusal", None):
            raise MalformedOutputError(f"{self._where()} refused: {message.refusal}", raw=message.refusal)
        return parse_structured(content, schema, source=self._where(), finish_reason=choice.finish_reason)

    def _where(self) -> str:
        return f"model {self.model!r} at {display_url(self.base_url)}"

    def _wrap_error(self, exc: Exception) -> LLMError:
        """Turn an ``openai`` exception into an ``LLMError`` that names the endpoint and model, with the key, the
        URL's credentials and anything credential-shaped in the upstream's answer masked."""
        if isinstance(exc, LLMError):
            return exc
        wrapped = self._describe(exc)
        return LLMError(scrub(str(wrapped), [self.api_key, *url_secrets(self.base_url)]))

    def _describe(self, exc: Exception) -> LLMError:
        import openai  # already imported by the client at this point

        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"request to {self._where()} timed out after {self.timeout}s")
        if isinstance(exc, openai.APIConnectionError):
            return LLMError(f"cannot reach {self._where()}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            body = _status_body(exc)
            return LLMError(f"{self._where()} answered HTTP {exc.status_code}: {body}")
        if isinstance(exc, openai.OpenAIError):
            return LLMError(f"{self._where()} failed: {exc}")
        return LLMError(f"{self._where()} failed: {type(exc).__name__}: {exc}")


def _status_body(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if body is None:
        return str(exc)
    try:
        return _preview(json.dumps(body))
    except (TypeError, ValueError):
        return _preview(str(body))
