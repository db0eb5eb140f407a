"""Reembed benchmark: a LoCoMo bank switched to another embedder (``Bank.reembed``) scores what a bank retained with
that embedder scores.

For each conversation (default conv-26, from the dev half): retain it raw with the source embedder (default
``minilm``) in one store and switch the bank to the target (default ``mpnet``) with ``Bank.reembed``, timing it;
retain the same conversation with the target in a second store. Both banks are scored semantic-only (the vector
index's top 10 for each question, embedded as recall embeds queries, ``embed_queries``): R@10 is the share of a
question's evidence turns among the sources of those ten units, averaged over the questions that name evidence.
Also reported: the largest difference between the two banks' vectors of a turn (matched by message id) and how
many questions ranked their top 10 differently.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.cli.formats import evidence_ids, locomo_sessions
from hindsight_core.embedders import embed_queries, make_embedder

from .locomo import split_of
from .metrics import coverage, mean_percent
from .report import md_table, run_info, write_json, write_text

TOP_K = 10
DEFAULT_CONVERSATIONS = ("conv-26",)


def _retain(hs: Hindsight, sample: dict[str, Any]) -> float:
    """Retain the conversation raw into bank ``sample_id``; returns the seconds it took."""
    start = time.perf_counter()
    bank = hs.bank(sample["sample_id"])
    for s in locomo_sessions(sample):
        bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id, extract=False)
    return time.perf_counter() - start


def _ranked_sources(hs: Hindsight, bank_id: str, questions: Sequence[str]) -> list[list[str]]:
    """For each question, the message ids of the semantic top 10, best first."""
    vectors = np.asarray(embed_queries(hs.embedder, list(questions)), dtype=np.float32)
    hits = hs.index.query_many(bank_id, vectors, TOP_K)
    units = {u.id: u for u in hs.bank(bank_id).memories(sorted({i for h in hits for i, _ in h}))}
    return [[s for i, _ in h for s in units[i].sources] for h in hits]


def _vectors(hs: Hindsight, bank_id: str) -> dict[str, np.ndarray]:
    units = hs.bank(bank_id).memories(sorted(hs.store.unit_ids(bank_id)))
    got = hs.index.get_embeddings(bank_id, [u.id for u in units])
    return {u.sources[0]: got[u.id] for u in units}


def _one(sample: dict[str, Any], work: Path, source: str, target: str, log: Callable[..., None]) -> dict[str, Any]:
    sample_id = sample["sample_id"]
    qas = [(q["question"], evidence_ids(q.get("evidence", []))) for q in sample["qa"]]
    qas = [(q, e) for q, e in qas if e]
    questions = [q for q, _ in qas]
    with Hindsight.open(work / f"{sample_id}-switched", embedder=source, start_worker=False) as hs:
        retain_s = _retain(hs, sample)
        log(f"{sample_id}: retained with {source} in {retain_s:.1f} s; re-embedding with {target}")
        report = hs.bank(sample_id).reembed(target)
    with Hindsight.open(work / f"{sample_id}-switched", embedder=target, start_worker=False) as hs:
        switched = _ranked_sources(hs, sample_id, questions)
        switched_vectors = _vectors(hs, sample_id)
    with Hindsight.open(work / f"{sample_id}-fresh", embedder=target, start_worker=False) as hs:
        fresh_retain_s = _retain(hs, sample)
        log(f"{sample_id}: retained with {target} in {fresh_retain_s:.1f} s")
        fresh = _ranked_sources(hs, sample_id, questions)
        fresh_vectors = _vectors(hs, sample_id)
    diff = max(float(np.abs(switched_vectors[k] - fresh_vectors[k]).max()) for k in fresh_vectors)
    return {
        "conversation": sample_id, "split": split_of(sample_id), "questions": len(questions),
        "units": report.units, "reembed_s": report.seconds, "retain_source_s": round(retain_s, 3),
        "retain_target_s": round(fresh_retain_s, 3),
        "r10_reembedded": mean_percent([coverage(e, [s]) for (_, e), s in zip(qas, switched, strict=True)]),
        "r10_fresh": mean_percent([coverage(e, [s]) for (_, e), s in zip(qas, fresh, strict=True)]),
        "top10_differs": sum(a != b for a, b in zip(switched, fresh, strict=True)),
        "max_vector_diff": diff, "same_turns": set(switched_vectors) == set(fresh_vectors),
    }


def run_reembed(
    data_path: str | Path, *, conversations: Sequence[str] = DEFAULT_CONVERSATIONS, source: str = "minilm",
    target: str = "mpnet", workdir: str | Path | None = None, log: Callable[..., None] = lambda *a: None,
) -> dict[str, Any]:
    """Retain, switch and compare each conversation (see the module); returns the result document."""
    make_embedder(source), make_embedder(target)  # a missing model fails before anything is retained
    data = {s["sample_id"]: s for s in json.loads(Path(data_path).read_text(encoding="utf-8"))}
    unknown = [c for c in conversations if c not in data]
    if unknown:
        raise ValueError(f"unknown conversation(s) {unknown}; known: {', '.join(data)}")
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rows = [_one(data[c], Path(tmp), source, target, log) for c in conversations]
    return {"benchmark": "reembed", "source": source, "target": target, "top_k": TOP_K, "run": run_info(),
            "conversations": rows}


def format_reembed(result: dict[str, Any]) -> str:
    """The result as markdown."""
    lines = [f"# Reembed: {result['source']} -> {result['target']} (semantic-only R@{result['top_k']})", ""]
    lines += md_table(
        ["conversation", "split", "questions", "units", "R@10 re-embedded", "R@10 fresh retain", "top 10 differs",
         "max vector diff", "reembed s", f"retain {result['source']} s", f"retain {result['target']} s"],
        [[r["conversation"], r["split"], r["questions"], r["units"], r["r10_reembedded"], r["r10_fresh"],
          r["top10_differs"], f"{r['max_vector_diff']:.2e}", r["reembed_s"], r["retain_source_s"],
          r["retain_target_s"]] for r in result["conversations"]],
    )
    return "\n".join(lines)


def write_reembed(out_dir: str | Path, result: dict[str, Any]) -> list[Path]:
    """``reembed.json`` and ``reembed.md`` in ``out_dir``."""
    out = Path(out_dir)
    return [write_json(out / "reembed.json", result), write_text(out / "reembed.md", format_reembed(result))]
