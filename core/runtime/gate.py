"""Closing without waiting for a model: ``Hindsight.close`` returns at once even while a background job is inside
a model call, and that job's effects are committed either entirely before the close or never.

Every write a job makes (a commit of units, its outcome in the queue, a follow-up job, an opinion update) passes a
``CommitGate``. ``close`` shuts the gate, waiting only for a commit already in progress (a transaction, never a
model call); after that each write raises ``ClosedError``, and the worker drops the job without recording
anything. The process's lease then hands the job back to the queue, and the next process runs it again (every
handler's effects replace what an earlier attempt wrote). ``GatedLLM`` ends such a job as soon as its model call
returns, so that a late thread does not go on reading stores that are closed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import ClosedError
from ..llm.base import LLM, ChatMessage

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class CommitGate:
    """Lets writes through until ``close``; a write in progress when it closes finishes first (many at a time)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    def check(self) -> None:
        """Raise ``ClosedError`` once the gate is closed."""
        if self._closed:
            raise ClosedError("this Hindsight was closed; nothing more is written through it")

    @contextlib.contextmanager
    def commit(self) -> Iterator[None]:
        """Run the block as one write: refused (``ClosedError``) once closed, waited for by ``close`` otherwise."""
        with self._cond:
            self.check()
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if self._active == 0:
                    self._cond.notify_all()

    def close(self) -> None:
        """Refuse every later write; returns when the writes in progress have finished."""
        with self._cond:
            self._closed = True
            self._cond.wait_for(lambda: self._active == 0)

    def unless_closed(self, write: Callable[..., R]) -> Callable[..., R | None]:
        """``write`` run as a gated write, or skipped (None) once the gate is closed."""

        def gated(*args: Any, **kwargs: Any) -> R | None:
            try:
                with self.commit():
                    return write(*args, **kwargs)
            except ClosedError:
                return None

        return gated


class GatedLLM:
    """An ``LLM`` whose calls end in ``ClosedError`` once the gate is closed: none starts, and the answer of one
    that was in flight is dropped (the job that asked is released and asked again by the next process)."""

    def __init__(self, llm: LLM, gate: CommitGate) -> None:
        self._llm = llm
        self._gate = gate

    def __repr__(self) -> str:
        return repr(self._llm)

    def __getattr__(self, name: str) -> Any:
        # Anything else a backend offers (``last_usage``, ``json_schema`` ...) is the wrapped model's.
        llm = self.__dict__.get("_llm")
        if llm is None:
            raise AttributeError(name)
        return getattr(llm, name)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._llm.name

    def generate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """The wrapped model's answer, unless the gate closed before or during the call."""
        self._gate.check()
        answer = self._llm.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)
        self._gate.check()
        return answer

    async def agenerate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate``."""
        self._gate.check()
        answer = await self._llm.agenerate(messages, schema, max_tokens=max_tokens, temperature=temperature)
        self._gate.check()
        return answer


class GatedWrites:
    """``target`` with the methods named in ``writes`` run as gated writes (``CommitGate.commit``); every other
    attribute is the target's own (for a part that writes to a store directly rather than through a commit)."""

    def __init__(self, target: object, gate: CommitGate, writes: Sequence[str]) -> None:
        self._target = target
        self._gate = gate
        self._writes = frozenset(writes)

    def __getattr__(self, name: str) -> Any:
        target = self.__dict__.get("_target")
        if target is None:
            raise AttributeError(name)
        attr = getattr(target, name)
        if name not in self.__dict__["_writes"]:
            return attr
        gate: CommitGate = self.__dict__["_gate"]

        def gated(*args: Any, **kwargs: Any) -> Any:
            with gate.commit():
                return attr(*args, **kwargs)

        return gated
