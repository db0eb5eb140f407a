"""Readers for the input formats the CLI and benchmarks accept: plain text, JSON messages, LoCoMo.

A LoCoMo-style conversation (``{"conversation": {"speaker_a", "session_1_date_time", "session_1": [...]}}``)
becomes one document per session, timestamped with the session date, with ``dia_id`` as message ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidInputError
from ..text.inputs import parse_timestamp

_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_EVIDENCE = re.compile(r"D(\d+):(\d+)")


@dataclass
class Session:
    """One document to retain: its id, time and messages."""

    document_id: str
    timestamp: datetime | None
    messages: list[dict[str, Any]]
    text: str | None = None  # plain-text input instead of messages

    @property
    def content(self) -> str | list[dict[str, Any]]:
        """What to hand to ``Bank.retain``."""
        return self.text if self.text is not None else self.messages


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` (falls back to the general timestamp parser)."""
    m = _LOCOMO_DATE.search(text)
    if m:
        hour, minute, ampm, day, month, year = m.groups()
        h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
        mon = _MONTHS.get(month.lower())
        if mon:
            return datetime(int(year), mon, int(day), h, int(minute), tzinfo=UTC)
    parsed = parse_timestamp(text, "session date")
    assert parsed is not None
    return parsed


def locomo_message(turn: Mapping[str, Any]) -> dict[str, Any]:
    """One LoCoMo turn as a message; a shared image's caption is kept as part of what was observed."""
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares {caption}]"
    return {"speaker": turn.get("speaker"), "text": text, "id": turn.get("dia_id")}


def locomo_sessions(sample: Mapping[str, Any]) -> list[Session]:
    """Sessions of one LoCoMo sample in order (document id ``<sample_id>:session_<n>``)."""
    conv = sample.get("conversation", sample)
    keys = sorted(
        (k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)),
        key=lambda k: int(k.split("_")[1]),
    )
    sample_id = str(sample.get("sample_id", "conversation"))
    out = []
    for key in keys:
        date = conv.get(f"{key}_date_time")
        out.append(
            Session(
                document_id=f"{sample_id}:{key}",
                timestamp=parse_locomo_date(date) if date else None,
                messages=[locomo_message(t) for t in conv[key]],
            )
        )
    return out


def evidence_ids(evidence: Any) -> set[str]:
    """Normalise LoCoMo evidence (some entries are malformed, e.g. ``"D8:6; D9:17"``) to dia_ids."""
    items = evidence if isinstance(evidence, list) else [evidence]
    out: set[str] = set()
    for item in items:
        for d, t in _EVIDENCE.findall(str(item)):
            out.add(f"D{int(d)}:{int(t)}")
    return out


def read_input(raw: str) -> Iterator[Session]:
    """Sessions from CLI input: LoCoMo JSON (one sample or a list), a JSON message list, or plain text."""
    stripped = raw.lstrip()
    if stripped[:1] in "[{":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            data = None
        if data is not None:
            yield from _json_sessions(data)
            return
    if not raw.strip():
        raise InvalidInputError("input is empty")
    yield Session(document_id="", timestamp=None, messages=[], text=raw)


def _json_sessions(data: Any) -> Iterator[Session]:
    samples = data if isinstance(data, list) else [data]
    if samples and all(isinstance(s, Mapping) and "conversation" in s for s in samples):
        for sample in samples:
            yield from locomo_sessions(sample)
        return
    if isinstance(data, Mapping) and "messages" in data:
        yield Session(document_id=str(data.get("id", "")), timestamp=parse_timestamp(data.get("timestamp")),
                      messages=list(data["messages"]))
        return
    if isinstance(data, list) and all(isinstance(m, Mapping) for m in data):
        yield Session(document_id="", timestamp=None, messages=list(data))
        return
    raise InvalidInputError("JSON input must be a message list, {'messages': [...]}, or LoCoMo conversations")
