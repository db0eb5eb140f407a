"""Bank files on disk: write an archive as JSONL (gzip by file name), read and validate one back.

Writing goes to a temporary file beside the target, renamed into place at the end: an export that fails or is
interrupted leaves no truncated file under the name asked for. Reading checks every line (JSON, record schema,
line end), then the end record (line count and SHA-256 of the lines before it), then the references between
records; the first problem is an ``ArchiveError`` naming its line. Compression is recognised by content (the gzip
magic bytes), so a renamed file still reads.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import secrets
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ValidationError

from ..errors import InvalidInputError
from .archive import BankArchive
from .errors import ArchiveError, ArchiveIOError
from .format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_TEXT_CHARS,
    RECORD,
    BankRecord,
    DocumentRecord,
    EndRecord,
    EntityRecord,
    HeaderRecord,
    LinkRecord,
    OpinionHistoryRecord,
    UnitRecord,
    decode_vector,
    encode_vector,
)

SUFFIXES = (".jsonl", ".jsonl.gz")


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...

_GZIP_MAGIC = b"\x1f\x8b"


def check_file_name(path: str | Path) -> Path:
    """The path of a bank file to write: its name must end in ``.jsonl`` or ``.jsonl.gz`` (which decides the
    compression); ``InvalidInputError`` otherwise."""
    p = Path(path)
    if not p.name.endswith(SUFFIXES) or p.name in SUFFIXES:
        raise InvalidInputError(f"a bank file name ends in .jsonl or .jsonl.gz (gzip): {str(path)[:200]!r}")
    return p


def _records(archive: BankArchive) -> Iterator[BaseModel]:
    yield archive.header
    yield archive.bank
    yield from archive.documents
    yield from archive.entities
    for unit in archive.units:
        if archive.header.vectors and archive.vectors is not None:
            yield unit.model_copy(update={"vector": encode_vector(archive.vectors[unit.id])})
        else:
            yield unit
    yield from archive.links
    yield from archive.opinions


def _line(record: BaseModel) -> bytes:
    # ``vector`` is left out of unit records without one; every other field is written, null or not.
    exclude = {"vector"} if isinstance(record, UnitRecord) and record.vector is None else None
    return record.model_dump_json(exclude=exclude).encode("utf-8") + b"\n"


def _write_lines(out: _Sink, archive: BankArchive) -> None:
    digest = hashlib.sha256()
    count = 0
    for record in _records(archive):
        line = _line(record)
        out.write(line)
        digest.update(line)
        count += 1
    out.write(_line(EndRecord(lines=count, sha256=digest.hexdigest())))


def write_archive(archive: BankArchive, path: str | Path) -> int:
    """Write ``archive`` to ``path`` (gzip when it ends in ``.gz``); returns the bytes written (compressed size)."""
    target = check_file_name(path)
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(8)}")
    try:
        # Created here or not at all (O_EXCL: a link planted at the name is not followed), readable by the owner
        # only: a bank file holds everything the bank remembers.
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as raw:
            if target.name.endswith(".gz"):
                # mtime=0: the same bank exports to the same bytes.
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
                    _write_lines(out, archive)
            else:
                _write_lines(raw, archive)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(partial, target)
    except FileExistsError as exc:
        raise ArchiveIOError(f"cannot write bank file {str(path)[:200]}: {partial.name} already exists") from exc
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise ArchiveIOError(f"cannot write bank file {str(path)[:200]}: {exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    return target.stat().st_size


@contextlib.contextmanager
def _open_read(path: Path) -> Iterator[Iterable[bytes]]:
    with open(path, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic != _GZIP_MAGIC:
            yield raw
            return
        with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:  # closing it leaves ``raw`` to its own ``with``
            yield unzipped


MAX_LINE_BYTES = 16 * MAX_TEXT_CHARS
"""The longest line read: a record of the longest text retain takes, every character escaped (``\\uXXXX``
is six bytes) with room for its other fields. Memory per line is bounded by this, whatever the file says."""
MAX_FILE_BYTES = 8 * 1024**3
"""The most (decompressed) bytes a bank file is read for: a small ``.gz`` cannot inflate without end."""


def _bounded_lines(f: Any, path: str) -> Iterator[bytes]:
    """The lines of ``f``, each read to at most ``MAX_LINE_BYTES`` (a longer one is an ``ArchiveError`` before it is
    held whole), the file to at most ``MAX_FILE_BYTES``."""
    total = 0
    number = 0
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        total += len(line)
        if len(line) > MAX_LINE_BYTES:
            raise ArchiveError(f"is longer than {MAX_LINE_BYTES:,} bytes: no record is that large", line=number,
                               path=path)
        if total > MAX_FILE_BYTES:
            raise ArchiveError(f"the file holds more than {MAX_FILE_BYTES:,} bytes (decompressed): not a bank file "
                               "this library wrote", line=number, path=path)
        yield line


def _describe(exc: ValidationError) -> str:
    """The first schema problem of a line, in words."""
    err = exc.errors()[0]
    if err.get("type") == "json_invalid":
        return f"is not valid JSON (corrupted?): {err.get('msg', '')}"
    loc = ".".join(str(p) for p in err.get("loc", ()))
    kind = str(err["loc"][0]) if err.get("loc") else "record"
    field = loc.split(".", 1)[1] if "." in loc else loc
    return f"bad {kind} record: field {field!r}: {err.get('msg', 'invalid')}"


def _header(line: bytes, path: str) -> HeaderRecord:
    """Line 1, checked for the format and its version before its schema (a newer file says so plainly)."""
    try:
        data: Any = json.loads(line)
    except RecursionError:
        raise ArchiveError("is nested too deeply to be a header", line=1, path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"is not valid JSON, so this is not a {FORMAT_NAME} file: {exc}", line=1, path=path) \
            from None
    if not isinstance(data, dict) or data.get("record") != "header" or data.get("format") != FORMAT_NAME:
        raise ArchiveError(f"does not start with a {FORMAT_NAME} header: not a bank file", line=1, path=path)
    version = data.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ArchiveError(f"format version {version!r} is newer than this library reads ({FORMAT_VERSION}): "
                           "upgrade hindsight-memory", line=1, path=path)
    try:
        return HeaderRecord.model_validate_json(line)
    except ValidationError as exc:
        raise ArchiveError(_describe(exc), line=1, path=path) from None


def read_archive(path: str | Path) -> BankArchive:
    """Parse and validate a whole bank file; ``ArchiveError`` naming the line for anything damaged, truncated or
    inconsistent, ``ArchiveIOError`` when it cannot be read. Nothing is imported by this function."""
    p = Path(path)
    name = str(path)[:200]
    try:
        found = p.is_file()
    except OSError as exc:  # a name too long for the file system, a path through a file...: not a bank file
        raise ArchiveIOError(f"cannot read bank file {name}: {exc}") from exc
    if not found:
        raise ArchiveIOError(f"no such bank file: {name}")
    digest = hashlib.sha256()
    reader: _Reader | None = None
    end: EndRecord | None = None
    number = 0
    try:
        with _open_read(p) as f:
            for number, line in enumerate(_bounded_lines(f, name), start=1):
                if end is not None:
                    raise ArchiveError("follows the end record: the file was altered", line=number, path=name)
                if not line.endswith(b"\n"):
                    raise ArchiveError("is cut short (no line end): the file is truncated", line=number, path=name)
                if reader is None:
                    reader = _Reader(_header(line, name), name)
                    digest.update(line)
                    continue
                try:
                    record = RECORD.validate_json(line)
                except ValidationError as exc:
                    raise ArchiveError(_describe(exc), line=number, path=name) from None
                except RecursionError:
                    raise ArchiveError("is nested too deeply to be a record", line=number, path=name) from None
                if isinstance(record, EndRecord):
                    end = record
                    continue
                digest.update(line)
                reader.add(record, number)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"the compressed data is truncated or damaged after line {number}: {exc}",
                           line=number + 1, path=name) from None
    except OSError as exc:
        raise ArchiveIOError(f"cannot read bank file {name}: {exc}") from exc
    if reader is None:
        raise ArchiveError("the file is empty", path=name)
    if end is None:
        raise ArchiveError(f"the file ends after line {number} without its end record: it is truncated",
                           line=number, path=name)
    if end.lines != number - 1 or end.sha256 != digest.hexdigest():
        raise ArchiveError("the content does not match the checksum of its end record: the file was altered "
                           "after it was written", line=number, path=name)
    archive = reader.archive()
    archive.validate()
    return archive


class _Reader:
    """Files parsed records (with their line numbers) by kind, decoding vectors on the way."""

    def __init__(self, header: HeaderRecord, path: str) -> None:
        self.header = header
        self.path = path
        self.bank: BankRecord | None = None
        self.documents: list[DocumentRecord] = []
        self.entities: list[EntityRecord] = []
        self.units: list[UnitRecord] = []
        self.links: list[LinkRecord] = []
        self.opinions: list[OpinionHistoryRecord] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.lines: dict[str, list[int]] = {}

    def add(self, record: BaseModel, number: int) -> None:
        """File the record read on line ``number``."""
        if isinstance(record, HeaderRecord):
            raise ArchiveError("is a second header", line=number, path=self.path)
        if isinstance(record, BankRecord):
            if self.bank is not None:
                raise ArchiveError("is a second bank record", line=number, path=self.path)
            self.bank = record
        elif isinstance(record, DocumentRecord):
            self.documents.append(record)
        elif isinstance(record, EntityRecord):
            self.entities.append(record)
        elif isinstance(record, UnitRecord):
            self.units.append(self._unit(record, number))
        elif isinstance(record, LinkRecord):
            self.links.append(record)
        elif isinstance(record, OpinionHistoryRecord):
            self.opinions.append(record)
        self.lines.setdefault(str(getattr(record, "record", "")), []).append(number)

    def _unit(self, record: UnitRecord, number: int) -> UnitRecord:
        if record.vector is None:
            return record
        if not self.header.vectors:
            raise ArchiveError("carries a vector although the header says the file has none", line=number,
                               path=self.path)
        try:
            self.vectors[record.id] = decode_vector(record.vector, self.header.embedder.dimension)
        except ValueError as exc:
            raise ArchiveError(f"bad unit record: {exc}", line=number, path=self.path) from None
        return record.model_copy(update={"vector": None})

    def archive(self) -> BankArchive:
        """The archive read (not validated yet)."""
        if self.bank is None:
            raise ArchiveError("the file holds no bank record", path=self.path)
        return BankArchive(header=self.header, bank=self.bank, documents=self.documents, entities=self.entities,
                           units=self.units, links=self.links, opinions=self.opinions,
                           vectors=self.vectors if self.header.vectors else None, lines=self.lines, path=self.path)
