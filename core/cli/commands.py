"""The ``hindsight`` command line: retain, recall, stats, check, worker and demo over an on-disk memory.

Usage::

    hindsight [--path DIR] [--json] retain BANK [FILE|-] [--no-extract]
    hindsight recall BANK "what did Maya do last week?" --reference-time 2025-03-23 --trace
    hindsight recall BANK "where does Ana live?" --as-of 2024-06-01   # what the bank held then
    hindsight correct BANK MEMORY_ID "Rui is a paramedic, not a nurse." --by rui
    hindsight stats [BANK]
    hindsight worker [--until-idle]      # runs the queued background jobs (no other command does)
    hindsight demo
    hindsight bench locomo --conversations 1 --questions 20 --out results/

``bench`` hands the rest of its command line to the benchmarks, a separate distribution
(``hindsight-memory-bench``, in ``benchmarks/`` of the repository) found through the ``hindsight.cli`` entry
point group; without it ``hindsight bench`` says how to install it.

``--json`` prints one JSON document on stdout and nothing else (progress and logs go to stderr).
Errors print a one-line ``error: ...`` on stderr and exit with status 2.

This module imports nothing heavy at import time: the engine (models, stores, embedder) is imported
inside the command functions, so ``hindsight --help`` and ``import hindsight_core.cli.commands`` stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..recall.deadline import MAX_DEADLINE_MS
from .display import format_recall, format_stats, format_table, format_trace, plural, total
from .options import MAX_BUDGET, MAX_MEMORIES, fraction, global_options, location, moment, open_store, whole_number
from .run import EXIT_ERROR, cli_write, one_line, quiet_progress, run_parsed

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..bank import Bank
    from ..hindsight import Hindsight
    from .formats import Session

    _Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]  # what add_subparsers() returns

DEFAULT_BUDGET = 2000
# Kept literal so that building the parser imports no pydantic model.
NETWORKS = ("world", "experience", "opinion", "observation")
COMMAND_ENTRY_POINTS = "hindsight.cli"
"""Entry-point group through which another distribution adds a command: ``name = "module:main"``, where
``main(argv, prog=...)`` returns an exit status (the benchmarks add ``bench``)."""
BENCH_MISSING = ("the benchmarks are not installed: they are the separate distribution hindsight-memory-bench "
                 "(from a checkout of the repository: pip install -e ./benchmarks), which adds 'hindsight bench' "
                 "and its own command 'hindsight-bench'")


class CLIError(Exception):
    """A usage problem found after parsing (missing file, no data set): reported like a HindsightError."""


# --------------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Run the ``hindsight`` command line; returns the exit status (0 ok, 2 error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and usage errors; callers in-process want a code
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if hasattr(args, "delegate"):  # another program's command line (bench): it prints and exits on its own
        if getattr(args, "verbose", False):
            logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                                format="%(levelname)s %(name)s: %(message)s")
        return int(args.delegate(args))
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_ERROR

    from ..errors import HindsightError
    from .safe_output import escaped_output, setup_logging

    setup_logging(args, argv)  # scrubbed of secrets at every verbosity (llm/logsafe.py)
    with escaped_output():  # no control or bidi character reaches the terminal raw
        return run_parsed(args, (HindsightError, CLIError, OSError))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: every command takes ``--path | --graph/--vectors``, ``--json`` and ``-v``."""
    # Global options are accepted before or after the subcommand. The subparsers get their own copies
    # with SUPPRESS defaults (parents share action objects, so one copy cannot serve both), so that a
    # value given before the subcommand is not overwritten by a subparser default.
    parser = argparse.ArgumentParser(
        prog="hindsight", parents=[global_options(argparse.SUPPRESS)],
        description="Hindsight Memory: long-term memory that retains, recalls and reflects.",
    )
    parser.set_defaults(path=None, graph=None, vectors=None, json=False, verbose=False)
    common = global_options(argparse.SUPPRESS)
    from .correct import add_commands as add_correct
    from .worker import add_commands as add_worker

    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    # The order of these calls is the order of the commands in ``hindsight --help``.
    _add_retain(sub, common)
    _add_recall(sub, common)
    _add_reflect(sub, common)
    add_correct(sub, common)  # correct (core/cli/correct.py)
    _add_stats(sub, common)
    _add_check(sub, common)
    add_worker(sub, common)  # worker (core/cli/worker.py)
    _add_demo(sub, common)

    from ..explorer.cli import add_commands as add_ui
    from ..mcp_server.cli import add_commands as add_mcp
    from .audit import add_commands as add_audit
    from .portability import add_commands as add_portability
    from .reembed import add_commands as add_reembed
    from .tokens import add_commands as add_tokens

    add_portability(sub, common)  # export, import, migrate
    add_audit(sub, common)  # audit
    add_reembed(sub, common)  # reembed
    add_mcp(sub, common)
    add_ui(sub, common)
    add_tokens(sub, common)  # token add|list|remove
    _add_bench(sub)
    return parser


def _add_retain(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``retain BANK [FILE|-]``."""
    p = sub.add_parser("retain", parents=[common], help="store a text, a message list or a conversation",
                       description="Retain plain text, a JSON message list, {'messages': [...]} or "
                                   "LoCoMo-style conversations (one document per session, timestamped with "
                                   "its date).")
    p.add_argument("bank", help="bank id (created if missing)")
    p.add_argument("file", nargs="?", default="-", help="input file, or - for stdin (default)")
    p.add_argument("--no-extract", dest="extract", action="store_false",
                   help="store messages as memories without any LLM call (raw ingest)")
    p.add_argument("--timestamp", help="when the content was said (ISO date or natural language); "
                                       "used for documents that carry no date of their own")
    p.add_argument("--document-id", help="document id (a prefix when the input holds several documents)")
    p.add_argument("--context", help="free-text context handed to the extractor")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="exit once the messages are memories; the LLM's facts are added later by 'hindsight "
                        "worker' or the next application that opens the store (default: wait for them)")
    p.set_defaults(func=cmd_retain)


def _add_recall(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``recall BANK QUERY``."""
    p = sub.add_parser("recall", parents=[common], help="memories relevant to a query, within a token budget")
    p.add_argument("bank", help="bank id")
    p.add_argument("query", help="what to recall")
    p.add_argument("--budget", type=whole_number(1, MAX_BUDGET), default=DEFAULT_BUDGET, metavar=f"1..{MAX_BUDGET}",
                   help=f"token budget of the returned memories (default {DEFAULT_BUDGET})")
    p.add_argument("--max", dest="max_memories", type=whole_number(1, MAX_MEMORIES), metavar=f"1..{MAX_MEMORIES}",
                   help="return at most this many memories")
    p.add_argument("--network", dest="networks", action="append", choices=NETWORKS,
                   help="only this network (repeatable)")
    p.add_argument("--reference-time", help='"now" for time expressions in the query (default: now)')
    p.add_argument("--as-of", type=moment(), metavar="DATE",
                   help="answer with what the bank held then: only what had been said by DATE, current as of "
                        "DATE (ISO date or time, or a date in words)")
    p.add_argument("--deadline-ms", type=whole_number(1, MAX_DEADLINE_MS), metavar=f"1..{MAX_DEADLINE_MS}",
                   help="return within this many milliseconds with what finished in time, naming the search "
                        "channels cut (the embedding model is loaded before the deadline starts)")
    p.add_argument("--trace", action="store_true",
                   help="show each memory's rank and score per channel, and stage timings")
    p.set_defaults(func=cmd_recall)
    p.epilog = ("Memories are listed in the order they were packed; one out of score order says why (context beside "
                "a hit, evidence already shown, a fact below its message), and so does one placed beside what "
                "superseded it or what it superseded. A superseded memory is marked [superseded DATE by #n].")


def _add_reflect(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``reflect BANK QUERY`` with per-call disposition overrides."""
    p = sub.add_parser("reflect", parents=[common], help="answer a question from memory (CARA)")
    p.add_argument("bank", help="bank id")
    p.add_argument("query", help="the question")
    p.add_argument("--budget", type=whole_number(1, MAX_BUDGET), default=2000, metavar=f"1..{MAX_BUDGET}",
                   help="recall budget in tokens (default 2000)")
    p.add_argument("--reference-time", help="'now' for time expressions in the question")
    for trait in ("skepticism", "literalism", "empathy"):
        p.add_argument(f"--{trait}", type=whole_number(1, 5), metavar="1..5",
                       help=f"override the bank's {trait} for this call")
    p.add_argument("--bias", type=fraction(0.0, 1.0), metavar="0..1",
                   help="override the bank's bias (0..1) for this call")
    p.set_defaults(func=cmd_reflect)


def _add_stats(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``stats [BANK]``."""
    p = sub.add_parser("stats", parents=[common], help="list banks, or one bank's counts")
    p.add_argument("bank", nargs="?", help="bank id (default: every bank)")
    p.set_defaults(func=cmd_stats)


def _add_check(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``check [BANK...] [--repair]``."""
    p = sub.add_parser("check", parents=[common], help="verify a store's invariants; --repair fixes them",
                       description="Checks that every unit has a vector and every vector a unit, that no link "
                                   "or mention dangles, entity mention counts and keyword statistics are "
                                   "exact, one entity per normalised name, and that no document, job or vector "
                                   "mark was left by a process that died. Exit status 0: sound; 1: problems "
                                   "remain; 2: error. The store is opened without its usual repairs at open, so "
                                   "check reports what it finds.")
    p.add_argument("banks", nargs="*", metavar="BANK", help="banks to check (default: every bank)")
    p.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    p.set_defaults(func=cmd_check)


def _add_demo(sub: _Subparsers, common: argparse.ArgumentParser) -> None:
    """``demo [--no-reflect]``."""
    p = sub.add_parser("demo", parents=[common], help="retain a bundled conversation and show recall at work",
                       description="Runs in a temporary directory unless --path is given on the command "
                                   "line.")
    p.add_argument("--no-reflect", dest="reflect", action="store_false",
                   help="skip the reflect part (it starts the local LLM)")
    p.set_defaults(func=cmd_demo)


def _add_bench(sub: _Subparsers) -> None:
    """``bench ...``: everything after it, options included, belongs to the benchmarks' own parser."""
    # A prefix character that cannot occur in a command line keeps this parser from taking "--help" or "--out"
    # for one of its own.
    p = sub.add_parser("bench", add_help=False, prefix_chars="\0",
                       help="benchmarks (hindsight-memory-bench; see 'hindsight bench --help')")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(delegate=run_bench)


# --------------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------------
@cli_write
def cmd_retain(args: argparse.Namespace) -> dict[str, Any] | None:
    """``retain BANK [FILE|-]``: one retain per document of the input."""
    from ..errors import InvalidInputError
    from .formats import read_input

    raw = _read_source(args.file)
    sessions = list(read_input(raw))  # parse everything first: bad input fails before anything is stored
    if not sessions:
        raise InvalidInputError("the input holds no documents")
    with _open(args) as hs:
        bank = hs.bank(args.bank)
        documents = _retain_sessions(args, bank, sessions)
        if args.extract and args.wait:
            _wait_for_facts(hs, bank, documents)
    return _retain_report(args, documents, many=len(sessions) > 1)


def _retain_sessions(args: argparse.Namespace, bank: Bank, sessions: list[Session]) -> list[dict[str, Any]]:
    """Retain each session as one document, printing a line per document; the documents' rows, in order."""
    from tqdm import tqdm

    many = len(sessions) > 1
    documents: list[dict[str, Any]] = []
    # A bar for several documents, on a terminal only (disable=None: tqdm asks stderr), once the work runs long
    # (cli/run.py quiet_progress).
    bar = tqdm(sessions, desc="retain", unit="doc", disable=None if many else True, file=sys.stderr)
    for i, session in enumerate(bar, start=1):
        document_id = session.document_id or None
        if args.document_id:
            document_id = f"{args.document_id}:{session.document_id or i}" if many else args.document_id
        try:
            res = bank.retain(session.content, timestamp=session.timestamp or args.timestamp,
                              document_id=document_id, context=args.context, extract=args.extract)
        except Exception:
            if documents:  # say what is already kept before the error line
                print(f"stored {len(documents)} of {len(sessions)} documents before the error", file=sys.stderr)
            raise
        documents.append({
            "document_id": res.document_id,
            "memories": len(res.memories),
            "memory_ids": res.memory_ids,
            "entities": res.entities,
            "links": res.links,
            "warnings": res.warnings,
            "job_id": res.job_id,
        })
        if not args.json:
            line = (f"{res.document_id}: {plural(len(res.memories), 'memory', 'memories')}, "
                    f"{plural(len(res.entities), 'entity', 'entities')}, {plural(res.links, 'link')}")
            (tqdm.write if many else print)(line)
            for warning in res.warnings:
                print(f"  warning: {warning}", file=sys.stderr)
    return documents


def _wait_for_facts(hs: Hindsight, bank: Bank, documents: list[dict[str, Any]]) -> None:
    """Wait for the LLM's facts of ``documents``, count them into each row (``facts``) and report failed jobs.

    The facts job runs in this process's worker: a command that exited before it would leave it queued.
    """
    print("adding the LLM's facts beside the messages ...", file=sys.stderr)
    bank.wait_idle(None)
    facts = [m for d in documents for m in bank.memories(hs.store.units_of_document(bank.id, d["document_id"]))
             if m.cites is not None]
    jobs = {j.id: j for j in bank.jobs()}
    for d in documents:
        d["facts"] = sum(1 for m in facts if m.document_id == d["document_id"])
        # Facts the bank already held from another document gained this one's citations instead (restated).
        result = jobs[d["job_id"]].result if d.get("job_id") in jobs else None
        d["restated"] = int((result or {}).get("restated", 0) or 0)
        # Facts the checks did not store, per reason (``extract/grounding``): never lost without a word.
        d["rejected"] = int((result or {}).get("rejected", 0) or 0)
        d["rejected_by_reason"] = dict((result or {}).get("rejected_by_reason") or {})
    failed = [j for j in jobs.values() if j.status == "failed" and j.id in {d["job_id"] for d in documents}]
    for job in failed:
        print(f"  facts of {job.payload.get('document_id')!r} failed (the messages are kept): {job.error}",
              file=sys.stderr)


def _retain_report(args: argparse.Namespace, documents: list[dict[str, Any]], *, many: bool) -> dict[str, Any] | None:
    """The totals of a retain: printed (``None``), or as the ``--json`` document."""
    totals = {k: sum(d[k] for d in documents) for k in ("memories", "links")}
    if not args.json:
        if args.extract and args.wait:
            line = f"{plural(sum(d.get('facts', 0) for d in documents), 'fact')} added by the LLM"
            reasons: dict[str, int] = {}
            for d in documents:
                for reason, n in (d.get("rejected_by_reason") or {}).items():
                    reasons[reason] = reasons.get(reason, 0) + int(n)
            if reasons:
                detail = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items()))
                line += f"; {sum(reasons.values())} not stored by the checks ({detail})"
            print(line)
        if many:
            print(f"total: {len(documents)} documents, {plural(totals['memories'], 'memory', 'memories')}, "
                  f"{plural(totals['links'], 'link')} in bank {args.bank!r}")
        return None
    return {"bank": args.bank, "documents": documents, "totals": {"documents": len(documents), **totals}}


def cmd_recall(args: argparse.Namespace) -> dict[str, Any] | None:
    """``recall BANK QUERY``: ranked memories within the budget, optionally with the trace."""
    with _open(args, must_exist=True, bank=args.bank) as hs:
        bank = hs.bank(args.bank, create=False)
        if args.deadline_ms is not None:  # a fresh process: the model's load is not what the deadline is for
            from ..embedders import embed_queries

            embed_queries(hs.embedder, [args.query])
        # Always traced: the trace says why a memory stands out of score order (display.placement_notes).
        rec = bank.recall(args.query, budget=args.budget, max_memories=args.max_memories,
                          networks=args.networks, reference_time=args.reference_time, trace=True,
                          as_of=args.as_of, deadline_ms=args.deadline_ms)
    if args.json:
        return rec.model_dump(mode="json") | ({} if args.trace else {"trace": None})
    if args.as_of is not None:
        print(f"as of {args.as_of:%Y-%m-%d %H:%M} UTC: what the bank held then")
    if rec.cut:
        print(f"cut by the {args.deadline_ms} ms deadline (not in the result): {', '.join(rec.cut)}")
    print(format_recall(rec, args.budget))
    if args.trace:
        print()
        print(format_trace(rec))
    return None


@cli_write  # reflect stores the opinions it forms: a write like any other, recorded as the cli's
def cmd_reflect(args: argparse.Namespace) -> dict[str, Any] | None:
    """``reflect BANK QUERY``: hands the question to ``Bank.reflect`` and prints what it returns."""
    from ..models import Disposition

    with _open(args, must_exist=True, bank=args.bank) as hs:
        bank = hs.bank(args.bank, create=False)
        overrides = {k: getattr(args, k) for k in ("skepticism", "literalism", "empathy", "bias")
                     if getattr(args, k) is not None}
        disposition = None
        if overrides:
            try:
                disposition = Disposition(**{**bank.profile.disposition.model_dump(), **overrides})
            except ValueError as exc:
                raise CLIError(f"invalid disposition: {exc}") from exc
        result = bank.reflect(args.query, disposition=disposition, budget=args.budget,
                              reference_time=args.reference_time)
    if args.json:
        return result.model_dump(mode="json")
    print(result.answer)
    cited = [m for m in result.memories if m.id in result.based_on]
    if cited:
        print("based on: " + "; ".join(f"[{', '.join(m.sources) or m.id}] {m.text[:80]}" for m in cited))
    for o in result.opinions:
        print(f"opinion formed (confidence {o.confidence:.2f}): {o.text}")
    return None


def cmd_stats(args: argparse.Namespace) -> dict[str, Any] | None:
    """``stats [BANK]``: every bank with its counts, or the full counts of one bank."""
    where = location(args)
    if args.bank is None and not where.exists:
        # Nothing to report; do not create an empty store just to list it.
        banks: list[dict[str, Any]] = []
    else:
        with _open(args, must_exist=args.bank is not None, bank=args.bank) as hs:
            if args.bank is not None:
                stats = hs.bank(args.bank, create=False).stats()
                if args.json:
                    return {"bank": args.bank, **stats}
                print(format_stats(args.bank, stats))
                return None
            banks = []
            for profile in hs.banks():
                stats = hs.bank(profile.id, create=False).stats()
                banks.append({"id": profile.id, "name": profile.name, "units": stats.get("units", 0),
                              "entities": stats.get("entities", 0),
                              "documents": total(stats.get("documents", 0))})
    if args.json:
        return {"path": where.describe(), "banks": banks}
    if not banks:
        print(f"no banks in {where.describe()}")
        return None
    rows = [[b["id"], b["units"], b["entities"], b["documents"]] for b in banks]
    print(format_table(["bank", "units", "entities", "documents"], rows, align="lrrr"))
    return None


@cli_write
def cmd_check(args: argparse.Namespace) -> dict[str, Any] | None:
    """``check [BANK...] [--repair]``: the store's invariants, per bank; exit status 1 when some do not hold."""
    from ..runtime.integrity import check

    with open_store(args, must_exist=True, start_worker=False, reconcile=False, recover=False) as hs:
        known = {b.id for b in hs.banks()}
        unknown = [b for b in args.banks if b not in known]
        if unknown:
            from ..errors import BankNotFoundError

            raise BankNotFoundError(f"no bank {unknown[0]!r}; known banks: {sorted(known)[:20]}")
        report = check(hs, args.banks or None, repair=args.repair)
        if args.repair:
            from ..stores import audit

            for checked in report.banks:
                if any(checked.repaired.values()):  # a repair changes the bank: recorded like any other write
                    audit.record(hs.store, checked.bank_id, "repair", counts=checked.repaired)
    args.exit_status = 0 if report.ok else 1
    if args.json:
        return {"ok": report.ok, **report.model_dump()}
    for key, value in report.recovered.items():
        print(f"recovered: {key.replace('_', ' ')} {value}")
    for bank in report.banks:
        fixed = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in bank.repaired.items())
        status = "ok" if bank.ok else "PROBLEMS"
        print(f"{bank.bank_id}: {status}" + (f" (repaired: {fixed})" if fixed else ""))
        for kind, ids in bank.problems.items():
            more = bank.counts[kind] - len(ids)
            print(f"  {kind.replace('_', ' ')}: {bank.counts[kind]}  e.g. {', '.join(ids[:5])}"
                  + (f" (+{more} more)" if more > 0 else ""))
    if not report.banks:
        print("no banks")
    return None


@cli_write
def cmd_demo(args: argparse.Namespace) -> dict[str, Any] | None:
    """``demo``: the bundled conversation, retained and recalled (see ``hindsight_core.cli.demo``)."""
    from .demo import run_demo

    out: Callable[..., None] = _stderr_print if args.json else print
    # args.path is None unless given: the demo then uses a temp dir
    summary = run_demo(args.path, out=out, reflect=args.reflect)
    return summary if args.json else None


def run_bench(args: argparse.Namespace) -> int:
    """``bench ...``: the benchmarks' command line with the rest of this one (global ``--json``/``-v`` passed
    on); an error naming the distribution to install when the benchmarks are not there."""
    try:
        bench_main = plugin_command("bench")
    except CLIError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    if getattr(args, "path", None):
        # Benchmarks build their own stores; silently running them elsewhere than asked would mislead.
        print("error: --path does not apply to bench: each benchmark builds its own memory (keep it with the "
              "benchmark's --workdir DIR)", file=sys.stderr)
        return EXIT_ERROR
    forwarded = [*(["--json"] if args.json else []), *(["--verbose"] if args.verbose else []), *args.bench_args]
    with quiet_progress():
        return int(bench_main(forwarded, prog="hindsight bench"))


def plugin_command(name: str) -> Callable[..., int]:
    """The ``main`` that another installed distribution registers as command ``name`` (entry point group
    ``hindsight.cli``); raises ``CLIError`` when none does. Looked up only when the command runs."""
    from importlib.metadata import entry_points

    found = list(entry_points(group=COMMAND_ENTRY_POINTS, name=name))
    if not found:
        raise CLIError(BENCH_MISSING if name == "bench" else f"no installed distribution provides {name!r}")
    try:
        command: Callable[..., int] = found[0].load()
    except ImportError as exc:
        raise CLIError(f"the {name!r} command ({found[0].value}) cannot be imported: {exc}") from exc
    return command


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _open(
    args: argparse.Namespace, *, must_exist: bool = False, bank: str | None = None
) -> Iterator[Hindsight]:
    """Open the store the options name. Read-only commands (``must_exist``) refuse to create a missing store,
    so a mistyped path or bank is reported instead of leaving an empty store behind."""
    with open_store(args, must_exist=must_exist, what=f"no bank {bank!r}: " if bank else "") as hs:
        yield hs


def _read_source(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    path = Path(file)
    if not path.is_file():
        raise CLIError(f"no such file: {file}")
    return path.read_text(encoding="utf-8")


def _stderr_print(*values: Any, **kwargs: Any) -> None:
    kwargs.pop("file", None)
    print(*values, file=sys.stderr, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
