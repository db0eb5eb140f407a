"""Structured LLM calls with one corrective retry, shared by every pipeline that asks a model for JSON.

Also the small text helpers LLM-facing schemas use to stay lenient: :func:`clip` and :func:`trim`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import LLMError
from .base import LLM, ChatMessage, MalformedOutputError

__all__ = ["astructured_call", "clip", "structured_call", "trim"]

T = TypeVar("T", bound=BaseModel)

_RAW_PREVIEW = 300
_RETRY_NOTE = "Your previous answer was not valid. Reply again with short, valid JSON only."
_RETRY_TEMPERATURE = 0.2  # a deterministic model would repeat the same bad answer at temperature 0


def clip(text: str, limit: int) -> str:
    """``text`` stripped and cut to at most ``limit`` characters, at a sentence or word end when possible."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    # Prefer the last sentence end in the second half, else the last word boundary.
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if end >= limit // 2:
        return cut[: end + 1]
    if cut.endswith((".", "!", "?")):
        return cut
    space = cut.rfind(" ")
    return (cut[:space] if space >= limit // 2 else cut).rstrip(" ,;:")



def _preview(raw: str | None) -> str:
    if raw is None:
        return "<none>"
    return raw if len(raw) <= _RAW_PREVIEW else raw[:_RAW_PREVIEW] + "..."


def _with_note(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages with the corrective note appended to the last user message."""
    out = [ChatMessage(role=m["role"], content=m["content"]) for m in messages]
    for m in reversed(out):
        if m["role"] == "user":
            m["content"] = f"{m['content']}\n{_RETRY_NOTE}"
            return out
    return [*out, ChatMessage(role="user", content=_RETRY_NOTE)]


def _checked(out: T, check: Callable[[T], Any] | None) -> Any:
    if check is None:
        return out
    return check(out)


def _failure(llm: LLM, what: str, exc: MalformedOutputError) -> LLMError:
    return LLMError(f"{what}: {llm.name} returned malformed output twice; raw: {_preview(exc.raw)!r}")


def structured_call(
    llm: LLM,
    messages: Sequence[ChatMessage],
    schema: type[T],
    *,
    what: str,
    max_tokens: int,
    check: Callable[[T], Any] | None = None,
) -> Any:
    """One structured call with a single retry on malformed output.

    ``check`` post-validates and normalises the parsed answer (its return value is returned); it raises
    ``MalformedOutputError`` for answers that parse but are unusable (e.g. empty text), which counts as a
    malformed attempt. The retry appends a corrective note and samples at a low non-zero temperature.
    After two malformed attempts, ``LLMError`` is raised naming ``what`` with the raw output (truncated).
    Other ``LLMError`` s (backend unreachable) propagate unchanged.
    """
    try:
        return _checked(llm.generate(messages, schema, max_tokens=max_tokens, temperature=0.0), check)
    except MalformedOutputError:
        pass
    try:
        out = llm.generate(_with_note(messages), schema, max_tokens=max_tokens, temperature=_RETRY_TEMPERATURE)
        return _checked(out, check)
    except MalformedOutputError as exc:
        raise _failure(llm, what, exc) from exc


async def astructured_call(
    llm: LLM,
    messages: Sequence[ChatMessage],
    schema: type[T],
    *,
    what: str,
    max_tokens: int,
    check: Callable[[T], Any] | None = None,
) -> Any:
    """Async twin of :func:`structured_call` (uses ``llm.agenerate``)."""
    try:
        return _checked(await llm.agenerate(messages, schema, max_tokens=max_tokens, temperature=0.0), check)
    except MalformedOutputError:
        pass
    try:
        out = await llm.agenerate(
            _with_note(messages), schema, max_tokens=max_tokens, temperature=_RETRY_TEMPERATURE
        )
        return _checked(out, check)
    except MalformedOutputError as exc:
        raise _failure(llm, what, exc) from exc


def trim(value: Any, limit: int) -> Any:
    """Lenient string coercion for LLM schemas: None -> '', numbers -> str, over-long -> clipped."""
    if value is None:
        return ""
    if isinstance(value, int | float):
        value = str(value)
    return clip(value, limit) if isinstance(value, str) else value
