"""The LLM seam: one small protocol every model backend implements.

Pipelines only ever ask for *structured* output: a list of chat messages plus a pydantic schema in, a
validated instance of that schema out. Backends turn the schema into whatever constrained decoding they
support (OpenAI ``json_schema`` response format, LangChain ``with_structured_output``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypedDict, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..errors import LLMError

T = TypeVar("T", bound=BaseModel)


class ChatMessage(TypedDict):
    """One chat message in OpenAI form."""

    role: Literal["system", "user", "assistant"]
    content: str


def _strict_schema(schema: dict[str, Any]) -> None:
    """``json_schema_extra`` for LLM-facing models: every property required, no extra keys, no titles or
    defaults (tokens a model never needs), so OpenAI ``strict`` mode accepts the schema and constrained
    decoders produce complete objects; validation itself stays lenient (defaults, clipping)."""
    props = schema.get("properties", {})
    for prop in props.values():
        prop.pop("title", None)
        prop.pop("default", None)
    schema["required"] = list(props)
    schema["additionalProperties"] = False
    schema.pop("title", None)
    schema.pop("description", None)


LLM_SCHEMA_CONFIG = ConfigDict(extra="ignore", json_schema_extra=_strict_schema)
"""Model config for schemas sent to an LLM (see ``_strict_schema``)."""


class MalformedOutputError(LLMError):
    """The model answered, but its output is not valid JSON for the schema. ``raw`` keeps what it said."""

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw


@runtime_checkable
class LLM(Protocol):
    """A chat model that returns schema-validated structured output, sync and async."""

    @property
    def name(self) -> str:
        """A short human-readable model name (for traces and errors)."""
        ...

    def generate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Return the model's answer parsed into ``schema``; raise ``MalformedOutputError`` if it is not."""
        ...

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate``; must not block the event loop."""
        ...
