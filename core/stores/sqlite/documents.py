"""``DocumentStore`` on SQLite: raw documents, their status and owner, and forgetting one with its units."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ...models import Document, DocumentKind, DocumentStatus, Job
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from .connection import SQLiteConnection
from .sql import _delete_units, _insert_job, _page


class SQLiteDocuments(SQLiteConnection):
    """Raw documents (``base.DocumentStore``)."""

    @staticmethod
    def _document(row: sqlite3.Row) -> Document:
        return Document(
            id=row["id"], bank_id=row["bank_id"], content=row["content"], context=row["context"],
            timestamp=_dt(row["timestamp"]), status=DocumentStatus(row["status"]), error=row["error"],
            metadata=json.loads(row["metadata"]), created_at=_dt(row["created_at"]), updated_at=_dt(row["updated_at"]),
            kind=DocumentKind(row["kind"]) if row["kind"] else None, options=json.loads(row["options"] or "{}"),
            owner=row["owner"], job_id=row["job_id"], revision=row["revision"],
        )

    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document; committed before extraction starts."""
        with self._tx() as con:
            con.execute(
                "INSERT INTO documents (bank_id, id, content, context, timestamp, status, error, metadata, "
                "created_at, updated_at, kind, options, owner, job_id, revision) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bank_id, id) DO UPDATE SET "
                "content = excluded.content, context = excluded.context, timestamp = excluded.timestamp, "
                "status = excluded.status, error = excluded.error, metadata = excluded.metadata, "
                "updated_at = excluded.updated_at, kind = excluded.kind, options = excluded.options, "
                "owner = excluded.owner, job_id = excluded.job_id, revision = excluded.revision",
                (document.bank_id, document.id, document.content, document.context, _ts(document.timestamp),
                 document.status.value, document.error, json.dumps(document.metadata, default=str),
                 _ts(document.created_at), _ts(document.updated_at),
                 document.kind.value if document.kind else None, json.dumps(document.options, default=str),
                 document.owner, document.job_id, document.revision),
            )

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        row = self._con().execute(
            "SELECT * FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id)
        ).fetchone()
        return self._document(row) if row else None

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None, *,
        revision: str | None = None, owner: str | None = None,
    ) -> bool:
        """Set a document's status (see ``GraphStore.set_document_status``); whether it was updated."""
        active = status in (DocumentStatus.PENDING, DocumentStatus.EXTRACTING)
        with self._tx() as con:
            return con.execute(
                "UPDATE documents SET status = ?, error = ?, owner = CASE WHEN ? THEN coalesce(?, owner) END "
                "WHERE bank_id = ? AND id = ? AND (? IS NULL OR revision IS ?)",
                (status.value, error, active, owner, bank_id, document_id, revision, revision),
            ).rowcount == 1

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and id prefix, oldest first."""
        sql = "SELECT * FROM documents WHERE bank_id = ?"
        args: list[Any] = [bank_id]
        if status is not None:
            sql += " AND status = ?"
            args.append(status.value)
        if prefix:
            # substr comparison, not LIKE: a prefix is matched literally (no wildcards, case-sensitive).
            sql += " AND substr(id, 1, ?) = ?"
            args += [len(prefix), prefix]
        rows = self._con().execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [self._document(r) for r in rows]

    def page_documents(
        self, bank_id: str, status: DocumentStatus | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Document]:
        """One page of a bank's documents, newest first."""
        sql = "SELECT * FROM documents WHERE bank_id = ?"
        args: list[Any] = [bank_id]
        if status is not None:
            sql += " AND status = ?"
            args.append(DocumentStatus(status).value)
        rows = self._con().execute(sql + " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._document(r) for r in rows]

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        with self._tx() as con:
            con.execute("DELETE FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id))

    def forget_document(self, bank_id: str, document_id: str, owner: str | None = None, *,
                        also: Sequence[str] = (), jobs: Sequence[Job] = ()) -> list[str]:
        """Delete a document and its units, and the units ``also`` names (what rests on them), in one transaction
        (vectors marked) that queues ``jobs``; returns the deleted unit ids."""
        with self._tx() as con:
            ids = [r[0] for r in con.execute("SELECT id FROM units WHERE bank_id = ? AND document_id = ?",
                                             (bank_id, document_id))]
            ids = list(dict.fromkeys([*ids, *also]))
            _delete_units(con, bank_id, ids, owner)
            con.execute("DELETE FROM documents WHERE bank_id = ? AND id = ?", (bank_id, document_id))
            # A finished job's result may sample the document's words (facts the checks rejected): cleared with it.
            con.execute("UPDATE jobs SET result = NULL, error = NULL WHERE bank_id = ? "
                        "AND json_extract(payload, '$.document_id') = ?", (bank_id, document_id))
            for job in jobs:
                _insert_job(con, job)
        return ids
