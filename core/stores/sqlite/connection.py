"""The connection core every SQLite mixin builds on: one connection per thread, ``BEGIN IMMEDIATE``
transactions and read snapshots; opening a file sets up (or upgrades) its schema."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from ...errors import StoreError
from ..base import public_methods
from .schema import _SCHEMA, SCHEMA_VERSION, _backfill, _migrate, _stored_version

C = TypeVar("C", bound=type)


def serialized_in_memory(cls: C) -> C:
    """Class decorator: on an in-memory store every public method runs under the store's re-entrant lock, one
    thread at a time (a file store is untouched: WAL and the busy timeout let its connections wait for each
    other)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            lock = getattr(self, "_serial", None)
            if lock is None:
                return fn(self, *args, **kwargs)
            with lock:
                return fn(self, *args, **kwargs)

        return wrapper

    for name, member in public_methods(cls).items():
        setattr(cls, name, wrap(member))
    return cls


class SQLiteConnection:
    """The typed base of ``SQLiteGraphStore``'s mixins: ``path``, a connection per thread (``_con``) and write
    transactions (``_tx``)."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        self.path = str(path)
        self._synchronous = synchronous
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._memory_anchor: sqlite3.Connection | None = None
        self._serial: threading.RLock | None = None
        if self.path == ":memory:":
            # A shared-cache in-memory database lets every thread's connection see the same data. Its table locks
            # fail at once ("database table is locked": the busy timeout does not apply to them), so the store's
            # calls take turns (``serialized_in_memory``).
            self.path = f"file:hindsight-{id(self)}?mode=memory&cache=shared"
            self._serial = threading.RLock()
            self._memory_anchor = self._connect()
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        con = self._con()
        stored = _stored_version(con)
        if stored != SCHEMA_VERSION:
            _migrate(con)
        con.executescript(_SCHEMA)
        if stored != SCHEMA_VERSION:  # a file from before v3 (or a new one): skips the scans on every open
            _backfill(con)
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        con.commit()

    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(
                self.path, uri=self.path.startswith("file:"), timeout=30.0, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite graph store at {self.path}: {exc}") from exc
        con.row_factory = sqlite3.Row
        if not self.path.startswith("file:"):
            con.execute("PRAGMA journal_mode=WAL")
        else:  # a reader does not lock the shared cache's tables (results read lazily by an iterator, say)
            con.execute("PRAGMA read_uncommitted=1")
        con.execute(f"PRAGMA synchronous={self._synchronous}")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA busy_timeout=30000")
        with self._lock:
            self._connections.append(con)
        return con

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._connect()
            self._local.con = con
        return con

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Pin this thread's reads to one committed state of the file (a WAL read transaction) for the block;
        writers on other connections, threads and processes go on meanwhile. An in-memory store reads live: its
        shared cache takes table locks, so a held read would make every writer fail instead of wait."""
        con = self._con()
        if self.path.startswith("file:") or con.in_transaction:
            yield
            return
        try:
            con.execute("BEGIN")
            con.execute("SELECT count(*) FROM meta").fetchone()  # the snapshot is taken at the first read
        except sqlite3.Error as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise StoreError(f"SQLite graph store at {self.path}: snapshot failed: {exc}") from exc
        try:
            yield
        finally:
            try:
                con.execute("COMMIT")  # ends the read transaction (nothing was written)
            except sqlite3.Error:
                with suppress(sqlite3.Error):
                    con.execute("ROLLBACK")

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for con in self._connections:
                with suppress(sqlite3.Error):
                    con.close()
            self._connections.clear()
        self._local = threading.local()
