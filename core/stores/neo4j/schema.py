"""The graph layout on the server: indexes set up at open, upgrades from older layouts (keyword tokens,
normalised entity keys), and wiping every node for tests and benchmarks."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from ...errors import StoreError
from ...text.names import normalise_name
from .connection import Neo4jConnection
from .cypher import _LOSER_MERGE, _set_unit_props, keyword_tokens

SCHEMA_VERSION = 3


class Neo4jSchema(Neo4jConnection):
    """Schema setup and upgrades (run when a store opens), and ``clear_all``."""

    def _setup_schema(self, tried: str) -> None:
        from neo4j.exceptions import Neo4jError

        try:
            for statement in self.dialect.schema_statements():
                self._run(statement)
            self.dialect.after_schema(self._run)
            self._upgrade()
        except Neo4jError as exc:
            raise StoreError(f"cannot set up the graph schema on {tried}: {exc}") from exc

    def _upgrade(self) -> None:
        """Bring a database written by an older layout up to date (v1 -> v2: keyword tokens on every unit;
        v2 -> v3: entity keys from ``normalise_name``, duplicates merged)."""
        rows = self._run("MATCH (s:Schema {id: 'hindsight'}) RETURN s.version AS v")
        if rows and int(rows[0]["v"] or 0) >= SCHEMA_VERSION:
            return
        self._renormalise_entities(None)
        while True:  # idempotent: two processes upgrading at once write the same values
            todo = self._run(
                "MATCH (u:Unit) WHERE u.kw_len IS NULL RETURN u.id AS id, u.text AS text, u.context AS context "
                "LIMIT 500"
            )
            if not todo:
                break
            props = keyword_tokens([(r["text"] or "", r["context"] or "") for r in todo])
            rows_ = [{"id": r["id"], "props": p} for r, p in zip(todo, props, strict=True)]
            self._write(functools.partial(_set_unit_props, rows=rows_))
        self._write(lambda tx: tx.run(
            "MERGE (s:Schema {id: 'hindsight'}) SET s.version = $v", v=SCHEMA_VERSION
        ).consume(), retry_duplicates=True)

    def _renormalise_entities(self, bank_id: str | None) -> int:
        """Recompute entity keys with ``normalise_name`` and merge entities that share one (the most mentioned,
        then earliest seen, then smallest id survives; the others' mentions move to it and their aliases join
        its own); returns how many entities were merged away."""
        rows = self._read(
            "MATCH (e:Entity) WHERE $bank IS NULL OR e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
            "RETURN e.id AS id, e.bank_id AS bank, e.name AS name, e.key AS key, e.first_seen AS first, "
            "count(m) AS n", bank=bank_id,
        )
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault((r["bank"], normalise_name(r["name"])), []).append(r)
        merged = 0
        for (bank, norm), members in groups.items():
            members.sort(key=lambda r: (-r["n"], r["first"] if r["first"] is not None else math.inf, r["id"]))
            keep, losers = members[0], members[1:]
            new_key = json.dumps([bank, norm], ensure_ascii=False)
            if not losers and keep["key"] == new_key:
                continue

            def work(tx: Any, keep: dict[str, Any] = keep, losers: list[dict[str, Any]] = losers,
                     norm: str = norm, new_key: str = new_key) -> None:
                for loser in losers:
                    tx.run(
                        "MATCH (l:Entity {id: $loser}), (k:Entity {id: $keep}) "
                        "OPTIONAL MATCH (u:Unit)-[:MENTIONS]->(l) WITH l, k, collect(u) AS units "
                        "FOREACH (u IN units | MERGE (u)-[:MENTIONS]->(k)) "
                        f"WITH l, k SET {_LOSER_MERGE} DETACH DELETE l",
                        loser=loser["id"], keep=keep["id"],
                    ).consume()
                tx.run(
                    "MATCH (e:Entity {id: $id}) SET e.norm = $norm, e.key = $key WITH e "
                    "OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) WITH e, count(m) AS n SET e.mention_count = n",
                    id=keep["id"], norm=norm, key=new_key,
                ).consume()

            self._write(work)
            merged += len(losers)
        return merged

    def clear_all(self) -> None:
        """Delete every node this store wrote (tests and benchmarks reset a shared server with it)."""
        for label in ("Job", "OpinionEvent", "Unit", "Entity", "Document", "Bank", "Owner", "VectorMark", "AuditEntry"):
            self._write(functools.partial(_delete_label, label=label))
        self._term_stats.invalidate()


def _delete_label(tx: Any, label: str) -> None:
    tx.run(f"MATCH (n:{label}) DETACH DELETE n").consume()
