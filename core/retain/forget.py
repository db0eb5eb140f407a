"""Forgetting: memories, documents, entities and whole banks leave both stores, even across a crash.

The graph store is the truth, so it goes first: one transaction deletes the units and marks their vectors
(``VectorMarks``); the vectors are deleted next and the marks cleared. A process dying in between, or a
vector index that fails, leaves marks that the next sync (same process, worker, or the next open) finishes;
until then no lookup trusts a vector whose unit is gone. The other order could let a crash re-index a
memory the caller asked to forget.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..stores.base import BankStore, DocumentStore, EntityStore, UnitStore, VectorMarks
from ..vectors.vector_sync import VectorSync

log = logging.getLogger(__name__)


class ForgetStore(BankStore, DocumentStore, UnitStore, EntityStore, VectorMarks, Protocol):
    """What forgetting deletes through: documents, units (by id or entity), banks, and the vector marks."""


class ForgetPipeline:
    """Deletes from both stores for any bank of one ``Hindsight``."""

    def __init__(self, store: ForgetStore, vectors: VectorSync) -> None:
        """Deletes through ``store`` (the truth) and then ``vectors``."""
        self.store = store
        self.vectors = vectors

    def forget(
        self, bank_id: str, *, memory_id: str | None = None, document_id: str | None = None, entity: str | None = None
    ) -> int:
        """Delete one memory, everything from a document (and the document), or every memory mentioning an
        entity; returns how many memories were deleted. Exactly one selector is given (checked by ``Bank``)."""
        store = self.store
        if document_id is not None:
            # The document and its units go in one transaction: a crash never leaves it without its memories.
            gone = store.forget_document(bank_id, document_id, owner=self.vectors.owner)
            self.vectors.finish_delete(bank_id, gone)
            return len(gone)
        if memory_id is not None:
            ids = [memory_id]
        else:
            found = store.find_entity(bank_id, entity or "")
            ids = store.units_of_entity(bank_id, found.id) if found else []
        return self.delete_units(bank_id, ids)

    def delete_units(self, bank_id: str, ids: list[str]) -> int:
        """Delete units from the graph (marking their vectors), then their vectors; returns how many existed."""
        if not ids:
            return 0
        with self.vectors.hold(bank_id, ids):
            deleted = self.store.delete_units(bank_id, ids, owner=self.vectors.owner)
            self.vectors.finish_delete(bank_id, ids)
        return deleted

    def delete_bank(self, bank_id: str) -> None:
        """Delete a bank from the graph (marking its collection), then drop its vector collection."""
        with self.vectors.hold(bank_id, [""]):
            self.store.delete_bank(bank_id, owner=self.vectors.owner)
            try:
                self.vectors.index.drop_bank(bank_id)
                self.store.clear_vector_marks(bank_id, [""])
            except Exception as exc:  # the mark stays: the next sync drops the collection
                log.warning("dropping the vectors of bank %r deferred (left marked for sync): %s", bank_id, exc)
