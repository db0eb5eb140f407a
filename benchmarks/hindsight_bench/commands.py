"""The bodies of the ``hindsight-bench`` commands: find the data, run a benchmark, write its results.

Each command takes the parsed arguments and returns the result document (printed as JSON with ``--json``)
or None. The benchmarks and the engine are imported inside the commands, so the command line starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

LOCOMO_FILE = Path("shared") / "data" / "locomo10.json"
"""Where a checkout keeps LoCoMo, relative to the repository or one folder above it."""
REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository root when this package runs from a checkout (an editable install)."""


class BenchError(Exception):
    """A usage problem found after parsing (missing data, unknown backend): a one-line error, exit status 2."""


def cmd_locomo(args: argparse.Namespace) -> dict[str, Any] | None:
    """``locomo``: evidence recall on LoCoMo with channel ablations; writes JSON, markdown and plots."""
    from .locomo import CONFIGS, run_locomo, run_locomo_backends, write_locomo

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise BenchError(f"LoCoMo data not found: {data}")
    configs = CONFIGS
    if args.configs:
        unknown = [c for c in args.configs if c not in CONFIGS]
        if unknown:
            raise BenchError(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
        configs = {c: CONFIGS[c] for c in args.configs}
    backends = _backends(args)
    if args.reuse and not args.workdir:
        raise BenchError("--reuse needs --workdir (the folder an earlier run kept)")
    if args.embedder:
        backends = {name: _with_embedder(factory, args.embedder) for name, factory in backends.items()}
    kwargs: dict[str, Any] = {
        "limit_conversations": args.conversations, "limit_questions": args.questions, "configs": configs,
        "split": args.split, "reuse": args.reuse,
        "latency_every": args.latency_every, "progress": args.progress, "log": _log(args),
    }
    if len(backends) == 1:
        (name, factory), = backends.items()
        result = run_locomo(data, open_hindsight=factory, backend=name, workdir=args.workdir, **kwargs)
    else:
        result = run_locomo_backends(data, backends, workdir=args.workdir, **kwargs)
    _report_written(args, write_locomo(args.out, result))
    return result if args.json else None


def cmd_longmemeval(args: argparse.Namespace) -> dict[str, Any] | None:
    """``longmemeval``: LongMemEval's official session-level retrieval metrics per question type."""
    from .longmemeval import TINY_DATA, run_longmemeval, write_longmemeval

    data = Path(args.data or os.environ.get("HINDSIGHT_LONGMEMEVAL") or TINY_DATA)
    if not data.is_file():
        raise BenchError(f"LongMemEval data not found: {data}")
    if data == TINY_DATA:
        stderr_print(f"note: using the bundled {TINY_DATA.name} (a 7-question format sample, not the benchmark); "
                     "pass --data longmemeval_s.json for real figures")
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        results[name] = run_longmemeval(data, open_hindsight=factory, backend=name, workdir=workdir,
                                        limit_questions=args.questions, progress=args.progress, log=_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_longmemeval(args.out, result))
    return result if args.json else None


def cmd_scale(args: argparse.Namespace) -> dict[str, Any] | None:
    """``scale``: throughput, latency per channel vs bare Chroma, memory, disk and reopen time."""
    from .scale import run_scale, write_scale

    sizes = tuple(dict.fromkeys(n for group in args.units for n in group))
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        if args.embedder:
            factory = _with_embedder(factory, args.embedder)
        results[name] = run_scale(sizes, queries=args.queries, budget=args.budget, batch=args.batch,
                                  open_hindsight=factory, backend=name, workdir=workdir, resume=not args.fresh,
                                  ingest_only=args.ingest_only, progress=args.progress, log=_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_scale(args.out, result))
    return result if args.json else None


def cmd_long_inputs(args: argparse.Namespace) -> dict[str, Any] | None:
    """``long-inputs``: raw retain time of long texts and a full message list, and recall by passage size."""
    from .long_inputs import run_quality, run_timing, write_long_inputs

    (_, factory), *rest = _backends(args).items()
    if rest:
        raise BenchError("long-inputs runs on one backend at a time")
    if args.embedder:
        factory = _with_embedder(factory, args.embedder)
    results: dict[str, Any] = {}
    if args.part in ("timing", "all"):
        sizes = tuple(dict.fromkeys(n for group in args.sizes for n in group))
        results["timing"] = run_timing(sizes, passage_chars=args.passage_chars, messages=args.messages,
                                       open_hindsight=factory, workdir=args.workdir, log=_log(args))
        _report_written(args, write_long_inputs(args.out, results["timing"]))
    if args.part in ("passage-size", "all"):
        results["passage-size"] = run_quality(args.passages, chars=args.chars, split=args.split,
                                              open_hindsight=factory, workdir=args.workdir, log=_log(args))
        _report_written(args, write_long_inputs(args.out, results["passage-size"]))
    return results if args.json else None


def cmd_embedders(args: argparse.Namespace) -> dict[str, Any] | None:
    """``embedders``: each embedder's query latency, ingest throughput and semantic-only LoCoMo R@10."""
    from .embedders import VARIANTS, run_embedders, write_embedders

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise BenchError(f"LoCoMo data not found: {data}")
    own = list(getattr(args, "embedder", None) or [])  # any make_embedder choice (docs/MODELS.md)
    variants = args.embedders or ([] if own else list(VARIANTS))
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise BenchError(f"unknown embedder(s) {unknown}; known: {', '.join(VARIANTS)} (others: --embedder SPEC)")
    variants = list(dict.fromkeys([*variants, *own]))
    result = run_embedders(data, variants=variants, limit_conversations=args.conversations,
                           latency_queries=args.queries, progress=args.progress, log=_log(args))
    _report_written(args, write_embedders(args.out, result))
    return result if args.json else None


def cmd_reembed(args: argparse.Namespace) -> dict[str, Any] | None:
    """``reembed``: a LoCoMo bank switched to another embedder scores what a fresh retain with it scores."""
    from .reembed import run_reembed, write_reembed

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise BenchError(f"LoCoMo data not found: {data}")
    try:
        result = run_reembed(data, conversations=args.conversations, source=args.source, target=args.target,
                             workdir=args.workdir, log=_log(args))
    except ValueError as exc:
        raise BenchError(str(exc)) from exc
    _report_written(args, write_reembed(args.out, result))
    return result if args.json else None


def cmd_qa(args: argparse.Namespace) -> dict[str, Any] | None:
    """``qa``: answers by reflect, judged correct/wrong by a second model; accuracy per category."""
    from .longmemeval import TINY_DATA
    from .qa import endpoint_llm, run_qa, write_qa

    if args.data:
        data = Path(args.data)
    elif args.dataset == "locomo":
        data = find_locomo()
    else:
        data = Path(os.environ.get("HINDSIGHT_LONGMEMEVAL") or TINY_DATA)
    if not data.is_file():
        raise BenchError(f"{args.dataset} data not found: {data}")
    answer = endpoint_llm(args.answer_url, args.answer_model, args.answer_key)
    judge = endpoint_llm(args.judge_url, args.judge_model, args.judge_key)
    results = {}
    for name, factory in _backends(args).items():
        workdir = Path(args.workdir) / name if args.workdir else None
        results[name] = run_qa(args.dataset, data, answer_llm=answer, judge_llm=judge, open_hindsight=factory,
                               backend=name, workdir=workdir, limit_conversations=args.conversations,
                               limit_questions=args.questions, budget=args.budget, extract=args.extract,
                               progress=args.progress, log=_log(args))
    result = results if len(results) > 1 else next(iter(results.values()))
    _report_written(args, write_qa(args.out, result))
    return result if args.json else None


def cmd_cara(args: argparse.Namespace) -> dict[str, Any] | None:
    """``cara``: contrasting dispositions and labelled evidence on the bundled scenarios."""
    from .cara import SETS, format_cara, load_scenarios, run_cara, select_split, split_of, write_cara
    from .qa import endpoint_llm

    data = Path(args.data) if args.data else SETS[args.set]
    if not data.is_file():
        raise BenchError(f"CARA scenarios not found: {data}")
    try:
        scenarios = load_scenarios(data)
    except ValueError as exc:
        raise BenchError(f"{data}: {exc}") from None
    halves = {s.id: split_of(i, s) for i, s in enumerate(scenarios)}
    scenarios = select_split(scenarios, args.split)
    if args.scenarios:
        scenarios = scenarios[: args.scenarios]
    llm = endpoint_llm(args.llm_url, args.llm_model, args.llm_key)
    parts = ("reflect", "evidence") if args.part == "all" else (args.part,)
    result = run_cara(llm, scenarios, repeats=args.repeats, parts=parts, splits=halves, workdir=args.workdir,
                      log=_log(args), judgement=args.judgement)
    if not args.json:
        print("\n" + format_cara(result))
    _report_written(args, write_cara(args.out, result))
    return result if args.json else None


def cmd_llm_retain(args: argparse.Namespace) -> dict[str, Any] | None:
    """``llm-retain``: one LoCoMo session through the LLM extractor, with the time it took."""
    from .llm_retain import run_llm_retain

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise BenchError(f"LoCoMo data not found: {data}")
    result = run_llm_retain(data, conversation=args.conversation, session=args.session, log=_log(args))
    return result if args.json else None


def cmd_llm_vs_raw(args: argparse.Namespace) -> dict[str, Any] | None:
    """``llm-vs-raw``: LoCoMo sessions retained raw and with the LLM extractor, evidence recall of both."""
    from .llm_vs_raw import run_llm_vs_raw, write_llm_vs_raw

    data = Path(args.data) if args.data else find_locomo()
    if not data.is_file():
        raise BenchError(f"LoCoMo data not found: {data}")
    try:
        result = run_llm_vs_raw(data, conversations=args.conversations, split=args.split, sessions=args.sessions,
                                workdir=args.workdir, replay_from=args.replay, log=_log(args))
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    _report_written(args, write_llm_vs_raw(args.out, result))
    return result if args.json else None


def cmd_entities(args: argparse.Namespace) -> dict[str, Any] | None:
    """``entities``: pairwise precision and recall of entity merges on the labelled scenario set."""
    from .entities import DATA, format_entity_bench, run_entity_bench

    data = Path(args.data) if args.data else DATA
    if not data.is_file():
        raise BenchError(f"entity-resolution scenarios not found: {data}")
    result = run_entity_bench(args.split, data)
    if args.json:
        return result
    print(format_entity_bench(result))
    return None


def cmd_dates(args: argparse.Namespace) -> dict[str, Any] | None:
    """``dates``: accuracy of stated sentences' occurrence days by kind, on the labelled date set."""
    from .dates import DATA, format_date_bench, run_date_bench

    data = Path(args.data) if args.data else DATA
    if not data.is_file():
        raise BenchError(f"date sentences not found: {data}")
    try:
        result = run_date_bench(args.split, data)
    except (ValueError, KeyError) as exc:
        raise BenchError(f"bad date sentence file {data}: {exc}") from None
    if args.json:
        return result
    print(format_date_bench(result))
    return None


def cmd_observations(args: argparse.Namespace) -> dict[str, Any] | None:
    """``observations``: the support check on the labelled set, and the bundled model's observations of LoCoMo
    dev entities with the supported share of their sentences before and after the check."""
    from .observations import format_observation_bench, run_observation_bench

    data = None
    if not args.labelled_only:
        data = Path(args.data) if args.data else find_locomo()
        if not data.is_file():
            raise BenchError(f"LoCoMo data not found: {data}")
    try:
        result = run_observation_bench(data, conversations=args.conversations, sessions=args.sessions,
                                       entities=args.entities, log=_log(args))
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    if args.json:
        return result
    print(format_observation_bench(result))
    return None


def cmd_beliefs(args: argparse.Namespace) -> dict[str, Any] | None:
    """``beliefs``: the labelled belief set replayed (or re-asked) through today's extractor and checks."""
    from hindsight_core.embedders import make_embedder

    from .beliefs import run_beliefs

    locomo = Path(args.data) if args.data else find_locomo()
    realtalk = Path(args.realtalk) if args.realtalk else locomo.parent / "realtalk_dev.json"
    for path in (locomo, realtalk):
        if not path.is_file():
            raise BenchError(f"data not found: {path}")
    live = None
    if args.live:
        from hindsight_core.llm.factory import default_llm

        live = default_llm()
    embedder = make_embedder(None)
    try:
        result = run_beliefs(args.split, data_files={"locomo": locomo, "realtalk": realtalk}, live=live,
                             embed=embedder.embed, log=_log(args))
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    return result if args.json else None


def find_locomo() -> Path:
    """``$HINDSIGHT_LOCOMO``, else the first existing ``[../]shared/data/locomo10.json`` relative to the
    working directory or to the repository root; raises ``BenchError`` listing where it looked."""
    env = os.environ.get("HINDSIGHT_LOCOMO")
    if env:
        return Path(env)
    candidates = [base / rel for base in (Path.cwd(), REPO_ROOT) for rel in (Path("..") / LOCOMO_FILE, LOCOMO_FILE)]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise BenchError("LoCoMo data not found; pass --data or set HINDSIGHT_LOCOMO (looked in "
                     + ", ".join(str(c) for c in candidates) + ")")


def stderr_print(*values: Any, **kwargs: Any) -> None:
    """``print`` to stderr (progress and notes that must stay off a ``--json`` stdout)."""
    kwargs.pop("file", None)
    print(*values, file=sys.stderr, **kwargs)


def _backends(args: argparse.Namespace) -> dict[str, Any]:
    from .backends import resolve_backends

    try:
        return resolve_backends(args.backend)
    except KeyError as exc:
        raise BenchError(str(exc.args[0])) from None


def _with_embedder(factory: Any, embedder: str) -> Any:
    """A backend factory that opens its store with ``embedder`` (a name ``make_embedder`` knows)."""
    def open_with(root: Path, **kwargs: Any) -> Any:
        return factory(root, **{"embedder": embedder, **kwargs})
    return open_with


def _log(args: argparse.Namespace) -> Callable[..., None]:
    return stderr_print if args.json else print


def _report_written(args: argparse.Namespace, paths: Sequence[Path]) -> None:
    if not args.json:
        print("\nwrote " + ", ".join(str(p) for p in paths))
