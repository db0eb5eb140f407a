"""``AuditLog`` on SQLite: the ``audit`` table, one row per write or forget, kept when its bank is deleted.

The table has no foreign key to ``banks`` and ``delete_bank`` does not touch it: the trail outlives the data it
describes (its layout is in ``schema``). Rows are unique per (bank, entry id), so appending entries that are
stored already (an import of a file whose trail this store holds) is a no-op.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ...models import AuditEntry
from ..common import from_epoch_required as _dt
from ..common import to_epoch as _ts
from .connection import SQLiteConnection


class SQLiteAudit(SQLiteConnection):
    """The audit trail (``base.AuditLog``)."""

    @staticmethod
    def _entry(row: sqlite3.Row) -> AuditEntry:
        return AuditEntry(
            id=row["id"], bank_id=row["bank_id"], at=_dt(row["at"]), surface=row["surface"], token_id=row["token_id"],
            operation=row["operation"], document_id=row["document_id"], memory_ids=json.loads(row["memory_ids"]),
            counts=json.loads(row["counts"]), summary=row["summary"],
        )

    def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Store entries (one transaction); entries stored already are skipped. Returns how many were new."""
        rows = [(e.bank_id, e.id, _ts(e.at), e.surface, e.token_id, e.operation, e.document_id,
                 json.dumps(e.memory_ids), json.dumps(e.counts), e.summary) for e in entries]
        with self._tx() as con:
            before = con.total_changes
            con.executemany(
                "INSERT OR IGNORE INTO audit (bank_id, id, at, surface, token_id, operation, document_id, memory_ids, "
                "counts, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            return con.total_changes - before

    def audit_entries(
        self, bank_id: str | None = None, *, limit: int = 50, offset: int = 0, oldest_first: bool = False
    ) -> list[AuditEntry]:
        """One page of the trail of one bank (None: every bank), newest first unless ``oldest_first``."""
        order = "ASC" if oldest_first else "DESC"  # one of two literals, never input
        where, args = ("WHERE bank_id = ?", [bank_id]) if bank_id is not None else ("", [])
        rows = self._con().execute(
            f"SELECT * FROM audit {where} ORDER BY at {order}, id {order} LIMIT ? OFFSET ?",
            [*args, int(limit), int(offset)],
        ).fetchall()
        return [self._entry(r) for r in rows]

    def count_audit(self, bank_id: str | None = None) -> int:
        """How many entries the trail of one bank (None: every bank) holds."""
        where, args = ("WHERE bank_id = ?", [bank_id]) if bank_id is not None else ("", [])
        return int(self._con().execute(f"SELECT count(*) FROM audit {where}", args).fetchone()[0])
