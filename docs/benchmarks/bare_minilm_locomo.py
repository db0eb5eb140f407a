"""Sanity check for the LoCoMo figures: a bare MiniLM retriever, no Hindsight involved.

Embeds ``"speaker: text"`` of every LoCoMo turn with the same all-MiniLM-L6-v2 model the engine uses, ranks
turns by cosine similarity to each question and scores them with the same evidence-coverage metric as
``hindsight bench locomo``. Usage: ``python docs/benchmarks/bare_minilm_locomo.py path/to/locomo10.json``.
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np

from hindsight_bench.metrics import coverage
from hindsight_core.cli.formats import evidence_ids, locomo_sessions
from hindsight_core.embedders import SentenceTransformerEmbedder


def main(path: str) -> dict[str, float]:
    """Evidence recall at k of bare cosine retrieval over raw turns, in percent."""
    embedder = SentenceTransformerEmbedder()
    scores: dict[int, list[float]] = {k: [] for k in (5, 10, 25, 50)}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for sample in data:
        turns = [m for s in locomo_sessions(sample) for m in s.messages if m["text"].strip()]
        vectors = embedder.embed([f"{m['speaker']}: {m['text']}" for m in turns])
        questions = [qa for qa in sample["qa"] if evidence_ids(qa.get("evidence", []))]
        similarities = embedder.embed([str(q["question"]) for q in questions]) @ vectors.T
        for qa, row in zip(questions, similarities, strict=True):
            order = np.argsort(-row)
            evidence = evidence_ids(qa["evidence"])
            for k, values in scores.items():
                values.append(coverage(evidence, [[turns[i]["id"]] for i in order[:k]]))
    return {f"R@{k}": round(100 * statistics.fmean(v), 1) for k, v in scores.items()}


if __name__ == "__main__":
    print(main(sys.argv[1]))
