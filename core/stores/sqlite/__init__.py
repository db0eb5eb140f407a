"""SQLite graph store: the embedded source of truth (WAL, FTS5 ``bm25()`` keyword search).

One file holds every bank. Each thread gets its own connection (SQLite connections are not shareable
across threads); writes run in ``BEGIN IMMEDIATE`` transactions so a retain commits all or nothing, and
several processes may share the file (SQLite serialises their writers). Entities are unique per (bank,
normalised name); leases (``owners``), vector marks and applied opinion evidence make crashes and retries
safe (see ``base.Leases``, ``base.VectorMarks``, ``apply_opinion_update``).

``store.SQLiteGraphStore`` composes one mixin per protocol (``banks``, ``documents``, ``units``, ``opinions``,
``entities``, ``search``, ``jobs`` for the queue and leases, ``vector_marks``, ``integrity``, ``audit``) over the
connection core in ``connection``; ``schema`` holds the file's layout and upgrades, ``sql`` the writes several
mixins share.
"""

from .schema import SCHEMA_VERSION
from .search import fts_query
from .store import SQLiteGraphStore

__all__ = ["SCHEMA_VERSION", "SQLiteGraphStore", "fts_query"]
