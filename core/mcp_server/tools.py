"""The MCP tools: ``retain``, ``recall``, ``reflect``, ``correct``, ``forget`` and ``list_banks`` over a
``Hindsight``.

Each tool is an async method of ``MemoryTools`` whose signature is its published schema. Engine calls go through
the async twins (``aretain``, ``arecall``, ``areflect``, ``acorrect``, ``aforget``) or ``asyncio.to_thread``, so a
model call or an embedding never blocks the event loop that serves other requests. A server with a fixed bank
registers the same methods with the bank bound (``bind_bank``): their schemas then have no bank argument at all.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from hindsight_core import Bank, BankNotFoundError, Disposition, Hindsight
from hindsight_core.recall.deadline import MAX_DEADLINE_MS
from hindsight_core.retain.correct import MAX_CORRECTION_CHARS

from .errors import HindsightToolError, reported
from .schemas import (
    BankId,
    BankList,
    BankOut,
    CorrectOut,
    ForgetOut,
    MessageIn,
    NetworkName,
    RecallOut,
    ReflectOut,
    RetainOut,
)
from .scope import BankScope, unknown_bank_message

# Argument types, with the descriptions a calling model reads.
Budget = Annotated[int, Field(ge=1, le=100_000, description="token budget: as many memories as fit, best first")]
When = Annotated[str, Field(min_length=1, description="ISO 8601 date or time, or words such as 'last monday'")]
Trait = Annotated[int, Field(ge=1, le=5)]
Bias = Annotated[float, Field(ge=0.0, le=1.0)]
Id = Annotated[str, Field(min_length=1, max_length=1000)]
CorrectionText = Annotated[str, Field(
    min_length=1, description=f"what is true instead, as one statement (at most {MAX_CORRECTION_CHARS:,} "
                              "characters), e.g. 'Ana lives in Porto, not Lisbon.'")]

ANNOTATIONS: Mapping[str, ToolAnnotations] = {
    "retain": ToolAnnotations(title="Retain", read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    "recall": ToolAnnotations(title="Recall", read_only_hint=True, open_world_hint=False),
    # Reflect stores the opinions it forms, so it is not read-only.
    "reflect": ToolAnnotations(title="Reflect", read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    # Nothing is deleted: the wrong memory stays as history, superseded by the correction.
    "correct": ToolAnnotations(title="Correct", read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    "forget": ToolAnnotations(title="Forget", read_only_hint=False, destructive_hint=True, idempotent_hint=True),
    "list_banks": ToolAnnotations(title="List banks", read_only_hint=True, open_world_hint=False),
}
"""Every tool by name, with the hints clients show users (a destructive tool may ask for confirmation)."""


class MemoryTools:
    """The tool bodies: each takes the bank first, checks it against the scope and calls the public API."""

    def __init__(self, hs: Hindsight, scope: BankScope) -> None:
        """Serve ``hs``'s banks within ``scope``."""
        self._hs = hs
        self._scope = scope

    async def _bank(self, bank_id: str, *, create: bool, write: bool = False) -> Bank:
        if not self._scope.allows(bank_id):  # unreachable through bound tools; kept for direct callers
            raise HindsightToolError("unknown bank", self._scope.refusal(bank_id))
        grant = self._scope.grant()
        if not grant.can_read(bank_id):
            # Outside the token's banks: the same words as a bank that does not exist (existence is not revealed).
            raise HindsightToolError("unknown bank", unknown_bank_message(bank_id))
        if write and not grant.can_write(bank_id):
            raise HindsightToolError("permission denied", f"this token ({grant.token_id}) may read bank "
                                                          f"{bank_id!r} but not change it: its scope is {grant.scope}")
        with reported():
            try:
                return await asyncio.to_thread(self._hs.bank, bank_id, create=create)
            except BankNotFoundError as exc:
                if self._scope.fixed is None:
                    raise
                # The library's message lists the store's banks; a server fixed to one shows no other.
                raise HindsightToolError("unknown bank", f"bank {bank_id!r} does not exist") from exc

    async def retain(
        self,
        bank: Annotated[BankId, Field(description="the memory bank (created on first use)")],
        content: Annotated[str | list[MessageIn], Field(
            description="plain text, or a conversation as messages (their ids become the memories' sources)")],
        timestamp: Annotated[When | None, Field(description="when it was said or written (default: now)")] = None,
        document_id: Annotated[Id | None, Field(
            description="id of this document; retaining the same id again replaces what it produced")] = None,
        context: Annotated[str | None, Field(description="free-text context for the extractor")] = None,
        extract: Annotated[bool, Field(
            description="true: each message is stored as a memory at once and a language model then adds "
                        "narrative facts beside them in the background; false: no model call at all")] = True,
        defer: Annotated[bool, Field(
            description="return as soon as the raw input is stored; even the message memories are made in the "
                        "background")] = False,
    ) -> RetainOut:
        """Store text or a conversation in long-term memory: each message becomes a memory before this returns.

        Returns the stored document's id and its memories, each with its id, sources and dates; with extract, the
        job that adds the model's facts (``job_id``).
        """
        target = await self._bank(bank, create=True, write=True)
        payload: str | list[dict[str, Any]] = (
            content if isinstance(content, str) else [m.model_dump(exclude_none=True) for m in content]
        )
        with reported():
            result = await target.aretain(payload, timestamp=timestamp, document_id=document_id, context=context,
                                          extract=extract, defer=defer)
        return RetainOut.of(target.id, result)

    async def recall(
        self,
        bank: Annotated[BankId, Field(description="the memory bank")],
        query: Annotated[str, Field(min_length=1, description="what to remember, in words")],
        budget: Budget = 2000,
        max_memories: Annotated[int | None, Field(ge=1, description="return at most this many")] = None,
        networks: Annotated[list[NetworkName] | None, Field(
            description="only these networks (default: all)")] = None,
        time_start: Annotated[When | None, Field(
            description="only memories of things that happened at or after this time")] = None,
        time_end: Annotated[When | None, Field(
            description="only memories of things that happened at or before this time")] = None,
        reference_time: Annotated[When | None, Field(
            description="'now' for time words in the query such as 'last week' (default: now, or as_of)")] = None,
        as_of: Annotated[When | None, Field(
            description="answer with what the bank held at this time: only what had been said by then, and what "
                        "was current then (default: now)")] = None,
        deadline_ms: Annotated[int | None, Field(ge=1, le=MAX_DEADLINE_MS, description=(
            "return within this many milliseconds with what finished in time; the result's 'cut' names the "
            "search channels left out (default: no deadline)"))] = None,
    ) -> RecallOut:
        """Find the memories relevant to a query: semantic, keyword, graph and temporal search fused.

        Returns as many memories as fit in the token budget, best first, each with its id, text, network,
        sources (message ids), document and dates. A memory that a later one replaced (a move, a new job, a
        correction) carries ``superseded_by`` and ``valid_until``: it is history, and comes after the memory
        current in its place unless the question asks about the past. ``as_of`` answers as the bank would have
        then. ``deadline_ms`` returns what finished in time and names in ``cut`` what did not.
        """
        target = await self._bank(bank, create=False)
        window = (time_start, time_end) if time_start is not None or time_end is not None else None
        with reported():
            result = await target.arecall(query, budget=budget, max_memories=max_memories, networks=networks,
                                          time_range=window, reference_time=reference_time, as_of=as_of,
                                          deadline_ms=deadline_ms)
        return RecallOut.of(target.id, result)

    async def reflect(
        self,
        bank: Annotated[BankId, Field(description="the memory bank")],
        query: Annotated[str, Field(min_length=1, description="the question to answer or judge")],
        budget: Budget = 2000,
        reference_time: Annotated[When | None, Field(
            description="'now' for time words in the question (default: now)")] = None,
        skepticism: Annotated[Trait | None, Field(
            description="1 trusting .. 5 demands strong evidence (default: the bank's)")] = None,
        literalism: Annotated[Trait | None, Field(
            description="1 reads between the lines .. 5 takes words literally (default: the bank's)")] = None,
        empathy: Annotated[Trait | None, Field(
            description="1 detached .. 5 weighs feelings strongly (default: the bank's)")] = None,
        bias: Annotated[Bias | None, Field(
            description="0..1, how strongly the disposition shapes judgments (default: the bank's)")] = None,
    ) -> ReflectOut:
        """Answer a question from memory in the bank's own voice and disposition, forming opinions if asked to judge.

        Recalls first, then asks a language model once. Returns the answer, the memories it relied on and any
        opinions formed (stored in the bank, so
        it needs a read-write token). Disposition traits given here override the bank's for this call.
        """
        target = await self._bank(bank, create=False, write=True)
        overrides = {name: value for name, value in (("skepticism", skepticism), ("literalism", literalism),
                                                     ("empathy", empathy), ("bias", bias)) if value is not None}
        with reported():
            disposition = None
            if overrides:
                profile = await asyncio.to_thread(lambda: target.profile)
                disposition = Disposition(**{**profile.disposition.model_dump(), **overrides})
            result = await target.areflect(query, disposition=disposition, budget=budget,
                                           reference_time=reference_time)
        return ReflectOut.of(target.id, result)

    async def correct(
        self,
        bank: Annotated[BankId, Field(description="the memory bank")],
        memory_id: Annotated[Id, Field(description="the memory that is wrong (its id from recall or retain)")],
        text: CorrectionText,
    ) -> CorrectOut:
        """Correct a memory that is wrong: store what is true instead as a new memory that supersedes it.

        Nothing is deleted: the wrong memory keeps its text as history, with ``superseded_by`` (the new memory's id)
        and ``valid_until`` (now), so recall puts the correction first and ``as_of`` an earlier time still shows
        what was believed then. The correction is recorded with who made it (the calling token) and when;
        correcting the same memory again replaces the earlier correction. Returns the new memory and the id it
        superseded. Needs a read-write token.
        """
        target = await self._bank(bank, create=False, write=True)
        by = self._scope.grant().token_id
        with reported():
            memory = await target.acorrect(memory_id, text, by=by)
        return CorrectOut.of(target.id, memory, memory_id, by)

    async def forget(
        self,
        bank: Annotated[BankId, Field(description="the memory bank")],
        memory_id: Annotated[Id | None, Field(description="forget this memory")] = None,
        document_id: Annotated[Id | None, Field(
            description="forget this document and every memory extracted from it")] = None,
        entity: Annotated[str | None, Field(
            min_length=1, description="forget every memory that mentions this entity")] = None,
    ) -> ForgetOut:
        """Delete memories for good: one memory, a document with its memories, or everything about an entity.

        Give exactly one of memory_id, document_id or entity. Returns how many memories were deleted.
        """
        target = await self._bank(bank, create=False, write=True)
        with reported():
            deleted = await target.aforget(memory_id=memory_id, document_id=document_id, entity=entity)
        return ForgetOut(bank=target.id, deleted=deleted)

    async def list_banks(self) -> BankList:
        """List the memory banks this server can reach, with their names, backgrounds and dispositions."""
        with reported():
            profiles = await asyncio.to_thread(self._hs.banks)
        return BankList(banks=[BankOut.of(p) for p in self._scope.visible(profiles)])


def bind_bank(method: Callable[..., Awaitable[Any]], bank_id: str) -> Callable[..., Awaitable[Any]]:
    """``method`` with its ``bank`` argument fixed to ``bank_id`` and removed from its signature (and so from the
    tool's schema: a client cannot even name another bank)."""
    signature = inspect.signature(method, eval_str=True)  # evaluated here: the SDK reads it from another module

    async def bound(**arguments: Any) -> Any:
        return await method(bank=bank_id, **arguments)

    bound.__name__ = method.__name__
    bound.__qualname__ = method.__qualname__
    bound.__doc__ = method.__doc__
    # The SDK builds the tool's schema from ``inspect.signature``, which honours ``__signature__``.
    bound.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != "bank"])
    return bound


def register_tools(server: MCPServer[Any], tools: MemoryTools, scope: BankScope) -> dict[str, frozenset[str]]:
    """Add every tool of ``ANNOTATIONS`` to ``server``; returns each tool's argument names (what it accepts)."""
    accepted: dict[str, frozenset[str]] = {}
    for name, hints in ANNOTATIONS.items():
        method: Callable[..., Awaitable[Any]] = getattr(tools, name)
        if scope.fixed is not None and "bank" in inspect.signature(method).parameters:
            method = bind_bank(method, scope.fixed)
        description = inspect.cleandoc(method.__doc__ or "")
        if scope.fixed is not None:
            description += f"\n\nThis server serves memory bank {scope.fixed!r}."
        server.add_tool(method, name=name, description=description, annotations=hints)
        accepted[name] = frozenset(inspect.signature(method).parameters)
    return accepted
