"""Switching a bank to another embedder without retaining again: its vectors are rebuilt from the stored units.

Every unit is embedded from the graph store with the same text retain and reconcile embed
(``unit_text.stored_embedding_texts``: the date first, a reply with the question before it), into a pending
collection beside the one in use (``stores.base.RebuildableIndex``). Only when every unit has its new vector does
one atomic write make the pending collection the bank's; the old one is deleted after. So:

- a crash half way leaves the old collection in use and the stores consistent (``hindsight check`` is clean); the
  pending collection stays on the side;
- a rerun with the same embedder resumes: the vectors already in the pending collection are kept and only the rest
  are embedded (a rerun with another embedder starts over);
- retains that other processes commit meanwhile are not lost: before the swap the pending collection is compared
  with the bank's units again and caught up (new units embedded, forgotten ones dropped) until a pass finds nothing.
  A write that lands between that last pass and the swap goes to the old collection only; its unit is re-embedded
  by the reconcile of the next open with the new embedder. Processes still running with the old embedder cannot
  mix two vector spaces afterwards: on the embedded index their next call raises ``EmbedderMismatchError`` (they
  reload after another process writes); on a Chroma server their cached collection is gone, so calls fail with a
  ``StoreError`` until they reopen.

The graph store is only read. The bank is then opened with the new embedder (``Hindsight.open(embedder=...)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from ..config import Settings
from ..embedders import Embedder
from ..errors import BankNotFoundError, InvalidInputError, StoreError
from ..stores.base import BankStore, RebuildableIndex, UnitStore, VectorIndex
from .unit_text import stored_embedding_texts, vector_metadata

Progress = Callable[[int, int], None]
"""Called after each batch with (units with a new vector so far, units in the bank)."""

BATCH = 256
"""Units embedded and written per step: the most a crash can cost a resumed run."""

CATCH_UP_ROUNDS = 5
"""Passes that look for units retained during the re-embed before the swap gives up waiting for writers to pause."""


class ReembedStore(BankStore, UnitStore, Protocol):
    """What a re-embed reads: whether the bank exists, and its units."""


class ReembedReport(BaseModel):
    """What ``reembed_bank`` did to one bank."""

    bank_id: str
    embedder: str = Field(description="the embedder the bank is now indexed with")
    dimension: int
    previous_embedder: str | None = Field(default=None, description="the embedder the bank was indexed with before")
    previous_dimension: int | None = None
    units: int = Field(description="units of the bank (each has one vector in the new collection)")
    embedded: int = Field(description="units embedded by this run")
    resumed: int = Field(description="vectors kept from an earlier run that was interrupted")
    dropped: int = Field(default=0, description="vectors of units forgotten meanwhile, dropped before the swap")
    seconds: float = 0.0


def reembed_bank(
    store: ReembedStore,
    index: VectorIndex,
    embedder: Embedder,
    settings: Settings,
    bank_id: str,
    *,
    batch_size: int = BATCH,
    progress: Progress | None = None,
) -> ReembedReport:
    """Rebuild the bank's vectors with ``embedder`` beside the ones in use and swap them in at once (see module)."""
    if not isinstance(embedder, Embedder):  # a bad argument must not surface as an AttributeError half way
        raise InvalidInputError(f"not an embedder: {type(embedder).__name__} (an object with name, dimension and "
                                "embed, or a name such as 'mpnet')")
    if not isinstance(index, RebuildableIndex):
        raise StoreError(f"the vector index {type(index).__name__} cannot rebuild a bank beside the one in use")
    if store.get_bank(bank_id) is None:
        raise BankNotFoundError(f"no bank {bank_id!r}")
    started = time.perf_counter()
    previous = index.collection_embedder(bank_id)
    done = index.begin_rebuild(bank_id, embedder.name, embedder.dimension)
    run = _Run(store, index, embedder, settings, bank_id, max(1, batch_size), progress)
    resumed = run.follow(done)
    for _ in range(CATCH_UP_ROUNDS):  # units retained (or forgotten) by other processes while this ran
        if not run.follow(index.rebuild_ids(bank_id), final=True):
            break
    index.finish_rebuild(bank_id)
    return ReembedReport(
        bank_id=bank_id, embedder=embedder.name, dimension=embedder.dimension,
        previous_embedder=previous[0] if previous else None, previous_dimension=previous[1] if previous else None,
        units=run.total, embedded=run.embedded, resumed=resumed, dropped=run.dropped,
        seconds=round(time.perf_counter() - started, 3),
    )


class _Run:
    """One re-embed's state: counts, and the step that makes the pending collection follow the units."""

    def __init__(self, store: ReembedStore, index: RebuildableIndex, embedder: Embedder, settings: Settings,
                 bank_id: str, batch_size: int, progress: Progress | None) -> None:
        self.store, self.index, self.embedder, self.settings = store, index, embedder, settings
        self.bank_id, self.batch_size, self.progress = bank_id, batch_size, progress
        self.embedded = self.dropped = self.total = 0

    def follow(self, present: set[str], *, final: bool = False) -> int:
        """Embed the units missing from ``present`` (the pending collection's ids) and drop ids of units that are
        gone. Returns how many of ``present`` were kept, or with ``final`` how many changes were made."""
        unit_ids = self.store.unit_ids(self.bank_id)
        gone = sorted(present - unit_ids)
        if gone:
            self.index.rebuild_delete(self.bank_id, gone)
            self.dropped += len(gone)
        todo = sorted(unit_ids - present)
        self.total = len(unit_ids)
        kept = len(present) - len(gone)
        written = kept
        if self.progress is not None:
            self.progress(written, self.total)
        for start in range(0, len(todo), self.batch_size):
            written += self._embed(todo[start : start + self.batch_size])
            if self.progress is not None:
                self.progress(min(written, self.total), self.total)
        return len(todo) + len(gone) if final else kept

    def _embed(self, ids: Sequence[str]) -> int:
        units = self.store.get_units(self.bank_id, ids)  # a unit forgotten since unit_ids is skipped
        if not units:
            return 0
        texts = stored_embedding_texts(self.store, self.bank_id, units, self.settings.embed_time_reference,
                                       self.settings.embed_reply_context)
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        self.index.rebuild_upsert(self.bank_id, [u.id for u in units], vectors, [vector_metadata(u) for u in units])
        self.embedded += len(units)
        return len(units)
