"""Storage: the graph store (source of truth) and the vector index (derived, rebuildable).

- ``base``: the store protocols (``GraphStore`` is the union of ten narrow ones) and ``translate_errors``;
  ``records``: the records they pass in and out; ``common``: what both graph stores compute alike.
- ``sqlite/``: the embedded graph store (one mixin module per protocol, composed in ``sqlite.store``), with
  ``fts5_bm25`` (FTS5's bm25, shared with the server store).
- ``neo4j/``: the server graph store over Bolt (same layout, composed in ``neo4j.store``), with
  ``cypher_dialect`` (Neo4j 5 / ArcadeDB differences).
- ``chroma``: the vector index, with ``chroma_transient``, ``exact_vectors`` and ``process_guard``.
- ``locate``: where a store lives, and opening it.
"""
