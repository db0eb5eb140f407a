"""The ``export``, ``import`` and ``migrate`` commands of the ``hindsight`` command line.

``core/cli/commands.py`` adds them with ``add_commands(sub, common)``; they follow its conventions: each command is a
function of the parsed arguments that prints for people, or returns a dict that is printed as the only JSON on
stdout with ``--json``; a ``HindsightError`` (or ``OSError``) becomes a one-line ``error: ...`` with exit status 2,
and ``migrate`` exits with status 1 when a bank could not be copied and verified. The store is ``--path`` (or
``$HINDSIGHT_PATH``, default ``./memory``), or ``--graph``/``--vectors`` for a server deployment, as ``check``
takes them. Background work is not started: an export reads a bank nobody changes meanwhile.

Usage::

    hindsight export BANK -o bank.jsonl.gz [--with-vectors]
    hindsight import bank.jsonl.gz [--bank NEW] [--replace]
    hindsight migrate --from ./memory --to-graph bolt://db:7687 --to-vectors http://chroma:8000 [--bank ID ...]
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .run import cli_write

if TYPE_CHECKING:
    from .. import Hindsight
    from ..portability.migrate import BankMigration


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``export``, ``import`` and ``migrate`` to the ``hindsight`` subcommands (``common``: the global options
    every subcommand takes, ``--path``, ``--json``, ``--verbose``)."""
    p = sub.add_parser("export", parents=[common], help="write a bank to a file (JSONL, .gz for gzip)",
                       description="Writes the bank's profile, raw documents, memories of every network, entities, "
                                   "links and opinion histories to a versioned JSONL file (docs/PORTABILITY.md). "
                                   "The file appears whole or not at all.")
    p.add_argument("bank", help="bank id")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="file to write: NAME.jsonl, or NAME.jsonl.gz for gzip")
    p.add_argument("--with-vectors", action="store_true",
                   help="include the vectors (an import with the same embedder reuses them instead of embedding)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", parents=[common], help="import a bank file as a new bank (all or nothing)",
                       description="Validates the whole file first (a damaged or truncated file is an error naming "
                                   "the line), then writes the bank; a failure leaves nothing behind. An existing "
                                   "bank is refused unless --replace.")
    p.add_argument("file", help="a file written by 'hindsight export'")
    p.add_argument("--bank", help="bank id to import as (default: the id it was exported from)")
    p.add_argument("--replace", action="store_true", help="replace an existing bank of that id")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("migrate", parents=[common], help="copy banks to the server backend (resumable, verified)",
                       description="Copies every bank (or --bank ...) of an embedded store to a Neo4j graph store "
                                   "and a Chroma server, then verifies each: counts, and the recall order of sample "
                                   "queries on both sides. Run it again to resume: banks already copied and "
                                   "verified are skipped, a half-copied one is redone. Credentials come from "
                                   "NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE. Exit status 1 when a bank failed.")
    p.add_argument("--from", dest="source", metavar="PATH", help="the embedded store (default: --path)")
    p.add_argument("--to-graph", required=True, metavar="URI", help="bolt://host:port (or neo4j://, +s variants)")
    p.add_argument("--to-vectors", required=True, metavar="URL", help="the Chroma server, http://host:port")
    p.add_argument("--bank", dest="banks", action="append", metavar="ID", help="only this bank (repeatable)")
    p.add_argument("--replace", action="store_true", help="overwrite target banks that no migration wrote")
    p.set_defaults(func=cmd_migrate)


@contextlib.contextmanager
def _open(args: argparse.Namespace, *, must_exist: bool) -> Iterator[Hindsight]:
    """The store the options name (``--path | --graph/--vectors``, or the environment), without background
    work."""
    from .options import open_store

    with open_store(args, must_exist=must_exist, start_worker=False) as hs:
        yield hs


def _counts(counts: dict[str, int], networks: dict[str, int]) -> str:
    nets = ", ".join(f"{k} {v}" for k, v in networks.items())
    return (f"{counts.get('unit', 0)} memories ({nets or 'none'}), {counts.get('entity', 0)} entities, "
            f"{counts.get('link', 0)} links, {counts.get('document', 0)} documents, "
            f"{counts.get('opinion_history', 0)} opinion histories")


def cmd_export(args: argparse.Namespace) -> dict[str, Any] | None:
    """``export BANK -o FILE [--with-vectors]``."""
    with _open(args, must_exist=True) as hs:
        report = hs.bank(args.bank, create=False).export(args.output, with_vectors=args.with_vectors)
    if args.json:
        return report.model_dump(mode="json")
    print(f"exported bank {report.bank_id!r} to {report.path}: {_counts(report.counts, report.networks)}"
          f"{', with vectors' if report.with_vectors else ''}; {report.bytes:,} bytes in {report.seconds:.2f} s "
          f"({report.memories_per_s:,.0f} memories/s)")
    return None


@cli_write
def cmd_import(args: argparse.Namespace) -> dict[str, Any] | None:
    """``import FILE [--bank NEW] [--replace]``."""
    with _open(args, must_exist=False) as hs:
        report = hs.import_bank(args.file, bank_id=args.bank, replace=args.replace)
    if args.json:
        return report.model_dump(mode="json")
    if report.cleared:
        print(f"removed the earlier bank {report.bank_id!r} first "
              f"({'an unfinished import' if report.cleared == 'leftover' else 'replaced'})")
    print(f"imported {report.path} as bank {report.bank_id!r}: {_counts(report.counts, report.networks)}; "
          f"vectors {report.vectors}{' (' + report.vectors_reason + ')' if report.vectors_reason else ''}"
          f"{'; memory and entity ids renewed' if report.ids_remapped else ''}; {report.seconds:.2f} s "
          f"({report.memories_per_s:,.0f} memories/s)")
    return None


def _describe(bank: BankMigration) -> list[str]:
    from ..portability.migrate import TOP

    if bank.status == "failed":
        lines = [f"{bank.bank_id}: FAILED: {bank.reason}"]
    elif bank.status == "skipped":
        lines = [f"{bank.bank_id}: skipped ({bank.reason})"]
    else:
        same = sum(q.same_order for q in bank.queries)
        top = sum(q.same_top for q in bank.queries)
        low = min((q.overlap for q in bank.queries), default=1.0)
        lines = [f"{bank.bank_id}: copied and verified in {bank.seconds:.1f} s ({bank.memories_per_s:,.0f} "
                 f"memories/s, vectors {bank.vectors}); counts equal, {len(bank.queries)} sample queries: "
                 f"{top} the same first {TOP}, {same} the same whole list, memories in common >= {low:.0%}"]
    if bank.source_counts:
        lines.append(f"  source: {bank.source_counts}")
    if bank.target_counts and bank.target_counts != bank.source_counts:
        lines.append(f"  target: {bank.target_counts}")
    for q in bank.queries:
        if not q.matches:
            lines.append(f"  differs: {q.query[:60]!r}: first {TOP} {q.source_ids[:TOP]} vs {q.target_ids[:TOP]}, "
                         f"{q.overlap:.0%} in common")
    return lines


@cli_write
def cmd_migrate(args: argparse.Namespace) -> dict[str, Any] | None:
    """``migrate --from PATH --to-graph URI --to-vectors URL [--bank ID ...] [--replace]``."""
    from .. import Hindsight
    from ..portability.migrate import migrate
    from ..stores.locate import StoreLocation

    where = StoreLocation.resolve(args.source or args.path, args.graph, args.vectors).require("nothing to migrate: ")
    to = StoreLocation.resolve(graph=args.to_graph, vectors=args.to_vectors)
    # The target first: a server that cannot be reached fails before the source's models load.
    with Hindsight.open(to, start_worker=False) as target, Hindsight.open(where, start_worker=False) as source:
        report = migrate(source, target, args.banks, replace=args.replace)
    args.exit_status = 0 if report.ok else 1
    if args.json:
        return report.model_dump(mode="json")
    for bank in report.banks:
        for line in _describe(bank):
            print(line)
    if not report.banks:
        print(f"no banks in {where.describe()}")
    print(f"{'ok' if report.ok else 'PROBLEMS'}: {len(report.banks)} banks in {report.seconds:.1f} s")
    return None
