"""The benchmarks' command line: ``hindsight-bench BENCHMARK ...``, also reached as ``hindsight bench ...``.

Usage::

    hindsight-bench locomo --conversations 1 --questions 20 --out results/
    hindsight-bench longmemeval|scale|qa ...   (each writes JSON, markdown and PNG plots under --out)
    hindsight-bench embedders --embedders minilm,mpnet --out results/
    hindsight-bench long-inputs --sizes 10000,100000,1000000 [--part passage-size]
    hindsight-bench llm-vs-raw --conversations conv-26 --sessions 1 --workdir work/ --out results/
    hindsight-bench entities --split test
    hindsight-bench dates --split test
    hindsight-bench cara --out results/ [--llm-url URL --llm-model NAME]
    hindsight-bench observations [--sessions 1 --entities 3 | --labelled-only]
    hindsight-bench timeline [--workdir DIR] [--units 10000] [--repeats 5] [--out results/]
    hindsight-bench updates --split dev [--default] [--out results/]
    hindsight-bench questions --split dev [--rules off,demote,pair] [--out results/]

``hindsight bench ...`` (the engine's command line) finds this module through the ``hindsight.cli`` entry point
group and calls ``main`` with the rest of its command line. ``--json`` prints one JSON document on stdout and
nothing else; errors print a one-line ``error: ...`` on stderr and exit with status 2.

Importing this module is cheap: the benchmarks and the engine are imported when a benchmark runs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from .commands import (
    BenchError,
    cmd_beliefs,
    cmd_cara,
    cmd_dates,
    cmd_embedders,
    cmd_entities,
    cmd_llm_retain,
    cmd_llm_vs_raw,
    cmd_locomo,
    cmd_long_inputs,
    cmd_longmemeval,
    cmd_observations,
    cmd_qa,
    cmd_reembed,
    cmd_scale,
)
from .questions import cmd_questions
from .timeline import add_arguments as timeline_arguments
from .timeline import cmd_timeline
from .updates import cmd_updates

EXIT_ERROR = 2


def main(argv: list[str] | None = None, *, prog: str = "hindsight-bench") -> int:
    """Run the benchmarks' command line; returns the exit status (0 ok, 2 error). ``prog`` names the command
    in help and usage messages (``hindsight bench`` when the engine's command line delegates here)."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and usage errors; callers in-process want a code
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_ERROR

    from hindsight_core.cli.run import run_parsed
    from hindsight_core.errors import HindsightError

    with _terminate_unwinds():
        return run_parsed(args, (HindsightError, BenchError, OSError))


@contextlib.contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """SIGTERM ends the benchmark as an exception would (exit status 143): the ``with`` blocks that started
    servers or hold a store stop them and close it (killed outright, ``--backend server`` left its two servers
    running). Only in the main thread, where Python can catch signals; the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def build_parser(prog: str = "hindsight-bench") -> argparse.ArgumentParser:
    """The argument parser: one subcommand per benchmark."""
    # Global options are accepted before or after the benchmark's name. The subparsers get their own copies
    # with SUPPRESS defaults (parents share action objects), so a value given before the name is kept.
    parser = argparse.ArgumentParser(
        prog=prog, parents=[_global_options(argparse.SUPPRESS)],
        description="Benchmarks of Hindsight Memory; each writes JSON, markdown and PNG plots under --out.",
    )
    parser.set_defaults(json=False, verbose=False)
    common = _global_options(argparse.SUPPRESS)
    sub = parser.add_subparsers(title="benchmarks", metavar="BENCHMARK")
    _add_recall_benchmarks(sub, common)
    _add_answer_benchmarks(sub, common)
    return parser


def _add_recall_benchmarks(sub: Any, common: argparse.ArgumentParser) -> None:
    """locomo, longmemeval, scale and embedders: what recall finds, and how fast."""
    p = sub.add_parser("locomo", parents=[common], help="LoCoMo evidence recall at top-k and token budgets",
                       description="Retains each LoCoMo conversation raw (one unit per message) and scores "
                                   "recall's evidence coverage for the full pipeline and with each channel "
                                   "removed in turn.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="LoCoMo half: dev (conv-26, 30, 41, 42, 43: defaults are chosen here), test (conv-44, 47, 48, "
                        "49, 50: the headline) or all (default; reports each half too)")
    p.add_argument("--conversations", type=positive_int, help="only the first N conversations")
    p.add_argument("--questions", type=positive_int, help="only the first N questions of each conversation")
    p.add_argument("--configs", type=name_list,
                   help="comma-separated configurations (default: full, no-semantic, no-keyword, no-graph, "
                        "no-temporal, semantic-only, keyword-only)")
    p.add_argument("--embedder", help="embedder by name (minilm, minilm-fp32, minilm-int8, mpnet, mpnet-int8; "
                                      "default: $HINDSIGHT_EMBEDDER, else the library's: mpnet-int8 where it can "
                                      "be built)")
    p.add_argument("--reuse", action="store_true",
                   help="with --workdir: keep a conversation's bank from an earlier run when every session of it was "
                        "retained (ablations on a slow embedder without retaining again)")
    p.add_argument("--latency-every", type=positive_int, default=10,
                   help="time every Nth question in the ablations (the full pipeline: every one; default 10)")
    _backend_option(p)
    _out_options(p, "locomo")
    p.set_defaults(func=cmd_locomo)

    p = sub.add_parser("longmemeval", parents=[common], help="LongMemEval session-level retrieval metrics",
                       description="One bank per question; user turns retained raw (id <session_id>:<turn>, "
                                   "timestamp = session date), recalled with the question date as reference "
                                   "time; recall_any/recall_all/ndcg_any@k per question type, as the official "
                                   "eval code computes them, and evidence recall within token budgets.")
    p.add_argument("--data", help="LongMemEval JSON (e.g. longmemeval_s.json; default: $HINDSIGHT_LONGMEMEVAL, "
                                  "else the bundled 7-question sample)")
    p.add_argument("--questions", type=positive_int, help="only the first N questions")
    _backend_option(p)
    _out_options(p, "longmemeval")
    p.set_defaults(func=cmd_longmemeval)

    p = sub.add_parser("scale", parents=[common], help="retain throughput and recall latency on large banks",
                       description="Synthetic banks of the given sizes: retain throughput (raw), recall "
                                   "latency per channel and in total against a bare Chroma query with the "
                                   "same embedder, resident memory, disk per unit and time to reopen.")
    p.add_argument("--units", type=int_list, nargs="+", default=[[1000, 10_000, 100_000]],
                   help="bank sizes, comma- or space-separated (default 1000,10000,100000)")
    p.add_argument("--queries", type=positive_int, default=200, help="queries timed per bank (default 200)")
    p.add_argument("--budget", type=positive_int, default=1000, help="recall budget in tokens (default 1000)")
    p.add_argument("--embedder", help="embedder by name (default: $HINDSIGHT_EMBEDDER, else the library's); a bank "
                                      "kept in --workdir must be reopened with the embedder that built it")
    p.add_argument("--batch", type=positive_int, default=500, help="units per retain call (default 500)")
    p.add_argument("--fresh", action="store_true",
                   help="with --workdir: build every bank afresh (by default a kept bank is reused, and an "
                        "interrupted ingest continues where it stopped)")
    p.add_argument("--ingest-only", action="store_true",
                   help="build (or continue building) the banks and stop: no recall timings")
    _backend_option(p)
    _out_options(p, "scale")
    p.set_defaults(func=cmd_scale)

    p = sub.add_parser("long-inputs", parents=[common], help="long texts and big message lists: retain time, "
                       "links, and recall by passage size",
                       description="Times raw retain of synthetic texts (10 kB, 100 kB, 1 MB by default) cut into "
                                   "passages, with the embedder alone on the same passages as the floor, links per "
                                   "unit and a check that recall returns passages; then the largest message list "
                                   "one call accepts. --part passage-size retains one text holding 40 labelled facts "
                                   "once per passage size and scores recall of the passage holding each fact.")
    p.add_argument("--part", choices=("timing", "passage-size", "all"), default="timing",
                   help="what to run (default timing)")
    p.add_argument("--sizes", type=int_list, nargs="+", default=[[10_000, 100_000, 1_000_000]],
                   help="text sizes in characters (default 10000,100000,1000000)")
    p.add_argument("--passage-chars", type=positive_int, help="passage size for the timing (default: Settings')")
    p.add_argument("--messages", type=positive_int,
                   help="messages in the one-call run (default: Settings.max_messages_per_retain)")
    p.add_argument("--passages", type=int_list, default=[600, 1200, 2400],
                   help="passage sizes compared by --part passage-size (default 600,1200,2400)")
    p.add_argument("--chars", type=positive_int, default=150_000,
                   help="length of the labelled text of --part passage-size (default 150000)")
    p.add_argument("--embedder", help="embedder by name (minilm, minilm-fp32, minilm-int8, mpnet, mpnet-int8; "
                                      "default: $HINDSIGHT_EMBEDDER, else the library's: mpnet-int8 where it can "
                                      "be built)")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="labelled questions scored (default all: each half; sizes are chosen on dev)")
    _backend_option(p)
    _out_options(p, "long-inputs")
    p.set_defaults(func=cmd_long_inputs)

    p = sub.add_parser("embedders", parents=[common], help="embedders' cost and semantic-only LoCoMo recall",
                       description="Per embedder (minilm-fp32, minilm: float32 documents and int8 queries, "
                                   "minilm-int8, mpnet): query latency, ingest throughput, and R@10 of a plain "
                                   "cosine over LoCoMo's turns embedded as '[date] Speaker: text' and as text "
                                   "alone, per split; the MiniLM variants' agreement with float32.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--embedders", type=name_list,
                   help="comma-separated variants (default: minilm-fp32, minilm, minilm-int8, mpnet)")
    p.add_argument("--embedder", action="append", metavar="SPEC",
                   help="your own embedder, any kind make_embedder takes (st:FOLDER, openai:URL#MODEL, module:attr "
                        "for a LangChain/LlamaIndex object or factory, or a name); repeatable; alone, it is the only "
                        "one run (add --embedders minilm-fp32 to compare)")
    p.add_argument("--conversations", type=positive_int, help="only the first N conversations")
    p.add_argument("--queries", type=positive_int, default=300,
                   help="questions timed one by one for query latency (default 300)")
    p.add_argument("--out", default="results", help="results folder for embedders.json and embedders.md "
                                                    "(default ./results)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(func=cmd_embedders)

    p = sub.add_parser("reembed", parents=[common], help="a bank switched to another embedder vs. a fresh retain",
                       description="Retains LoCoMo conversations raw with --source, switches each bank to --target "
                                   "with Bank.reembed (timed), retains them again with --target, and compares "
                                   "semantic-only R@10 and the vectors of both banks.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversations", type=name_list, default=["conv-26"],
                   help="comma-separated sample ids (default conv-26, from the dev half)")
    p.add_argument("--source", default="minilm", help="embedder the banks are retained with (default minilm)")
    p.add_argument("--target", default="mpnet", help="embedder they are switched to (default mpnet)")
    p.add_argument("--workdir", help="parent folder of the temporary stores (default: the system's)")
    p.add_argument("--out", default="results", help="results folder for reembed.json and reembed.md "
                                                    "(default ./results)")
    p.set_defaults(func=cmd_reembed)

    p = sub.add_parser("timeline", parents=[common], help="the explorer's timeline at 10,000 memories in chromium",
                       description="Builds a bank of synthetic memories once (with corrections, opinions and "
                                   "forgets), serves the explorer and times the timeline view in headless chromium: "
                                   "from navigation start until drawn, median of --repeats loads (target < 2 s).")
    timeline_arguments(p)
    p.set_defaults(func=cmd_timeline)


def _add_answer_benchmarks(sub: Any, common: argparse.ArgumentParser) -> None:
    """qa, llm-retain and entities: answers, extraction and entity resolution."""
    p = sub.add_parser("qa", parents=[common], help="answer questions with reflect, scored by an LLM judge",
                       description="Answers LoCoMo or LongMemEval questions with reflect and has a separate "
                                   "judge model label each answer correct or wrong (the published judge "
                                   "prompts). Both models are OpenAI-compatible endpoints; without a URL the "
                                   "bundled local model is used.")
    p.add_argument("--dataset", choices=("locomo", "longmemeval"), default="locomo", help="default locomo")
    p.add_argument("--data", help="the data file (default: LoCoMo's locomo10.json, or LongMemEval's sample)")
    p.add_argument("--conversations", type=positive_int, default=1, help="LoCoMo: first N conversations (1)")
    p.add_argument("--questions", type=positive_int, default=20,
                   help="questions in all (default 20; spread over the conversations)")
    p.add_argument("--budget", type=positive_int, default=2000, help="reflect's recall budget (default 2000)")
    p.add_argument("--extract", action="store_true", help="retain with the LLM extractor (default: raw)")
    for role in ("answer", "judge"):
        p.add_argument(f"--{role}-url", help=f"OpenAI-compatible base URL of the {role} model "
                                             "(default: the local model)")
        p.add_argument(f"--{role}-model", help=f"{role} model name (default: qwen2.5-1.5b, local)")
        p.add_argument(f"--{role}-key", help=f"API key of the {role} endpoint (default: $OPENAI_API_KEY or none)")
    _backend_option(p)
    _out_options(p, "qa")
    p.set_defaults(func=cmd_qa)

    p = sub.add_parser("cara", parents=[common], help="dispositions and opinion dynamics on labelled scenarios",
                       description="Reflects on each bundled scenario under two contrasting dispositions (twice "
                                   "each), then lets labelled later messages move the scenario's opinion, and "
                                   "prints sensitivity, consistency, evidence responsiveness and groundedness. "
                                   "The model is the bundled local one unless --llm-url names an "
                                   "OpenAI-compatible endpoint.")
    p.add_argument("--data", help="a scenario file (default: the bundled set that --set names)")
    p.add_argument("--set", choices=("judgement", "balance"), default="judgement",
                   help="bundled scenarios: judgement (44 scenarios, dispositions and labelled later evidence) or "
                        "balance (16 pairs: the same question with 3 for / 1 against and 1 for / 3 against)")
    p.add_argument("--judgement", choices=("per_memory", "in_call"), default=None,
                   help="how reflect judges a yes/no question (default: the engine's, per_memory)")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="the dev half (first 22 scenarios), the test half (last 22, the headline) or all (default)")
    p.add_argument("--scenarios", type=positive_int, help="only the first N scenarios of the split (default: all)")
    p.add_argument("--repeats", type=positive_int, default=2, help="reflect runs per disposition (default 2)")
    p.add_argument("--part", choices=("reflect", "evidence", "verdicts", "all"), default="all",
                   help="reflect under the dispositions, the labelled later messages, both (all, the default), or "
                        "verdicts: each message judged alone as reflect's per-memory judgement does, no bank")
    p.add_argument("--llm-url", help="OpenAI-compatible base URL (default: the bundled local model)")
    p.add_argument("--llm-model", help="model name (required with --llm-url; default qwen2.5-1.5b, local)")
    p.add_argument("--llm-key", help="API key of the endpoint (default: $OPENAI_API_KEY or none)")
    _out_options(p, "cara")
    p.set_defaults(func=cmd_cara)

    p = sub.add_parser("llm-retain", parents=[common], help="LLM extraction of one LoCoMo session, timed")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversation", type=int, default=0, help="conversation index (default 0)")
    p.add_argument("--session", type=positive_int, default=1, help="session number (default 1)")
    p.set_defaults(func=cmd_llm_retain)

    p = sub.add_parser("llm-vs-raw", parents=[common], help="raw turns, LLM facts and raw + facts, same questions",
                       description="Retains the first sessions of LoCoMo conversations raw, by default (raw first, "
                                   "then the LLM's facts beside them; the local model unless HINDSIGHT_LLM_BASE_URL "
                                   "names one) and as facts only, and scores evidence recall on the questions whose "
                                   "evidence lies in those sessions, with the extraction's time, tokens, facts and "
                                   "the reasons for every miss.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversations", type=name_list,
                   help="comma-separated sample ids (default conv-26,conv-30: dev half only)")
    p.add_argument("--split", choices=("dev", "test"),
                   help="a whole half of LoCoMo instead of --conversations (sessions: the first N of each for the "
                        "smallest N giving 100 questions)")
    p.add_argument("--sessions", type=positive_int, default=None,
                   help="first N sessions of each (default 3, or chosen by question count with --split)")
    p.add_argument("--replay", help="an earlier run's --workdir: replay its recorded model answers through "
                                    "today's extractor code instead of calling the model")
    _out_options(p, "llm-vs-raw")
    p.set_defaults(func=cmd_llm_vs_raw)

    p = sub.add_parser("entities", parents=[common], help="entity resolution: pairwise precision/recall of merges",
                       description="Replays the labelled entity-resolution scenarios (confusable names, "
                                   "nicknames, variants, partial names, places, banks, LoCoMo's speakers) "
                                   "through the resolver and a SQLite store and prints pairwise precision and "
                                   "recall of merges per split and category, then every wrong decision.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="scenarios to score: the fixed dev or test half, or all (default all; test is the headline)")
    p.add_argument("--data", help="a scenario file in the same JSONL format (default: the bundled set)")
    p.set_defaults(func=cmd_entities)

    p = sub.add_parser("observations", parents=[common], help="observations: share of sentences the facts support",
                       description="Scores the observation support check on the labelled sentence set (dev sweep "
                                   "of its thresholds, precision and recall per half), then has the bundled model "
                                   "write observations of the most mentioned entities of LoCoMo dev conversations "
                                   "(first sessions, raw) and prints the supported share of its sentences before "
                                   "and after the check, and whether each observation is dated by its facts.")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--conversations", type=name_list, default=["conv-26", "conv-30"],
                   help="comma-separated sample ids (default conv-26,conv-30 of the dev half; nothing here is "
                        "tuned on LoCoMo, so a test-half pair such as conv-44,conv-47 is a fair check too)")
    p.add_argument("--sessions", type=positive_int, default=1, help="first N sessions of each (default 1)")
    p.add_argument("--entities", type=positive_int, default=3,
                   help="most mentioned entities per conversation (default 3; ~1-2 min each on 2 busy cores)")
    p.add_argument("--labelled-only", action="store_true", help="only the labelled set (no model, seconds)")
    p.set_defaults(func=cmd_observations)

    p = sub.add_parser("beliefs", parents=[common], help="the facts the checks store, against labels by reading",
                       description="Replays the bundled model's recorded facts on dev conversations (LoCoMo's dev "
                                   "half and realtalk_dev.json) through today's extractor and checks, and prints per "
                                   "split the stored facts' precision, wrong and trivial shares, the share of true "
                                   "facts kept and citation accuracy against the labelled belief set. --live asks "
                                   "the model again.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="sessions to score (default all; test is the headline)")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--realtalk", help="realtalk_dev.json (default: beside locomo10.json)")
    p.add_argument("--live", action="store_true", help="ask the model (the local one unless HINDSIGHT_LLM_BASE_URL "
                                                       "names one) instead of replaying the recorded answers")
    p.set_defaults(func=cmd_beliefs)

    p = sub.add_parser("updates", parents=[common], help="beliefs that change: current vs superseded, supersession",
                       description="Retains the labelled update set (chats with updates and look-alikes) raw, and "
                                   "with --default through the model too, and prints per split: current outranks "
                                   "superseded, past questions that find the old, supersession precision and recall, "
                                   "look-alikes wrongly superseded.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="conversations to score (default all; tune on dev, test is the headline)")
    p.add_argument("--data", help="an update set in the same JSONL format (default: the bundled set)")
    p.add_argument("--conversations", type=name_list, help="comma-separated conversation ids (default: all)")
    p.add_argument("--default", action="store_true",
                   help="also the default path (extract=True: the local model unless HINDSIGHT_LLM_BASE_URL; slow)")
    p.add_argument("--workdir", help="keep the banks here (default: a temporary directory)")
    p.add_argument("--reuse", action="store_true",
                   help="score the banks --workdir kept from an earlier run instead of retaining again (compare recall "
                        "settings on the default path without the model)")
    p.add_argument("--recall", type=name_list,
                   help="recall settings for the run, field=value of RecallSettings (later_first_depth=10)")
    p.add_argument("--show-misses", action="store_true",
                   help="also print every wrong supersession and failed case with its two messages (read on dev only: "
                        "the test half is the headline)")
    p.add_argument("--real-chat", action="store_true",
                   help="also retain the dev data's real chats (realtalk_dev.json, LoCoMo's dev half) raw and judge "
                        "every supersession the rules make against pairs labelled by reading (a gate for rule changes)")
    p.add_argument("--locomo", help="locomo10.json for --real-chat (default: $HINDSIGHT_LOCOMO or "
                                    "shared/data/locomo10.json; realtalk_dev.json beside it)")
    p.add_argument("--out", help="also write updates.json and updates.md in this folder")
    p.set_defaults(func=cmd_updates)

    p = sub.add_parser("questions", parents=[common], help="questions are not answers: top results that only ask",
                       description="Retains LoCoMo's dev or test half (and, for dev, realtalk_dev.json) raw and "
                                   "prints, for each question rule in the same process, the share of questions "
                                   "whose top result only asks or acknowledges, and R@5, R@10, R@1000tok.")
    p.add_argument("--split", choices=("dev", "test"), default="dev",
                   help="LoCoMo half (default dev; realtalk_dev.json joins dev only; test is the headline)")
    p.add_argument("--data", help="locomo10.json (default: $HINDSIGHT_LOCOMO or shared/data/locomo10.json)")
    p.add_argument("--realtalk", help="realtalk_dev.json (default: beside locomo10.json)")
    p.add_argument("--no-realtalk", action="store_true", help="LoCoMo only")
    p.add_argument("--rules", type=name_list, help="question rules to compare (default off,demote,pair; off first), "
                                                   "or recall settings as field=value, the first the baseline "
                                                   "(later_first_depth=10,later_first_depth=0)")
    p.add_argument("--conversations", type=positive_int, help="only the first N conversations of each set")
    p.add_argument("--questions", type=positive_int, help="only the first N questions of each conversation")
    p.add_argument("--workdir", help="keep the banks here (default: a temporary directory)")
    p.add_argument("--out", help="also write questions.json and questions.md in this folder")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(func=cmd_questions)

    p = sub.add_parser("dates", parents=[common], help="dates of plans and reports: accuracy by kind",
                       description="Resolves every labelled sentence (plans, reports, holidays, dates with and "
                                   "without a year, weekdays, day and week counts, seasons, ranges) against the "
                                   "time it was said, as raw retain does, and prints exact-day accuracy by kind "
                                   "for the dev and test halves, then every wrong answer.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="all",
                   help="sentences to score: the dev or test half, or all (default all; test is the headline)")
    p.add_argument("--data", help="a sentence file in the same JSONL format (default: the bundled set)")
    p.set_defaults(func=cmd_dates)


def _global_options(default: Any) -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--json", action="store_true", default=default,
                         help="print machine-readable JSON on stdout and nothing else")
    options.add_argument("-v", "--verbose", action="store_true", default=default, help="log progress to stderr")
    return options


def _out_options(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument("--out", default="results",
                   help=f"results folder for {name}.json, {name}.md and the plots (default ./results)")
    p.add_argument("--workdir", help="keep the benchmark's memory here (default: a temporary directory)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def _backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="embedded",
                   help="storage backend: embedded (default), server (NEO4J_URI/CHROMA_PORT, or servers started "
                        "from a checkout), a registered one, or both (all, side by side)")


def int_list(text: str) -> list[int]:
    """``"1000,10000"`` -> ``[1000, 10000]`` (each positive)."""
    return [positive_int(part) for part in text.split(",") if part.strip()]


def name_list(text: str) -> list[str]:
    """``"full,no-graph"`` -> ``["full", "no-graph"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def positive_int(text: str) -> int:
    """A command-line whole number above zero (argparse ``type``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
