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
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

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
    AuditRecord,
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
    vector_problem,
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
    yield from archive.audit


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


def read_archive(path: str | Path, *, stream: bool = False) -> BankArchive:
    """Parse and validate a whole bank file; ``ArchiveError`` naming the line for anything damaged, truncated or
    inconsistent, ``ArchiveIOError`` when it cannot be read. Nothing is imported by this function.

    ``stream=True`` keeps only the small records (header, bank, entities, opinion histories) and the ids the
    reference checks need: documents, units, links and audit entries are ``FileRecords`` that read the file again,
    a record at a time, whenever they are iterated (an import then holds one write batch, not the file).
    """
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
                    reader = _Reader(_header(line, name), name, keep=not stream)
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
    archive = reader.archive(FileSource(p, name, digest.hexdigest(), number) if stream else None)
    archive.validate()
    return archive


class _Reader:
    """Files parsed records (with their line numbers) by kind, decoding vectors on the way."""

    def __init__(self, header: HeaderRecord, path: str, *, keep: bool = True) -> None:
        self.header = header
        self.path = path
        self.keep = keep  # False: the large kinds are counted (their lines noted) and read again when iterated
        self.bank: BankRecord | None = None
        self.documents: list[DocumentRecord] = []
        self.entities: list[EntityRecord] = []
        self.units: list[UnitRecord] = []
        self.links: list[LinkRecord] = []
        self.opinions: list[OpinionHistoryRecord] = []
        self.audit: list[AuditRecord] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.vector_problem: str | None = None  # the first vector no embedder makes: the import recomputes them
        self.lines: dict[str, list[int]] = {}

    def add(self, record: BaseModel, number: int) -> None:
        """File the record read on line ``number``."""
        if isinstance(record, HeaderRecord):
            raise ArchiveError("is a second header", line=number, path=self.path)
        if isinstance(record, BankRecord):
            if self.bank is not None:
                raise ArchiveError("is a second bank record", line=number, path=self.path)
            self.bank = record
        elif isinstance(record, EntityRecord):
            self.entities.append(record)
        elif isinstance(record, OpinionHistoryRecord):
            self.opinions.append(record)
        elif isinstance(record, UnitRecord):
            unit = self._unit(record, number)
            if self.keep:
                self.units.append(unit)
        elif self.keep and isinstance(record, DocumentRecord):
            self.documents.append(record)
        elif self.keep and isinstance(record, LinkRecord):
            self.links.append(record)
        elif self.keep and isinstance(record, AuditRecord):
            self.audit.append(record)
        self.lines.setdefault(str(getattr(record, "record", "")), []).append(number)

    def _unit(self, record: UnitRecord, number: int) -> UnitRecord:
        if record.vector is None:
            if self.header.vectors and not self.keep:  # kept units are checked whole in ``BankArchive.validate``
                raise ArchiveError("has no vector although the header says vectors are included", line=number,
                                   path=self.path)
            return record
        if not self.header.vectors:
            raise ArchiveError("carries a vector although the header says the file has none", line=number,
                               path=self.path)
        try:
            vector = decode_vector(record.vector, self.header.embedder.dimension)
        except ValueError as exc:
            raise ArchiveError(f"bad unit record: {exc}", line=number, path=self.path) from None
        problem = vector_problem(vector)
        if problem is not None and self.vector_problem is None:
            self.vector_problem = f"line {number} holds {problem}"
        if not self.keep:
            return record  # streamed: the vector stays in the record, decoded again when it is written
        self.vectors[record.id] = vector
        return record.model_copy(update={"vector": None})

    def archive(self, source: FileSource | None = None) -> BankArchive:
        """The archive read (not validated yet); with ``source``, its large kinds are read from it when iterated."""
        if self.bank is None:
            raise ArchiveError("the file holds no bank record", path=self.path)
        if source is None:
            return BankArchive(header=self.header, bank=self.bank, documents=self.documents, entities=self.entities,
                               units=self.units, links=self.links, opinions=self.opinions, audit=self.audit,
                               vector_problem=self.vector_problem,
                               vectors=self.vectors if self.header.vectors else None, lines=self.lines,
                               path=self.path)

        def records(kind: str, model: type[R]) -> FileRecords[R]:
            return FileRecords(source, kind, model, len(self.lines.get(kind, [])))

        return BankArchive(header=self.header, bank=self.bank, documents=records("document", DocumentRecord),
                           entities=self.entities, units=records("unit", UnitRecord),
                           links=records("link", LinkRecord), opinions=self.opinions,
                           audit=records("audit", AuditRecord), vectors=None, vectors_inline=self.header.vectors,
                           vector_problem=self.vector_problem, lines=self.lines, path=self.path)


R = TypeVar("R", bound=BaseModel)
T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class FileSource:
    """A bank file validated whole once: where it is, and what its lines hashed to (the end record's line)."""

    path: Path
    name: str
    sha256: str
    end_line: int


class FileRecords(Collection[R]):
    """The records of one kind in a validated bank file, read again from the file each time they are iterated: a
    record at a time, in file order, so that iterating holds one record. ``transform`` maps each record (the ids
    of a bank imported under another id). The whole file is hashed on every pass: a file changed since it was
    validated ends the pass with an ``ArchiveError`` (an import then removes what it wrote)."""

    def __init__(self, source: FileSource, kind: str, model: type[BaseModel], count: int,
                 transform: Callable[[Any], R] | None = None) -> None:
        self.source = source
        self.kind = kind
        self.model = model
        self.count = count
        self.transform = transform
        self._prefix = b'{"record":"' + kind.encode() + b'"'

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(r == item for r in self)

    def mapped(self, fn: Callable[[R], T]) -> FileRecords[T]:
        """The same records, each passed through ``fn`` when read."""
        first = self.transform
        composed: Callable[[Any], T] = (lambda r: fn(first(r))) if first is not None else fn
        return FileRecords(self.source, self.kind, self.model, self.count, composed)

    def _parse(self, line: bytes, number: int) -> BaseModel | None:
        # The writer puts ``record`` first; a line written otherwise is parsed whole to learn its kind.
        standard = line.startswith(b'{"record":"')
        if standard and not line.startswith(self._prefix):
            return None
        try:
            record = RECORD.validate_json(line)
        except (ValidationError, RecursionError):
            raise ArchiveError("changed since the file was validated", line=number, path=self.source.name) from None
        return record if isinstance(record, self.model) else None

    def __iter__(self) -> Iterator[R]:
        src = self.source
        digest = hashlib.sha256()
        number = 0
        try:
            with _open_read(src.path) as f:
                for number, line in enumerate(_bounded_lines(f, src.name), start=1):
                    if number >= src.end_line:
                        break
                    digest.update(line)
                    record = self._parse(line, number) if number > 1 else None
                    if record is not None:
                        # ``_parse`` returned an instance of ``self.model``: the R this collection was made for.
                        yield self.transform(record) if self.transform is not None else cast(R, record)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ArchiveError(f"the compressed data is damaged after line {number}: {exc}", line=number + 1,
                               path=src.name) from None
        except OSError as exc:
            raise ArchiveIOError(f"cannot read bank file {src.name}: {exc}") from exc
        if number < src.end_line or digest.hexdigest() != src.sha256:
            raise ArchiveError("the file changed while it was being imported", path=src.name)
