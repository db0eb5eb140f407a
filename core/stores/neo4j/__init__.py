"""Neo4j graph store over Bolt (the ``neo4j`` driver): the server-mode source of truth.

Graph model (labels and relationship types are this fixed set, never user input; every value is a query
parameter):

- ``(:Bank {id, name, background, disposition, created_at})``
- ``(:Document {key, bank_id, id, content, context, timestamp, status, error, metadata, created_at, updated_at})``
- ``(:Unit {id, bank_id, bank_key, text, context, kw_text, kw_context, kw_len, network, occurred_start,
  occurred_end, mentioned_at, t_start, t_end, confidence, sources, document_id, position, metadata, created_at,
  seq})``: ``kw_*`` are the tokens SQLite's FTS5 would index (see ``fts5_bm25``), space-joined
- ``(:Schema {id: 'hindsight', version})``: which layout the database holds
- ``(:Entity {id, bank_id, name, norm, type, aliases, mention_count, first_seen, last_seen})``
- ``(:Unit)-[:MENTIONS]->(:Entity)``, ``(:Unit)-[:LINK {bank_id, type, weight}]->(:Unit)``
- ``(:OpinionEvent {bank_id, opinion_id, seq, ...})``, ``(:Job {id, bank_id, kind, payload, status, owner, ...})``;
  an opinion unit lists the evidence applied to it in ``applied_evidence`` (each piece moves it once)
- ``(:Owner {id, host, pid, started_at, heartbeat_at})``: live processes (leases);
  ``(:VectorMark {key, bank_id, unit_id, owner, marked_at})``: the vector outbox (see ``base.VectorMarks``)
- ``(:AuditEntry {key, bank_id, id, at, surface, token_id, operation, ...})``: the audit trail (``audit``), kept when
  its bank is deleted

Times are epoch seconds (floats): range indexes serve them and no server-side temporal type is needed.
``t_start``/``t_end`` hold the occurrence interval with the fallbacks the SQLite store computes per query,
so temporal filters are plain indexed ranges. Lists and dicts are stored as JSON strings.
Server differences (full-text index creation) live in ``cypher_dialect``. The keyword channel uses the
full-text index (whitespace-analysed ``kw_*`` tokens) only to find candidates and ranks them with FTS5's
bm25 over per-bank statistics, so both stores rank keyword hits alike.

``store.Neo4jGraphStore`` composes one mixin per protocol (``banks``, ``documents``, ``units``, ``opinions``,
``entities``, ``search``, ``jobs`` for the queue and leases, ``vector_marks``, ``integrity``, ``audit``) over the
driver core in ``connection`` and the layout upgrades in ``schema``; ``cypher`` holds the writes several mixins
share.
"""

from .cypher import bank_key, keyword_tokens
from .schema import SCHEMA_VERSION
from .search import KEYWORD_CANDIDATES, lucene_query
from .store import Neo4jGraphStore

__all__ = ["KEYWORD_CANDIDATES", "SCHEMA_VERSION", "Neo4jGraphStore", "bank_key", "keyword_tokens", "lucene_query"]
