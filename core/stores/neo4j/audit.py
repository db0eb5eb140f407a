"""``AuditLog`` on Neo4j: one ``(:AuditEntry {key, bank_id, id, at, surface, token_id, operation, document_id,
memory_ids, counts, summary})`` node per write or forget, kept when its bank is deleted.

``delete_bank`` deletes a fixed list of labels that does not include ``AuditEntry``: the trail outlives the data it
describes. ``key`` is ``[bank id, entry id]`` as JSON and entries are MERGEd on it, so appending entries that are
stored already (an import of a file whose trail this server holds) changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...models import AuditEntry
from ..common import from_epoch_required as _dt
from ..common import to_epoch as _ts
from .connection import Neo4jConnection
from .cypher import _page


def _key(bank_id: str, entry_id: str) -> str:
    return json.dumps([bank_id, entry_id], ensure_ascii=False)


class Neo4jAudit(Neo4jConnection):
    """The audit trail (``base.AuditLog``)."""

    @staticmethod
    def _entry(row: dict[str, Any]) -> AuditEntry:
        return AuditEntry(
            id=row["id"], bank_id=row["bank_id"], at=_dt(row["at"]), surface=row["surface"],
            token_id=row.get("token_id"), operation=row["operation"], document_id=row.get("document_id"),
            memory_ids=json.loads(row["memory_ids"]), counts=json.loads(row["counts"]), summary=row["summary"],
        )

    def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Store entries (one transaction); entries stored already are skipped. Returns how many were new."""
        rows = [{"key": _key(e.bank_id, e.id), "props": {
            "bank_id": e.bank_id, "id": e.id, "at": _ts(e.at), "surface": e.surface, "token_id": e.token_id,
            "operation": e.operation, "document_id": e.document_id, "memory_ids": json.dumps(e.memory_ids),
            "counts": json.dumps(e.counts), "summary": e.summary}} for e in entries]
        if not rows:
            return 0

        def work(tx: Any) -> int:
            keys = [r["key"] for r in rows]
            known = {r["k"] for r in tx.run("MATCH (a:AuditEntry) WHERE a.key IN $keys RETURN a.key AS k",
                                            keys=keys).data()}
            new = [r for r in rows if r["key"] not in known]
            if new:
                tx.run("UNWIND $rows AS r MERGE (a:AuditEntry {key: r.key}) SET a += r.props", rows=new).consume()
            return len(new)

        return self._write(work, retry_duplicates=True)

    def audit_entries(
        self, bank_id: str | None = None, *, limit: int = 50, offset: int = 0, oldest_first: bool = False
    ) -> list[AuditEntry]:
        """One page of the trail of one bank (None: every bank), newest first unless ``oldest_first``."""
        order = "" if oldest_first else " DESC"  # one of two literals, never input
        rows = self._read(
            "MATCH (a:AuditEntry) WHERE $bank IS NULL OR a.bank_id = $bank "
            f"RETURN properties(a) AS a ORDER BY a.at{order}, a.id{order} SKIP $offset LIMIT $limit",
            bank=bank_id, **_page(limit, offset),
        )
        return [self._entry(r["a"]) for r in rows]

    def count_audit(self, bank_id: str | None = None) -> int:
        """How many entries the trail of one bank (None: every bank) holds."""
        rows = self._read("MATCH (a:AuditEntry) WHERE $bank IS NULL OR a.bank_id = $bank RETURN count(a) AS n",
                          bank=bank_id)
        return int(rows[0]["n"]) if rows else 0
