"""The ``audit`` command of the ``hindsight`` command line: the audit trail of one bank or of every bank.

``core/cli/commands.py`` adds it with ``add_commands(sub, common)``. Each entry is one write or forget: when, the
surface it came through (``api``, ``cli``, ``mcp``, ``explorer``), the id of the token it used (never the token),
the operation, the document, and what changed. A deleted bank's trail is still listed (deleting keeps it).

Usage::

    hindsight audit [BANK] [--limit N] [--offset N] [--oldest-first] [--json]
"""

from __future__ import annotations

import argparse
from typing import Any

from .display import format_table
from .options import location, open_store


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``audit`` to the ``hindsight`` subcommands (``common``: the global options)."""
    p = sub.add_parser("audit", parents=[common], help="the audit trail: who wrote or forgot what, and when",
                       description="Lists the writes and forgets recorded for a bank (or every bank, deleted ones "
                                   "included), newest first: time, surface (api, cli, mcp, explorer), token id, "
                                   "operation, document and what changed.")
    p.add_argument("bank", nargs="?", help="bank id (default: every bank)")
    p.add_argument("--limit", type=_count, default=50, metavar="N", help="entries to show (default 50)")
    p.add_argument("--offset", type=_count, default=0, metavar="N", help="skip the newest N entries")
    p.add_argument("--oldest-first", action="store_true", help="oldest entries first")
    p.set_defaults(func=cmd_audit)


def _count(text: str) -> int:
    if not text.isdigit() or len(text) > 9:
        raise argparse.ArgumentTypeError(f"expected a whole number of at most 9 digits, got {text[:20]!r}")
    return int(text)


def _printable(text: str) -> str:
    # Whatever reached the trail is shown as text, never as terminal control sequences: anything not printable
    # (controls, bidirectional overrides, zero-width characters) as its visible escape, as the other commands do.
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def cmd_audit(args: argparse.Namespace) -> dict[str, Any] | None:
    """``audit [BANK]``: a page of the trail, as a table or (``--json``) as a list of entries."""
    where = location(args)
    where.require("no audit trail: ")
    with open_store(args, must_exist=True, start_worker=False, reconcile=False, recover=False) as hs:
        entries = hs.audit(args.bank, limit=args.limit, offset=args.offset, oldest_first=args.oldest_first)
    if args.json:
        return {"bank": args.bank, "entries": [e.model_dump(mode="json") for e in entries]}
    if not entries:
        print(f"no audit entries{f' for bank {args.bank!r}' if args.bank else ''} in {where.describe()}")
        return None
    rows = []
    for e in entries:
        changed = ", ".join(f"{k} {v}" for k, v in e.counts.items())
        what = "; ".join(x for x in (f"document {e.document_id}" if e.document_id else "", changed, e.summary) if x)
        rows.append([e.at.strftime("%Y-%m-%d %H:%M:%S"), e.bank_id, e.surface, e.token_id or "-", e.operation,
                     what[:120]])
    print(format_table(["time (UTC)", "bank", "surface", "token", "operation", "what"],
                       [[_printable(str(c)) for c in row] for row in rows]))
    return None
