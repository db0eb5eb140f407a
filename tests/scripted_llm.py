"""A scripted fake ``LLM`` for unit tests: answers from a queue and records every call.

Each queued response is one of:

* a ``dict``: validated into the requested schema (``MalformedOutputError`` if it does not fit, just as a
  real backend whose constrained output still failed validation);
* a ``str``: raw model text, parsed as JSON into the schema like ``OpenAICompatibleLLM`` does
  (``MalformedOutputError`` carrying ``raw`` when it is not valid);
* a pydantic ``BaseModel`` instance: returned as is;
* an exception instance: raised;
* a callable ``(messages, schema) -> any of the above``: evaluated at call time (for answers that depend
  on the prompt, e.g. concurrent windows).
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hindsight_core.llm.base import ChatMessage, MalformedOutputError

T = TypeVar("T", bound=BaseModel)

Response = dict[str, Any] | str | BaseModel | BaseException | Callable[..., Any]


@dataclass
class ScriptedCall:
    """One recorded call: what the caller sent."""

    messages: list[ChatMessage]
    schema: type[BaseModel]
    max_tokens: int | None
    temperature: float
    is_async: bool

    @property
    def user(self) -> str:
        """The content of the last user message (where prompts put the data)."""
        return next(m["content"] for m in reversed(self.messages) if m["role"] == "user")

    @property
    def system(self) -> str:
        """The content of the first system message, or ''."""
        return next((m["content"] for m in self.messages if m["role"] == "system"), "")


class ScriptedLLM:
    """Implements the ``LLM`` protocol with queued responses; ``calls`` records what it was asked."""

    def __init__(self, responses: Iterable[Response] = (), *, name: str = "scripted", delay: float = 0.0):
        self._queue: deque[Response] = deque(responses)
        self._name = name
        self.delay = delay
        self.calls: list[ScriptedCall] = []
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def name(self) -> str:
        """Model name shown in errors and traces."""
        return self._name

    def push(self, *responses: Response) -> None:
        """Queue more responses."""
        self._queue.extend(responses)

    @property
    def remaining(self) -> int:
        """How many queued responses are left."""
        return len(self._queue)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Record the call and answer with the next queued response."""
        self.calls.append(ScriptedCall(copy.deepcopy(list(messages)), schema, max_tokens, temperature, False))
        return self._answer(messages, schema)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin: records, optionally sleeps ``delay`` (to observe concurrency), then answers."""
        self.calls.append(ScriptedCall(copy.deepcopy(list(messages)), schema, max_tokens, temperature, True))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._answer(messages, schema)
        finally:
            self.in_flight -= 1

    def _answer(self, messages: Sequence[ChatMessage], schema: type[T]) -> T:
        if not self._queue:
            raise AssertionError("ScriptedLLM: no scripted response left for this call")
        response = self._queue.popleft()
        while callable(response) and not isinstance(response, BaseModel | BaseException | type):
            response = response(list(messages), schema)  # a responder may hand back another responder
        if isinstance(response, BaseException):
            raise response
        if isinstance(response, BaseModel):
            return response  # type: ignore[return-value]
        if isinstance(response, str):
            try:
                return schema.model_validate_json(response)
            except ValidationError as exc:
                raise MalformedOutputError(f"scripted output does not match {schema.__name__}", raw=response) from exc
        try:
            return schema.model_validate(response)
        except ValidationError as exc:
            raise MalformedOutputError(f"scripted output does not match {schema.__name__}", raw=str(response)) from exc


_ANSWERS = {"reinforce": ("yes", 0), "weaken": ("no", 1), "contradict": ("no", 5), "neutral": ("cannot tell", 0)}


def assessment(label: str, revised: str = "", shows: str = "because") -> Callable[..., dict[str, Any]]:
    """A responder for the opinion assessment whose answer code turns into ``label`` (reinforce / weaken /
    contradict / neutral: the model says yes / no / cannot tell and how bad, 1 weakens and 5 contradicts). It
    answers the contradiction's second call, for the corrected opinion, with ``revised``."""
    answer, how_bad = _ANSWERS[label]

    def respond(messages: Sequence[ChatMessage], schema: type[BaseModel]) -> dict[str, Any]:
        if schema.__name__ == "_RevisedOut":
            return {"revised": revised}
        return {"shows": shows, "answer": answer, "how_bad": how_bad}

    return respond
