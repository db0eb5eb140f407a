"""``EntityStore`` on SQLite: canonical entities, looked up by normalised name, paged and co-mentioned."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ...models import Entity, EntityType
from ...text.names import normalise_name
from ..common import by_alias
from ..common import from_epoch as _dt
from .connection import SQLiteConnection
from .sql import _chunks, _page


class SQLiteEntities(SQLiteConnection):
    """Canonical entities (``base.EntityStore``)."""

    @staticmethod
    def _entity(row: sqlite3.Row) -> Entity:
        return Entity(
            id=row["id"], bank_id=row["bank_id"], name=row["name"], type=EntityType(row["type"]),
            aliases=json.loads(row["aliases"]), mention_count=row["mention_count"],
            first_seen=_dt(row["first_seen"]), last_seen=_dt(row["last_seen"]),
        )

    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank, most mentioned first."""
        rows = self._con().execute(
            "SELECT * FROM entities WHERE bank_id = ? ORDER BY mention_count DESC, name", (bank_id,)
        ).fetchall()
        return [self._entity(r) for r in rows]

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, compared by ``normalise_name`` (case, diacritics, spacing)."""
        norm = normalise_name(name)
        row = self._con().execute(
            "SELECT * FROM entities WHERE bank_id = ? AND norm = ? ORDER BY mention_count DESC LIMIT 1",
            (bank_id, norm),
        ).fetchone()
        if row:
            return self._entity(row)
        return by_alias(self.list_entities(bank_id), norm)

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ids = list(dict.fromkeys(entity_ids))
        if len(ids) < 2:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._con().execute(
            f"SELECT a.entity_id, b.entity_id, count(*) FROM mentions a JOIN mentions b "
            f"ON a.unit_id = b.unit_id AND a.entity_id < b.entity_id JOIN entities e ON e.id = a.entity_id "
            f"WHERE e.bank_id = ? AND a.entity_id IN ({marks}) AND b.entity_id IN ({marks}) "
            f"GROUP BY a.entity_id, b.entity_id",
            [bank_id, *ids, *ids],
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def get_entities(self, bank_id: str, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids (or other banks' entities) are skipped."""
        found: dict[str, Entity] = {}
        for chunk in _chunks(list(dict.fromkeys(ids)), 500):
            for r in self._con().execute(
                f"SELECT * FROM entities WHERE bank_id = ? AND id IN ({','.join('?' * len(chunk))})",
                [bank_id, *chunk],
            ):
                found[r["id"]] = self._entity(r)
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def page_entities(
        self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Entity]:
        """One page of the bank's entities, most mentioned first; ``query`` filters on the normalised name."""
        sql, args = "SELECT * FROM entities WHERE bank_id = ?", list[Any]([bank_id])
        if query is not None and normalise_name(query):
            sql += " AND instr(norm, ?) > 0"  # instr, not LIKE: the query is matched literally
            args.append(normalise_name(query))
        rows = self._con().execute(sql + " ORDER BY mention_count DESC, name, id LIMIT ? OFFSET ?",
                                   [*args, *_page(limit, offset)]).fetchall()
        return [self._entity(r) for r in rows]

    def related_entities(self, bank_id: str, entity_id: str, limit: int = 20) -> list[tuple[str, int]]:
        """Entities most often mentioned by the same units as ``entity_id``, with the number of shared units."""
        rows = self._con().execute(
            "SELECT b.entity_id, count(*) AS n FROM mentions a JOIN mentions b ON b.unit_id = a.unit_id "
            "AND b.entity_id != a.entity_id JOIN entities e ON e.id = a.entity_id AND e.bank_id = ? "
            "WHERE a.entity_id = ? GROUP BY b.entity_id ORDER BY n DESC, b.entity_id LIMIT ?",
            (bank_id, entity_id, _page(limit, 0)[0]),
        )
        return [(r[0], int(r[1])) for r in rows]
