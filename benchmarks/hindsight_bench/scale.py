"""Scale benchmark: retain throughput and recall latency on large synthetic banks, against a bare Chroma
query with the same embedder as the floor; resident memory, disk per unit and time to reopen.

Units are generated deterministically (seeded) from varied templates with people, places, organisations,
activities, amounts and explicit dates, retained with ``extract=False``, then queried with questions in the
same vocabulary (some with time expressions, so the temporal channel runs too). Each size gets its own
store folder so disk use is per bank; everything is measured in one process so the ratios are fair.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hindsight_core.embedders import embed_queries
from hindsight_core.vectors.unit_text import timed_text

from .backends import OpenHindsight, open_embedded
from .metrics import latency_stats
from .report import bar_plot, line_plot, md_table, run_info, write_json, write_text

PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gustav", "Hana", "Ivan", "Jamal", "Keiko", "Luis",
          "Maya", "Noor", "Oscar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yara",
          "Zoe", "Amir", "Beatriz", "Caleb", "Dmitri", "Elena", "Fatima", "Goran", "Ingrid", "Joao", "Kwame", "Lena"]
SURNAMES = ["Okafor", "Silva", "Nakamura", "Kowalski", "Haddad", "Lindqvist", "Moreau", "Petrov", "Reyes",
            "Schmidt", "Tanaka", "Varga", "Walsh", "Young", "Zhou", "Abebe"]
PLACES = ["Lisbon", "Nairobi", "Osaka", "Denver", "Krakow", "Lima", "Oslo", "Seoul", "Austin", "Porto", "Cairo",
          "Tromso", "Hanoi", "Quebec", "Bergen", "Tbilisi", "Valencia", "Accra", "Perth", "Montreal", "Ljubljana",
          "Cusco", "Kyoto", "Glasgow"]
ORGS = ["Acme Corp", "the city library", "Riverside Clinic", "Blue Harbor Bank", "the chess club", "Northwind",
        "the climbing gym", "Greenleaf School", "the food bank", "Orbit Labs", "Sunrise Bakery", "the rowing club",
        "Helix Robotics", "the community garden", "Maple Street Theatre", "Kestrel Airlines"]
ACTIVITIES = ["started a pottery class", "ran a half marathon", "adopted a rescue dog", "painted a mural",
              "moved to a new apartment", "planted tomatoes", "learned to play the cello", "baked sourdough bread",
              "volunteered at a shelter", "fixed an old bicycle", "wrote a short story", "joined a book club",
              "went camping by the lake", "presented a research poster", "organised a charity auction",
              "visited their grandparents", "switched to a vegetarian diet", "bought a used car",
              "signed up for a salsa course", "repaired the garden fence", "hosted a board game night",
              "took a night class in accounting", "built a birdhouse", "started learning Japanese",
              "got promoted to team lead", "sprained an ankle playing football", "renovated the kitchen",
              "finished a jigsaw puzzle of 2000 pieces", "recorded a podcast episode", "climbed a via ferrata"]
FEELINGS = ["and felt proud", "and it was exhausting", "which was a lot of fun", "and wants to do it again",
            "but it rained the whole time", "with two close friends", "after months of planning", "on a whim",
            "despite a bad cold", "and posted photos afterwards", "and could not stop talking about it",
            "although the budget ran out"]
ITEMS = ["a blue raincoat", "concert tickets", "a secondhand piano", "running shoes", "a tent", "a cookbook",
         "a drone", "a vintage camera", "houseplants", "a new laptop", "a kayak", "winter tyres"]
TEMPLATES = [
    "{p} {a} in {pl} {f}.",
    "On {date}, {p} {a} with {q} {f}.",
    "{p} told {q} that they {a} near {pl}.",
    "At {o}, {p} {a} {f}.",
    "{p} and {q} {a} together in {pl} on {date}.",
    "{p} said {o} in {pl} offered a discount, so they {a}.",
    "{p} {s} spent {n} euros on {item} in {pl}.",
    "{q} mentioned that {p} {s} {a} {f}.",
    "During a trip to {pl} in {month}, {p} {a}.",
    "{p} is planning to visit {pl} with {q} {rel} to see {o}.",
    "{p} borrowed {item} from {q} and returned it {n} days later.",
    "After work at {o}, {p} {a}; {q} joined later.",
    "{p} {s} called {q} on {date} to say they {a}.",
    "{p} rated {o} {r} out of 5 after they {a}.",
]
RELATIVE = ["next week", "next month", "in the spring", "this weekend", "after the holidays", "in two weeks"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def synthetic_units(n: int, seed: int = 7, start: datetime | None = None) -> Iterator[tuple[str, datetime]]:
    """``n`` varied sentences with entities, amounts and dates, each with a timestamp; deterministic for a
    given seed. Timestamps increase (about 100 minutes apart), spreading 100,000 units over ~19 years."""
    rng = random.Random(seed)
    t0 = start or datetime(2023, 1, 1, tzinfo=UTC)
    for i in range(n):
        when = t0 + timedelta(minutes=100 * i + rng.randint(0, 99))
        said = when - timedelta(days=rng.randint(0, 20))
        text = rng.choice(TEMPLATES).format(
            p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), s=rng.choice(SURNAMES), pl=rng.choice(PLACES),
            o=rng.choice(ORGS), a=rng.choice(ACTIVITIES), f=rng.choice(FEELINGS), item=rng.choice(ITEMS),
            n=rng.randint(2, 900), r=rng.randint(1, 5), rel=rng.choice(RELATIVE),
            date=f"{said.day} {MONTHS[said.month - 1]} {said.year}", month=MONTHS[said.month - 1],
        )
        yield text, when


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    """Questions in the vocabulary of the synthetic units; about a third carry a time expression."""
    rng = random.Random(seed)
    forms = ["When did {p} go to {pl}?", "What did {p} do at {o}?", "Who {a}?", "Did {p} ever {a2} with {q}?",
             "What happened in {pl} last month?", "How did {p} feel after they {a}?",
             "How much did {p} spend on {item}?", "What did {p} do in {month} {year}?",
             "Who did {p} meet in {pl} last year?", "What is {p} planning with {q}?"]
    out = []
    for _ in range(n):
        a = rng.choice(ACTIVITIES)
        out.append(rng.choice(forms).format(p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), pl=rng.choice(PLACES),
                                            o=rng.choice(ORGS), a=a, a2=a.split(" ", 1)[1], item=rng.choice(ITEMS),
                                            month=rng.choice(MONTHS), year=rng.choice([2023, 2024, 2025])))
    return out


def folder_bytes(path: Path) -> int:
    """Total size of the files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


BUILD_FILE = "build.json"


def _read_build(folder: Path) -> dict[str, Any]:
    path = folder / BUILD_FILE
    if not path.exists():
        return {"units_done": 0, "seconds": 0.0, "runs": []}
    return dict(json.loads(path.read_text()))


def ingest(
    hs: Any, bank_id: str, size: int, *, batch: int = 500, folder: Path | None = None, desc: str = "retain",
    progress: bool = True, log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Retain the first ``size`` synthetic units into ``bank_id`` in batches (document ``batch-<i>``), resuming
    where an earlier, interrupted ingest into the same store stopped.

    The units are deterministic, so the bank's unit count says how far an earlier run got: batches are retained
    in order, each as one document, so the first ``count // batch`` batches are whole. The last of them is
    retained again (its document is replaced, so a batch that reached one store and not the other is made
    whole), then the rest. Progress is shown per unit; ``folder/build.json`` records each run's units and
    seconds. Returns ``retain_seconds`` and ``retain_units_per_s`` for the units retained in this call (absent
    when the bank was already complete), ``resumed_from`` (units already in the bank), and the whole build's
    ``build_units_per_s`` from ``build.json``."""
    from tqdm import tqdm

    have = hs.store.count_units(bank_id)
    start = 0 if have == 0 else max(0, min(have, size) // batch * batch - batch)
    if have >= size and start + batch >= size:
        start = size  # complete: nothing to redo
    out: dict[str, Any] = {"resumed_from": have}
    build = _read_build(folder) if folder is not None else None
    if start < size:
        if have:
            log(f"{bank_id}: {have} units already in the bank; continuing from unit {start}")
        bank = hs.bank(bank_id)
        gen = synthetic_units(size)
        for _ in range(start):  # the generator is deterministic: skip what earlier runs retained
            next(gen)
        bar = tqdm(total=size, initial=start, desc=desc, unit="unit", disable=not progress, smoothing=0.05)
        t = time.perf_counter()
        done = start
        try:
            while done < size:
                chunk = [{"text": text, "timestamp": when} for text, when in
                         (next(gen) for _ in range(min(batch, size - done)))]
                bank.retain(chunk, document_id=f"batch-{done}", extract=False, background=False)
                done += len(chunk)
                bar.update(len(chunk))
                if folder is not None and build is not None:  # after each batch, so a kill loses no record
                    _write_build(folder, build, done, time.perf_counter() - t, start)
        finally:
            bar.close()
        seconds = time.perf_counter() - t
        out["retain_seconds"] = seconds
        out["retain_units_per_s"] = (size - start) / seconds if seconds > 0 else None
    if build is not None and folder is not None:
        build = _read_build(folder)
        if build["seconds"] > 0:
            out["build_units_per_s"] = build.get("units_retained", build["units_done"]) / build["seconds"]
        out["build"] = build
    return out


def _write_build(folder: Path, build: dict[str, Any], done: int, seconds: float, start: int) -> None:
    """Record this run (which started at unit ``start``) as having reached ``done`` units in ``seconds``;
    ``units_retained``/``seconds`` sum over the runs, so their ratio is the whole build's units/s."""
    key = (start, os.getpid())
    runs = [r for r in build["runs"] if (r["start"], r["pid"]) != key]
    runs.append({"start": start, "done": done, "seconds": round(seconds, 3), "pid": os.getpid(),
                 "at": datetime.now(UTC).isoformat(timespec="seconds")})
    build["runs"] = runs
    build["units_done"] = done
    build["units_retained"] = sum(r["done"] - r["start"] for r in runs)
    build["seconds"] = round(sum(r["seconds"] for r in runs), 3)
    tmp = folder / (BUILD_FILE + ".tmp")
    tmp.write_text(json.dumps(build, indent=1))
    tmp.replace(folder / BUILD_FILE)


def _rss_mb() -> float | None:
    try:
        import psutil
    except ImportError:  # optional: the figure is simply left out
        return None
    return psutil.Process().memory_info().rss / 2**20


def run_scale(
    sizes: tuple[int, ...] = (1000, 10_000, 100_000),
    *,
    queries: int = 200,
    budget: int = 1000,
    batch: int = 500,
    open_hindsight: OpenHindsight = open_embedded,
    backend: str = "embedded",
    workdir: str | Path | None = None,
    resume: bool = True,
    ingest_only: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build a bank per size (each in its own folder), then measure: retain throughput; recall latency in
    total and per stage/channel (from the trace); a bare Chroma query (embed + nearest neighbours, the
    semantic channel's k) as the floor; RSS; disk per unit; time to reopen and the first recall after it.

    With a ``workdir``, each size's folder is kept: a later run with the same ``workdir`` continues an
    interrupted ingest where it stopped and reuses a finished bank without retaining again (``resume=False``
    starts each bank afresh). Retain throughput is then that of the units retained in this run (and of the
    whole build, summed over its runs, from ``build.json`` in the folder). ``ingest_only`` builds the banks and
    stops there (no timings but the ingest's)."""
    from tqdm import tqdm

    tmp = tempfile.TemporaryDirectory(prefix="hindsight-scale-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    qs = synthetic_queries(queries)
    results: dict[str, Any] = {"benchmark": "scale", "backend": backend, "budget": budget, "queries": queries,
                               "run": run_info(), "sizes": {}}
    try:
        for size in sizes:
            folder = root / f"size-{size}"
            if tmp is None and not resume and folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True, exist_ok=True)
            bank_id = f"scale-{size}"
            entry: dict[str, Any] = {"units": size, "rss_mb_start": _rss_mb()}
            with open_hindsight(folder) as hs:
                bank = hs.bank(bank_id)
                entry.update(ingest(hs, bank_id, size, batch=batch, folder=folder, desc=f"retain {size} [{backend}]",
                                    progress=progress, log=log))
                if ingest_only:
                    entry["units_in_bank"] = hs.store.count_units(bank_id)
                    entry["disk_bytes"] = folder_bytes(folder)
                    results["sizes"][str(size)] = entry
                    continue
                units = list(synthetic_units(min(size, 2000)))
                # The same process's embedder alone on (up to 2,000 of) the same texts, in retain's batches:
                # retain is embedding-bound, so this baseline tells a slow machine from a slow pipeline.
                sample = [timed_text(text, when) for text, when in units[: min(size, 2000)]]
                t = time.perf_counter()
                for j in range(0, len(sample), batch):
                    hs.embedder.embed(sample[j : j + batch])
                entry["embed_only_units_per_s"] = len(sample) / (time.perf_counter() - t)
                if entry.get("retain_units_per_s"):
                    entry["retain_vs_embed_only"] = entry["retain_units_per_s"] / entry["embed_only_units_per_s"]
                entry["rss_mb_after_retain"] = _rss_mb()
                for q in qs[:5]:  # warm caches and lazy loads before timing
                    bank.recall(q, budget=budget)
                # A large bank's in-memory vector copy (the temporal channel's windows) loads in the background
                # from the first recall with a time window: timed recalls measure the state after it.
                wait_for_copy = getattr(hs.index, "wait_for_copy", None)
                if wait_for_copy is not None:
                    t = time.perf_counter()
                    entry["vector_copy_ready"] = bool(wait_for_copy(bank_id))
                    entry["vector_copy_wait_s"] = time.perf_counter() - t
                totals: list[float] = []
                stages: dict[str, list[float]] = {}
                for q in tqdm(qs, desc=f"recall {size}", unit="q", disable=not progress):
                    t = time.perf_counter()
                    rec = bank.recall(q, budget=budget, trace=True)
                    totals.append((time.perf_counter() - t) * 1000)
                    if rec.trace is not None:
                        for k, v in rec.trace.timings_ms.items():
                            stages.setdefault(k, []).append(v)
                k_semantic = hs.settings.recall.semantic_k
                bare: list[float] = []
                bare_query: list[float] = []
                for q in qs:
                    t = time.perf_counter()
                    vec = embed_queries(hs.embedder, [q])[0]
                    t_q = time.perf_counter()
                    hs.index.query(bank_id, vec, k_semantic)
                    done = time.perf_counter()
                    bare.append((done - t) * 1000)
                    bare_query.append((done - t_q) * 1000)
                entry["rss_mb_after_recall"] = _rss_mb()
            entry["recall_ms"] = latency_stats(totals)
            entry["stages_ms"] = {k: latency_stats(v) for k, v in stages.items()}
            entry["bare_chroma_query_ms"] = latency_stats(bare)
            entry["bare_chroma_nn_only_ms"] = latency_stats(bare_query)
            entry["bare_k"] = k_semantic
            entry["ratio_to_bare"] = entry["recall_ms"]["median"] / entry["bare_chroma_query_ms"]["median"]
            disk = folder_bytes(folder)
            entry["disk_bytes"] = disk
            entry["disk_bytes_per_unit"] = disk / size
            t = time.perf_counter()
            with open_hindsight(folder) as hs:
                bank = hs.bank(bank_id, create=False)
                entry["reopen_seconds"] = time.perf_counter() - t
                t = time.perf_counter()
                bank.recall(qs[0], budget=budget)
                entry["first_recall_after_reopen_ms"] = (time.perf_counter() - t) * 1000
            results["sizes"][str(size)] = entry
            if tmp is not None:  # keep disk use down between sizes
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if ingest_only:
        for size, e in results["sizes"].items():
            log(f"{size}: {e['units_in_bank']} units in the bank, build {e.get('build_units_per_s') or 0:.1f} units/s")
        return results
    log(format_scale(results))
    return results


STAGES = ("embed_ms", "semantic_ms", "keyword_ms", "graph_ms", "temporal_ms", "time_parse_ms", "fusion_ms",
          "pack_ms")


def format_scale(results: Mapping[str, Any]) -> str:
    """Markdown tables: throughput, latency vs the bare Chroma floor, resources; then stage latencies."""
    lines = [f"Scale ({results.get('backend', 'embedded')} backend): {results['queries']} queries per bank, "
             f"recall budget {results['budget']} tokens, no reranker", ""]
    rows = []
    for size, e in results["sizes"].items():
        # A bank reused from an earlier run (kept workdir) shows its whole build's units/s, marked as such: that
        # build may have run on another host spell, or with another embedder before a re-embed.
        retain: Any = e.get("retain_units_per_s")
        if not retain and e.get("build_units_per_s"):
            retain = f"{e['build_units_per_s']:.1f} (earlier build)"
        rows.append([size, retain, e.get("embed_only_units_per_s"),
                     f"{e['retain_vs_embed_only']:.2f}" if e.get("retain_vs_embed_only") else None,
                     e["recall_ms"]["median"], e["recall_ms"]["p95"],
                     e["bare_chroma_query_ms"]["median"], e["bare_chroma_query_ms"]["p95"],
                     f"{e['ratio_to_bare']:.1f}x", e.get("rss_mb_after_recall"), e["disk_bytes_per_unit"],
                     f"{e['reopen_seconds']:.3f}", e["first_recall_after_reopen_ms"]])
    lines += md_table(["units", "retain units/s", "embedder alone units/s", "retain/embedder",
                       "recall median ms", "recall p95 ms", "bare Chroma median ms",
                       "bare p95 ms", "ratio", "RSS MB", "disk bytes/unit", "reopen s", "first recall ms"], rows)
    lines += ["", "Recall stages (median / p95 ms; channels run concurrently, so they overlap):", ""]
    present = [s for s in STAGES if any(s in e["stages_ms"] for e in results["sizes"].values())]
    stage_rows = []
    for size, e in results["sizes"].items():
        cells: list[Any] = [size]
        for s in present:
            st = e["stages_ms"].get(s)
            cells.append(f"{st['median']:.1f} / {st['p95']:.1f} (n={st['n']})" if st else "-")
        stage_rows.append(cells)
    lines += md_table(["units", *(s.removesuffix("_ms") for s in present)], stage_rows)
    return "\n".join(lines)


def write_scale(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``scale.json``, ``scale.md`` and plots (latency vs bank size, stage breakdown); a
    ``{backend: result}`` mapping writes each backend under ``<out>/<backend>/``."""
    out = Path(out_dir)
    if "benchmark" not in result:
        return [p for name, run in result.items() for p in write_scale(out / name, run)]
    if not all("recall_ms" in e for e in result["sizes"].values()):  # --ingest-only: nothing timed to tabulate
        return [write_json(out / "scale.json", result)]
    paths = [write_json(out / "scale.json", result),
             write_text(out / "scale.md", "# Scale\n\n" + format_scale(result)
                        + "\n\nPlots: scale_latency.png, scale_stages.png\n")]
    sizes = list(result["sizes"])
    if not sizes:
        return paths
    xs = [int(s) for s in sizes]
    e = result["sizes"]
    paths.append(line_plot(out / "scale_latency.png", {
        "recall median": (xs, [e[s]["recall_ms"]["median"] for s in sizes]),
        "recall p95": (xs, [e[s]["recall_ms"]["p95"] for s in sizes]),
        "bare Chroma median": (xs, [e[s]["bare_chroma_query_ms"]["median"] for s in sizes]),
        "bare Chroma p95": (xs, [e[s]["bare_chroma_query_ms"]["p95"] for s in sizes]),
    }, title="Recall latency vs bank size", xlabel="units in the bank", ylabel="ms", logx=True))
    present = [s for s in STAGES if any(s in e[z]["stages_ms"] for z in sizes)]
    paths.append(bar_plot(out / "scale_stages.png", [s.removesuffix("_ms") for s in present],
                          {f"{z} units": [e[z]["stages_ms"].get(s, {}).get("median", 0.0) for s in present]
                           for z in sizes},
                          title="Recall stage latency (median)", ylabel="ms"))
    return paths
