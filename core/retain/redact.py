"""Forgotten messages leave the stored document too.

Retain stores the raw input before anything that can fail (``Document.content``), and the facts job and an export
read it from there. Forgetting a raw memory by id or by entity must therefore cut its messages out of that content,
in the same transaction that deletes the memory (``ForgetPipeline``: the write only lands if the document still
holds what was read, else the forget is tried again): otherwise ``export`` still writes the text, and a facts job
queued before the forget extracts it again.

What a unit holds is read from its own sources, not worked out again from today's settings: a message id names a
message, ``chars:START-END`` a passage of a text or of a split message. Only a unit whose sources name nothing
(messages retained without ids) is placed by cutting the document again as retain cut it.

A forgotten message of a chat document keeps its place, id and time with no text and no speaker (a blank message
makes no unit, so the document's other messages still line up with their units, and the explorer's timeline can
still place the gap); a forgotten passage is blanked with spaces, so the offsets that the other passages' units
list as sources still point at their words. Everything else is left exactly as it was stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..models import Document, DocumentKind, Memory, Message
from ..text.inputs import document_input, normalise_messages
from ..text.passages import CHARS_PREFIX, Passage, passage_spans, split_long_messages


def raw_unit_of_message(messages: Sequence[Message], raw: Sequence[Memory], window: int) -> dict[int, str]:
    """Message index -> the raw unit holding it. The raw units are the document's messages (blank ones skipped)
    in windows of ``window``, in order; if some were forgotten since, message ids are matched instead."""
    kept = [i for i, m in enumerate(messages) if m.text.strip()]
    windows = [kept[k : k + window] for k in range(0, len(kept), window)]
    if len(windows) == len(raw):
        return {i: unit.id for unit, group in zip(raw, windows, strict=True) for i in group}
    by_id = {source: unit.id for unit in raw for source in unit.sources}
    return {i: by_id[str(m.id)] for i, m in enumerate(messages) if m.id is not None and str(m.id) in by_id}


def _spans(unit: Memory) -> list[tuple[int, int]]:
    out = []
    for source in unit.sources:
        if source.startswith(CHARS_PREFIX):
            start, _, end = source.removeprefix(CHARS_PREFIX).partition("-")
            if start.isdigit() and end.isdigit():
                out.append((int(start), int(end)))
    return out


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    for start, end in spans:
        start, end = max(0, start), min(len(text), end)
        if start < end:
            text = text[:start] + " " * (end - start) + text[end:]
    return text


class _Cuts:
    """What to take out of each message (by its index in the stored list): all of it, or spans of its text."""

    def __init__(self) -> None:
        self.whole: set[int] = set()
        self.spans: dict[int, list[tuple[int, int]]] = {}

    def add_spans(self, k: int, spans: Sequence[tuple[int, int]]) -> None:
        self.spans.setdefault(k, []).extend(spans)


def _by_cutting_again(doc: Document, raw: Sequence[Memory], units: set[str], cuts: _Cuts, *, window: int,
                      passage_chars: int, max_chars: int) -> None:
    """Place ``units`` (whose sources name no message) by cutting ``doc`` into pieces as retain did."""
    is_text = doc.kind == DocumentKind.TEXT
    messages, _ = normalise_messages(document_input(doc), doc.timestamp, [], max_chars)
    pieces = split_long_messages(messages, passage_chars, text=is_text)
    owner: list[int] = []  # the message each piece came from: itself, or as many passages as passage_spans finds
    for k, message in enumerate(messages):
        whole = is_text and len(messages) == 1 and message.id is None
        split = whole or len(message.text) > passage_chars
        owner += [k] * (len(passage_spans(message.text, passage_chars)) if split else 1)
    if len(owner) != len(pieces):  # pragma: no cover - both count with passage_spans
        return
    for i, unit in raw_unit_of_message(pieces, raw, window).items():
        if unit in units:
            piece = pieces[i]
            if isinstance(piece, Passage):
                cuts.add_spans(owner[i], [(piece.start, piece.end)])
            else:
                cuts.whole.add(owner[i])


def redacted_content(doc: Document, raw: Sequence[Memory], forgotten: set[str], *, window: int, passage_chars: int,
                     max_chars: int) -> str | None:
    """``doc``'s stored content without what the raw units ``forgotten`` hold, given all of the document's raw units
    ``raw`` in order; None when it holds none of it. Raises ``InvalidInputError`` when the content does not parse."""
    gone = [u for u in raw if u.id in forgotten]
    cuts = _Cuts()
    unplaced: set[str] = set()
    if isinstance(document_input(doc), str):
        for unit in gone:
            spans = _spans(unit)
            if spans:
                cuts.add_spans(0, spans)
            else:
                unplaced.add(unit.id)
        if unplaced:
            _by_cutting_again(doc, raw, unplaced, cuts, window=window, passage_chars=passage_chars,
                              max_chars=max_chars)
        text = _blank(doc.content, cuts.spans.get(0, []))
        return None if text == doc.content else text
    stored: list[dict[str, Any]] = json.loads(doc.content)  # document_input parsed it as a list of messages
    where: dict[str, list[int]] = {}
    for k, message in enumerate(stored):
        if message.get("id") is not None:
            where.setdefault(str(message["id"]), []).append(k)
    for unit in gone:
        named = [where[s] for s in unit.sources if not s.startswith(CHARS_PREFIX) and len(where.get(s, [])) == 1]
        spans = _spans(unit)
        if not named:
            unplaced.add(unit.id)
        elif spans:
            cuts.add_spans(named[0][0], spans)  # a passage of one split message
        else:
            cuts.whole.update(k for ks in named for k in ks)
    if unplaced:
        _by_cutting_again(doc, raw, unplaced, cuts, window=window, passage_chars=passage_chars, max_chars=max_chars)
    if not cuts.whole and not cuts.spans:
        return None
    out: list[dict[str, Any]] = []
    for k, message in enumerate(stored):
        if k in cuts.whole:
            # Its place, id and time stay (the timeline places the gap by them); its words and speaker go.
            out.append({"text": "", **{key: message[key] for key in ("id", "timestamp") if message.get(key)}})
        elif k in cuts.spans:
            key = "text" if "text" in message else "content"
            out.append({**message, key: _blank(str(message.get(key) or ""), cuts.spans[k])})
        else:
            out.append(message)
    return json.dumps(out, ensure_ascii=False)
