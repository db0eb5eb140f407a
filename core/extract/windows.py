"""Prompt windows of the LLM extractor: which messages go into one call, within a token budget.

The messages of a document are cut into small windows ("exchanges", about ``chunk_messages`` messages,
balanced, so 19 messages with 8 become 7+6+6) and split further when a prompt would exceed the budget: the
earlier context line goes first, then the window is halved, then the caller's context is dropped, and a
single message that still does not fit is cut into segments (at sentence ends, else at word boundaries)
that all keep the message's id. Each window but the first may show the previous window's last message,
for pronouns only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..models import Message, as_utc

__all__ = ["ExtractionWindow", "WindowLine", "WindowPlanner", "fmt_time"]

_MAX_CONTEXT_CHARS = 600


def fmt_time(ts: datetime) -> str:
    """A message time as shown in prompts: minutes, or just the date for date-only (midnight) times."""
    # Date-only inputs (midnight) are shown as dates: a fake "00:00" invites wrong "tonight" readings.
    return ts.strftime("%Y-%m-%d") if (ts.hour, ts.minute, ts.second) == (0, 0, 0) else ts.strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class WindowLine:
    """One message (or one segment of an over-long message) as shown in a prompt."""

    label: str  # shown in [brackets]: the message id, or a positional label when the message has none
    msg_id: str | None
    time: datetime
    speaker: str
    text: str
    index: int  # position of the message in the input

    def render(self, max_chars: int | None = None, reference: datetime | None = None) -> str:
        """The prompt line: ``[label] (time) speaker: text``, the text cut at ``max_chars`` if given; the time is
        left out when it is ``reference`` to the minute (the prompt states the reference time once: a session's
        messages usually share it, and each repeat cost the model about ten tokens to read)."""
        text = self.text if max_chars is None or len(self.text) <= max_chars else self.text[:max_chars] + "..."
        same = reference is not None and fmt_time(self.time) == fmt_time(reference)
        return f"[{self.label}] {self.speaker}: {text}" if same else f"[{self.label}] ({fmt_time(self.time)}) " \
            f"{self.speaker}: {text}"


@dataclass
class ExtractionWindow:
    """One prompt window: the messages of one LLM call, the earlier context line and the reference time."""

    lines: list[WindowLine]
    previous: WindowLine | None
    reference: datetime
    context: str | None

    def describe(self) -> str:
        """The window's message labels, for error messages."""
        first, last = self.lines[0].label, self.lines[-1].label
        return f"messages {first}" if first == last else f"messages {first}..{last}"


def message_lines(messages: Sequence[Message], reference: datetime) -> list[WindowLine]:
    """The non-blank messages as prompt lines (whitespace collapsed, missing times = the reference)."""
    lines: list[WindowLine] = []
    for i, raw in enumerate(messages):
        msg = raw if isinstance(raw, Message) else Message.model_validate(raw)
        text = " ".join(msg.text.split())
        if not text:
            continue  # blank messages carry nothing to extract
        lines.append(
            WindowLine(
                label=msg.id or f"m{i + 1}",
                msg_id=msg.id,
                time=msg.timestamp or reference,
                speaker=(msg.speaker or "unknown").strip() or "unknown",
                text=text,
                index=i,
            )
        )
    return lines


@dataclass
class WindowPlanner:
    """Cuts messages into windows whose prompts fit ``budget`` tokens as measured by ``prompt_tokens``.

    ``budget`` is the token budget less what the retry note needs; ``prompt_tokens`` measures the whole
    prompt (and schema) of a window; ``count_tokens`` measures a piece of message text.
    """

    chunk_messages: int
    include_previous: bool
    budget: int
    prompt_tokens: Callable[[ExtractionWindow], int]
    count_tokens: Callable[[str], int]

    def plan(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractionWindow]:
        """The windows of one document, in message order."""
        reference = as_utc(document_time)
        lines = message_lines(messages, reference)
        if context:
            context = " ".join(context.split())[:_MAX_CONTEXT_CHARS]
        chunks: list[ExtractionWindow] = []
        n_groups = math.ceil(len(lines) / self.chunk_messages)
        start = 0
        for g in range(n_groups):
            # Balanced windows: no lonely one-message tail window that lacks conversational context.
            size = len(lines) // n_groups + (1 if g < len(lines) % n_groups else 0)
            group = lines[start : start + size]
            start += size
            previous = chunks[-1].lines[-1] if chunks and self.include_previous else None
            chunks.extend(self._fit(group, previous, reference, context))
        return chunks

    def _fits(self, chunk: ExtractionWindow) -> bool:
        return self.prompt_tokens(chunk) <= self.budget

    def _fit(
        self, group: list[WindowLine], previous: WindowLine | None, reference: datetime, context: str | None
    ) -> list[ExtractionWindow]:
        chunk = ExtractionWindow(group, previous, reference, context)
        if self._fits(chunk):
            return [chunk]
        if previous is not None:  # the context line is a nicety: drop it before splitting real messages
            return self._fit(group, None, reference, context)
        if len(group) > 1:
            mid = len(group) // 2
            head = self._fit(group[:mid], None, reference, context)
            return head + self._fit(
                group[mid:], head[-1].lines[-1] if self.include_previous else None, reference, context
            )
        if context:  # one message and no room: the caller's context goes before the message is cut
            return self._fit(group, None, reference, None)
        return [ExtractionWindow([seg], None, reference, None) for seg in self._segments(group[0], reference)]

    def _segments(self, line: WindowLine, reference: datetime) -> list[WindowLine]:
        """Split one over-long message into segments that each fit; all keep the message's id."""
        empty = ExtractionWindow(
            [WindowLine(line.label, line.msg_id, line.time, line.speaker, "", line.index)], None, reference, None
        )
        room = max(16, self.budget - self.prompt_tokens(empty))
        pieces: list[str] = []
        for sentence in re.split(r"(?<=[.!?])\s+", line.text):
            if self.count_tokens(sentence) <= room:
                pieces.append(sentence)
                continue
            words = sentence.split(" ")  # a sentence longer than the room: cut it at word boundaries
            step = max(1, len(words) * room // max(1, self.count_tokens(sentence)) - 1)
            pieces.extend(" ".join(words[i : i + step]) for i in range(0, len(words), step))
        segments: list[str] = []
        current = ""
        for piece in pieces:
            candidate = f"{current} {piece}".strip()
            if current and self.count_tokens(candidate) > room:
                segments.append(current)
                candidate = piece
            current = candidate
        if current:
            segments.append(current)
        return [WindowLine(line.label, line.msg_id, line.time, line.speaker, seg, line.index) for seg in segments]
