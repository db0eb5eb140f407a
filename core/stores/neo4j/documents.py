"""``DocumentStore`` on Neo4j: raw documents, their status and owner, and forgetting one with its units."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...models import Document, DocumentKind, DocumentStatus, Job
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from .connection import Neo4jConnection
from .cypher import _ACTIVE_DOCS, _create_job_tx, _delete_units_tx, _doc_key, _page


class Neo4jDocuments(Neo4jConnection):
    """Raw documents (``base.DocumentStore``)."""

    @staticmethod
    def _document(row: dict[str, Any]) -> Document:
        return Document(
            id=row["id"], bank_id=row["bank_id"], content=row["content"], context=row.get("context"),
            timestamp=_dt(row.get("timestamp")), status=DocumentStatus(row["status"]), error=row.get("error"),
            metadata=json.loads(row.get("metadata") or "{}"), created_at=_dt(row["created_at"]),
            updated_at=_dt(row["updated_at"]), kind=DocumentKind(row["kind"]) if row.get("kind") else None,
            options=json.loads(row.get("options") or "{}"), owner=row.get("owner"), job_id=row.get("job_id"),
            revision=row.get("revision"),
        )

    def put_document(self, document: Document) -> None:
        """Store (or replace) a raw document; the first ``created_at`` of an id is kept."""
        self._write(lambda tx: tx.run(
            "MERGE (d:Document {key: $key}) ON CREATE SET d.created_at = $created_at "
            "SET d.bank_id = $bank_id, d.id = $id, d.content = $content, d.context = $context, "
            "d.timestamp = $timestamp, d.status = $status, d.error = $error, d.metadata = $metadata, "
            "d.updated_at = $updated_at, d.kind = $kind, d.options = $options, d.owner = $owner, d.job_id = $job_id, "
            "d.revision = $revision",
            key=_doc_key(document.bank_id, document.id), bank_id=document.bank_id, id=document.id,
            content=document.content, context=document.context, timestamp=_ts(document.timestamp),
            status=document.status.value, error=document.error,
            metadata=json.dumps(document.metadata, default=str), created_at=_ts(document.created_at),
            updated_at=_ts(document.updated_at), kind=document.kind.value if document.kind else None,
            options=json.dumps(document.options, default=str), owner=document.owner, job_id=document.job_id,
            revision=document.revision,
        ).consume(), retry_duplicates=True)

    def get_document(self, bank_id: str, document_id: str) -> Document | None:
        """A raw document, or None."""
        rows = self._read(
            "MATCH (d:Document {key: $key}) RETURN properties(d) AS d", key=_doc_key(bank_id, document_id)
        )
        return self._document(rows[0]["d"]) if rows else None

    def set_document_status(
        self, bank_id: str, document_id: str, status: DocumentStatus, error: str | None = None, *,
        revision: str | None = None, owner: str | None = None,
    ) -> bool:
        """Set a document's status (see ``GraphStore.set_document_status``); whether it was updated."""
        rows = self._write(lambda tx: [r.data() for r in tx.run(
            "MATCH (d:Document {key: $key}) WHERE $revision IS NULL OR d.revision = $revision "
            "SET d.status = $status, d.error = $error, "
            "d.owner = CASE WHEN $status IN $active THEN coalesce($owner, d.owner) ELSE null END RETURN d.id AS id",
            key=_doc_key(bank_id, document_id), status=status.value, error=error, active=_ACTIVE_DOCS,
            revision=revision, owner=owner,
        )])
        return bool(rows)

    def list_documents(
        self, bank_id: str, status: DocumentStatus | None = None, prefix: str | None = None
    ) -> list[Document]:
        """Documents of a bank, optionally by status and id prefix (``STARTS WITH``: literal), oldest first."""
        rows = self._read(
            "MATCH (d:Document) WHERE d.bank_id = $bank AND ($status IS NULL OR d.status = $status) "
            "AND ($prefix IS NULL OR d.id STARTS WITH $prefix) "
            "RETURN properties(d) AS d ORDER BY d.created_at, d.id",
            bank=bank_id, status=status.value if status is not None else None, prefix=prefix or None,
        )
        return [self._document(r["d"]) for r in rows]

    def page_documents(
        self, bank_id: str, status: DocumentStatus | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Document]:
        """One page of a bank's documents, newest first."""
        rows = self._read(
            "MATCH (d:Document) WHERE d.bank_id = $bank AND ($status IS NULL OR d.status = $status) "
            "RETURN properties(d) AS d ORDER BY d.created_at DESC, d.id DESC SKIP $offset LIMIT $limit",
            bank=bank_id, status=DocumentStatus(status).value if status is not None else None,
            **_page(limit, offset),
        )
        return [self._document(r["d"]) for r in rows]

    def delete_document(self, bank_id: str, document_id: str) -> None:
        """Delete a raw document (its units are deleted separately)."""
        self._write(lambda tx: tx.run(
            "MATCH (d:Document {key: $key}) DETACH DELETE d", key=_doc_key(bank_id, document_id)
        ).consume())

    def forget_document(self, bank_id: str, document_id: str, owner: str | None = None, *,
                        also: Sequence[str] = (), jobs: Sequence[Job] = ()) -> list[str]:
        """Delete a document and its units, and the units ``also`` names (what rests on them), in one transaction
        (vectors marked) that queues ``jobs``; returns the deleted unit ids."""
        def work(tx: Any) -> list[str]:
            ids = [r["id"] for r in tx.run(
                "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.document_id = $doc RETURN u.id AS id",
                bank=bank_id, doc=document_id,
            )]
            ids = list(dict.fromkeys([*ids, *also]))
            if ids:
                _delete_units_tx(tx, bank_id, ids, owner)
            tx.run("MATCH (d:Document {key: $key}) DETACH DELETE d", key=_doc_key(bank_id, document_id)).consume()
            # A finished job's result may sample the document's words (facts the checks rejected): cleared with it.
            tx.run("MATCH (j:Job) WHERE j.bank_id = $bank AND j.payload CONTAINS $needle "
                   "REMOVE j.result SET j.error = null",
                   bank=bank_id, needle=json.dumps({"document_id": document_id})[1:-1]).consume()
            for job in jobs:
                _create_job_tx(tx, job)
            return ids

        try:
            return self._write(work, retry_duplicates=True)
        finally:
            self._stale(bank_id)
