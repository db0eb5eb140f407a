"""Long inputs benchmark: how retain copes with a book-sized text and a huge message list, and what passage
size serves recall.

- **Timing** (``run_timing``): a synthetic text of each size (10 kB, 100 kB, 1 MB by default) retained raw
  (``extract=False``) into a fresh store; seconds, passages, links (in all and the most at one unit), the same
  process's embedder alone on the same passage texts (retain is embedding-bound, so the ratio tells a slow machine
  from a slow pipeline), and recall latency with a check that every memory recalled is a passage (bounded text,
  ``chars:START-END`` sources). Then the largest message list one call accepts, retained in one call.
- **Passage size** (``run_quality``): one long text with 40 labelled facts hidden in it
  (``data/long_input_needles.jsonl``, written for this project; dev/test halves), retained once per passage size;
  a question is answered when recall returns the passage whose offsets hold its fact, within 500 and 1,000 tokens
  and among the first 5 memories. Sizes are chosen on the dev half; the test half is the headline.

The filler is ``scale``'s seeded synthetic sentences in paragraphs of 3 to 8, so runs are repeatable.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends import OpenHindsight, open_embedded
from .report import md_table, run_info, write_json, write_text
from .scale import synthetic_queries, synthetic_units

NEEDLES = Path(__file__).parent / "data" / "long_input_needles.jsonl"
"""The labelled facts and questions of the passage-size run."""
TIMING_SIZES = (10_000, 100_000, 1_000_000)
PASSAGE_SIZES = (600, 1200, 2400)
BUDGETS = (500, 1000)


@dataclass(frozen=True)
class Needle:
    """A fact hidden in the long text and the question that asks for it."""

    id: str
    split: str
    fact: str
    question: str


def load_needles(path: Path = NEEDLES, split: str = "all") -> list[Needle]:
    """The labelled facts of ``path`` (JSON lines; ``#`` lines are comments), optionally one split."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            row = json.loads(line)
            out.append(Needle(row["id"], row["split"], row["fact"], row["question"]))
    return [n for n in out if split == "all" or n.split == split]


def _paragraphs(seed: int) -> Iterator[list[str]]:
    """Endless paragraphs of 3 to 8 synthetic sentences (seeded)."""
    rng = random.Random(seed)
    sentences = (text for text, _ in synthetic_units(10**9, seed=seed))
    while True:
        yield [next(sentences) for _ in range(rng.randint(3, 8))]


def long_text(chars: int, needles: Sequence[str] = (), seed: int = 5) -> tuple[str, list[tuple[int, int]]]:
    """A text of about ``chars`` characters (whole paragraphs, at most ``chars`` unless one paragraph is longer)
    with each of ``needles`` placed as a sentence in a paragraph spread evenly through it; returns the text and
    each needle's ``(start, end)``."""
    rng = random.Random(seed + 1)
    paragraphs: list[list[str]] = []
    total = 0
    for para in _paragraphs(seed):
        size = sum(len(s) + 1 for s in para) + 1
        if paragraphs and total + size > chars:
            break
        paragraphs.append(para)
        total += size
    for k, needle in enumerate(needles):
        where = min(len(paragraphs) - 1, int((k + rng.random()) * len(paragraphs) / len(needles)))
        paragraphs[where].insert(rng.randint(0, len(paragraphs[where])), needle)
    parts: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    offset = 0
    for para in paragraphs:
        for j, sentence in enumerate(para):
            if j:
                parts.append(" ")
                offset += 1
            spans.setdefault(sentence, (offset, offset + len(sentence)))
            parts.append(sentence)
            offset += len(sentence)
        parts.append("\n\n")
        offset += 2
    return "".join(parts).rstrip("\n"), [spans[n] for n in needles]


def _chars_span(sources: Sequence[str]) -> tuple[int, int] | None:
    for source in sources:
        if source.startswith("chars:"):
            start, _, end = source.removeprefix("chars:").partition("-")
            return int(start), int(end)
    return None


def _max_links_at_one_unit(hs: Any, bank_id: str) -> int:
    """The most stored links (any type, entity hops aside) leaving one unit of the bank."""
    from hindsight_core.models import LinkType

    ids = sorted(hs.store.unit_ids(bank_id))
    counts: dict[str, int] = {}
    for i in range(0, len(ids), 500):
        for edge in hs.store.neighbors(bank_id, ids[i : i + 500], link_types=list(LinkType), entity_fanout=0):
            if edge.type != "entity":
                counts[edge.source_id] = counts.get(edge.source_id, 0) + 1
    return max(counts.values(), default=0)


def _settings(passage_chars: int | None) -> Any:
    from hindsight_core.config import Settings

    return Settings() if passage_chars is None else Settings(passage_chars=passage_chars)


def _fresh(root: Path, name: str) -> Path:
    folder = root / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def run_timing(
    sizes: Sequence[int] = TIMING_SIZES,
    *,
    passage_chars: int | None = None,
    messages: int | None = None,
    queries: int = 20,
    open_hindsight: OpenHindsight = open_embedded,
    workdir: str | Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Retain a text of each size raw in a fresh store and time it (see the module note); then ``messages`` short
    messages in one call (default: the most one call accepts)."""
    from hindsight_core.vectors.unit_text import embedding_texts

    tmp = tempfile.TemporaryDirectory(prefix="hindsight-long-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    settings = _settings(passage_chars)
    qs = synthetic_queries(queries)
    out: dict[str, Any] = {"benchmark": "long-inputs", "part": "timing", "run": run_info(),
                           "passage_chars": settings.passage_chars, "texts": {}}
    try:
        for size in sizes:
            text, _ = long_text(size)
            with open_hindsight(_fresh(root, f"text-{size}"), settings=settings) as hs:
                bank = hs.bank("long")
                bank.retain("Warm-up: Alice met Bruno in Lisbon.", extract=False, background=False)
                t, cpu = time.perf_counter(), time.process_time()
                result = bank.retain(text, extract=False, background=False, document_id="text")
                seconds, cpu_s = time.perf_counter() - t, time.process_time() - cpu
                units = list(result.memories)
                t, cpu = time.perf_counter(), time.process_time()
                hs.embedder.embed(embedding_texts(units, settings.embed_time_reference, settings.embed_reply_context))
                embed_s, embed_cpu_s = time.perf_counter() - t, time.process_time() - cpu
                lengths = [len(m.text) for m in units]
                latencies: list[float] = []
                passages_only = True
                for q in qs:
                    t = time.perf_counter()
                    rec = bank.recall(q, budget=1000)
                    latencies.append((time.perf_counter() - t) * 1000)
                    for m in rec.memories:
                        if m.document_id == "text":
                            bounded = len(m.text) <= settings.passage_chars
                            passages_only &= bounded and _chars_span(m.sources) is not None
                out["embedder"] = type(hs.embedder).__name__
                entry = {"chars": len(text), "seconds": seconds, "cpu_seconds": cpu_s,
                         "kb_per_s": len(text) / 1000 / seconds, "embed_only_cpu_seconds": embed_cpu_s,
                         "units": len(units), "max_unit_chars": max(lengths),
                         "median_unit_chars": statistics.median(lengths),
                         "links": result.links, "max_links_at_one_unit": _max_links_at_one_unit(hs, bank.id),
                         "embed_only_seconds": embed_s, "retain_vs_embed_only": seconds / embed_s,
                         "timings_ms": result.timings_ms, "recall_median_ms": statistics.median(latencies),
                         "recall_returns_passages": passages_only}
            out["texts"][str(size)] = entry
            log(f"{len(text):,} chars: {seconds:.1f} s, {cpu_s:.1f} CPU s ({entry['units']} passages, "
                f"{result.links} links, embedder alone {embed_s:.1f} s, {embed_cpu_s:.1f} CPU s)")
        count = messages or settings.max_messages_per_retain
        rows = list(synthetic_units(count))
        with open_hindsight(_fresh(root, "messages"), settings=settings) as hs:
            bank = hs.bank("long")
            bank.retain("Warm-up: Alice met Bruno in Lisbon.", extract=False, background=False)
            t = time.perf_counter()
            batch = [{"text": text, "timestamp": when, "id": f"m{i}"} for i, (text, when) in enumerate(rows)]
            result = bank.retain(batch, extract=False, background=False, document_id="messages")
            seconds = time.perf_counter() - t
            out["messages"] = {"messages": count, "seconds": seconds, "links": result.links,
                               "links_per_message": result.links / count,
                               "max_links_at_one_unit": _max_links_at_one_unit(hs, bank.id)}
        log(f"{count:,} messages in one call: {seconds:.1f} s, {result.links} links")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return out


def run_quality(
    passage_sizes: Sequence[int] = PASSAGE_SIZES,
    *,
    chars: int = 150_000,
    split: str = "all",
    open_hindsight: OpenHindsight = open_embedded,
    workdir: str | Path | None = None,
    data: Path = NEEDLES,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Retain one long text with every labelled fact in it once per passage size, and score each split's
    questions: the passage holding the fact among recall's memories within each budget, and in the first 5."""
    needles = load_needles(data)
    text, spans = long_text(chars, [n.fact for n in needles])
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-long-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    splits = ["dev", "test"] if split == "all" else [split]
    out: dict[str, Any] = {"benchmark": "long-inputs", "part": "passage-size", "run": run_info(), "chars": len(text),
                           "questions": {s: sum(n.split == s for n in needles) for s in splits}, "sizes": {}}
    try:
        for size in passage_sizes:
            with open_hindsight(_fresh(root, f"passages-{size}"), settings=_settings(size)) as hs:
                bank = hs.bank("long")
                bank.retain("Warm-up: Alice met Bruno in Lisbon.", extract=False, background=False)
                t = time.perf_counter()
                result = bank.retain(text, extract=False, background=False, document_id="text")
                seconds = time.perf_counter() - t
                hits: dict[str, dict[str, list[bool]]] = {s: {} for s in splits}
                for needle, (start, end) in zip(needles, spans, strict=True):
                    if needle.split not in splits:
                        continue

                    def holds(memories: Sequence[Any], a: int = start, b: int = end) -> bool:
                        return any((span := _chars_span(m.sources)) is not None and span[0] <= a and b <= span[1]
                                   for m in memories if m.document_id == "text")

                    row = hits[needle.split]
                    for budget in BUDGETS:
                        row.setdefault(f"{budget}tok", []).append(holds(bank.recall(needle.question,
                                                                                    budget=budget).memories))
                    top = bank.recall(needle.question, budget=100_000, max_memories=5).memories
                    row.setdefault("top1", []).append(holds(top[:1]))
                    row.setdefault("top5", []).append(holds(top))
            entry: dict[str, Any] = {"units": len(result.memories), "seconds": seconds}
            for s in splits:
                entry[s] = {k: sum(v) / len(v) for k, v in hits[s].items()}
            out["sizes"][str(size)] = entry
            log(f"passages of {size} chars: {len(result.memories)} units, {seconds:.1f} s, "
                + "; ".join(f"{s} " + ", ".join(f"{k} {v:.2f}" for k, v in entry[s].items()) for s in splits))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return out


def format_long_inputs(result: Mapping[str, Any]) -> str:
    """Markdown tables of a timing or passage-size run."""
    lines: list[str] = []
    if result.get("part") == "timing":
        lines += [f"Retain raw (extract=False), passages of at most {result['passage_chars']} characters, embedder "
                  f"{result.get('embedder', '?')}:", ""]
        rows = [[f"{e['chars']:,}", f"{e['seconds']:.1f}", f"{e['cpu_seconds']:.1f}", f"{e['kb_per_s']:.1f}",
                 e["units"], e["max_unit_chars"], e["links"], e["max_links_at_one_unit"],
                 f"{e['embed_only_seconds']:.1f} / {e['embed_only_cpu_seconds']:.1f}",
                 f"{e['retain_vs_embed_only']:.2f}", f"{e['recall_median_ms']:.0f}",
                 "yes" if e["recall_returns_passages"] else "NO"]
                for e in result["texts"].values()]
        lines += md_table(["chars", "retain s", "CPU s", "kB/s", "passages", "longest", "links",
                           "most links at a unit", "embedder alone s / CPU s", "retain / embedder",
                           "recall median ms", "recall returns passages"],
                          rows)
        m = result.get("messages")
        if m:
            lines += ["", f"{m['messages']:,} messages in one call: {m['seconds']:.1f} s, {m['links']:,} links "
                          f"({m['links_per_message']:.1f} per message, at most {m['max_links_at_one_unit']} at one "
                          "unit)"]
        return "\n".join(lines)
    lines += [f"Passage size: one text of {result['chars']:,} characters with the labelled facts; questions answered "
              "(the passage holding the fact recalled):", ""]
    rows = []
    for size, e in result["sizes"].items():
        for s in result["questions"]:
            rows.append([size, e["units"], f"{e['seconds']:.1f}", f"{s} ({result['questions'][s]})",
                         *(f"{e[s][k]:.2f}" for k in (*(f"{b}tok" for b in BUDGETS), "top1", "top5"))])
    lines += md_table(["passage chars", "passages", "retain s", "split (questions)",
                       *(f"within {b} tok" for b in BUDGETS), "first", "first 5"], rows)
    return "\n".join(lines)


def write_long_inputs(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``long-inputs-<part>.json`` and ``.md``."""
    out = Path(out_dir)
    name = f"long-inputs-{result['part']}"
    return [write_json(out / f"{name}.json", result),
            write_text(out / f"{name}.md", "# Long inputs\n\n" + format_long_inputs(result) + "\n")]
