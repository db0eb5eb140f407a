"""Options every ``hindsight`` command shares (``--path | --graph/--vectors``, ``--json``, ``-v``) and opening the
store they name, through the one store locator (``stores/locate.py``).

Nothing heavy is imported here: the engine is imported when a command opens its store.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable, Iterator
from datetime import datetime
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


MAX_BUDGET = 100_000
"""The largest token budget a command takes (the MCP tools' bound too): far above any model's context."""
MAX_MEMORIES = 10_000
"""The most memories ``recall --max`` asks for."""
MAX_BATCH = 10_000
"""The largest ``reembed --batch-size``: memories embedded in one step."""


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``; anything else is a one-line usage error
    (argparse prints it and exits with status 2)."""

    def parse(text: str) -> int:
        try:
            # A bounded length first: int() of a 10,000-digit string is slow, and no bound needs more than 20.
            value = int(text) if len(text.strip()) <= 20 else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low} to {high}, not {_shown(text)}")
        return value

    return parse


def fraction(low: float = 0.0, high: float = 1.0) -> Callable[[str], float]:
    """An argparse ``type``: a finite number from ``low`` to ``high``; anything else (text, ``nan``, ``inf``,
    ``1e308``) is a one-line usage error."""

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text.strip()) <= 30 else math.nan
        except ValueError:
            value = math.nan
        if not low <= value <= high:  # NaN fails every comparison
            raise argparse.ArgumentTypeError(f"expected a number from {low:g} to {high:g}, not {_shown(text)}")
        return value

    return parse


MAX_MOMENT_CHARS = 100
"""The longest date or time an option takes (a date in words included): longer text is refused unread."""


def moment() -> Callable[[str], datetime]:
    """An argparse ``type``: a date or time (ISO 8601, or a date in words such as "5 March 2024"), as an aware UTC
    datetime (a time without a zone is UTC); anything else is a one-line usage error."""

    def parse(text: str) -> datetime:
        found = None
        if 0 < len(text.strip()) <= MAX_MOMENT_CHARS:
            from ..errors import InvalidInputError
            from ..temporal.timestamps import parse_timestamp

            try:
                found = parse_timestamp(text.strip(), "date")
            except InvalidInputError:
                found = None
        if found is None:
            raise argparse.ArgumentTypeError(f"expected a date or time such as 2024-03-05 or 2024-03-05T18:00, "
                                             f"not {_shown(text)}")
        return found

    return parse


def _shown(text: str) -> str:
    """The user's value as an error quotes it: on one line and short."""
    text = " ".join(text.split())
    return repr(text if len(text) <= 24 else text[:23] + "…")


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
