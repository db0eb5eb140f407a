"""The ``hindsight`` command line and what its commands share: ``commands`` (the parser and the retain, recall,
reflect, stats, check, demo and bench commands), ``options`` (``--path | --graph/--vectors``, ``--json``,
``-v``, and opening the store they name), ``run`` (one parsed command, errors on one line), ``display``,
``formats`` (input files), ``demo``, ``portability`` (export, import, migrate) and ``net`` (loopback checks
for the servers).

Nothing heavy is imported here: the engine loads when a command runs.
"""

from .commands import main

__all__ = ["main"]
