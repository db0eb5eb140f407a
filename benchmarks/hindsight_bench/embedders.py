"""Embedders benchmark: what each embedder costs (query latency, ingest throughput) and finds (semantic-only
LoCoMo evidence recall), measured on the embedders alone, without the engine.

Every LoCoMo turn is embedded two ways, as ``"[session date] Speaker: text"`` and as the text alone, one call
per session (as a raw retain embeds a session's messages); each question is ranked against its conversation's
turns by cosine, and R@10 is the share of its evidence turns among the first ten (LoCoMo's evidence recall),
reported for the dev half, the test half and all ten conversations.

Variants (``hindsight_core.embedders.make_embedder`` names; documents / queries):

- ``minilm-fp32``: float32 MiniLM both ways, whatever the CPU (the engine's embedder before the int8 query path,
  and the reference the others are compared with);
- ``minilm``: the default, documents on PyTorch (bfloat16 batches on CPUs with native bf16, else float32: the
  default embedder's own document path) and int8 ONNX queries;
- ``minilm-int8``: int8 both ways;
- ``mpnet``: all-mpnet-base-v2 both ways;
- any other ``make_embedder`` choice, both ways (``--embedder``): ``st:FOLDER`` (a sentence-transformers model on
  this machine), ``openai:URL#MODEL`` (an OpenAI-compatible endpoint), ``module:attr`` (an object or factory in
  your code: an ``Embedder``, a LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding``). See docs/MODELS.md.

Query latency is one question per call through ``embed_queries`` (what recall does), the embedders taking turns
question by question so that each sees the same machine load. The MiniLM variants also report how close they
are to float32: the cosine between the two vectors of a text, and the overlap of their top 10.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core.cli.formats import evidence_ids, locomo_sessions

from .locomo import CATEGORIES, SPLITS, split_of
from .metrics import coverage, latency_stats, mean_percent
from .report import md_table, run_info, write_json, write_text

VARIANTS: dict[str, tuple[str, str]] = {
    "minilm-fp32": ("minilm-fp32", "minilm-fp32"),
    "minilm": ("minilm", "minilm-int8"),  # documents: the default's own path (``SplitEmbedder.embed``)
    "minilm-int8": ("minilm-int8", "minilm-int8"),
    "mpnet": ("mpnet", "mpnet"),
}
"""Benchmarked variant -> (document embedder, query embedder), each a ``make_embedder`` name."""


def variant_models(variant: str) -> tuple[str, str]:
    """(document embedder, query embedder) of a variant: a named one, else the ``make_embedder`` spec both ways."""
    return VARIANTS.get(variant, (variant, variant))

FORMATS = ("dated", "text")
"""How a turn is embedded: ``"[session date] Speaker: text"``, or the text alone."""

REFERENCE = "minilm-fp32"
"""What the MiniLM variants' agreement is measured against."""

TOP_K = 10


@dataclass
class Conversation:
    """One LoCoMo conversation: its turns (ids and texts per format) and its questions with evidence."""

    sample_id: str
    split: str
    turn_ids: list[str] = field(default_factory=list)
    texts: dict[str, list[list[str]]] = field(default_factory=dict)  # format -> sessions -> turn texts
    questions: list[str] = field(default_factory=list)
    evidence: list[set[str]] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)


def load_conversations(data_path: str | Path, limit_conversations: int | None = None) -> list[Conversation]:
    """LoCoMo conversations with their turns in both formats and the questions that name evidence."""
    data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    if limit_conversations:
        data = data[:limit_conversations]
    out = []
    for sample in data:
        conv = Conversation(sample_id=sample["sample_id"], split=split_of(sample["sample_id"]),
                            texts={f: [] for f in FORMATS})
        raw = sample["conversation"]
        for session in locomo_sessions(sample):
            date = raw.get(f"{session.document_id.split(':')[-1]}_date_time", "")
            conv.texts["dated"].append([f"[{date}] {m['speaker']}: {m['text']}" for m in session.messages])
            conv.texts["text"].append([str(m["text"]) for m in session.messages])
            conv.turn_ids.extend(str(m["id"]) for m in session.messages)
        for qa in sample["qa"]:
            evidence = evidence_ids(qa.get("evidence", []))
            if evidence:
                conv.questions.append(str(qa["question"]))
                conv.evidence.append(evidence)
                conv.categories.append(CATEGORIES.get(int(qa.get("category", 0)), "other"))
        out.append(conv)
    return out


def _percentiles(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(values.mean()), "p1": float(np.percentile(values, 1)), "min": float(values.min())}


def run_embedders(
    data_path: str | Path,
    *,
    variants: Sequence[str] = tuple(VARIANTS),
    limit_conversations: int | None = None,
    latency_queries: int = 300,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the benchmark and return a JSON-able result (also logged as a markdown table)."""
    from tqdm import tqdm

    from hindsight_core.embedders import embed_queries, make_embedder

    convs = load_conversations(data_path, limit_conversations)
    doc_models = list(dict.fromkeys(variant_models(v)[0] for v in variants))
    query_models = list(dict.fromkeys(variant_models(v)[1] for v in variants))
    started = time.perf_counter()

    models: dict[str, Any] = {}
    load_s: dict[str, float] = {}
    for name in dict.fromkeys([*doc_models, *query_models]):
        t = time.perf_counter()
        model = make_embedder(name)
        embed_queries(model, ["warm up"])  # loads the query path's model (and the document path's, if the same)
        model.embed(["warm up", "the batch path too"])
        load_s[name] = time.perf_counter() - t
        models[name] = model

    # Query latency: the models take turns per question, so that each sees the same load.
    questions = [q for c in convs for q in c.questions]
    step = max(1, len(questions) // max(1, latency_queries))
    timed = questions[::step][:latency_queries]
    latencies: dict[str, list[float]] = {name: [] for name in query_models}
    for q in tqdm(timed, desc="query latency", unit="q", disable=not progress):
        for name in query_models:
            t = time.perf_counter()
            embed_queries(models[name], [q])
            latencies[name].append((time.perf_counter() - t) * 1000)

    # Documents: one call per session, as a raw retain embeds a session's messages.
    doc_vectors: dict[str, dict[str, list[np.ndarray]]] = {}
    ingest: dict[str, dict[str, float]] = {}
    sessions = sum(len(c.texts["dated"]) for c in convs)
    for name in doc_models:
        doc_vectors[name] = {f: [] for f in FORMATS}
        ingest[name] = {}
        for fmt in FORMATS:
            units = 0
            seconds = 0.0
            bar = tqdm(total=sessions, desc=f"{name} documents ({fmt})", unit="session", disable=not progress)
            for conv in convs:
                parts = []
                for texts in conv.texts[fmt]:
                    t = time.perf_counter()
                    parts.append(np.asarray(models[name].embed(texts), dtype=np.float32))
                    seconds += time.perf_counter() - t
                    units += len(texts)
                    bar.update(1)
                doc_vectors[name][fmt].append(np.vstack(parts))
            bar.close()
            ingest[name][fmt] = units / seconds if seconds else 0.0

    query_vectors: dict[str, list[np.ndarray]] = {}
    for name in query_models:
        query_vectors[name] = [
            np.vstack([embed_queries(models[name], c.questions[i : i + 64]) for i in range(0, len(c.questions), 64)])
            if c.questions else np.zeros((0, models[name].dimension), dtype=np.float32)
            for c in convs
        ]

    rankings: dict[str, dict[str, list[np.ndarray]]] = {}
    result_variants: dict[str, Any] = {}
    for variant in variants:
        doc_name, query_name = variant_models(variant)
        rankings[variant] = {}
        recall: dict[str, dict[str, float]] = {}
        for fmt in FORMATS:
            scores: dict[str, list[float]] = {}
            ranks = []
            for conv, docs, queries in zip(convs, doc_vectors[doc_name][fmt], query_vectors[query_name], strict=True):
                top = np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :TOP_K]
                ranks.append(top)
                for row, evidence, category in zip(top, conv.evidence, conv.categories, strict=True):
                    value = coverage(evidence, ([conv.turn_ids[j]] for j in row))
                    for key in (conv.split, "all", f"category:{category}"):
                        scores.setdefault(key, []).append(value)
            rankings[variant][fmt] = ranks
            recall[fmt] = {key: mean_percent(values) for key, values in scores.items()}
            recall[fmt]["questions"] = float(len(scores.get("all", [])))
        model = models[query_name]
        result_variants[variant] = {
            "documents": doc_name, "queries": query_name, "recorded_name": model.name, "dimension": model.dimension,
            "query_ms": latency_stats(latencies[query_name]),
            "ingest_units_per_s": ingest[doc_name],
            "load_s": {"documents": load_s[doc_name], "queries": load_s[query_name]},
            f"R@{TOP_K}": recall,
        }

    agreement: dict[str, Any] = {}
    if REFERENCE in rankings:
        for variant in variants:
            doc_name, query_name = variant_models(variant)
            if variant == REFERENCE or models[query_name].dimension != models[REFERENCE].dimension:
                continue
            entry: dict[str, Any] = {}
            for fmt in FORMATS:
                overlaps = [len(set(a) & set(b)) / TOP_K
                            for ra, rb in zip(rankings[variant][fmt], rankings[REFERENCE][fmt], strict=True)
                            for a, b in zip(ra, rb, strict=True)]
                entry[f"top{TOP_K}_overlap_{fmt}"] = float(np.mean(overlaps)) if overlaps else None
            if doc_name != REFERENCE:
                cos = np.concatenate([(a * b).sum(axis=1) for a, b in
                                      zip(doc_vectors[doc_name]["dated"], doc_vectors[REFERENCE]["dated"],
                                          strict=True)])
                entry["document_cosine"] = _percentiles(cos)
            if query_name != REFERENCE:
                cos = np.concatenate([(a * b).sum(axis=1) for a, b in
                                      zip(query_vectors[query_name], query_vectors[REFERENCE], strict=True)])
                entry["query_cosine"] = _percentiles(cos)
            agreement[variant] = entry

    result: dict[str, Any] = {
        "benchmark": "embedders",
        "dataset": str(data_path),
        "conversations": len(convs),
        "splits": {name: list(ids) for name, ids in SPLITS.items()},
        "turns": sum(len(c.turn_ids) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "latency_queries": len(timed),
        "seconds": time.perf_counter() - started,
        "run": run_info(),
        "variants": result_variants,
        "agreement_with_minilm_fp32": agreement,
    }
    log(format_embedders(result))
    return result


def _cells(recall: Mapping[str, float], keys: Iterable[str]) -> list[Any]:
    return [recall.get(k) for k in keys]


def format_embedders(result: Mapping[str, Any]) -> str:
    """Markdown: cost and semantic-only R@10 per variant, then the MiniLM variants' agreement with float32."""
    lines = [f"Embedders: {result['conversations']} LoCoMo conversations, {result['turns']} turns, "
             f"{result['questions']} questions with evidence; semantic-only R@{TOP_K} (cosine over the turns); "
             f"query latency over {result['latency_queries']} questions, one per call.", ""]
    rows = []
    for name, v in result["variants"].items():
        r = v[f"R@{TOP_K}"]
        rows.append([name, f"{v['documents']} / {v['queries']}", v["dimension"], v["query_ms"].get("median"),
                     v["query_ms"].get("p95"), v["ingest_units_per_s"]["dated"],
                     *_cells(r["dated"], ("dev", "test", "all")), *_cells(r["text"], ("dev", "test", "all"))])
    lines += md_table(["embedder", "documents / queries", "dim", "query p50 ms", "query p95 ms", "ingest units/s",
                       "dated dev", "dated test", "dated all", "text dev", "text test", "text all"], rows)
    agreement = result.get("agreement_with_minilm_fp32") or {}
    if agreement:
        lines += ["", f"Agreement with {REFERENCE} (cosine between the vectors of one text; share of the same "
                      f"top {TOP_K}):", ""]
        arows = []
        for name, a in agreement.items():
            doc, query = a.get("document_cosine"), a.get("query_cosine")
            arows.append([name,
                          f"{doc['mean']:.4f} / {doc['p1']:.4f} / {doc['min']:.4f}" if doc else "-",
                          f"{query['mean']:.4f} / {query['p1']:.4f} / {query['min']:.4f}" if query else "-",
                          *(f"{100 * a[f'top{TOP_K}_overlap_{fmt}']:.1f}%" for fmt in FORMATS)])
        lines += md_table(["embedder", "document cosine mean / p1 / min", "query cosine mean / p1 / min",
                           f"top-{TOP_K} overlap (dated)", f"top-{TOP_K} overlap (text)"], arows)
    categories = sorted({k for v in result["variants"].values() for k in v[f"R@{TOP_K}"]["dated"]
                         if k.startswith("category:")})
    if categories:
        lines += ["", f"R@{TOP_K} per category, all conversations, dated turns:", ""]
        lines += md_table(["embedder", *(c.removeprefix("category:") for c in categories)],
                          [[name, *_cells(v[f"R@{TOP_K}"]["dated"], categories)]
                           for name, v in result["variants"].items()])
    return "\n".join(lines)


def write_embedders(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``embedders.json`` and ``embedders.md`` under ``out_dir``."""
    out = Path(out_dir)
    return [write_json(out / "embedders.json", result),
            write_text(out / "embedders.md", "# Embedders\n\n" + format_embedders(result) + "\n")]
