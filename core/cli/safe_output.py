"""What a ``hindsight`` command writes, made safe: logs without secrets, output without terminal controls.

``setup_logging`` configures the process's logging for a command (``-v``: INFO) through ``llm.logsafe``, with the
credentials of every URL on the command line and in the environment registered, so that they are masked in every
log line, tracebacks included. ``escaped_output`` wraps stdout and stderr for the command's run: a control
character, a bidirectional override or a zero-width character in a bank id, a memory's text or an error is printed
as a visible ``\\uXXXX`` escape (inside a JSON string that is the same character, so ``--json`` output means the
same). Carriage returns stay on stderr, where progress bars redraw their line with them.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from ..llm.logsafe import configure_logging, remember_url
from ..text.printable import escape_controls

__all__ = ["EscapingStream", "escaped_output", "setup_logging"]

_URL_OPTIONS = ("llm_url", "graph", "vectors", "embedder")


def setup_logging(args: argparse.Namespace, argv: Sequence[str] | None = None) -> logging.Handler:
    """Configure logging for a parsed command: scrubbed, to stderr, INFO with ``-v`` (else WARNING); URLs among
    the options (``--llm-url``, ``--graph``, ``--vectors``) and the command line have their credentials
    registered as secrets first."""
    for name in _URL_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            remember_url(value)
    for word in argv if argv is not None else sys.argv[1:]:
        if "://" in word and "@" in word:
            remember_url(word.split("=", 1)[-1])
    return configure_logging(bool(getattr(args, "verbose", False)))


class EscapingStream:
    """A text stream that escapes control, bidirectional and zero-width characters on their way to ``target``."""

    def __init__(self, target: TextIO, *, keep_carriage_returns: bool = False) -> None:
        """Write to ``target``; ``keep_carriage_returns`` for a stream progress bars draw on."""
        self.target = target
        self._keep_cr = keep_carriage_returns

    def write(self, text: str) -> int:
        """Write ``text`` escaped; returns the length of ``text`` (what callers of ``write`` expect)."""
        self.target.write(escape_controls(text, keep_carriage_returns=self._keep_cr))
        return len(text)

    def writelines(self, lines: Iterator[str] | Sequence[str]) -> None:
        """Write each line escaped."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer...
        return getattr(self.target, name)


@contextlib.contextmanager
def escaped_output() -> Iterator[None]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` escape what could rewrite the terminal."""
    saved = sys.stdout, sys.stderr
    sys.stdout = EscapingStream(saved[0])
    sys.stderr = EscapingStream(saved[1], keep_carriage_returns=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
