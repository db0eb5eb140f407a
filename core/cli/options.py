"""Options every ``hindsight`` command shares (``--path | --graph/--vectors``, ``--json``, ``-v``) and opening the
store they name, through the one store locator (``stores/locate.py``).

Nothing heavy is imported here: the engine is imported when a command opens its store.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..stores.locate import StoreLocation

if TYPE_CHECKING:
    from ..hindsight import Hindsight


def global_options(default: Any, *, json_help: str | None = None) -> argparse.ArgumentParser:
    """A parent parser with the options every command takes; ``default`` is each option's default (the top-level
    parser and the subcommands use ``argparse.SUPPRESS`` so a value given before the command survives)."""
    options = argparse.ArgumentParser(add_help=False)
    add_store_options(options, default)
    options.add_argument("--json", action="store_true", default=default,
                         help=json_help or "print machine-readable JSON on stdout and nothing else")
    options.add_argument("-v", "--verbose", action="store_true", default=default, help="log progress to stderr")
    return options


def add_store_options(p: argparse.ArgumentParser, default: Any = None) -> None:
    """``--path``, ``--graph`` and ``--vectors``: where the store is (see ``StoreLocation.resolve``)."""
    p.add_argument("--path", default=default,
                   help="memory directory (default: $HINDSIGHT_PATH or ./memory)")
    p.add_argument("--graph", default=default,
                   help="graph store instead of --path: bolt://host:port (Neo4j) or a SQLite file "
                        "(default: $HINDSIGHT_GRAPH)")
    p.add_argument("--vectors", default=default,
                   help="vector index that goes with --graph: http://host:port (Chroma) or a directory "
                        "(default: $HINDSIGHT_VECTORS)")


def location(args: argparse.Namespace) -> StoreLocation:
    """The store the options (or the environment) name; ``StoreLocationError`` for a broken combination."""
    return StoreLocation.resolve(getattr(args, "path", None), getattr(args, "graph", None),
                                 getattr(args, "vectors", None))


@contextlib.contextmanager
def open_store(args: argparse.Namespace, *, must_exist: bool = False, what: str = "",
               **open_kwargs: Any) -> Iterator[Hindsight]:
    """The store named by the options, closed on exit. Commands that only read pass ``must_exist`` so a mistyped
    path is an error (``StoreLocationError``, prefixed by ``what``) instead of a new empty store.

    A command does not run the background jobs other processes queued (``start_worker=False`` unless given): a
    read never waits for a model, and closing abandons no job half way. ``hindsight worker`` runs them, ``retain``
    its own facts (``Bank.wait_idle``)."""
    where = location(args)
    if must_exist:
        where.require(what)
    from ..hindsight import Hindsight

    open_kwargs.setdefault("start_worker", False)
    with Hindsight.open(where, **open_kwargs) as hs:
        yield hs
