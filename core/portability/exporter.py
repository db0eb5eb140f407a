"""``export_bank``: one bank to a ``hindsight-bank`` file (see ``format``)."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..engine import Engine
from .collect import collect_bank
from .jsonl import check_file_name, write_archive


class ExportReport(BaseModel):
    """What an export wrote."""

    bank_id: str
    path: str
    format_version: int
    with_vectors: bool
    counts: dict[str, int] = Field(description="records per kind")
    networks: dict[str, int] = Field(description="memories per network")
    bytes: int
    seconds: float
    memories_per_s: float


def export_bank(engine: Engine, bank_id: str, path: str | Path, *, with_vectors: bool = False) -> ExportReport:
    """Write bank ``bank_id`` of ``engine``'s stores to ``path`` (``.jsonl``, or ``.jsonl.gz`` for gzip).

    ``with_vectors`` adds each memory's vector (an import reuses them when its embedder is the same one, instead of
    embedding again). The file appears complete or not at all. Raises ``BankNotFoundError``, ``InvalidInputError``
    for a file name without those suffixes, ``ArchiveIOError`` when it cannot be written.
    """
    target = check_file_name(path)  # before reading anything: a wrong name fails at once
    started = time.perf_counter()
    archive = collect_bank(engine, bank_id, with_vectors=with_vectors)
    size = write_archive(archive, target)
    seconds = time.perf_counter() - started
    return ExportReport(
        bank_id=bank_id, path=str(target), format_version=archive.header.version, with_vectors=with_vectors,
        counts=archive.counts(), networks=archive.networks(), bytes=size, seconds=round(seconds, 3),
        memories_per_s=round(len(archive.units) / seconds, 1) if seconds > 0 else 0.0,
    )
