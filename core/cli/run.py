"""Running one parsed command line: shared by the ``hindsight`` and ``hindsight-bench`` programs."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

from ..actor import acting_as

EXIT_ERROR = 2
LONG_WORK_S = 2.0
"""Seconds a piece of work runs before its progress bar appears on a terminal: quick work (a model loaded from
disk, a short retain) draws nothing."""

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


def progress_settings(terminal: bool) -> dict[str, str]:
    """The environment that makes the libraries' progress bars (tqdm's, Hugging Face's "Loading weights") follow
    the command line's rule: none unless stderr is a terminal, and there only for long work (``LONG_WORK_S``)."""
    if not terminal:
        # huggingface_hub's switch, which transformers reads when imported, and tqdm's own (every bar's default).
        return {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}
    return {"TQDM_DELAY": str(LONG_WORK_S)}


@contextlib.contextmanager
def quiet_progress(terminal: bool | None = None) -> Iterator[None]:
    """Progress bars only on a terminal and only for long work, for the duration of a command.

    The libraries read these switches when they are imported (tqdm, huggingface_hub) or when a bar starts, and a
    command imports them lazily, so they are set before the command runs; a value the user set wins. Restored
    afterwards, so a caller running commands in process (the tests) keeps its own environment. ``terminal``:
    whether stderr is one (default: ask it).
    """
    if terminal is None:
        terminal = _is_terminal(sys.stderr)
    saved = {k: os.environ.get(k) for k in progress_settings(False) | progress_settings(True)}
    for key, value in progress_settings(terminal).items():
        os.environ.setdefault(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def run_parsed(args: argparse.Namespace, errors: tuple[type[BaseException], ...]) -> int:
    """Call ``args.func(args)``; with ``args.json`` its result is the only thing on stdout (JSON). ``errors`` are
    reported on one line with exit status 2, Ctrl-C with 130; otherwise ``args.exit_status`` (default 0). Progress
    bars follow ``quiet_progress``."""
    real_stdout = sys.stdout
    try:
        # With --json the JSON document is the only thing on stdout: anything a library prints goes to stderr.
        guard = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with guard, quiet_progress():
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
