"""Running one parsed command line: shared by the ``hindsight`` and ``hindsight-bench`` programs."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
from collections.abc import Callable
from typing import TypeVar

from ..actor import acting_as

EXIT_ERROR = 2

R = TypeVar("R")


def cli_write(command: Callable[[argparse.Namespace], R]) -> Callable[[argparse.Namespace], R]:
    """A command that writes: what it changes is recorded in the audit trail as made through the ``cli``
    surface (the servers, ``hindsight mcp`` and ``ui``, name their own surface per request instead)."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> R:
        with acting_as("cli"):
            return command(args)

    return run


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type's name when it has none)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def run_parsed(args: argparse.Namespace, errors: tuple[type[BaseException], ...]) -> int:
    """Call ``args.func(args)``; with ``args.json`` its result is the only thing on stdout (JSON). ``errors`` are
    reported on one line with exit status 2, Ctrl-C with 130; otherwise ``args.exit_status`` (default 0)."""
    real_stdout = sys.stdout
    try:
        # With --json the JSON document is the only thing on stdout: anything a library prints goes to stderr.
        guard = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with guard:
            result = args.func(args)
    except errors as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if args.json and result is not None:
        real_stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
        real_stdout.flush()
    return int(getattr(args, "exit_status", 0))
