"""The ``hindsight ui`` command: ``add_commands`` adds it to the ``hindsight`` parser (``core/cli/commands.py``), and
``python -m hindsight_core.explorer`` runs the same command on its own.

Usage::

    hindsight ui [--path DIR] [--port 8765] [--host 127.0.0.1] [--open] [--tokens FILE]
    hindsight ui --graph bolt://host:7687 --vectors http://host:8000

Like the other commands, nothing heavy is imported until the command runs; a missing store is an error
rather than a new empty one.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..cli.options import location
from ..errors import HindsightError
from .server import DEFAULT_HOST, DEFAULT_PORT


class ExplorerUnavailableError(HindsightError):
    """The explorer cannot start: its optional dependencies (the ``ui`` extra) are missing."""


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``ui`` to the ``hindsight`` command line (``common`` holds the global ``--path``/``--json``/``-v``)."""
    p = sub.add_parser(
        "ui", parents=[common], help="browse and audit a memory store in a local web page",
        description="Serves the memory explorer on a local port: memories by network with their provenance, "
                    "the entity graph, opinions over time, documents and jobs, and a recall playground with its "
                    "trace. Reads are open on a loopback address; forgetting and correcting a memory need the token "
                    "printed at start. With --tokens, every request needs a token of the file and reaches only its "
                    "banks.",
    )
    add_ui_options(p)
    p.set_defaults(func=cmd_ui)


def add_ui_options(p: argparse.ArgumentParser) -> None:
    """The options of ``ui`` (shared with ``python -m hindsight_core.explorer``)."""
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}; any other address needs the token for "
                        "reads too)")
    p.add_argument("--open", dest="open_browser", action="store_true", help="open the page in a web browser")
    p.add_argument("--tokens", metavar="FILE",
                   help="accept the tokens of this file, each reaching only its banks (read or read-write; made "
                        "with 'hindsight token add'); every request then needs one. Default "
                        "$HINDSIGHT_TOKENS_FILE")


def cmd_ui(args: argparse.Namespace) -> dict[str, Any] | None:
    """``ui``: serve the explorer until interrupted."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ExplorerUnavailableError(
            f"the explorer needs the 'ui' extra ({exc.name} is missing): pip install 'hindsight-memory[ui]'"
        ) from exc
    from ..access import access_from
    from .server import serve

    access = access_from(getattr(args, "tokens", None), None)  # a named file is checked before anything starts
    where = location(args).require()
    serve(where, host=args.host, port=args.port, open_browser=args.open_browser, tokens=access.file)
    return None


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, not {value}")
    return value
