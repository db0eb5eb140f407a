"""``python -m hindsight_core.explorer [--path DIR] [--port N] [--host H]``: the ``hindsight ui`` command on its
own (the same options; used by the tests and the load benchmark)."""

from __future__ import annotations

import argparse

from ..cli.options import add_store_options
from ..cli.run import run_parsed
from ..cli.safe_output import escaped_output, setup_logging
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
    setup_logging(args, argv)  # scrubbed of secrets at every verbosity
    with escaped_output():
        return run_parsed(args, (HindsightError, OSError))


if __name__ == "__main__":
    raise SystemExit(main())
