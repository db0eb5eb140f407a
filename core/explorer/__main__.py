"""``python -m hindsight_core.explorer [--path DIR] [--port N] [--host H]``: the ``hindsight ui`` command on its
own (the same options; used by the tests and the load benchmark)."""

from __future__ import annotations

import argparse
import logging
import sys

from ..cli.options import add_store_options
from ..cli.run import run_parsed
from ..errors import HindsightError
from .cli import add_ui_options, cmd_ui


def main(argv: list[str] | None = None) -> int:
    """Parse the options and serve; the exit status of ``hindsight ui``."""
    parser = argparse.ArgumentParser(prog="python -m hindsight_core.explorer",
                                     description="Serve the Hindsight memory explorer (see 'hindsight ui').")
    add_store_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    add_ui_options(parser)
    parser.set_defaults(func=cmd_ui, json=False)
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    return run_parsed(args, (HindsightError, OSError))


if __name__ == "__main__":
    raise SystemExit(main())
