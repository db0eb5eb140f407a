"""The bank file format ``hindsight-bank``, version 2: one JSON object per line (JSONL), gzip when the file name ends
in ``.gz``. ``docs/PORTABILITY.md`` describes it field by field; these models are its executable definition.

Line 1 is the ``header``, line 2 the ``bank`` profile, then every ``document``, ``entity``, ``unit`` (memories of all
four networks, observations included), ``link``, ``opinion_history`` and ``audit`` record (the bank's audit trail,
oldest first; version 2, a version-1 file has none), and the last line is ``end`` (how
many lines came before it and their SHA-256: a file cut at a line boundary, or altered after export, is detected).
Each object names its kind in ``record``. Times are ISO-8601 in UTC; vectors, when written, are base64 of
little-endian float32 (the source index's values, bit for bit). Unknown fields are errors: a damaged line is refused,
not half read.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from importlib import metadata
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from ..config import Settings
from ..models import (
    AUDIT_MAX_IDS,
    AuditEntry,
    Disposition,
    DocumentKind,
    DocumentStatus,
    EntityType,
    LinkType,
    Network,
    OpinionEvent,
)
from ..validation import check_bank_id, check_identifier, check_printable

MAX_TEXT_CHARS = Settings.model_fields["max_document_chars"].default
"""What retain accepts as one document: a plain-text document, the texts of a message list together, and any one
memory's text (retain never makes a memory longer than its document) are capped at it."""
MAX_MESSAGES = Settings.model_fields["max_messages_per_retain"].default
"""What retain accepts as one message list."""
MAX_DOCUMENT_CHARS = 2 * MAX_TEXT_CHARS
"""A raw document as stored: a message list's JSON (ids, speakers, times around the texts) at most twice its texts'
cap; the texts themselves are held to ``MAX_TEXT_CHARS`` (``DocumentRecord``)."""
MAX_VECTOR_NORM = 1e4
"""A vector's length is at most this (and at least its inverse): embedders give unit or modest lengths; values
near float32's limit (3e38) would overflow every similarity, and a zero vector has no direction. A file with
another vector has its vectors recomputed on import (``vector_problem``)."""

RecordId = Annotated[str, AfterValidator(check_identifier)]
"""An id in a bank file: the rule every id of the public API follows (``validation.Identifier``)."""
RecordBankId = Annotated[str, AfterValidator(check_bank_id)]
"""A bank id in a bank file (``validation.BankId``)."""
RecordText = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(check_printable)]
RecordNote = Annotated[str, AfterValidator(check_printable)]
"""Other text in a bank file (names, background, context, sources): control characters replaced, no size cap
beyond the line's (retain does not cap these either)."""
"""Text in a bank file: at most what retain takes, control characters replaced as retain replaces them (a NUL or
a terminal escape planted in a file must not reach a terminal through ``hindsight recall``)."""

FORMAT_NAME = "hindsight-bank"
FORMAT_VERSION = 2
"""Bumped on any change an older reader could not read; readers refuse files of a newer version. Version 2 added
``audit`` records (a version-1 file, which has none, still reads)."""

RECORD_KINDS = ("bank", "document", "entity", "unit", "link", "opinion_history", "audit")
"""The kinds counted in the header, in file order (``header`` and ``end`` frame them)."""
SINCE_VERSION = {"audit": 2}
"""Kinds a file of an older version does not count in its header (it holds none of them)."""

def generator() -> str:
    """Which library wrote a file (informational)."""
    try:
        return f"hindsight-memory {metadata.version('hindsight-memory')}"
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return "hindsight-memory"


class _Record(BaseModel):
    # extra="forbid": a field this version does not know is damage (or a newer writer), never silently dropped.
    # ser_json_inf_nan="constants": a NaN in caller metadata survives the round trip instead of becoming null.
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class EmbedderInfo(_Record):
    """The embedder that built the exported bank's vectors."""

    name: str
    dimension: int = Field(gt=0)


class HeaderRecord(_Record):
    """Line 1: what the file is and what it holds."""

    record: Literal["header"] = "header"
    format: Literal["hindsight-bank"]
    version: int = Field(ge=1)
    created_at: datetime
    generator: str
    bank_id: RecordBankId
    embedder: EmbedderInfo
    vectors: bool = Field(description="whether unit records carry their vectors")
    counts: dict[str, int] = Field(description="records per kind (bank, document, entity, unit, link, "
                                               "opinion_history)")
    networks: dict[str, int] = Field(description="unit records per network")


class BankRecord(_Record):
    """The bank profile (paper 5.1): name, first-person background, disposition."""

    record: Literal["bank"] = "bank"
    id: RecordBankId
    name: RecordNote
    background: RecordNote
    disposition: Disposition
    created_at: datetime


class DocumentRecord(_Record):
    """A raw document as retained (``content`` is the raw input: JSON messages or plain text), without the
    process state of the store it came from (owner lease, background job)."""

    record: Literal["document"] = "document"
    id: RecordId
    content: Annotated[str, Field(max_length=MAX_DOCUMENT_CHARS), AfterValidator(check_printable)]
    context: RecordNote | None
    timestamp: datetime | None
    status: DocumentStatus
    error: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    kind: DocumentKind | None
    options: dict[str, Any]
    revision: str | None

    @model_validator(mode="after")
    def _retains_caps(self) -> DocumentRecord:
        """The caps retain puts on what it stores: a text, or a message list's count and texts together."""
        texts = _message_texts(self.content) if self.kind != DocumentKind.TEXT else None
        if texts is None:
            if len(self.content) > MAX_TEXT_CHARS:
                raise ValueError(f"content: a text document holds at most {MAX_TEXT_CHARS:,} characters (retain's "
                                 f"limit), this one {len(self.content):,}")
            return self
        if len(texts) > MAX_MESSAGES:
            raise ValueError(f"content: a document holds at most {MAX_MESSAGES:,} messages (retain's limit), this "
                             f"one {len(texts):,}")
        total = sum(len(t) for t in texts)
        if total > MAX_TEXT_CHARS:
            raise ValueError(f"content: a document's messages hold at most {MAX_TEXT_CHARS:,} characters of text "
                             f"(retain's limit), these {total:,}")
        return self


def _message_texts(content: str) -> list[str] | None:
    """The texts of the messages a document's content holds as JSON, or None when it holds none (plain text)."""
    if not content.startswith("["):
        return None
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        return None
    return [str(m.get("text", m.get("content", ""))) for m in data]


class EntityRecord(_Record):
    """A canonical entity; ``mention_count`` is informational (the importing store recounts it)."""

    record: Literal["entity"] = "entity"
    id: RecordId
    name: RecordNote
    type: EntityType
    aliases: list[RecordNote]
    mention_count: int = Field(ge=0)
    first_seen: datetime | None
    last_seen: datetime | None


class UnitRecord(_Record):
    """A memory unit of any network; ``entities`` are the ids of the entities it mentions. Records come grouped
    by ``document_id`` in document order, groups in the order they were stored: the keyword channel's context
    (each unit's neighbours) and the reply context of embedded text are derived from that order."""

    record: Literal["unit"] = "unit"
    id: RecordId
    text: RecordText
    network: Network
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None
    confidence: float | None = Field(ge=0.0, le=1.0)
    sources: list[RecordNote]
    document_id: RecordId | None
    metadata: dict[str, Any]
    created_at: datetime
    entities: list[RecordId]
    vector: str | None = Field(None, description="base64 of little-endian float32, only in files with vectors")


class LinkRecord(_Record):
    """A directed, weighted link between two units (entity links go through entity records, not here)."""

    record: Literal["link"] = "link"
    source_id: RecordId
    target_id: RecordId
    type: LinkType
    weight: float = Field(ge=0.0, le=1.0)


class EventRecord(_Record):
    """One step of an opinion's history (``OpinionEvent`` without the opinion id, which the record holds)."""

    at: datetime
    label: str
    old_confidence: float | None
    new_confidence: float
    evidence: list[str]
    old_text: str | None
    new_text: str | None
    rationale: str | None

    @classmethod
    def of(cls, event: OpinionEvent) -> EventRecord:
        """The record of a stored event."""
        return cls(**event.model_dump(exclude={"opinion_id"}))

    def event(self, opinion_id: str) -> OpinionEvent:
        """The event for ``opinion_id``."""
        return OpinionEvent(opinion_id=opinion_id, **self.model_dump())


class OpinionHistoryRecord(_Record):
    """An opinion's whole history, oldest first, and the evidence already applied to it (each piece moves an
    opinion once: a later retry of the same evidence stays a no-op after import)."""

    record: Literal["opinion_history"] = "opinion_history"
    opinion_id: RecordId
    events: list[EventRecord]
    applied_evidence: list[str]


class AuditRecord(_Record):
    """One entry of the bank's audit trail (``models.AuditEntry`` without the bank id, which is the file's)."""

    record: Literal["audit"] = "audit"
    id: RecordId
    at: datetime
    surface: Annotated[str, Field(max_length=32), AfterValidator(check_printable)]
    token_id: Annotated[str, Field(max_length=200), AfterValidator(check_printable)] | None
    operation: Annotated[str, Field(max_length=64), AfterValidator(check_printable)]
    document_id: RecordId | None
    memory_ids: list[RecordId] = Field(max_length=AUDIT_MAX_IDS)
    counts: dict[str, int]
    summary: Annotated[str, Field(max_length=1000), AfterValidator(check_printable)]

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditRecord:
        """The record of a stored entry."""
        return cls(**entry.model_dump(exclude={"bank_id"}))

    def entry(self, bank_id: str) -> AuditEntry:
        """The entry in bank ``bank_id``."""
        return AuditEntry(bank_id=bank_id, **self.model_dump(exclude={"record"}))


class EndRecord(_Record):
    """The last line: how many lines precede it and the SHA-256 of their bytes."""

    record: Literal["end"] = "end"
    lines: int = Field(ge=0)
    sha256: str


Record = Annotated[
    HeaderRecord | BankRecord | DocumentRecord | EntityRecord | UnitRecord | LinkRecord | OpinionHistoryRecord
    | AuditRecord | EndRecord,
    Field(discriminator="record"),
]
RECORD = TypeAdapter(Record)
"""Parses one line into its record model (``RECORD.validate_json(line)``)."""


def encode_vector(vector: np.ndarray) -> str:
    """A vector as base64 of its little-endian float32 bytes."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str, dimension: int) -> np.ndarray:
    """The float32 vector ``encode_vector`` wrote; ``ValueError`` when it is not base64 of ``dimension`` floats."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"vector is not base64: {exc}") from exc
    if len(raw) != 4 * dimension:
        raise ValueError(f"vector holds {len(raw) // 4} floats, the header says {dimension}")
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.all(np.isfinite(vector)):
        raise ValueError("vector holds NaN or infinite values")
    return vector


def vector_problem(vector: np.ndarray) -> str | None:
    """Why a (finite) vector is not one an embedder makes, or None: its length is outside
    ``[1 / MAX_VECTOR_NORM, MAX_VECTOR_NORM]`` (a zero vector has no direction; values near float32's limit overflow
    every similarity, and the bank would answer nothing)."""
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))  # float64: 3e38 squared overflows float32
    if 1 / MAX_VECTOR_NORM <= norm <= MAX_VECTOR_NORM:
        return None
    return f"a vector of length {norm:.3g}, outside [{1 / MAX_VECTOR_NORM:g}, {MAX_VECTOR_NORM:g}]"
