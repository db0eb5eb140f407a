"""``EntityStore`` on Neo4j: canonical entities, looked up by normalised name, paged and co-mentioned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...models import Entity, EntityType
from ...text.names import normalise_name
from ..common import by_alias
from ..common import from_epoch as _dt
from .connection import Neo4jConnection
from .cypher import _page


class Neo4jEntities(Neo4jConnection):
    """Canonical entities (``base.EntityStore``)."""

    @staticmethod
    def _entity(row: dict[str, Any]) -> Entity:
        return Entity(
            id=row["id"], bank_id=row["bank_id"], name=row["name"], type=EntityType(row["type"]),
            aliases=list(row.get("aliases") or []), mention_count=row["mention_count"],
            first_seen=_dt(row.get("first_seen")), last_seen=_dt(row.get("last_seen")),
        )

    def list_entities(self, bank_id: str) -> list[Entity]:
        """All canonical entities of the bank, most mentioned first."""
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank RETURN properties(e) AS e ORDER BY e.mention_count DESC, e.name",
            bank=bank_id,
        )
        return [self._entity(r["e"]) for r in rows]

    def find_entity(self, bank_id: str, name: str) -> Entity | None:
        """An entity by canonical name or alias, compared by ``normalise_name`` (case, diacritics, spacing)."""
        norm = normalise_name(name)
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank AND e.norm = $norm "
            "RETURN properties(e) AS e ORDER BY e.mention_count DESC LIMIT 1",
            bank=bank_id, norm=norm,
        )
        if rows:
            return self._entity(rows[0]["e"])
        return by_alias(self.list_entities(bank_id), norm)

    def entity_cooccurrence(self, bank_id: str, entity_ids: Sequence[str]) -> dict[tuple[str, str], int]:
        """How many units mention both entities of each pair drawn from ``entity_ids``."""
        ids = list(dict.fromkeys(entity_ids))
        if len(ids) < 2:
            return {}
        rows = self._read(
            "UNWIND $ids AS aid MATCH (a:Entity {id: aid})<-[:MENTIONS]-(u:Unit)-[:MENTIONS]->(b:Entity) "
            "WHERE a.bank_id = $bank AND b.id IN $ids AND a.id < b.id "
            "RETURN a.id AS a, b.id AS b, count(u) AS n",
            ids=ids, bank=bank_id,
        )
        return {(r["a"], r["b"]): int(r["n"]) for r in rows}

    def get_entities(self, bank_id: str, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids (or other banks' entities) are skipped."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = self._read("MATCH (e:Entity) WHERE e.id IN $ids AND e.bank_id = $bank RETURN properties(e) AS e",
                          ids=wanted, bank=bank_id)
        found = {r["e"]["id"]: self._entity(r["e"]) for r in rows}
        return [found[i] for i in wanted if i in found]

    def page_entities(
        self, bank_id: str, *, query: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[Entity]:
        """One page of the bank's entities, most mentioned first; ``query`` filters on the normalised name."""
        rows = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank AND ($query IS NULL OR e.norm CONTAINS $query) "
            "RETURN properties(e) AS e ORDER BY e.mention_count DESC, e.name, e.id SKIP $offset LIMIT $limit",
            bank=bank_id, query=normalise_name(query) if query is not None and normalise_name(query) else None,
            **_page(limit, offset),
        )
        return [self._entity(r["e"]) for r in rows]

    def related_entities(self, bank_id: str, entity_id: str, limit: int = 20) -> list[tuple[str, int]]:
        """Entities most often mentioned by the same units as ``entity_id``, with the number of shared units."""
        rows = self._read(
            "MATCH (a:Entity {id: $entity})<-[:MENTIONS]-(u:Unit)-[:MENTIONS]->(b:Entity) "
            "WHERE a.bank_id = $bank AND b.id <> a.id "
            "RETURN b.id AS id, count(u) AS n ORDER BY n DESC, id LIMIT $limit",
            entity=entity_id, bank=bank_id, limit=_page(limit, 0)["limit"],
        )
        return [(r["id"], int(r["n"])) for r in rows]
