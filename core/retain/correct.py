"""Corrections: a user says a memory is wrong and what is true instead.

The corrected memory is stored as a new memory that supersedes the wrong one (``Memory.superseded_by``), in one
transaction: nothing is deleted, so the history shows what the bank believed and who corrected it when. The new
memory keeps the wrong one's network and sources (it corrects what those messages were taken to say), an opinion's
confidence (with a history that starts at its formation), and lives
under a document of its own (``correction:<id of the corrected memory>``), so that re-retaining the source document
never drops it; correcting the same memory again replaces the earlier correction.

Durable and concurrent: the new memory and the supersession commit in one graph transaction (its vector written
first and marked, as retain does), so a crash leaves either nothing or both, and calling ``correct`` again replaces
whatever an earlier, failed call left under the correction's document. The write reads the earlier correction before
its transaction, so two processes correcting the same memory at once could both commit, the later one superseding
nothing: after its commit a correction checks what the store holds and settles it (``Corrector._settle``): the memory
superseded by it, done; by a correction committed meanwhile, written again over both (this call is the later one,
as when corrections come one after the other); forgotten meanwhile, the corrections of it go too
(``MemoryNotFoundError``), as forgetting it afterwards would have taken them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..errors import ConflictError, InvalidInputError, MemoryNotFoundError
from ..extract.base import ExtractedFact
from ..models import Document, Memory, Message, OpinionEvent, RetainResult, utcnow
from ..stores.base import UnitStore
from ..text.inputs import clean_text

CORRECTION_KEY = "correction"
"""Metadata of a corrected memory: ``{"of": id of the memory it corrects, "by": who, "at": when}``."""

MAX_CORRECTION_CHARS = 4000
"""A correction is one statement, not a document."""

MAX_CORRECTOR_CHARS = 200
"""Who corrected a memory is a name or a token id, not a text (``hindsight correct --by`` takes as much)."""

MAX_ATTEMPTS = 5
"""Writes of one correction while other processes keep correcting the same memory (each retry is another's commit)."""


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
        if not any(ch.isalnum() for ch in text):  # empty, blank, or only invisible characters and punctuation
            raise InvalidInputError("a correction needs the text that is true instead")
        if len(text) > MAX_CORRECTION_CHARS:
            raise InvalidInputError(f"a correction is one statement of at most {MAX_CORRECTION_CHARS} characters, "
                                    f"not {len(text)}")
        if by is not None:
            if not isinstance(by, str):
                raise InvalidInputError(f"who corrects a memory is named by a string, not {type(by).__name__}")
            by = " ".join(clean_text(by, [], "corrector").split()) or None
            if by is not None and len(by) > MAX_CORRECTOR_CHARS:
                raise InvalidInputError(f"who corrects a memory is named in at most {MAX_CORRECTOR_CHARS} characters, "
                                        f"not {len(by):,}")
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
        fact.confidence = old.confidence  # an opinion corrected is still held as firmly (None for other networks)

        def formed(units: list[Memory]) -> list[OpinionEvent]:  # an opinion's history starts with its formation
            return [OpinionEvent(opinion_id=u.id, at=now, label="formed", new_confidence=u.confidence,
                                 rationale=f"correction of {old.id}") for u in units if u.confidence is not None]
        doc = Document(id=correction_document_id(old.id), bank_id=bank_id, content=text, timestamp=now)
        meta: dict[str, Any] = {CORRECTION_KEY: {"of": old.id, "by": by, "at": now.isoformat()}}
        if old.document_id is not None:
            meta[CORRECTION_KEY]["document_id"] = old.document_id
        how = {"by": "correction", "corrector": by}
        for _ in range(MAX_ATTEMPTS):
            # Replaces what an earlier correction (or a failed one) left under the document, in the same transaction.
            new = self.write(doc, [fact], metadata=meta, opinion_events=formed,
                             supersedes=[(0, old.id, how)]).memories[0]
            outcome = self._settle(bank_id, old.id, new.id, doc.id)
            if outcome == "done":
                return new
            if outcome == "forgotten":
                self.write(doc, [])  # the corrections of a forgotten memory go with it
                raise MemoryNotFoundError(f"memory {memory_id[:80]!r} of bank {bank_id!r} was forgotten (or replaced "
                                          "by a retain of its document) while it was being corrected; nothing of the "
                                          "correction was kept")
        raise ConflictError(f"memory {memory_id[:80]!r} of bank {bank_id!r} kept being corrected by other processes "
                            f"({MAX_ATTEMPTS} tries); the latest of their corrections stands, call again to replace it")

    def _settle(self, bank_id: str, old_id: str, new_id: str, document_id: str) -> str:
        """After a correction's commit: ``done`` when the corrected memory is superseded by it (or by what it
        superseded first, as before any correction), or when a later correction replaced it already; ``forgotten``
        when the corrected memory is gone; ``again`` when a correction that another process committed meanwhile
        holds the supersession (or none does), so that this one, the later, must be written over both."""
        found = self.store.get_units(bank_id, [old_id])
        if not found:
            return "forgotten"
        holder = found[0].superseded_by
        if holder == new_id or new_id not in self.store.units_exist(bank_id, [new_id]):
            return "done"
        if holder is None or holder in self.store.units_of_document(bank_id, document_id):
            return "again"
        return "done"  # superseded before it was corrected (a later statement): the first supersession stands
