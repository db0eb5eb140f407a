"""Taking a bank with you: export to a file, import from one, migrate a store to the server backend.

- ``export_bank`` / ``Bank.export``: one bank to a versioned JSONL file (``format``; gzip for ``.jsonl.gz``).
- ``import_bank`` / ``Hindsight.import_bank``: such a file into a store as a new bank, all or nothing
  (``restore`` explains how, with the store protocols, no half-filled bank is left).
- ``migrate.migrate``: every bank (or some) of one opened store into another, resumable and verified (import it
  from ``hindsight_core.portability.migrate``: the function shares its module's name).

Everything reads and writes through the store protocols (``stores/base.py``), so every backend gets it.
Background jobs are not exported: they are process work in flight (a retain's follow-ups, a scheduled reflect),
tied to the leases of the processes of the source store; their results are in the exported memories, and a
document whose extraction had not finished keeps its status and is resumed by the importing store.
The command line (``hindsight export``, ``import``, ``migrate``) is in ``portability.cli``.

Names are imported on first use, so that ``import hindsight_core.cli.portability`` (the command line's parser)
loads no store or model code.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "FORMAT_NAME": "format",
    "FORMAT_VERSION": "format",
    "ArchiveError": "errors",
    "ArchiveIOError": "errors",
    "BankExistsError": "errors",
    "VerificationError": "errors",
    "ExportReport": "exporter",
    "export_bank": "exporter",
    "ImportReport": "importer",
    "import_bank": "importer",
    "BankMigration": "migrate",
    "MigrationReport": "migrate",
}

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ArchiveError",
    "ArchiveIOError",
    "BankExistsError",
    "BankMigration",
    "ExportReport",
    "ImportReport",
    "MigrationReport",
    "VerificationError",
    "export_bank",
    "import_bank",
]

if TYPE_CHECKING:  # pragma: no cover
    from .errors import ArchiveError, ArchiveIOError, BankExistsError, VerificationError
    from .exporter import ExportReport, export_bank
    from .format import FORMAT_NAME, FORMAT_VERSION
    from .importer import ImportReport, import_bank
    from .migrate import BankMigration, MigrationReport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
