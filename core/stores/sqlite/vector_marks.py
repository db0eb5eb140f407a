"""``VectorMarks`` on SQLite: the outbox of units whose vector may not match the graph."""

from __future__ import annotations

from collections.abc import Sequence

from .connection import SQLiteConnection
from .sql import _now


class SQLiteVectorMarks(SQLiteConnection):
    """The vector outbox (``base.VectorMarks``)."""

    def mark_vectors(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> None:
        """Record that these units' vectors are about to change."""
        now = _now()
        with self._tx() as con:
            con.executemany(
                "INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (bank_id, unit_id) DO UPDATE SET owner = excluded.owner, marked_at = excluded.marked_at",
                [(bank_id, i, owner, now) for i in dict.fromkeys(ids)],
            )

    def clear_vector_marks(self, bank_id: str, ids: Sequence[str]) -> None:
        """The index matches the graph for these ids now."""
        with self._tx() as con:
            con.executemany("DELETE FROM vector_marks WHERE bank_id = ? AND unit_id = ?",
                            [(bank_id, i) for i in dict.fromkeys(ids)])

    def vector_marks(self, owner: str | None, limit: int = 10_000) -> list[tuple[str, str]]:
        """(bank, unit id) marks held by ``owner`` (None: held by nobody)."""
        sql = "SELECT bank_id, unit_id FROM vector_marks WHERE " + ("owner IS NULL" if owner is None else "owner = ?")
        rows = self._con().execute(sql + " ORDER BY marked_at LIMIT ?", ([] if owner is None else [owner]) + [limit])
        return [(r[0], r[1]) for r in rows]
