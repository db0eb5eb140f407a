"""Scale benchmark: recall latency on large synthetic banks, against a bare Chroma query as the floor.

Units are generated deterministically (seeded) from templates with people, places, organisations,
activities and dates, retained with ``extract=False``, then queried with questions drawn from the same
vocabulary. Everything is measured in one process so the ratios are fair.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Gustav", "Hana", "Ivan", "Jamal", "Keiko", "Luis",
          "Maya", "Noor", "Oscar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yara"]
PLACES = ["Lisbon", "Nairobi", "Osaka", "Denver", "Krakow", "Lima", "Oslo", "Seoul", "Austin", "Porto", "Cairo",
          "Tromso", "Hanoi", "Quebec", "Bergen", "Tbilisi"]
ORGS = ["Acme Corp", "the city library", "Riverside Clinic", "Blue Harbor Bank", "the chess club", "Northwind",
        "the climbing gym", "Greenleaf School", "the food bank", "Orbit Labs"]
ACTIVITIES = ["started a pottery class", "ran a half marathon", "adopted a rescue dog", "painted a mural",
              "moved to a new apartment", "planted tomatoes", "learned to play the cello", "baked sourdough bread",
              "volunteered at a shelter", "fixed an old bicycle", "wrote a short story", "joined a book club",
              "went camping by the lake", "presented a research poster", "organised a charity auction",
              "visited their grandparents", "switched to a vegetarian diet", "bought a used car"]
FEELINGS = ["and felt proud", "and it was exhausting", "which was a lot of fun", "and wants to do it again",
            "but it rained the whole time", "with two close friends", "after months of planning", "on a whim"]
TEMPLATES = [
    "{p} {a} in {pl} {f}.",
    "Last week {p} {a} with {q} {f}.",
    "{p} told {q} that they {a} near {pl}.",
    "At {o}, {p} {a} {f}.",
    "{p} and {q} {a} together in {pl}.",
    "{p} said {o} in {pl} offered a discount, so they {a}.",
]


def synthetic_units(n: int, seed: int = 7, start: datetime | None = None) -> Iterator[tuple[str, datetime]]:
    """``n`` varied sentences with entities, each with a timestamp spread over about two years."""
    rng = random.Random(seed)
    t0 = start or datetime(2023, 1, 1, tzinfo=UTC)
    for i in range(n):
        text = rng.choice(TEMPLATES).format(
            p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), pl=rng.choice(PLACES), o=rng.choice(ORGS),
            a=rng.choice(ACTIVITIES), f=rng.choice(FEELINGS),
        )
        yield f"{text} (note {i})", t0 + timedelta(minutes=100 * i + rng.randint(0, 99))


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    """Questions in the vocabulary of the synthetic units."""
    rng = random.Random(seed)
    forms = ["When did {p} go to {pl}?", "What did {p} do at {o}?", "Who {a}?", "Did {p} ever {a2} with {q}?",
             "What happened in {pl} last month?", "How did {p} feel after they {a}?"]
    out = []
    for _ in range(n):
        a = rng.choice(ACTIVITIES)
        out.append(rng.choice(forms).format(p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), pl=rng.choice(PLACES),
                                            o=rng.choice(ORGS), a=a, a2=a.split(" ", 1)[1]))
    return out


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "p95": ordered[int(0.95 * (len(ordered) - 1))]}


def run_scale(
    sizes: tuple[int, ...] = (10_000,),
    *,
    queries: int = 200,
    budget: int = 1000,
    batch: int = 500,
    workdir: str | Path | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build a bank per size, then time recall (per stage) and a bare Chroma query on the same bank."""
    from tqdm import tqdm

    from ..hindsight import Hindsight

    tmp = tempfile.TemporaryDirectory(prefix="hindsight-scale-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    results: dict[str, Any] = {"budget": budget, "queries": queries, "sizes": {}}
    qs = synthetic_queries(queries)
    with Hindsight.open(root) as hs:
        for size in sizes:
            bank_id = f"scale-{size}"
            if bank_id in {b.id for b in hs.banks()}:
                hs.delete_bank(bank_id)
            bank = hs.bank(bank_id)
            units = list(synthetic_units(size))
            t = time.perf_counter()
            for i in tqdm(range(0, size, batch), desc=f"retain {size}", disable=not progress):
                chunk = units[i : i + batch]
                bank.retain([{"text": text, "timestamp": when} for text, when in chunk],
                            document_id=f"batch-{i}", extract=False)
            retain_s = time.perf_counter() - t
            for q in qs[:5]:  # warm caches and lazy loads before timing
                bank.recall(q, budget=budget)
            totals: list[float] = []
            stages: dict[str, list[float]] = {}
            for q in qs:
                t = time.perf_counter()
                rec = bank.recall(q, budget=budget, trace=True)
                totals.append((time.perf_counter() - t) * 1000)
                assert rec.trace is not None
                for k, v in rec.trace.timings_ms.items():
                    stages.setdefault(k, []).append(v)
            bare: list[float] = []
            for q in qs:
                t = time.perf_counter()
                vec = hs.embedder.embed([q])[0]
                hs.index.query(bank_id, vec, 30)
                bare.append((time.perf_counter() - t) * 1000)
            entry = {
                "units": size,
                "retain_units_per_s": size / retain_s,
                "recall_ms": _stats(totals),
                "stages_ms": {k: _stats(v) for k, v in stages.items()},
                "bare_chroma_query_ms": _stats(bare),
            }
            entry["ratio_to_bare"] = entry["recall_ms"]["median"] / entry["bare_chroma_query_ms"]["median"]
            results["sizes"][str(size)] = entry
    if tmp is not None:
        tmp.cleanup()
    log(format_scale(results))
    return results


def format_scale(results: dict[str, Any]) -> str:
    """Markdown table of the scale results."""
    lines = [
        f"Recall latency, {results['queries']} queries, budget {results['budget']} tokens, no reranker",
        "",
        "| units | retain units/s | recall median ms | recall p95 ms | bare Chroma median ms | ratio "
        "| stages (median ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, e in results["sizes"].items():
        stages = ", ".join(f"{k.removesuffix('_ms')} {v['median']:.1f}" for k, v in e["stages_ms"].items()
                           if k != "total_ms")
        lines.append(
            f"| {size} | {e['retain_units_per_s']:.0f} | {e['recall_ms']['median']:.1f} | {e['recall_ms']['p95']:.1f} "
            f"| {e['bare_chroma_query_ms']['median']:.1f} | {e['ratio_to_bare']:.1f}x | {stages} |"
        )
    return "\n".join(lines)
