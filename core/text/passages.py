"""Long inputs as passages: a text (or a message) longer than a passage is cut into passage units with offsets.

A book retained as one unit is useless to recall (the whole book comes back, or nothing fits the budget) and
costs minutes to embed and parse. Retain therefore cuts every input longer than ``passage_chars`` into
passages of at most that many characters, preferring a paragraph end, then a sentence end, then a space, and
packing short paragraphs together. Each passage is a ``Passage`` message whose ``sources`` give its place:
``"chars:START-END"`` (character offsets, END exclusive, into the retained text; for a split message, into
that message's text, whose id is listed first). The cut is deterministic, so the facts job cuts a stored
document exactly as retain did and its facts cite the passage units.

Linear in the input: break points are found with one regex pass each and looked up by bisection.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from ..models import Message

__all__ = ["CHARS_PREFIX", "Passage", "chars_source", "message_sources", "passage_spans", "split_long_messages"]

CHARS_PREFIX = "chars:"
"""Sources that start with this are character offsets ``chars:START-END`` (END exclusive)."""

_PARAGRAPH_END = re.compile(r"\S(?=[ \t]*\r?\n[ \t\r]*\n)")  # last character of a paragraph
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")  # a sentence's closing punctuation (and quotes)
_NON_SPACE = re.compile(r"\S")


def chars_source(start: int, end: int) -> str:
    """The source naming characters ``start``..``end`` (end exclusive): ``"chars:START-END"``."""
    return f"{CHARS_PREFIX}{start}-{end}"


class Passage(Message):
    """A passage of a longer text or message, as retain stores it: one unit per passage.

    ``id`` is a label unique within the retain (what the facts job's model cites); ``sources`` is what the unit
    lists as provenance: the split message's id (when it had one), then ``chars:START-END``.
    """

    parent_id: str | None = None
    start: int = 0
    end: int = 0

    @property
    def sources(self) -> list[str]:
        """The split message's id (if any), then the passage's offsets into it."""
        span = chars_source(self.start, self.end)
        return [self.parent_id, span] if self.parent_id else [span]


def message_sources(message: Message) -> list[str]:
    """What a unit made of ``message`` lists as sources: a passage's id and offsets, else the message id."""
    if isinstance(message, Passage):
        return message.sources
    return [message.id] if message.id else []


def passage_spans(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of ``text``'s passages, each at most ``max_chars`` long and free of leading or
    trailing whitespace, in order; whitespace between them belongs to none. Blank text has no passages.

    A passage ends at the last paragraph end in the second half of its room, else the last sentence end in its
    last three quarters, else the last space there, else it is cut at ``max_chars`` (a run with no space).
    """
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    # Ends of paragraphs and sentences as positions just after them: found once, looked up by bisection.
    paragraphs = [m.end() for m in _PARAGRAPH_END.finditer(text)]
    sentences = [m.end() for m in _SENTENCE_END.finditer(text)]
    spans: list[tuple[int, int]] = []
    last = _content_end(text, 0, len(text))
    start = _skip_space(text, 0)
    while start < last:
        limit = start + max_chars
        if last <= limit:
            spans.append((start, last))  # the rest fits
            break
        end = (_last_at_most(paragraphs, limit, start + max_chars // 2)
               or _last_at_most(sentences, limit, start + max_chars // 4)
               or _last_space(text, start + max_chars // 4, limit)
               or limit)
        stop = _content_end(text, start, end)
        spans.append((start, stop))
        start = _skip_space(text, end)
    return spans


def split_long_messages(messages: Sequence[Message], max_chars: int, *, text: bool = False) -> list[Message]:
    """``messages`` with each one longer than ``max_chars`` replaced by its passages (``Passage``); shorter
    messages are kept as they are. With ``text`` (the input was a plain text: one message without an id) the
    text always becomes passages, even a short one, so that every unit of a text says where in it it is."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        whole = text and len(messages) == 1 and message.id is None
        if not whole and len(message.text) <= max_chars:
            out.append(message)
            continue
        for start, end in passage_spans(message.text, max_chars):
            span = chars_source(start, end)
            label = span if whole else f"{message.id}#{span}" if message.id else f"m{i + 1}#{span}"
            out.append(Passage(text=message.text[start:end], speaker=message.speaker, id=label,
                               timestamp=message.timestamp, parent_id=message.id, start=start, end=end))
    return out


def _skip_space(text: str, i: int) -> int:
    match = _NON_SPACE.search(text, i)
    return match.start() if match else len(text)


def _content_end(text: str, start: int, end: int) -> int:
    """``end`` moved back over trailing whitespace (never before ``start``)."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _last_at_most(points: list[int], limit: int, floor: int) -> int | None:
    """The last of the sorted ``points`` in ``(floor, limit]``, or None."""
    i = bisect.bisect_right(points, limit) - 1
    return points[i] if i >= 0 and points[i] > floor else None


def _last_space(text: str, floor: int, limit: int) -> int | None:
    """The position of the last whitespace in ``(floor, limit)``, or None."""
    for i in range(limit - 1, floor, -1):  # at most max_chars steps, only when no sentence ends in the room
        if text[i].isspace():
            return i
    return None
