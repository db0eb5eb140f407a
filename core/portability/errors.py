"""Errors of export, import and migration: each says what failed, where, and what was kept."""

from __future__ import annotations

from ..errors import HindsightError, InvalidInputError


class ArchiveError(InvalidInputError):
    """A bank file that cannot be imported: not the format, a newer version, corrupted or truncated.

    ``line`` is the 1-based line the problem was found on (None when it concerns the whole file, such as a
    checksum that does not match). Nothing was written when this is raised: the whole file is validated first.
    """

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None) -> None:
        where = ", ".join(p for p in (path, f"line {line}" if line is not None else None) if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.line = line
        self.path = path


class BankExistsError(InvalidInputError):
    """The target bank of an import or migration exists already (and is not a leftover of one that died):
    nothing is overwritten unless asked (``replace=True``, ``--replace``)."""


class ArchiveIOError(HindsightError, OSError):
    """The bank file could not be read or written (missing, unreadable, disk full). Nothing was imported; an
    export that fails leaves no partial file behind."""


class VerificationError(HindsightError):
    """A copied bank does not match its source (counts, or the recall order of the sample queries); the copy
    was removed so that a rerun starts it again."""
