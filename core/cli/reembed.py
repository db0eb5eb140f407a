"""The ``reembed`` command of the ``hindsight`` command line: switch banks to another embedder without retaining again.

Usage::

    hindsight reembed BANK [BANK ...] --embedder mpnet
    hindsight reembed --all --embedder mpnet [--path DIR | --graph URI --vectors URL] [--json]

Each bank's vectors are rebuilt from its stored memories into a new collection that replaces the old one at once
(``vectors/reembed.py``); an interrupted run is resumed by running the same command again. A progress bar shows on
a terminal; otherwise the command is quiet until it prints what it did (or, with ``--json``, one JSON document).

The store is opened without the ``Hindsight`` facade, which opens a store with one embedder and checks every bank
against it: half way through switching a store's banks, they are on two embedders, and a rerun must reach them all.
Only the vector index is written; the graph store is read (and the audit trail records each switch).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .options import MAX_BATCH, location, whole_number
from .run import cli_write

if TYPE_CHECKING:
    from ..embedders import Embedder
    from ..stores.base import GraphStore, VectorIndex
    from ..vectors.reembed import Progress, ReembedReport


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``reembed`` to the ``hindsight`` subcommands (``common``: the options every command takes)."""
    p = sub.add_parser("reembed", parents=[common], help="switch banks to another embedder (no re-ingest, resumable)",
                       description="Rebuilds each bank's vectors from its stored memories with another embedder, "
                                   "into a new collection that replaces the old one in one step once it is complete. "
                                   "Interrupted, the old vectors stay in use; run the command again to resume. "
                                   "Then open the store with that embedder (HINDSIGHT_EMBEDDER or embedder=).")
    p.add_argument("banks", nargs="*", metavar="BANK", help="bank id(s) to switch")
    p.add_argument("--all", action="store_true",
                   help="every bank of the store (a store opens with one embedder: switch all its banks to use it)")
    p.add_argument("--embedder", required=True,
                   help="the new embedder: minilm, minilm-fp32, minilm-int8, mpnet, or any name the store accepts")
    p.add_argument("--batch-size", type=whole_number(1, MAX_BATCH), default=256, metavar=f"1..{MAX_BATCH}",
                   help="memories embedded per step (default 256)")
    p.set_defaults(func=cmd_reembed)


@cli_write
def cmd_reembed(args: argparse.Namespace) -> dict[str, Any] | None:
    """``reembed BANK... --embedder NAME``: rebuild the banks' vectors with that embedder and swap them in."""
    from ..embedders import make_embedder
    from ..errors import InvalidInputError

    if bool(args.banks) == bool(args.all):
        raise InvalidInputError("name the bank(s) to re-embed, or pass --all (not both)")
    if args.batch_size < 1:
        raise InvalidInputError(f"--batch-size must be at least 1, not {args.batch_size}")
    where = location(args).require("reembed: ")
    embedder = make_embedder(args.embedder)  # before any store opens: an unknown name leaves nothing to close
    reports = []
    with _stores(where.graph, where.vectors, where.path) as (store, index):
        known = {b.id for b in store.list_banks()}
        banks = sorted(known) if args.all else list(dict.fromkeys(args.banks))
        if unknown := [b for b in banks if b not in known]:
            from ..errors import BankNotFoundError

            raise BankNotFoundError(f"no bank {unknown[0]!r}; known banks: {sorted(known)[:20]}")
        for bank_id in banks:
            report = _reembed(store, index, embedder, bank_id, args)
            reports.append(report)
            if not args.json:
                print(_describe(report))
    if args.json:
        return {"banks": [r.model_dump() for r in reports]}
    return None


@contextmanager
def _stores(graph: str | None, vectors: str | None, root: Any) -> Iterator[tuple[GraphStore, VectorIndex]]:
    from ..stores.locate import open_graph, open_index

    index = open_index(vectors, root)
    try:
        store = open_graph(graph, root)
        try:
            yield store, index
        finally:
            store.close()
    finally:
        close = getattr(index, "close", None)
        if close is not None:
            close()


def _reembed(store: GraphStore, index: VectorIndex, embedder: Embedder, bank_id: str,
             args: argparse.Namespace) -> ReembedReport:
    from ..config import Settings
    from ..stores import audit
    from ..vectors.reembed import reembed_bank

    with _progress_bar(bank_id, enabled=not args.json and sys.stderr.isatty()) as progress:
        report = reembed_bank(store, index, embedder, Settings(), bank_id, batch_size=args.batch_size,
                              progress=progress)
    audit.record(store, bank_id, "reembed", counts={"vectors": report.units, "embedded": report.embedded},
                 summary=f"{report.previous_embedder} -> {report.embedder}")
    return report


@contextmanager
def _progress_bar(bank_id: str, *, enabled: bool) -> Iterator[Progress | None]:
    """A progress callback drawing a bar on stderr, or None (not a terminal, or tqdm is not installed)."""
    try:
        from tqdm import tqdm
    except ImportError:
        enabled = False
    if not enabled:
        yield None
        return
    bar = tqdm(desc=f"reembed {bank_id}", unit="memory", file=sys.stderr)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


def _describe(report: ReembedReport) -> str:
    before = f"{report.previous_embedder} ({report.previous_dimension})" if report.previous_embedder else "none"
    resumed = f", {report.resumed} kept from an interrupted run" if report.resumed else ""
    return (f"{report.bank_id}: {before} -> {report.embedder} ({report.dimension}): {report.units} memories, "
            f"{report.embedded} embedded{resumed} in {report.seconds:.1f} s")
