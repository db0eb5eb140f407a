"""LLM fact extractor (paper section 4.1.2): narrative facts with time ranges, networks, entities and causes.

The messages of a document are cut into small windows (``windows``: about ``chunk_messages`` messages,
balanced, split further when a prompt would exceed ``token_budget``) so a small local model
(Qwen2.5-Coder-1.5B through llama.cpp) handles one window per call. Each call sends the prompt of
``prompt`` and asks for JSON constrained by ``fact_schema``; everything the model says is then checked and
normalised (``normalise``, with times resolved by ``dates`` through the shared ``hindsight_core.temporal``
resolver), because a 1.5B model gets ids, dates and enum values wrong often enough that trusting it would
corrupt provenance.

Failures: a malformed answer, or one whose facts all fail validation (e.g. empty text), is retried up to
``max_retries`` times (corrective note, temperature 0.3), then raised as ``ExtractionError`` with the raw
output. Empty or looping (mostly duplicate) answers are retried too, and then accepted as they are (a
window of greetings has no facts); if the whole non-empty document yields zero facts,
``EmptyExtractionError`` is raised. Other ``LLMError`` s (backend down) propagate unchanged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel

from ..errors import ExtractionError, InvalidInputError
from ..llm.base import LLM, ChatMessage, MalformedOutputError
from ..models import Message
from .base import ExtractedFact
from .fact_schema import output_model
from .ner import EntityRecognizer
from .normalise import ChunkResult, Rejected, assemble, validate
from .prompt import NOTE_RESERVE, default_count_tokens, system_prompt, user_prompt
from .windows import ExtractionWindow, WindowPlanner

__all__ = ["DEFAULT_TOKEN_BUDGET", "ExtractionWindow", "LLMExtractor"]

DEFAULT_TOKEN_BUDGET = 1500
"""Upper bound on prompt + JSON schema tokens per call (small local models have small, slow contexts)."""

# Output tokens allowed per requested fact (a fully filled fact is ~120-150 tokens of JSON, a lean one ~40-70).
_TOKENS_PER_FACT = 170
_TOKENS_PER_LEAN_FACT = 90


@dataclass
class _Request:
    messages: list[ChatMessage]
    temperature: float


@dataclass
class _ChunkOutcome:
    result: ChunkResult | None = None
    error: ExtractionError | None = None
    raws: list[str] = field(default_factory=list)


class LLMExtractor:
    """Extracts narrative facts with an ``LLM`` (paper 4.1.2); implements the ``Extractor`` protocol.

    Args:
        llm: any backend implementing ``hindsight_core.llm.base.LLM``.
        max_retries: extra attempts per window after a malformed or invalid answer.
        chunk_messages: about this many messages per call (windows are balanced, so 19 messages with 8
            become 7+6+6, and split further when a window would exceed ``token_budget``).
        max_facts_per_chunk: ``maxItems`` of the facts list; also sizes the output token limit.
        count_tokens: tokenizer used for the prompt budget; defaults to ``len(text) / 4``.
        token_budget: bound on prompt + JSON schema tokens per call.
        max_concurrency: windows processed at once by ``aextract``.
        include_previous: show the previous window's last message for pronoun resolution.
        lean: ask for text, sources and dates only, and find entities with NER (``recognizer``) and people and
            networks in code; False asks the model for every field (networks, people, typed entities, causal
            relations), at about three times the output tokens (docs/BENCHMARKS.md, "Raw first, facts later").
        recognizer: the NER used with ``lean`` (default: spaCy's, loaded on first use).
        retry_loops: ask again when an answer mostly repeats one fact (default: only with the full schema; a lean
            answer's distinct facts are kept at once, since a second generation costs as much as the first).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_retries: int = 2,
        chunk_messages: int = 8,
        max_facts_per_chunk: int = 6,
        count_tokens: Callable[[str], int] | None = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_concurrency: int = 2,
        include_previous: bool = True,
        lean: bool = True,
        recognizer: EntityRecognizer | None = None,
        retry_loops: bool | None = None,
    ) -> None:
        if max_retries < 0:
            raise InvalidInputError(f"max_retries must be >= 0, got {max_retries}")
        if chunk_messages < 1 or max_facts_per_chunk < 1 or max_concurrency < 1:
            raise InvalidInputError("chunk_messages, max_facts_per_chunk and max_concurrency must be >= 1")
        self.llm = llm
        self.max_retries = max_retries
        self.chunk_messages = chunk_messages
        self.max_facts_per_chunk = max_facts_per_chunk
        self.count_tokens: Callable[[str], int] = count_tokens or default_count_tokens
        self.token_budget = token_budget
        self.max_concurrency = max_concurrency
        self.include_previous = include_previous
        self.lean = lean
        self.retry_loops = (not lean) if retry_loops is None else retry_loops
        self._recognizer = recognizer
        self.schema: type[BaseModel] = output_model(max_facts_per_chunk, lean)
        self.max_output_tokens = (_TOKENS_PER_LEAN_FACT if lean else _TOKENS_PER_FACT) * max_facts_per_chunk + 32
        self._system = system_prompt(max_facts_per_chunk, lean)
        self._schema_json = json.dumps(self.schema.model_json_schema(), separators=(",", ":"))
        fixed = self.count_tokens(self._system) + self.count_tokens(self._schema_json) + 80
        if fixed + NOTE_RESERVE >= token_budget:
            raise InvalidInputError(
                f"token_budget {token_budget} cannot hold the extraction prompt and schema ({fixed} tokens)"
            )

    # ---- public API ----------------------------------------------------------------------------------

    def extract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Extract facts from ``messages`` (one document), one LLM call per window, in order."""
        chunks = self.plan(messages, document_time=document_time, context=context)
        outcomes = [self._run_sync(chunk) for chunk in chunks]
        return self._assemble(chunks, outcomes)

    async def aextract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Async twin of ``extract``: windows run concurrently (at most ``max_concurrency`` at once)."""
        chunks = self.plan(messages, document_time=document_time, context=context)
        gate = asyncio.Semaphore(self.max_concurrency)  # per call: never bound to another event loop

        async def run(chunk: ExtractionWindow) -> _ChunkOutcome:
            async with gate:
                return await self._run_async(chunk)

        tasks = [asyncio.ensure_future(run(chunk)) for chunk in chunks]
        try:
            outcomes = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # one window failed: stop spending model time on the others
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return self._assemble(chunks, list(outcomes))

    def plan(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractionWindow]:
        """Cut messages into prompt windows that respect ``chunk_messages`` and ``token_budget``."""
        planner = WindowPlanner(
            chunk_messages=self.chunk_messages,
            include_previous=self.include_previous,
            budget=self.token_budget - NOTE_RESERVE,
            prompt_tokens=self.prompt_tokens,
            count_tokens=self.count_tokens,
        )
        return planner.plan(messages, document_time=document_time, context=context)

    def build_prompt(self, chunk: ExtractionWindow, note: str | None = None) -> list[ChatMessage]:
        """The chat messages sent for one window (``note`` is the corrective text added on retries)."""
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": user_prompt(chunk, note)},
        ]

    def prompt_tokens(self, chunk: ExtractionWindow, note: str | None = None) -> int:
        """Estimated tokens of the prompt plus the JSON schema for one window."""
        msgs = self.build_prompt(chunk, note)
        return sum(self.count_tokens(m["content"]) + 4 for m in msgs) + self.count_tokens(self._schema_json)

    # ---- one window: attempts and validation ---------------------------------------------------------

    def _attempts(
        self, chunk: ExtractionWindow
    ) -> Generator[_Request, BaseModel | MalformedOutputError, _ChunkOutcome]:
        """Retry loop shared by the sync and async drivers: yields requests, receives answers or errors."""
        note: str | None = None
        outcome = _ChunkOutcome()
        reason = ""
        best: ChunkResult | None = None  # the best valid-but-unsatisfying answer (empty or looping)
        for attempt in range(self.max_retries + 1):
            # Retry at a little temperature as well: a deterministic model repeats its mistake.
            reply = yield _Request(self.build_prompt(chunk, note), 0.0 if attempt == 0 else 0.3)
            if isinstance(reply, MalformedOutputError):
                raw = reply.raw or ""
                reason = f"output did not match the schema ({reply})"
            else:
                raw = reply.model_dump_json()
                try:
                    result = validate(reply, chunk, raw)
                except Rejected as rejected:
                    reason = str(rejected)
                else:
                    if result.drafts and (not result.looped or not self.retry_loops):
                        outcome.raws.append(raw)
                        outcome.result = result
                        return outcome
                    if best is None or len(result.drafts) > len(best.drafts):
                        best = result
                    reason = "the same fact was repeated" if result.drafts else "no facts were returned"
            outcome.raws.append(raw)
            note = (
                f"Your previous answer was rejected: {reason[:200]}. Answer again with valid JSON: different "
                "facts with non-empty text and src ids from the [brackets]."
            )
        if best is not None:
            # Valid but empty (a window of greetings has no facts) or repetitive (its distinct facts are
            # still good) on every try: accept it. The document level raises EmptyExtractionError if
            # nothing at all was found.
            outcome.result = best
            return outcome
        outcome.error = ExtractionError(
            f"LLM extraction failed for {chunk.describe()} after {self.max_retries + 1} attempt(s) with "
            f"{self._llm_name}: {reason}",
            raw_output=outcome.raws[-1] if outcome.raws else None,
        )
        return outcome

    def _run_sync(self, chunk: ExtractionWindow) -> _ChunkOutcome:
        steps = self._attempts(chunk)
        request = next(steps)
        while True:
            reply: BaseModel | MalformedOutputError
            try:
                reply = self.llm.generate(
                    request.messages,
                    self.schema,
                    max_tokens=self.max_output_tokens,
                    temperature=request.temperature,
                )
            except MalformedOutputError as exc:
                reply = exc
            try:
                request = steps.send(reply)
            except StopIteration as stop:
                return self._raise_on_error(stop.value)

    async def _run_async(self, chunk: ExtractionWindow) -> _ChunkOutcome:
        steps = self._attempts(chunk)
        request = next(steps)
        while True:
            reply: BaseModel | MalformedOutputError
            try:
                reply = await self.llm.agenerate(
                    request.messages,
                    self.schema,
                    max_tokens=self.max_output_tokens,
                    temperature=request.temperature,
                )
            except MalformedOutputError as exc:
                reply = exc
            try:
                request = steps.send(reply)
            except StopIteration as stop:
                return self._raise_on_error(stop.value)

    @staticmethod
    def _raise_on_error(outcome: _ChunkOutcome) -> _ChunkOutcome:
        if outcome.error is not None:
            raise outcome.error
        return outcome

    # ---- document assembly ---------------------------------------------------------------------------

    @property
    def _llm_name(self) -> str:
        return str(getattr(self.llm, "name", type(self.llm).__name__))

    def _assemble(self, chunks: list[ExtractionWindow], outcomes: list[_ChunkOutcome]) -> list[ExtractedFact]:
        results = [outcome.result for outcome in outcomes]
        raws = [raw for outcome in outcomes for raw in outcome.raws]
        facts = assemble(chunks, results, raws, self._llm_name)
        if self.lean and facts:
            self._add_named_entities(facts)
        return facts

    def _add_named_entities(self, facts: list[ExtractedFact]) -> None:
        """NER's entities of each lean fact, after the people ``normalise`` already listed."""
        if self._recognizer is None:
            self._recognizer = EntityRecognizer()
        for fact, found in zip(facts, self._recognizer.recognize([f.text for f in facts]), strict=True):
            names = {e.name.casefold() for e in fact.entities}
            fact.entities = [*fact.entities, *(e for e in found if e.name.casefold() not in names)]
