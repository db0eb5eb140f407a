"""The no-LLM extractor behind ``retain(..., extract=False)``: messages become units as they are.

Each message (or a short window of consecutive messages) becomes one unit whose sources are the message
ids. Entities come from NER plus the speaker's name; occurrence times come from relative or absolute date
expressions in the text, resolved against the message time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from ..models import EntityType, Message, Network
from ..temporal import parse_temporal
from .base import ExtractedEntity, ExtractedFact
from .ner import EntityRecognizer

# Chat roles are not people: they never become entities, and "assistant" marks the agent's own words.
_ROLES = frozenset({"user", "human", "assistant", "ai", "system", "tool", "agent", "bot"})
_AGENT_ROLES = frozenset({"assistant", "ai", "agent", "bot"})


def render_message(message: Message) -> str:
    """The unit text of one message: ``"Speaker: text"`` (roles are kept as written)."""
    text = " ".join(message.text.split())
    return f"{message.speaker}: {text}" if message.speaker else text


class RawExtractor:
    """Messages (or windows of ``window`` messages) as units, without any model call."""

    def __init__(self, window: int = 1, recognizer: EntityRecognizer | None = None) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.window = window
        self.recognizer = recognizer or EntityRecognizer()

    def extract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """One fact per message window, in document order; empty messages are skipped."""
        kept = [m for m in messages if m.text.strip()]
        windows = [kept[i : i + self.window] for i in range(0, len(kept), self.window)]
        texts = [" ".join(render_message(m) for m in w) for w in windows]
        entities = self.recognizer.recognize(texts)
        facts: list[ExtractedFact] = []
        for position, (window, text, found) in enumerate(zip(windows, texts, entities, strict=True)):
            when = window[0].timestamp or document_time
            start, end = when, when
            for message in window:
                constraint = parse_temporal(message.text, message.timestamp or document_time)
                if constraint is not None and constraint.range is not None and constraint.relation == "during":
                    start = constraint.range.start or when
                    end = constraint.range.end or when
                    break
            ents = list(found)
            names = {e.name.casefold() for e in ents}
            for message in window:
                speaker = (message.speaker or "").strip()
                if speaker and speaker.casefold() not in _ROLES and speaker.casefold() not in names:
                    ents.insert(0, ExtractedEntity(name=speaker, type=EntityType.PERSON))
                    names.add(speaker.casefold())
            agent = all((m.speaker or "").casefold() in _AGENT_ROLES for m in window)
            facts.append(
                ExtractedFact(
                    text=text,
                    network=Network.EXPERIENCE if agent else Network.WORLD,
                    occurred_start=start,
                    occurred_end=end,
                    mentioned_at=when,
                    entities=ents,
                    participants=[m.speaker for m in window if m.speaker],
                    sources=[m.id for m in window if m.id],
                    position=position,
                )
            )
        return facts

    async def aextract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Async twin: NER runs in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self.extract, messages, document_time=document_time, context=context)
