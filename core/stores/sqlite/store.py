"""``SQLiteGraphStore``: the per-protocol mixins composed over one connection core, with SQLite's errors
raised as ``StoreError``."""

from __future__ import annotations

import sqlite3

from ..base import translate_errors
from .audit import SQLiteAudit
from .banks import SQLiteBanks
from .connection import serialized_in_memory
from .documents import SQLiteDocuments
from .entities import SQLiteEntities
from .integrity import SQLiteIntegrity
from .jobs import SQLiteJobQueue, SQLiteLeases
from .opinions import SQLiteOpinions
from .search import SQLiteSearch
from .units import SQLiteUnits
from .vector_marks import SQLiteVectorMarks


# UnicodeError: a string the caller did not clean (a lone surrogate) cannot be bound as UTF-8.
@serialized_in_memory
@translate_errors((sqlite3.Error, UnicodeError), lambda self: f"SQLite graph store at {self.path}")
class SQLiteGraphStore(
    SQLiteBanks, SQLiteDocuments, SQLiteUnits, SQLiteOpinions, SQLiteEntities, SQLiteSearch, SQLiteJobQueue,
    SQLiteLeases, SQLiteVectorMarks, SQLiteIntegrity, SQLiteAudit,
):
    """Graph store on one SQLite file (or ``":memory:"`` for throwaway use)."""
