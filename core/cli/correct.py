"""The ``correct`` command of the ``hindsight`` command line: say that a memory is wrong and what is true instead.

``core/cli/commands.py`` adds it with ``add_commands(sub, common)``. The corrected text is stored as a new memory that
supersedes the wrong one (``Bank.correct``): nothing is deleted, the wrong memory stays as history with the date it
stopped holding, and the audit trail records the correction as made through the ``cli`` surface.

Usage::

    hindsight correct BANK MEMORY_ID "Rui works as a paramedic, not a nurse." [--by rui] [--json]
"""

from __future__ import annotations

import argparse
from typing import Any

from .display import clip
from .options import open_store
from .run import cli_write

MAX_BY_CHARS = 200
"""The longest name ``--by`` takes: who corrected a memory, not a document. (The servers record the calling token's id
instead: over MCP and in the explorer a caller cannot name someone else.)"""


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``correct`` to the ``hindsight`` subcommands (``common``: the global options)."""
    p = sub.add_parser(
        "correct", parents=[common], help="correct a memory: store what is true instead, keeping the old as history",
        description="Stores TEXT as a new memory that supersedes MEMORY_ID (the id 'hindsight recall --json' or the "
                    "explorer shows): recall then puts the correction first and the corrected memory right after it, "
                    "marked superseded. Nothing is deleted; correcting the same memory again replaces the earlier "
                    "correction. Recorded in the audit trail.",
    )
    p.add_argument("bank", help="bank id")
    p.add_argument("memory_id", help="id of the memory that is wrong")
    p.add_argument("text", help="what is true instead (one statement)")
    p.add_argument("--by", metavar="NAME", help=f"who corrects it (recorded with the correction; at most "
                                                f"{MAX_BY_CHARS} characters)")
    p.set_defaults(func=cmd_correct)


@cli_write
def cmd_correct(args: argparse.Namespace) -> dict[str, Any] | None:
    """``correct BANK MEMORY_ID TEXT [--by NAME]``: the correction stored; what it replaced and the new memory's id
    printed (or, with ``--json``, both memories)."""
    from ..errors import InvalidInputError

    by = " ".join((args.by or "").split()) or None
    if by is not None and len(by) > MAX_BY_CHARS:
        raise InvalidInputError(f"--by names who corrects it in at most {MAX_BY_CHARS} characters, not {len(by):,}")
    if not args.text.strip():
        raise InvalidInputError("a correction needs the text that is true instead")
    with open_store(args, must_exist=True, what=f"no bank {args.bank!r}: ") as hs:
        bank = hs.bank(args.bank, create=False)
        corrected = bank.correct(args.memory_id, args.text, by=by)
        old = bank.get(args.memory_id)
    if args.json:
        return {"bank": args.bank, "corrected": old.model_dump(mode="json") if old is not None else args.memory_id,
                "memory": corrected.model_dump(mode="json")}
    print(f"corrected {args.memory_id}: it is kept as history, superseded by {corrected.id}")
    if old is not None:
        print(f"  was: {clip(old.text, 200)}")
    print(f"  now: {clip(corrected.text, 200)}" + (f"  (by {by})" if by else ""))
    return None
