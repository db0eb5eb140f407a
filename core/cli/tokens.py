"""``hindsight token add|list|remove``: manage the token file that ``hindsight mcp --http`` and ``hindsight ui`` take
with ``--tokens`` (or ``$HINDSIGHT_TOKENS_FILE``).

Usage::

    hindsight token add NAME [--banks a,b | --all-banks] [--read-only] [--file FILE]   # prints the token once
    hindsight token list [--file FILE]
    hindsight token remove NAME [--file FILE]

The file keeps a salted hash of each token, never the token (``hindsight_core.access``), and is written 0600; a
running server picks up a change at its next request.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..access import READ, READ_WRITE, TOKENS_FILE_ENV, TokenFile, TokenFileError, check_token_id
from .display import format_table


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``token`` and its subcommands to a ``hindsight`` parser (``common``: the global options)."""
    p = sub.add_parser("token", parents=[common], help="manage the access tokens of the MCP HTTP server and the UI",
                       description="Tokens grant read or read-write access to a list of banks (or every bank) on "
                                   "'hindsight mcp --http' and 'hindsight ui' started with --tokens FILE. The file "
                                   "holds only salted hashes; a new token is shown once, when it is added.")
    actions = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", parents=[common], help="add a token and print it (once)")
    add.add_argument("name", help="the token's id (letters, digits, '.', '_', '-'): what the audit trail records")
    which = add.add_mutually_exclusive_group(required=True)
    which.add_argument("--banks", help="comma-separated bank ids the token reaches")
    which.add_argument("--all-banks", action="store_true", help="the token reaches every bank, present and future")
    add.add_argument("--read-only", action="store_true", help="recall and browse only: no retain, reflect or forget")
    listing = actions.add_parser("list", parents=[common], help="list the tokens (never the tokens themselves)")
    remove = actions.add_parser("remove", parents=[common], help="remove a token (running servers refuse it at "
                                                                    "once)")
    remove.add_argument("name", help="the token's id")
    for action, func in ((add, cmd_add), (listing, cmd_list), (remove, cmd_remove)):
        action.add_argument("--file", help=f"the token file (default ${TOKENS_FILE_ENV})")
        action.set_defaults(func=func)


def token_file(args: argparse.Namespace) -> TokenFile:
    """The file ``--file`` or ``$HINDSIGHT_TOKENS_FILE`` names."""
    named = args.file or os.environ.get(TOKENS_FILE_ENV, "").strip()
    if not named:
        raise TokenFileError(f"name the token file with --file FILE or ${TOKENS_FILE_ENV}")
    return TokenFile(named)


def parse_banks(text: str) -> list[str]:
    """``a,b`` as a list of bank ids (blanks around commas dropped)."""
    banks = [b.strip() for b in text.split(",") if b.strip()]
    if not banks:
        raise TokenFileError("--banks needs at least one bank id (or give --all-banks)")
    return banks


def cmd_add(args: argparse.Namespace) -> dict[str, Any] | None:
    """``token add``: create the token, store its hash, print it once."""
    file = token_file(args)
    name = check_token_id(args.name)
    banks = None if args.all_banks else parse_banks(args.banks)
    scope = READ if args.read_only else READ_WRITE
    token = file.add(name, scope=scope, banks=banks)
    shown = "every bank" if banks is None else ", ".join(banks)
    if args.json:
        return {"id": name, "token": token, "scope": scope, "banks": banks if banks is not None else "*",
                "file": str(file.path)}
    print(f"added token {name!r}: {scope} on {shown} (in {file.path})")
    print(f"token: {token}")
    print("Keep it now: it is not stored and cannot be shown again. Clients send it as "
          "'Authorization: Bearer TOKEN' (MCP) or open the explorer at http://HOST:PORT/#token=TOKEN.")
    return None


def cmd_list(args: argparse.Namespace) -> dict[str, Any] | None:
    """``token list``: each token's id, scope, banks and creation time."""
    file = token_file(args)
    entries = file.entries()
    rows = [{"id": e.id, "scope": e.scope, "banks": "*" if e.banks is None else list(e.banks), "created": e.created}
            for e in entries]
    if args.json:
        return {"file": str(file.path), "tokens": rows}
    if not rows:
        print(f"no tokens in {file.path}")
        return None
    print(format_table(["id", "scope", "banks", "created"],
                       [[r["id"], r["scope"], r["banks"] if r["banks"] == "*" else ",".join(r["banks"]),
                         r["created"]] for r in rows]))
    return None


def cmd_remove(args: argparse.Namespace) -> dict[str, Any] | None:
    """``token remove``: drop the token from the file."""
    file = token_file(args)
    file.remove(args.name)
    if args.json:
        return {"removed": args.name, "file": str(file.path)}
    print(f"removed token {args.name!r} from {file.path}")
    return None
