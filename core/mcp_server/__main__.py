"""``python -m hindsight_core.mcp_server [options]``: the ``hindsight mcp`` command on its own.

Takes the ``mcp`` command's options (see ``cli.add_commands``) and the global ``--path`` and ``-v``; errors print
one ``error: ...`` line on stderr and exit with status 2, as every ``hindsight`` command does.
"""

from __future__ import annotations

import argparse
import sys

from ..cli.options import global_options
from ..cli.run import EXIT_ERROR, run_parsed
from ..cli.safe_output import escaped_output, setup_logging
from ..errors import HindsightError
from .cli import add_commands


def build_parser() -> argparse.ArgumentParser:
    """A parser whose only command is ``mcp``, with the global options the ``hindsight`` command has."""
    parser = argparse.ArgumentParser(prog="python -m hindsight_core.mcp_server")
    common = global_options(None, json_help=argparse.SUPPRESS)  # --json is accepted, as by every command
    add_commands(parser.add_subparsers(dest="command", required=True), common)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` as the ``mcp`` command's options and run it; returns the exit status."""
    arguments = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(["mcp", *arguments])
    except SystemExit as exc:  # --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    setup_logging(args, arguments)  # scrubbed of secrets at every verbosity
    with escaped_output():
        return run_parsed(args, (HindsightError, OSError))


if __name__ == "__main__":
    raise SystemExit(main())
