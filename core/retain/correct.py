"""Corrections: a user says a memory is wrong and what is true instead.

The corrected memory is stored as a new memory that supersedes the wrong one (``Memory.superseded_by``), in one
transaction: nothing is deleted, so the history shows what the bank believed and who corrected it when. The new
memory keeps the wrong one's network and sources (it corrects what those messages were taken to say) and lives
under a document of its own (``correction:<id of the corrected memory>``), so that re-retaining the source document
never drops it; correcting the same memory again replaces the earlier correction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..errors import InvalidInputError, MemoryNotFoundError
from ..extract.base import ExtractedFact
from ..models import Document, Memory, Message, RetainResult, utcnow
from ..stores.base import UnitStore
from ..text.inputs import clean_text

CORRECTION_KEY = "correction"
"""Metadata of a corrected memory: ``{"of": id of the memory it corrects, "by": who, "at": when}``."""

MAX_CORRECTION_CHARS = 4000
"""A correction is one statement, not a document."""


class Extract(Protocol):
    """Turns a text into facts with its entities and times (the raw extractor)."""

    def extract(self, messages: list[Message], *, document_time: Any, context: str | None = None
                ) -> list[ExtractedFact]:
        """One fact per message."""
        ...


def correction_document_id(memory_id: str) -> str:
    """The synthetic document a correction of ``memory_id`` is written under."""
    return f"correction:{memory_id}"


class Corrector:
    """Writes corrections for any bank of one ``Hindsight``."""

    def __init__(self, store: UnitStore, write: Callable[..., RetainResult], extractor: Callable[[], Extract]) -> None:
        """Reads through ``store``, writes through ``write`` (``RetainPipeline.store_facts``)."""
        self.store = store
        self.write = write
        self.extractor = extractor

    def correct(self, bank_id: str, memory_id: str, text: str, *, by: str | None = None) -> Memory:
        """Store ``text`` as the memory that supersedes ``memory_id`` (see the module); returns the new memory."""
        if not isinstance(text, str):
            raise InvalidInputError(f"a correction must be a string, not {type(text).__name__}")
        text = " ".join(clean_text(text, [], "correction").split())
        if not text:
            raise InvalidInputError("a correction needs the text that is true instead")
        if len(text) > MAX_CORRECTION_CHARS:
            raise InvalidInputError(f"a correction is one statement of at most {MAX_CORRECTION_CHARS} characters, "
                                    f"not {len(text)}")
        found = self.store.get_units(bank_id, [memory_id])
        if not found:
            raise MemoryNotFoundError(f"bank {bank_id!r} has no memory {memory_id[:80]!r} to correct")
        old = found[0]
        now = utcnow()
        facts = self.extractor().extract([Message(text=text, timestamp=now)], document_time=now)
        if not facts:
            raise InvalidInputError("the correction says nothing that can be stored")
        fact = facts[0]
        fact.network = old.network
        fact.sources = list(old.sources)
        fact.mentioned_at = now
        doc = Document(id=correction_document_id(old.id), bank_id=bank_id, content=text, timestamp=now)
        meta: dict[str, Any] = {CORRECTION_KEY: {"of": old.id, "by": by, "at": now.isoformat()}}
        if old.document_id is not None:
            meta[CORRECTION_KEY]["document_id"] = old.document_id
        how = {"by": "correction", "corrector": by}
        result = self.write(doc, [fact], metadata=meta, supersedes=[(0, old.id, how)])
        return result.memories[0]
