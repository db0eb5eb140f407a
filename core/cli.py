"""The ``hindsight`` command line: retain, recall, stats, demo and benchmarks over an on-disk memory.

Usage::

    hindsight [--path DIR] [--json] retain BANK [FILE|-] [--no-extract]
    hindsight recall BANK "what did Maya do last week?" --reference-time 2025-03-23 --trace
    hindsight stats [BANK]
    hindsight demo
    hindsight bench locomo --conversations 1 --questions 20 --out results/
    hindsight bench longmemeval|scale|qa ...   (each writes JSON, markdown and PNG plots under --out)

``--json`` prints one JSON document on stdout and nothing else (progress and logs go to stderr).
Errors print a one-line ``error: ...`` on stderr and exit with status 2.

This module imports nothing heavy at import time: the engine (models, stores, embedder) is imported
inside the command functions, so ``hindsight --help`` and ``import hindsight_core.cli`` stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .hindsight import Hindsight
    from .models import Memory, Recall

EXIT_ERROR = 2
DEFAULT_BUDGET = 2000
# Kept literal so that building the parser imports no pydantic model.
NETWORKS = ("world", "experience", "opinion", "observation")
CHANNEL_ABBREV = {"semantic": "sem", "keyword": "kw", "graph": "graph", "temporal": "time"}
LOCOMO_FILE = Path("shared") / "data" / "locomo10.json"


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
    if getattr(args, "verbose", False):
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(levelname)s %(name)s: %(message)s")
    if not hasattr(args, "func"):
        getattr(args, "help_parser", parser).print_help(sys.stderr)
        return EXIT_ERROR

    from .errors import HindsightError

    real_stdout = sys.stdout
    try:
        # With --json the JSON document is the only thing on stdout: anything a library prints goes to stderr.
        guard = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with guard:
            result = args.func(args)
    except (HindsightError, CLIError, OSError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    if args.json and result is not None:
        real_stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
        real_stdout.flush()
    return int(getattr(args, "exit_status", 0))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (``reflect`` is only offered once ``Bank.reflect`` exists)."""
    # Global options are accepted before or after the subcommand. The subparsers get their own copies
    # with SUPPRESS defaults (parents share action objects, so one copy cannot serve both), so that a
    # value given before the subcommand is not overwritten by a subparser default.
    parser = argparse.ArgumentParser(
        prog="hindsight", parents=[_global_options(argparse.SUPPRESS)],
        description="Hindsight Memory: long-term memory that retains, recalls and reflects.",
    )
    parser.set_defaults(path=None, json=False, verbose=False)
    common = _global_options(argparse.SUPPRESS)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

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
    p.set_defaults(func=cmd_retain)

    p = sub.add_parser("recall", parents=[common], help="memories relevant to a query, within a token budget")
    p.add_argument("bank", help="bank id")
    p.add_argument("query", help="what to recall")
    p.add_argument("--budget", type=_positive_int, default=DEFAULT_BUDGET,
                   help=f"token budget of the returned memories (default {DEFAULT_BUDGET})")
    p.add_argument("--max", dest="max_memories", type=_positive_int, help="return at most this many memories")
    p.add_argument("--network", dest="networks", action="append", choices=NETWORKS,
                   help="only this network (repeatable)")
    p.add_argument("--reference-time", help='"now" for time expressions in the query (default: now)')
    p.add_argument("--trace", action="store_true",
                   help="show each memory's rank and score per channel, and stage timings")
    p.set_defaults(func=cmd_recall)

    if _reflect_available():
        p = sub.add_parser("reflect", parents=[common], help="answer a question from memory (CARA)")
        p.add_argument("bank", help="bank id")
        p.add_argument("query", help="the question")
        p.add_argument("--budget", type=_positive_int, default=2000, help="recall budget in tokens (default 2000)")
        p.add_argument("--reference-time", help="'now' for time expressions in the question")
        for trait in ("skepticism", "literalism", "empathy"):
            p.add_argument(f"--{trait}", type=int, choices=range(1, 6), metavar="1..5",
                           help=f"override the bank's {trait} for this call")
        p.add_argument("--bias", type=float, help="override the bank's bias (0..1) for this call")
        p.set_defaults(func=cmd_reflect)

    p = sub.add_parser("stats", parents=[common], help="list banks, or one bank's counts")
    p.add_argument("bank", nargs="?", help="bank id (default: every bank)")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("check", parents=[common], help="verify a store's invariants; --repair fixes them",
                       description="Checks that every unit has a vector and every vector a unit, that no link "
                                   "or mention dangles, entity mention counts and keyword statistics are "
                                   "exact, one entity per normalised name, and that no document, job or vector "
                                   "mark was left by a process that died. Exit status 0: sound; 1: problems "
                                   "remain; 2: error. The store is opened without its usual repairs at open, so "
                                   "check reports what it finds.")
    p.add_argument("banks", nargs="*", metavar="BANK", help="banks to check (default: every bank)")
    p.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    p.add_argument("--graph", help="graph store instead of --path: a SQLite file or bolt://host:port (Neo4j)")
    p.add_argument("--vectors", help="vector index for --graph: a Chroma directory or http://host:port")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("demo", parents=[common], help="retain a bundled conversation and show recall at work",
                       description="Runs in a temporary directory unless --path is given on the command "
                                   "line.")
    p.add_argument("--no-reflect", dest="reflect", action="store_false",
                   help="skip the reflect part (it starts the local LLM)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="benchmarks")
    p.set_defaults(help_parser=p)  # "hindsight bench" alone shows the benchmarks, not the top-level help
    bench = p.add_subparsers(title="benchmarks", metavar="BENCHMARK")
    _add_bench_parsers(bench, common)
    return parser


def _add_bench_parsers(bench: Any, common: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommands; each writes JSON, markdown and PNG plots under ``--out``."""
    def out_options(p: argparse.ArgumentParser, name: str) -> None:
        p.add_argument("--out", default="results",
                       help=f"results folder for {name}.json, {name}.md and the plots (default ./results)")
        p.add_argument("--workdir", help="keep the benchmark's memory here (default: a temporary directory)")
        p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")

    def backend_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--backend", default="embedded",
                       help="storage backend: embedded (default), a registered one, or both (all, side by side)")

    p = bench.add_parser("locomo", parents=[common], help="LoCoMo evidence recall at top-k and token budgets",
                         description="Retains each LoCoMo conversation raw (one unit per message) and scores "
                                     "recall's evidence coverage for the full pipeline and with each channel "
                                     "removed in turn.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversations", type=_positive_int, help="only the first N conversations")
    p.add_argument("--questions", type=_positive_int, help="only the first N questions of each conversation")
    p.add_argument("--configs", type=_name_list,
                   help="comma-separated configurations (default: full, no-semantic, no-keyword, no-graph, "
                        "no-temporal, semantic-only, keyword-only)")
    p.add_argument("--latency-every", type=_positive_int, default=10,
                   help="time every Nth question in the ablations (the full pipeline: every one; default 10)")
    backend_option(p)
    out_options(p, "locomo")
    p.set_defaults(func=cmd_bench_locomo)

    p = bench.add_parser("longmemeval", parents=[common], help="LongMemEval session-level retrieval metrics",
                         description="One bank per question; user turns retained raw (id <session_id>:<turn>, "
                                     "timestamp = session date), recalled with the question date as reference "
                                     "time; recall_any/recall_all/ndcg_any@k per question type, as the official "
                                     "eval code computes them, and evidence recall within token budgets.")
    p.add_argument("--data", help="LongMemEval JSON (e.g. longmemeval_s.json; default: $HINDSIGHT_LONGMEMEVAL, "
                                  "else the bundled 7-question sample)")
    p.add_argument("--questions", type=_positive_int, help="only the first N questions")
    backend_option(p)
    out_options(p, "longmemeval")
    p.set_defaults(func=cmd_bench_longmemeval)

    p = bench.add_parser("scale", parents=[common], help="retain throughput and recall latency on large banks",
                         description="Synthetic banks of the given sizes: retain throughput (raw), recall "
                                     "latency per channel and in total against a bare Chroma query with the "
                                     "same embedder, resident memory, disk per unit and time to reopen.")
    p.add_argument("--units", type=_int_list, nargs="+", default=[[1000, 10_000, 100_000]],
                   help="bank sizes, comma- or space-separated (default 1000,10000,100000)")
    p.add_argument("--queries", type=_positive_int, default=200, help="queries timed per bank (default 200)")
    p.add_argument("--budget", type=_positive_int, default=1000, help="recall budget in tokens (default 1000)")
    backend_option(p)
    out_options(p, "scale")
    p.set_defaults(func=cmd_bench_scale)

    p = bench.add_parser("qa", parents=[common], help="answer questions with reflect, scored by an LLM judge",
                         description="Answers LoCoMo or LongMemEval questions with reflect and has a separate "
                                     "judge model label each answer correct or wrong (the published judge "
                                     "prompts). Both models are OpenAI-compatible endpoints; without a URL the "
                                     "bundled local model is used.")
    p.add_argument("--dataset", choices=("locomo", "longmemeval"), default="locomo", help="default locomo")
    p.add_argument("--data", help="the data file (default: LoCoMo's locomo10.json, or LongMemEval's sample)")
    p.add_argument("--conversations", type=_positive_int, default=1, help="LoCoMo: first N conversations (1)")
    p.add_argument("--questions", type=_positive_int, default=20,
                   help="questions in all (default 20; spread over the conversations)")
    p.add_argument("--budget", type=_positive_int, default=2000, help="reflect's recall budget (default 2000)")
    p.add_argument("--extract", action="store_true", help="retain with the LLM extractor (default: raw)")
    for role in ("answer", "judge"):
        p.add_argument(f"--{role}-url", help=f"OpenAI-compatible base URL of the {role} model "
                                             "(default: the local model)")
        p.add_argument(f"--{role}-model", help=f"{role} model name (default: qwen2.5-1.5b, local)")
        p.add_argument(f"--{role}-key", help=f"API key of the {role} endpoint (default: $OPENAI_API_KEY or none)")
    backend_option(p)
    out_options(p, "qa")
    p.set_defaults(func=cmd_bench_qa)

    p = bench.add_parser("llm-retain", parents=[common], help="LLM extraction of one LoCoMo session, timed")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversation", type=int, default=0, help="conversation index (default 0)")
    p.add_argument("--session", type=_positive_int, default=1, help="session number (default 1)")
    p.set_defaults(func=cmd_bench_llm_retain)

    p = bench.add_parser("entities", parents=[common], help="entity resolution: pairwise precision/recall of merges",
                         description="Replays the labelled entity-resolution scenarios (confusable names, "
                                     "nicknames, variants, partial names, places, banks, LoCoMo's speakers) "
                                     "through the resolver and a SQLite store and prints pairwise precision and "
                                     "recall of merges per split and category, then every wrong decision.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="scenarios to score: the fixed dev or test half, or all (default all; test is the headline)")
    p.add_argument("--data", help="a scenario file in the same JSONL format (default: the bundled set)")
    p.set_defaults(func=cmd_bench_entities)


# --------------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------------
def cmd_retain(args: argparse.Namespace) -> dict[str, Any] | None:
    """``retain BANK [FILE|-]``: one retain per document of the input."""
    from tqdm import tqdm

    from .errors import InvalidInputError
    from .formats import read_input

    raw = _read_source(args.file)
    sessions = list(read_input(raw))  # parse everything first: bad input fails before anything is stored
    if not sessions:
        raise InvalidInputError("the input holds no documents")
    many = len(sessions) > 1
    documents: list[dict[str, Any]] = []
    with _open(args) as hs:
        bank = hs.bank(args.bank)
        for i, session in enumerate(tqdm(sessions, desc="retain", unit="doc", disable=not many,
                                         file=sys.stderr), start=1):
            document_id = session.document_id or None
            if args.document_id:
                document_id = f"{args.document_id}:{session.document_id or i}" if many else args.document_id
            try:
                res = bank.retain(session.content, timestamp=session.timestamp or args.timestamp,
                                  document_id=document_id, context=args.context, extract=args.extract)
            except Exception:
                if documents:  # say what is already kept before the error line
                    print(f"stored {len(documents)} of {len(sessions)} documents before the error",
                          file=sys.stderr)
                raise
            doc = {
                "document_id": res.document_id,
                "memories": len(res.memories),
                "memory_ids": res.memory_ids,
                "entities": res.entities,
                "links": res.links,
                "warnings": res.warnings,
            }
            documents.append(doc)
            if not args.json:
                line = (f"{res.document_id}: {_plural(len(res.memories), 'memory', 'memories')}, "
                        f"{_plural(len(res.entities), 'entity', 'entities')}, {_plural(res.links, 'link')}")
                (tqdm.write if many else print)(line)
                for warning in res.warnings:
                    print(f"  warning: {warning}", file=sys.stderr)
    totals = {k: sum(d[k] for d in documents) for k in ("memories", "links")}
    if not args.json:
        if many:
            print(f"total: {len(documents)} documents, {_plural(totals['memories'], 'memory', 'memories')}, "
                  f"{_plural(totals['links'], 'link')} in bank {args.bank!r}")
        return None
    return {"bank": args.bank, "documents": documents, "totals": {"documents": len(documents), **totals}}


def cmd_recall(args: argparse.Namespace) -> dict[str, Any] | None:
    """``recall BANK QUERY``: ranked memories within the budget, optionally with the trace."""
    with _open(args, must_exist=True, bank=args.bank) as hs:
        bank = hs.bank(args.bank, create=False)
        rec = bank.recall(args.query, budget=args.budget, max_memories=args.max_memories,
                          networks=args.networks, reference_time=args.reference_time, trace=args.trace)
    if args.json:
        return rec.model_dump(mode="json")
    print(format_recall(rec, args.budget))
    if args.trace:
        print()
        print(format_trace(rec))
    return None


def cmd_reflect(args: argparse.Namespace) -> dict[str, Any] | None:
    """``reflect BANK QUERY``: hands the question to ``Bank.reflect`` and prints what it returns."""
    from .models import Disposition

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
    path = _store_path(args)
    if args.bank is None and not path.exists():
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
                              "documents": _total(stats.get("documents", 0))})
    if args.json:
        return {"path": str(path), "banks": banks}
    if not banks:
        print(f"no banks in {path}")
        return None
    rows = [[b["id"], b["units"], b["entities"], b["documents"]] for b in banks]
    print(format_table(["bank", "units", "entities", "documents"], rows, align="lrrr"))
    return None


def cmd_check(args: argparse.Namespace) -> dict[str, Any] | None:
    """``check [BANK...] [--repair]``: the store's invariants, per bank; exit status 1 when some do not hold."""
    from .hindsight import Hindsight
    from .integrity import check

    if args.graph:
        if not args.vectors:
            raise CLIError("--graph needs --vectors (the vector index that goes with it)")
        opened = Hindsight.open(None, graph=args.graph, vectors=args.vectors, start_worker=False, reconcile=False,
                                recover=False)
    else:
        path = _store_path(args)
        if not (path / "graph.sqlite").exists():
            raise CLIError(f"there is no memory store at {path} (pass --path or set HINDSIGHT_PATH)")
        opened = Hindsight.open(path, start_worker=False, reconcile=False, recover=False)
    with opened as hs:
        known = {b.id for b in hs.banks()}
        unknown = [b for b in args.banks if b not in known]
        if unknown:
            from .errors import BankNotFoundError

            raise BankNotFoundError(f"no bank {unknown[0]!r}; known banks: {sorted(known)[:20]}")
        report = check(hs, args.banks or None, repair=args.repair)
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


def cmd_demo(args: argparse.Namespace) -> dict[str, Any] | None:
    """``demo``: the bundled conversation, retained and recalled (see ``hindsight_core.demo``)."""
    from .demo import run_demo

    out: Callable[..., None] = _stderr_print if args.json else print
    # args.path is None unless given: the demo then uses a temp dir
    summary = run_demo(args.path, out=out, reflect=args.reflect)
    return summary if args.json else None


def _backends(args: argparse.Namespace) -> dict[str, Any]:
    from .bench.backends import resolve_backends

    try:
        return resolve_backends(args.backend)
    except KeyError as exc:
        raise CLIError(str(exc.args[0])) from None


def _bench_log(args: argparse.Namespace) -> Callable[..., None]:
    return _stderr_print if args.json else print


def _report_written(args: argparse.Namespace, paths: Sequence[Path]) -> None:
    if not args.json:
        print("\nwrote " + ", ".join(str(p) for p in paths))


def cmd_bench_locomo(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench locomo``: evidence recall on LoCoMo with channel ablations; writes JSON, markdown and plots."""
    from .bench.locomo import CONFIGS, run_locomo, run_locomo_backends, write_locomo

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise CLIError(f"LoCoMo data not found: {data}")
    configs = CONFIGS
    if args.configs:
        unknown = [c for c in args.configs if c not in CONFIGS]
        if unknown:
            raise CLIError(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
        configs = {c: CONFIGS[c] for c in args.configs}
    backends = _backends(args)
    kwargs: dict[str, Any] = {
        "limit_conversations": args.conversations, "limit_questions": args.questions, "configs": configs,
        "latency_every": args.latency_every, "progress": args.progress, "log": _bench_log(args),
    }
    if len(backends) == 1:
        (name, factory), = backends.items()
        result = run_locomo(data, open_hindsight=factory, backend=name, workdir=args.workdir, **kwargs)
    else:
        result = run_locomo_backends(data, backends, workdir=args.workdir, **kwargs)
    _report_written(args, write_locomo(args.out, result))
    return result if args.json else None


def cmd_bench_longmemeval(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench longmemeval``: LongMemEval's official session-level retrieval metrics per question type."""
    from .bench.longmemeval import TINY_DATA, run_longmemeval, write_longmemeval

    data = Path(args.data or os.environ.get("HINDSIGHT_LONGMEMEVAL") or TINY_DATA)
    if not data.is_file():
        raise CLIError(f"LongMemEval data not found: {data}")
    if data == TINY_DATA:
        _stderr_print(f"note: using the bundled {TINY_DATA.name} (a 7-question format sample, not the benchmark); "
                      "pass --data longmemeval_s.json for real figures")
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        results[name] = run_longmemeval(data, open_hindsight=factory, backend=name, workdir=workdir,
                                        limit_questions=args.questions, progress=args.progress,
                                        log=_bench_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_longmemeval(args.out, result))
    return result if args.json else None


def cmd_bench_scale(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench scale``: throughput, latency per channel vs bare Chroma, memory, disk and reopen time."""
    from .bench.scale import run_scale, write_scale

    sizes = tuple(dict.fromkeys(n for group in args.units for n in group))
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        results[name] = run_scale(sizes, queries=args.queries, budget=args.budget, open_hindsight=factory,
                                  backend=name, workdir=workdir, progress=args.progress, log=_bench_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_scale(args.out, result))
    return result if args.json else None


def cmd_bench_qa(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench qa``: answers by reflect, judged correct/wrong by a second model; accuracy per category."""
    from .bench.longmemeval import TINY_DATA
    from .bench.qa import endpoint_llm, run_qa, write_qa

    if args.data:
        data = Path(args.data)
    elif args.dataset == "locomo":
        data = find_locomo()
    else:
        data = Path(os.environ.get("HINDSIGHT_LONGMEMEVAL") or TINY_DATA)
    if not data.is_file():
        raise CLIError(f"{args.dataset} data not found: {data}")
    answer = endpoint_llm(args.answer_url, args.answer_model, args.answer_key)
    judge = endpoint_llm(args.judge_url, args.judge_model, args.judge_key)
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        results[name] = run_qa(args.dataset, data, answer_llm=answer, judge_llm=judge, open_hindsight=factory,
                               backend=name, workdir=workdir, limit_conversations=args.conversations,
                               limit_questions=args.questions, budget=args.budget, extract=args.extract,
                               progress=args.progress, log=_bench_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_qa(args.out, result))
    return result if args.json else None


def cmd_bench_llm_retain(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench llm-retain``: one LoCoMo session through the LLM extractor, with the time it took."""
    from .bench.llm_retain import run_llm_retain

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise CLIError(f"LoCoMo data not found: {data}")
    result = run_llm_retain(data, conversation=args.conversation, session=args.session,
                            log=_stderr_print if args.json else print)
    return result if args.json else None


def cmd_bench_entities(args: argparse.Namespace) -> dict[str, Any] | None:
    """``bench entities``: pairwise precision and recall of entity merges on the labelled scenario set."""
    from .bench.entities import DATA, format_entity_bench, run_entity_bench

    data = Path(args.data) if args.data else DATA
    if not data.is_file():
        raise CLIError(f"entity-resolution scenarios not found: {data}")
    result = run_entity_bench(args.split, data)
    if args.json:
        return result
    print(format_entity_bench(result))
    return None


def find_locomo() -> Path:
    """``$HINDSIGHT_LOCOMO``, else the first existing ``[../]shared/data/locomo10.json`` relative to the
    working directory or to the repository root; raises ``CLIError`` listing where it looked."""
    env = os.environ.get("HINDSIGHT_LOCOMO")
    if env:
        return Path(env)
    repo_root = Path(__file__).resolve().parent.parent  # core/ -> repository root (editable install)
    candidates = [base / rel for base in (Path.cwd(), repo_root)
                  for rel in (Path("..") / LOCOMO_FILE, LOCOMO_FILE)]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise CLIError("LoCoMo data not found; pass --data or set HINDSIGHT_LOCOMO (looked in "
                   + ", ".join(str(c) for c in candidates) + ")")


# --------------------------------------------------------------------------------------------------
# formatting (shared with the demo)
# --------------------------------------------------------------------------------------------------
def format_recall(rec: Recall, budget: int) -> str:
    """Ranked memories, each with score, network, date, sources and document, then tokens used."""
    if not rec.memories:
        return f"no memories found for {rec.query!r}"
    lines = []
    for rank, m in enumerate(rec.memories, start=1):
        lines.append(f"{rank:>2}. {m.text}")
        details = [f"score {m.score:.4f}" if m.score is not None else "score -", m.network.value, when(m)]
        if m.sources:
            details.append("sources " + ", ".join(m.sources))
        if m.document_id:
            details.append(f"doc {m.document_id}")
        lines.append("    " + " · ".join(details))
    lines.append(f"{_plural(len(rec.memories), 'memory', 'memories')}, {rec.tokens}/{budget} tokens")
    return "\n".join(lines)


def format_trace(rec: Recall, *, scores: bool = True, text_width: int = 60) -> str:
    """The trace as a table: per returned memory, its fused rank and score and its rank (and raw score)
    in every channel; then the parsed time constraint, channel sizes and stage timings."""
    trace = rec.trace
    if trace is None:
        return "no trace (recall ran without trace=True)"
    channels = [c for c in ("semantic", "keyword", "graph", "temporal") if c in trace.channel_sizes]
    items = {item.memory_id: item for item in trace.items}
    header = ["#", "fused", *(c if scores else CHANNEL_ABBREV[c] for c in channels), "tokens", "memory"]
    rows = []
    for rank, m in enumerate(rec.memories, start=1):
        item = items.get(m.id)
        cells: list[Any] = [rank, f"{item.fused_score:.4f}" if item else "-"]
        for c in channels:
            hit = item.channels.get(c) if item else None
            cells.append("-" if hit is None else f"{hit.rank} ({_num(hit.score)})" if scores else hit.rank)
        cells += [item.tokens if item else "-", _clip(m.text, text_width)]
        rows.append(cells)
    lines = [format_table(header, rows, align="rr" + "r" * len(channels) + "rl")]
    info = [f"reference time {trace.reference_time:%Y-%m-%d %H:%M}"]
    if trace.time_range is not None:
        info.append(f"time constraint {_date(trace.time_range.start)} .. {_date(trace.time_range.end)}")
    info.append("candidates " + ", ".join(f"{c} {n}" for c, n in trace.channel_sizes.items()))
    lines.append(" · ".join(info))
    lines.append("stages (ms): " + format_timings(trace.timings_ms))
    return "\n".join(lines)


def format_timings(timings: dict[str, float]) -> str:
    """``embed 12.0 · semantic 1.3 · ... · total 30.1`` (the ``_ms`` suffixes dropped)."""
    return " · ".join(f"{k.removesuffix('_ms')} {v:.1f}" for k, v in timings.items())


def format_stats(bank_id: str, stats: dict[str, Any]) -> str:
    """One bank's counts; nested counts (per network, per link type) shown with their total."""
    lines = [f"bank {bank_id}"]
    for key, value in stats.items():
        if isinstance(value, dict):
            detail = ", ".join(f"{k} {v}" for k, v in value.items())
            lines.append(f"  {key:<10} {_total(value):>7}" + (f"  ({detail})" if detail else ""))
        else:
            lines.append(f"  {key:<10} {value:>7}")
    return "\n".join(lines)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A plain-text table with padded columns; ``align`` holds ``l``/``r`` per column (default left)."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        parts = [c.rjust(w) if align[i:i + 1] == "r" else c.ljust(w) for i, (c, w) in pairs]
        return "  ".join(parts).rstrip()

    return "\n".join(line(row) for row in cells)


def when(m: Memory) -> str:
    """When a memory happened: one date, or ``start..end`` for a span of several days."""
    start = m.occurred_start or m.mentioned_at
    end = m.occurred_end or start
    if start is None:
        return "undated"
    if end is None or end.date() == start.date():
        return _date(start)
    return f"{_date(start)}..{_date(end)}"


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def _global_options(default: Any) -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--path", default=default,
                         help="memory directory (default: $HINDSIGHT_PATH or ./memory)")
    options.add_argument("--json", action="store_true", default=default,
                         help="print machine-readable JSON on stdout and nothing else")
    options.add_argument("-v", "--verbose", action="store_true", default=default,
                         help="log progress to stderr")
    return options


def _store_path(args: argparse.Namespace) -> Path:
    return Path(args.path or os.environ.get("HINDSIGHT_PATH") or "memory")


@contextlib.contextmanager
def _open(
    args: argparse.Namespace, *, must_exist: bool = False, bank: str | None = None
) -> Iterator[Hindsight]:
    """Open the store at ``--path``. Read-only commands (``must_exist``) refuse to create a missing store,
    so a mistyped path or bank is reported instead of leaving an empty store behind."""
    path = _store_path(args)
    if must_exist and not (path / "graph.sqlite").exists():
        from .errors import BankNotFoundError

        raise BankNotFoundError(f"no bank {bank!r}: there is no memory store at {path} (retain something "
                                "first, or pass --path / set HINDSIGHT_PATH)")
    from .hindsight import Hindsight

    with Hindsight.open(path) as hs:
        yield hs


def _read_source(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    path = Path(file)
    if not path.is_file():
        raise CLIError(f"no such file: {file}")
    return path.read_text(encoding="utf-8")


def _reflect_available() -> bool:
    from .bank import Bank

    return hasattr(Bank, "reflect")


def _int_list(text: str) -> list[int]:
    """``"1000,10000"`` -> ``[1000, 10000]`` (each positive)."""
    return [_positive_int(part) for part in text.split(",") if part.strip()]


def _name_list(text: str) -> list[str]:
    """``"full,no-graph"`` -> ``["full", "no-graph"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _stderr_print(*values: Any, **kwargs: Any) -> None:
    kwargs.pop("file", None)
    print(*values, file=sys.stderr, **kwargs)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _total(value: Any) -> int:
    return sum(value.values()) if isinstance(value, dict) else int(value or 0)


def _num(x: float) -> str:
    return f"{x:.3f}" if 1e-3 <= abs(x) < 1e4 else f"{x:.1e}" if x else "0"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _date(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d}" if value is not None else "open"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
