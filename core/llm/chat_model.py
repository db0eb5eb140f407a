"""Adapter: any LangChain chat model as a Hindsight ``LLM``.

Duck-typed on purpose: this module never imports LangChain, so it costs nothing when LangChain is absent.
It relies on the chat-model interface of ``langchain-core`` 1.x:
``with_structured_output(schema, method=..., include_raw=True)`` returns a runnable whose ``invoke`` /
``ainvoke`` answer ``{"raw": AIMessage, "parsed": <schema instance | dict | None>,
"parsing_error": <exception | None>}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import LLMError
from .base import ChatMessage, MalformedOutputError, T
from .openai_compat import parse_structured
from .redact import display_url, scrub, url_secrets

__all__ = ["ChatModelLLM"]

_ROLE_TO_LANGCHAIN = {"system": "system", "user": "human", "assistant": "ai"}
_MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict")
_CACHE_LIMIT = 64


class ChatModelLLM:
    """Wrap a LangChain chat model (``ChatOpenAI``, ``ChatAnthropic``, ``ChatOllama``...) as an ``LLM``.

    Structured output goes through the model's own ``with_structured_output`` (``method="json_schema"``
    by default). Per-call ``temperature`` / ``max_tokens`` are applied by copying the model with those
    fields updated when it has them (pydantic ``model_copy``); set ``apply_generation_params=False`` to
    keep the model's own settings.
    """

    def __init__(
        self,
        chat_model: Any,
        *,
        method: str = "json_schema",
        name: str | None = None,
        apply_generation_params: bool = True,
    ) -> None:
        """Wrap ``chat_model``; ``method`` is passed to ``with_structured_output``."""
        if not callable(getattr(chat_model, "with_structured_output", None)):
            raise TypeError(
                f"{type(chat_model).__name__} has no with_structured_output(); pass a LangChain chat model"
            )
        self.chat_model = chat_model
        self.method = method
        self.apply_generation_params = apply_generation_params
        self._name = name or _model_name(chat_model)
        self._lock = threading.Lock()
        self._runnables: dict[tuple[type[BaseModel], int | None, float], Any] = {}

    def __repr__(self) -> str:
        return f"ChatModelLLM({self._name!r})"

    @property
    def name(self) -> str:
        """The wrapped model's name (``model_name``/``model`` attribute, else its class name)."""
        return self._name

    # -- building the runnable -------------------------------------------------------------------

    def _configured_model(self, max_tokens: int | None, temperature: float) -> Any:
        model = self.chat_model
        if not self.apply_generation_params or not hasattr(model, "model_copy"):
            return model
        fields = getattr(type(model), "model_fields", {}) or {}
        update: dict[str, Any] = {}
        if "temperature" in fields:
            update["temperature"] = temperature
        if max_tokens is not None:
            for key in _MAX_TOKEN_FIELDS:
                if key in fields:
                    update[key] = max_tokens
                    break
        # A shallow pydantic copy shares the underlying HTTP clients; only these fields differ.
        return model.model_copy(update=update) if update else model

    def _structured(self, schema: type[BaseModel], max_tokens: int | None, temperature: float) -> Any:
        key = (schema, max_tokens, temperature)
        with self._lock:
            runnable = self._runnables.get(key)
        if runnable is not None:
            return runnable
        model = self._configured_model(max_tokens, temperature)
        try:
            runnable = model.with_structured_output(schema, method=self.method, include_raw=True)
        except (TypeError, ValueError, NotImplementedError) as exc:
            raise self._clean(LLMError(
                f"{self._name}: with_structured_output(method={self.method!r}) is not supported: {exc}"
            )) from None
        with self._lock:
            if len(self._runnables) >= _CACHE_LIMIT:
                self._runnables.clear()
            self._runnables[key] = runnable
        return runnable

    @staticmethod
    def to_langchain_messages(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
        """``[{"role": "user", "content": ...}]`` -> ``[("human", ...)]`` (LangChain message tuples)."""
        out: list[tuple[str, str]] = []
        for message in messages:
            role = _ROLE_TO_LANGCHAIN.get(message["role"])
            if role is None:
                raise LLMError(f"unsupported chat role {message['role']!r}")
            out.append((role, message["content"]))
        return out

    # -- calls -----------------------------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Invoke the chat model for structured output and return it validated against ``schema``."""
        runnable = self._structured(schema, max_tokens, temperature)
        try:
            result = runnable.invoke(self.to_langchain_messages(messages))
        except Exception as exc:
            # From None: the original exception's text may hold the key; the message keeps its type and words.
            raise self._wrap_error(exc) from None
        return self._scrubbed(self._unpack, result, schema)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate`` (``ainvoke``)."""
        runnable = self._structured(schema, max_tokens, temperature)
        try:
            result = await runnable.ainvoke(self.to_langchain_messages(messages))
        except Exception as exc:
            raise self._wrap_error(exc) from None
        return self._scrubbed(self._unpack, result, schema)

    # -- results ---------------------------------------------------------------------------------

    def _unpack(self, result: Any, schema: type[T]) -> T:
        source = f"chat model {self._name}"
        if isinstance(result, dict) and "raw" in result:
            raw_text = _raw_text(result.get("raw"))
            parsed = result.get("parsed")
            error = result.get("parsing_error")
        else:  # a model that ignores include_raw and returns the parsed value itself
            raw_text, parsed, error = None, result, None
        if parsed is not None and error is None:
            try:
                return _coerce(parsed, schema)
            except ValidationError as exc:
                raise MalformedOutputError(
                    f"{source}: output does not match schema {schema.__name__}: {exc}",
                    raw=raw_text if raw_text is not None else _dump(parsed),
                ) from exc
        if raw_text:
            # LangChain's parser failed (e.g. JSON wrapped in ``` fences): try our lenient parse.
            try:
                return parse_structured(raw_text, schema, source=source)
            except MalformedOutputError as exc:
                detail = f"{error}" if error is not None else str(exc)
                raise MalformedOutputError(
                    f"{source}: output does not parse into schema {schema.__name__}: {detail}", raw=raw_text
                ) from (error if isinstance(error, BaseException) else exc)
        raise MalformedOutputError(
            f"{source} returned nothing parseable for schema {schema.__name__}"
            + (f": {error}" if error is not None else ""),
            raw=raw_text,
        )

    def _secrets(self) -> list[str]:
        """The credentials the wrapped model holds: every secret field (``SecretStr``: ``api_key``,
        ``openai_api_key``...) and the user name and password of every URL field (``base_url``...)."""
        found: list[str] = []
        fields = getattr(self.chat_model, "__dict__", {})
        for value in list(fields.values()) if isinstance(fields, dict) else []:
            reveal = getattr(value, "get_secret_value", None)
            if callable(reveal):
                secret = reveal()
                if isinstance(secret, str):
                    found.append(secret)
            elif isinstance(value, str) and "://" in value:
                found.extend(url_secrets(value))
        return found

    def _clean(self, error: LLMError) -> LLMError:
        """``error`` with the model's credentials, URL userinfo and anything key-shaped masked (``redact``)."""
        secrets = self._secrets()
        message = scrub(str(error), secrets)
        if isinstance(error, MalformedOutputError):
            raw = None if error.raw is None else scrub(error.raw, secrets)
            if message == str(error) and raw == error.raw:
                return error
            return MalformedOutputError(message, raw=raw)
        return error if message == str(error) else LLMError(message)

    def _scrubbed(self, unpack: Any, result: Any, schema: type[T]) -> T:
        """``unpack(result, schema)``, its errors scrubbed as every error of this backend is."""
        try:
            value: T = unpack(result, schema)
        except LLMError as exc:
            raise self._clean(exc) from None
        return value

    def _wrap_error(self, exc: Exception) -> LLMError:
        return self._clean(self._describe(exc))

    def _describe(self, exc: Exception) -> LLMError:
        if isinstance(exc, LLMError):
            return exc
        # openai's structured-output parser raises instead of reporting a parsing error when the answer
        # was cut off (max_tokens) or filtered; the partial completion rides along on the exception.
        completion = getattr(exc, "completion", None)
        if completion is not None and type(exc).__name__.endswith("FinishReasonError"):
            choices = getattr(completion, "choices", None) or [None]
            partial = getattr(getattr(choices[0], "message", None), "content", None)
            return MalformedOutputError(
                f"chat model {self._name}: output was cut off ({type(exc).__name__}); raise max_tokens",
                raw=partial,
            )
        # LangChain's OutputParserException (raised e.g. on refusals) carries the model text.
        raw = getattr(exc, "llm_output", None)
        if raw is not None or type(exc).__name__ in {"OutputParserException", "JSONDecodeError"}:
            return MalformedOutputError(f"chat model {self._name}: unparseable output: {exc}", raw=raw)
        return LLMError(f"chat model {self._name} failed: {type(exc).__name__}: {exc}")


def _model_name(chat_model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attr, None)
        if isinstance(value, str) and value:
            return display_url(value)  # a name that is a URL is shown without its credentials
    return type(chat_model).__name__


def _coerce(parsed: Any, schema: type[T]) -> T:
    if isinstance(parsed, schema):
        return parsed
    if isinstance(parsed, BaseModel):
        return schema.model_validate(parsed.model_dump())
    if isinstance(parsed, str):
        return schema.model_validate_json(parsed)
    return schema.model_validate(parsed)


def _dump(value: Any) -> str | None:
    try:
        return json.dumps(value.model_dump() if isinstance(value, BaseModel) else value, default=str)
    except (TypeError, ValueError):
        return None


def _raw_text(message: Any) -> str | None:
    """The text a LangChain message carried: its content, else the first tool call's arguments, else None."""
    if message is None:
        return None
    content = getattr(message, "content", message)
    if isinstance(content, list):  # content blocks: keep the text parts
        parts = [
            block.get("text", "") if isinstance(block, dict) else str(block)
            for block in content
            if not isinstance(block, dict) or block.get("type", "text") == "text"
        ]
        content = "".join(parts)
    if isinstance(content, str) and content.strip():
        return content
    tool_calls = getattr(message, "tool_calls", None) or []
    if tool_calls:
        args = tool_calls[0].get("args") if isinstance(tool_calls[0], dict) else None
        if args is not None:
            return json.dumps(args)
    return None
