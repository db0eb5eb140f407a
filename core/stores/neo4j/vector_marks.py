"""``VectorMarks`` on Neo4j: the outbox of units whose vector may not match the graph."""

from __future__ import annotations

from collections.abc import Sequence

from .connection import Neo4jConnection
from .cypher import _mark, _mark_key


class Neo4jVectorMarks(Neo4jConnection):
    """The vector outbox (``base.VectorMarks``)."""

    def mark_vectors(self, bank_id: str, ids: Sequence[str], owner: str | None = None) -> None:
        """Record that these units' vectors are about to change."""
        if ids:
            self._write(lambda tx: _mark(tx, bank_id, list(ids), owner), retry_duplicates=True)

    def clear_vector_marks(self, bank_id: str, ids: Sequence[str]) -> None:
        """The index matches the graph for these ids now."""
        if ids:
            self._write(lambda tx: tx.run(
                "UNWIND $keys AS k MATCH (m:VectorMark {key: k}) DELETE m",
                keys=[_mark_key(bank_id, i) for i in dict.fromkeys(ids)],
            ).consume())

    def vector_marks(self, owner: str | None, limit: int = 10_000) -> list[tuple[str, str]]:
        """(bank, unit id) marks held by ``owner`` (None: held by nobody)."""
        rows = self._read(
            "MATCH (m:VectorMark) WHERE ($owner IS NULL AND m.owner IS NULL) OR m.owner = $owner "
            "RETURN m.bank_id AS bank, m.unit_id AS uid ORDER BY m.marked_at LIMIT $limit",
            owner=owner, limit=int(limit),
        )
        return [(r["bank"], r["uid"]) for r in rows]
