"""``import_bank``: a ``hindsight-bank`` file into a store as a new bank, all or nothing (see ``restore``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..engine import Engine
from ..errors import InvalidInputError
from ..validation import check_bank_id
from .ids import remap
from .jsonl import read_archive
from .restore import IMPORT_MARKER, restore


class ImportReport(BaseModel):
    """What an import wrote."""

    bank_id: str
    source_bank_id: str = Field(description="the bank id the file was exported from")
    path: str
    format_version: int
    counts: dict[str, int] = Field(description="records per kind written")
    networks: dict[str, int] = Field(description="memories per network")
    ids_remapped: bool = Field(description="unit and entity ids were renewed (imported under another bank id)")
    vectors: Literal["copied", "recomputed"]
    vectors_reason: str = Field("", description="why the file's vectors were not used, when they were not")
    cleared: Literal["leftover", "replaced"] | None = Field(
        None, description="an earlier bank under this id was removed first")
    seconds: float
    memories_per_s: float


def import_bank(
    engine: Engine,
    path: str | Path,
    *,
    bank_id: str | None = None,
    replace: bool = False,
    use_vectors: bool = True,
) -> ImportReport:
    """Import the bank file at ``path`` into ``engine``'s stores, as ``bank_id`` (default: the id it was exported
    from).

    The whole file is read and validated before anything is written (``ArchiveError``, naming the line, for a
    damaged, truncated or inconsistent file), then read again as it is written: documents, memories, links and
    audit entries a batch at a time, so that memory does not grow with their text. An existing bank is refused
    (``BankExistsError``) unless ``replace``; the leftover of an import that died is cleared. Vectors in the file
    are used when ``use_vectors`` and the file's embedder (name and dimension) is this store's, else recomputed
    (logged).
    Under another bank id, memory and entity ids are renewed (they are unique per store; see ``ids``).
    """
    if bank_id is not None:
        try:
            check_bank_id(bank_id)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
    started = time.perf_counter()
    archive = read_archive(path, stream=True)  # validated whole, then read again a batch at a time as it is written
    source_id = archive.bank.id
    target = remap(archive, bank_id or source_id)
    result = restore(engine, target, marker=IMPORT_MARKER, source=f"file {Path(path).name}",
                     use_vectors=use_vectors, replace=replace)
    seconds = time.perf_counter() - started
    return ImportReport(
        bank_id=target.bank.id, source_bank_id=source_id, path=str(path), format_version=archive.header.version,
        counts=target.counts(), networks=target.networks(), ids_remapped=target is not archive,
        vectors=result.vectors, vectors_reason=result.vectors_reason, cleared=result.cleared,
        seconds=round(seconds, 3), memories_per_s=round(len(target.units) / seconds, 1) if seconds > 0 else 0.0,
    )
