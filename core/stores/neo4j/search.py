"""``SearchStore`` on Neo4j: full-text candidates ranked with FTS5's bm25 on the bank's own statistics, the
occurrence-time index, and spreading activation computed on the server (``base.SpreadingActivation``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...models import LinkType, Network, TimeRange
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from ..fts5_bm25 import Phrase, query_terms, rank, shared_tokenizer
from .connection import Neo4jConnection
from .cypher import bank_key

KEYWORD_CANDIDATES = 1000  # most full-text hits read per search; past it, phrase counts are queried

# Lucene's query syntax characters; terms are \w+ words, but escaping keeps that guarantee local.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def lucene_query(key: str, phrases: Sequence[Phrase]) -> str:
    """A Lucene query: the bank's token is required, each phrase is quoted and searched in both token fields.

    Quoting and escaping every token means no user text reaches Lucene's syntax (fields, wildcards, boosts).
    """
    clauses = []
    for phrase in phrases:
        quoted = '"' + _LUCENE_SPECIAL.sub(r"\\\1", " ".join(phrase)) + '"'
        clauses.append(f"kw_text:{quoted}")
        clauses.append(f"kw_context:{quoted}")
    # ^0: the bank clause filters without adding to the score (its own share would lift every hit).
    return f'+bank_key:"{key}"^0 +(' + " OR ".join(clauses) + ")"


class Neo4jSearch(Neo4jConnection):
    """Keyword and temporal retrieval (``base.SearchStore``) and spreading activation."""

    @staticmethod
    def _filter_params(networks: Sequence[Network] | None, time_range: TimeRange | None) -> dict[str, Any]:
        return {
            "networks": [Network(n).value for n in networks] if networks else None,
            "t_hi": _ts(time_range.end) if time_range is not None else None,
            "t_lo": _ts(time_range.start) if time_range is not None else None,
        }

    # Filters shared by keyword and temporal search; null parameters switch a condition off.
    _FILTERS = (
        "($networks IS NULL OR u.network IN $networks) AND ($t_hi IS NULL OR u.t_start <= $t_hi) "
        "AND ($t_lo IS NULL OR u.t_end >= $t_lo)"
    )

    def keyword_search(
        self,
        bank_id: str,
        query: str,
        limit: int,
        networks: Sequence[Network] | None = None,
        time_range: TimeRange | None = None,
        context_weight: float = 0.5,
    ) -> list[tuple[str, float]]:
        """FTS5's bm25 over unit text and, down-weighted, its search context; best first.

        The full-text index finds the units holding any query token; they are scored like the SQLite
        store's ``bm25(units_fts, 1.0, context_weight)``, with the bank's own unit count, mean length and
        phrase hit counts (FTS5 uses the whole file's; a bank's ranking here never depends on other banks).
        """
        phrases = shared_tokenizer().phrases(query_terms(query))
        if not phrases or limit <= 0:
            return []
        filters = self._filter_params(networks, time_range)
        filtered = any(v is not None for v in filters.values())
        # Unfiltered, the index's own top hits are read, up to KEYWORD_CANDIDATES (when fewer match, that is
        # every unit matching a phrase, which also yields the exact hit counts); filtered, every match is read
        # so that filtering after the index cannot starve the result.
        cap = KEYWORD_CANDIDATES if not filtered else None
        # One record holding one string per hit: the driver's per-record cost was most of the search time.
        # Tokens hold no '|' (they are letters and digits) and the id comes last, so any id survives the split.
        packed = self._read(
            "CALL db.index.fulltext.queryNodes($index, $query, $options) YIELD node, score "
            f"WITH node AS u, score WHERE u.bank_id = $bank AND {self._FILTERS} "
            "RETURN collect(toString(coalesce(u.seq, 0)) + '|' + coalesce(u.kw_text, '') + '|' + "
            "coalesce(u.kw_context, '') + '|' + u.id) AS hits",
            index=self.dialect.fulltext_index, query=lucene_query(bank_key(bank_id), phrases),
            options={"limit": cap} if cap else {}, bank=bank_id, **filters,
        )
        hits = packed[0]["hits"] if packed else []
        docs = []
        for hit in hits:
            seq, text, context, uid = hit.split("|", 3)
            docs.append((uid, (text, context), int(seq)))
        complete = cap is not None and len(hits) < cap
        key = bank_key(bank_id)
        stats = self._term_stats.get(
            bank_id, phrases,
            totals=lambda: self._keyword_totals(bank_id),
            count_hits=lambda p: int(self._read(
                "CALL db.index.fulltext.queryNodes($index, $query) YIELD node "
                "WITH node WHERE node.bank_id = $bank RETURN count(node) AS n",
                index=self.dialect.fulltext_index, query=lucene_query(key, [p]), bank=bank_id,
            )[0]["n"]),
            every_match=[cols for _, cols, _ in docs] if complete else None,
        )
        return rank(docs, phrases, stats, (1.0, float(context_weight)), limit)

    def _keyword_totals(self, bank_id: str) -> tuple[int, int]:
        row = self._read(
            "MATCH (u:Unit) WHERE u.bank_id = $bank RETURN count(u) AS n, sum(u.kw_len) AS tokens", bank=bank_id
        )[0]
        return int(row["n"] or 0), int(row["tokens"] or 0)

    def temporal_search(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """Units whose occurrence interval overlaps ``time_range``, most recent first."""
        rows = self._read(
            f"MATCH (u:Unit) WHERE u.bank_id = $bank AND {self._FILTERS} "
            "RETURN u.id AS id, u.t_start AS t ORDER BY t DESC LIMIT $limit",
            bank=bank_id, limit=int(limit), **self._filter_params(networks, time_range),
        )
        return [(r["id"], _dt(r["t"])) for r in rows]

    def spread_activation(
        self,
        bank_id: str,
        seeds: Sequence[tuple[str, float]],
        *,
        hops: int,
        decay: float,
        multipliers: dict[str, float],
        entity_fanout: int,
        k: int,
        default_multiplier: float = 0.5,
    ) -> list[tuple[str, float]]:
        """Bounded spreading activation computed in Cypher: ``A(v) = max A(u) * w * delta * mu(type)``.

        Same result as ``recall.channels.graph`` over ``neighbors`` (seeds keep their score; each hop spreads
        only the ``k`` strongest new activations), but the server aggregates each hop and returns one
        activation per reached unit instead of every edge.
        """
        activation: dict[str, float] = {sid: max(score, 0.0) for sid, score in seeds}
        frontier = dict(activation)
        mu = {t: float(multipliers.get(t, default_multiplier)) for t in [*(lt.value for lt in LinkType), "entity"]}
        for _ in range(hops):
            if not frontier:
                break
            rows = self._read(
                "UNWIND $seeds AS seed MATCH (s:Unit {id: seed.id})-[l:LINK]->(t:Unit) WHERE l.bank_id = $bank "
                "RETURN t.id AS id, max(seed.a * l.weight * $decay * coalesce($mu[l.type], $mu0)) AS a "
                "UNION ALL "
                "UNWIND $seeds AS seed MATCH (s:Unit {id: seed.id})-[:MENTIONS]->(e:Entity) "
                "WHERE e.bank_id = $bank AND e.mention_count <= $fanout "
                "MATCH (e)<-[:MENTIONS]-(t:Unit) WHERE t.id <> s.id "
                "RETURN t.id AS id, max(seed.a * $decay * $mu_entity / (1.0 + log(1.0 + "
                "CASE WHEN e.mention_count > 1 THEN e.mention_count - 1 ELSE 0 END))) AS a",
                seeds=[{"id": i, "a": a} for i, a in frontier.items()], bank=bank_id, decay=float(decay), mu=mu,
                mu0=float(default_multiplier), mu_entity=mu["entity"] if entity_fanout > 0 else 0.0,
                fanout=int(entity_fanout),
            )
            nxt: dict[str, float] = {}
            for r in rows:
                value = float(r["a"])
                if value > activation.get(r["id"], 0.0):
                    activation[r["id"]] = value
                    nxt[r["id"]] = value
            frontier = dict(sorted(nxt.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return sorted(activation.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
