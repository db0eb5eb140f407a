"""``IntegrityChecks`` on Neo4j: the graph invariants per bank (links, mentions, counts, entity keys, keyword
tokens), checked and repaired."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from ...text.names import normalise_name
from .cypher import _set_unit_props, keyword_tokens
from .schema import Neo4jSchema


class Neo4jIntegrity(Neo4jSchema):
    """The graph store's own invariants (``base.IntegrityChecks``); repairs reuse the upgrade's entity merge."""

    def check_bank(self, bank_id: str) -> dict[str, list[str]]:
        """The bank's graph invariants that do not hold, by kind, with the offending ids."""
        problems: dict[str, list[str]] = {}

        def add(kind: str, ids: Iterable[Any]) -> None:
            found = [str(i) for i in ids]
            if found:
                problems.setdefault(kind, []).extend(found)

        add("dangling_link", (r["k"] for r in self._read(
            "MATCH (s:Unit)-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank AND (s.bank_id <> $bank OR t.bank_id <> $bank) "
            "RETURN s.id + '->' + t.id AS k", bank=bank_id)))
        add("dangling_mention", (r["k"] for r in self._read(
            "MATCH (u:Unit)-[:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank AND e.bank_id <> $bank "
            "RETURN u.id + '->' + e.id AS k", bank=bank_id)))
        counts = self._read(
            "MATCH (e:Entity) WHERE e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
            "RETURN e.id AS id, e.name AS name, e.norm AS norm, e.key AS key, e.mention_count AS kept, "
            "count(m) AS n", bank=bank_id)
        add("mention_count", (r["id"] for r in counts if r["kept"] != r["n"]))
        add("orphan_entity", (r["id"] for r in counts if r["n"] == 0))
        by_norm: dict[str, list[str]] = {}
        for r in counts:
            by_norm.setdefault(normalise_name(r["name"]), []).append(r["id"])
        add("duplicate_entity", (i for ids in by_norm.values() if len(ids) > 1 for i in ids))
        add("duplicate_entity", (r["id"] for r in counts if r["norm"] != normalise_name(r["name"])
                                 or r["key"] != json.dumps([bank_id, normalise_name(r["name"])], ensure_ascii=False)))
        add("dangling_opinion_event", (r["seq"] for r in self._read(
            "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank OPTIONAL MATCH (u:Unit {id: o.opinion_id}) "
            "WITH o, u WHERE u IS NULL OR u.bank_id <> $bank RETURN o.seq AS seq", bank=bank_id)))
        add("keyword_stats", (r["id"] for r in self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.kw_len IS NULL RETURN u.id AS id", bank=bank_id)))
        return problems

    def repair_bank(self, bank_id: str) -> dict[str, int]:
        """Fix what ``check_bank`` finds; how many of each kind were repaired."""
        found = self.check_bank(bank_id)
        fixed: dict[str, int] = {}
        if "dangling_link" in found:
            fixed["dangling_link"] = int(self._write(lambda tx: tx.run(
                "MATCH (s:Unit)-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank AND (s.bank_id <> $bank OR "
                "t.bank_id <> $bank) DELETE l RETURN count(*) AS n", bank=bank_id).single()["n"]))
        if "dangling_mention" in found:
            fixed["dangling_mention"] = int(self._write(lambda tx: tx.run(
                "MATCH (u:Unit)-[m:MENTIONS]->(e:Entity) WHERE u.bank_id = $bank AND e.bank_id <> $bank DELETE m "
                "RETURN count(*) AS n", bank=bank_id).single()["n"]))
        if "dangling_opinion_event" in found:
            fixed["dangling_opinion_event"] = int(self._write(lambda tx: tx.run(
                "MATCH (o:OpinionEvent) WHERE o.bank_id = $bank OPTIONAL MATCH (u:Unit {id: o.opinion_id}) "
                "WITH o, u WHERE u IS NULL OR u.bank_id <> $bank DELETE o RETURN count(*) AS n",
                bank=bank_id).single()["n"]))
        if "duplicate_entity" in found:
            fixed["duplicate_entity"] = self._renormalise_entities(bank_id)
        if "mention_count" in found or "orphan_entity" in found or "duplicate_entity" in found:
            def recount(tx: Any) -> tuple[int, int]:
                n = tx.run(
                    "MATCH (e:Entity) WHERE e.bank_id = $bank OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Unit) "
                    "WITH e, count(m) AS n WHERE n <> e.mention_count SET e.mention_count = n RETURN count(e) AS c",
                    bank=bank_id).single()["c"]
                o = tx.run("MATCH (e:Entity) WHERE e.bank_id = $bank AND NOT (e)<-[:MENTIONS]-() DETACH DELETE e "
                           "RETURN count(*) AS c", bank=bank_id).single()["c"]
                return int(n), int(o)

            fixed["mention_count"], fixed["orphan_entity"] = self._write(recount)
        if "keyword_stats" in found:
            before = len(found["keyword_stats"])
            while True:
                todo = self._read(
                    "MATCH (u:Unit) WHERE u.bank_id = $bank AND u.kw_len IS NULL "
                    "RETURN u.id AS id, u.text AS text, u.context AS context LIMIT 500", bank=bank_id)
                if not todo:
                    break
                props = keyword_tokens([(r["text"] or "", r["context"] or "") for r in todo])
                rows_ = [{"id": r["id"], "props": p} for r, p in zip(todo, props, strict=True)]
                self._write(functools.partial(_set_unit_props, rows=rows_))
            fixed["keyword_stats"] = before
            self._stale(bank_id)
        return {k: v for k, v in fixed.items() if v}
