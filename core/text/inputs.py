"""Validation and normalisation of what callers hand to retain: text, messages, timestamps.

Bad input raises ``InvalidInputError`` naming the problem; repairable input (broken unicode) is repaired
and reported as a warning instead of being dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..errors import InvalidInputError, TooManyMessagesError
from ..models import Document, DocumentKind, Message
from ..temporal.dateline import find_dateline
from ..temporal.timestamps import parse_timestamp

RetainInput = str | Mapping[str, Any] | Sequence[Mapping[str, Any] | Message | str]

_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str, warnings: list[str], where: str) -> str:
    """Replace lone surrogates and control characters (they cannot be stored as UTF-8) and say so."""
    fixed = _SURROGATES.sub("\ufffd", text)
    fixed = _CONTROL.sub(" ", fixed)
    if fixed != text:
        warnings.append(f"{where}: replaced invalid unicode or control characters")
    return fixed


def normalise_messages(
    content: RetainInput, timestamp: datetime | None, warnings: list[str], max_chars: int,
    max_messages: int | None = None,
) -> tuple[list[Message], bool]:
    """Turn retain input into messages; returns (messages, is_conversation).

    A text is one message without an id (retain cuts it into passages: ``passages.split_long_messages``).
    More than ``max_messages`` messages raise ``TooManyMessagesError`` before any is read.
    """
    if content is None:
        raise InvalidInputError("nothing to retain: content is None")
    if isinstance(content, str):
        text = clean_text(content, warnings, "text")
        if not text.strip():
            raise InvalidInputError("nothing to retain: the text is empty")
        if len(text) > max_chars:
            raise InvalidInputError(f"text of {len(text):,} characters exceeds the limit of {max_chars:,}")
        return [Message(text=text, timestamp=timestamp)], False
    if isinstance(content, Mapping):
        if "messages" in content:
            return normalise_messages(content["messages"], timestamp, warnings, max_chars, max_messages)
        content = [content]
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        raise InvalidInputError(f"cannot retain a {type(content).__name__}: pass text or a list of messages")
    if max_messages is not None and len(content) > max_messages:
        raise TooManyMessagesError(
            f"retain got {len(content):,} messages, more than max_messages_per_retain={max_messages:,} "
            "(Settings.max_messages_per_retain): retain them in several calls, for example one per session or day",
            count=len(content), limit=max_messages,
        )
    messages: list[Message] = []
    total = 0
    for i, item in enumerate(content):
        try:
            if isinstance(item, Message):
                msg = item
            elif isinstance(item, str):
                msg = Message(text=item)
            elif isinstance(item, Mapping):
                data = dict(item)
                if "timestamp" in data:
                    data["timestamp"] = parse_timestamp(data["timestamp"], f"message {i} timestamp")
                msg = Message.model_validate(data)
            else:
                raise InvalidInputError(f"message {i} is a {type(item).__name__}, not a dict or string")
        except ValidationError as exc:
            raise InvalidInputError(f"message {i} is malformed: {exc.errors()[0]['msg']}") from exc
        text = clean_text(msg.text, warnings, f"message {i}")
        speaker = clean_text(msg.speaker, warnings, f"message {i} speaker") if msg.speaker else None
        total += len(text)
        messages.append(msg.model_copy(update={"text": text, "speaker": speaker,
                                               "timestamp": msg.timestamp or timestamp}))
    if total > max_chars:
        raise InvalidInputError(f"messages of {total:,} characters exceed the limit of {max_chars:,}")
    if not any(m.text.strip() for m in messages):
        raise InvalidInputError("nothing to retain: every message is empty")
    ids = [m.id for m in messages if m.id is not None]
    if len(ids) != len(set(ids)):
        raise InvalidInputError("message ids must be unique within one retain")
    return messages, True


def date_messages(messages: Sequence[Message], now: datetime) -> list[Message]:
    """The messages, each with a time: its own (or the retain's, set by ``normalise_messages``), else the date line
    its text opens with ("Written on 3 November 2026", ``temporal.dateline``), else ``now``.

    A note retained without a time was written when its date line says, not when it is retained: its "last
    Tuesday" is counted from that day. Each fact's dates are resolved against its message's time, so this is where
    that time must be right.
    """
    out: list[Message] = []
    for m in messages:
        if m.timestamp is None:
            line = find_dateline(m.text, now)
            m = m.model_copy(update={"timestamp": line.time if line is not None else now})
        out.append(m)
    return out


def raw_json(messages: Sequence[Message], original: RetainInput) -> str:
    """What is stored as the raw document: the original text, or the messages as JSON."""
    if isinstance(original, str):
        return _SURROGATES.sub("\ufffd", original)
    return json.dumps([m.model_dump(mode="json", exclude_none=True) for m in messages], ensure_ascii=False)


def document_input(doc: Document) -> RetainInput:
    """The retain input a stored raw document was made from (messages, or plain text), by its recorded kind.

    Plain text that happens to look like a JSON list stays text. Documents stored before the kind was
    recorded are read as messages only when their content is a JSON list of message objects.
    """
    if doc.kind == DocumentKind.TEXT:
        return doc.content
    try:
        data = json.loads(doc.content)
    except json.JSONDecodeError:
        if doc.kind == DocumentKind.MESSAGES:
            raise InvalidInputError(f"document {doc.id!r} should hold messages as JSON but does not") from None
        return doc.content
    if isinstance(data, list) and all(isinstance(m, dict) and ("text" in m or "content" in m) for m in data):
        try:
            return [Message.model_validate(m) for m in data]
        except ValidationError as exc:
            raise InvalidInputError(f"document {doc.id!r} holds malformed messages: {exc}") from exc
    if doc.kind == DocumentKind.MESSAGES:
        raise InvalidInputError(f"document {doc.id!r} should hold a list of messages but does not")
    return doc.content
