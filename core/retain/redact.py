"""Forgotten messages leave the stored document too.

Retain stores the raw input before anything that can fail (``Document.content``), and the facts job and an export
read it from there. Forgetting a raw memory by id or by entity must therefore cut its messages out of that content,
in the same transaction that deletes the memory: otherwise ``export`` still writes the text, and a facts job queued
before the forget extracts it again as a fact that cites nothing.

A forgotten message of a chat document keeps its place, id and time with no text and no speaker (a blank message
makes no unit, so the document's other messages still line up with their units, and the explorer's timeline can
still place the gap); a passage of a long message or of a text is blanked with spaces, so the offsets
(``chars:START-END``) that the other passages' units list as sources still point at their words.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInputError
from ..models import Document, DocumentKind, Memory, Message
from ..text.inputs import document_input, normalise_messages, raw_json
from ..text.passages import Passage, passage_spans, split_long_messages


def raw_unit_of_message(messages: Sequence[Message], raw: Sequence[Memory], window: int) -> dict[int, str]:
    """Message index -> the raw unit holding it. The raw units are the document's messages (blank ones skipped)
    in windows of ``window``, in order; if some were forgotten since, message ids are matched instead."""
    kept = [i for i, m in enumerate(messages) if m.text.strip()]
    windows = [kept[k : k + window] for k in range(0, len(kept), window)]
    if len(windows) == len(raw):
        return {i: unit.id for unit, group in zip(raw, windows, strict=True) for i in group}
    by_id = {source: unit.id for unit in raw for source in unit.sources}
    return {i: by_id[str(m.id)] for i, m in enumerate(messages) if m.id is not None and str(m.id) in by_id}


def redacted_content(doc: Document, raw: Sequence[Memory], forgotten: set[str], *, window: int, passage_chars: int,
                     max_chars: int) -> str | None:
    """``doc``'s content without the messages (or passages) of the raw units ``forgotten``, given all of the
    document's raw units ``raw`` in order; None when none of its messages is among them."""
    is_text = doc.kind == DocumentKind.TEXT
    messages, _ = normalise_messages(document_input(doc), doc.timestamp, [], max_chars)
    pieces = split_long_messages(messages, passage_chars, text=is_text)
    unit_of = raw_unit_of_message(pieces, raw, window)
    cut = [i for i, unit in unit_of.items() if unit in forgotten]
    if not cut:
        return None
    # Which original message each piece came from: as ``split_long_messages`` cuts them, a message is one piece, or
    # as many passages as ``passage_spans`` finds in it.
    owner: list[int] = []
    for k, message in enumerate(messages):
        whole = is_text and len(messages) == 1 and message.id is None
        split = whole or len(message.text) > passage_chars
        owner += [k] * (len(passage_spans(message.text, passage_chars)) if split else 1)
    if len(owner) != len(pieces):  # pragma: no cover - the two cuts are the same function's
        raise InvalidInputError(f"document {doc.id!r}: its passages do not line up with its messages")
    texts = [message.text for message in messages]
    dropped: set[int] = set()
    for i in cut:
        piece = pieces[i]
        if isinstance(piece, Passage):
            text = texts[owner[i]]
            texts[owner[i]] = text[:piece.start] + " " * (piece.end - piece.start) + text[piece.end:]
        else:
            dropped.add(owner[i])
    original = document_input(doc)
    if isinstance(original, str):
        return texts[0] if texts else ""
    # Stored as retain stores messages (``raw_json``); a forgotten one is an empty message at its place and time.
    return raw_json([Message(text="", id=m.id, timestamp=m.timestamp) if k in dropped
                     else m.model_copy(update={"text": texts[k]}) for k, m in enumerate(messages)], original)
