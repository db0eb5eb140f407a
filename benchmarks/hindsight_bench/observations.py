"""Observation benchmark: are the sentences of entity observations supported by the entity's facts?

Two parts (``hindsight bench observations``):

1. **The support check on a labelled set** (``data/observation_support.jsonl``, written for the project): entity
   facts and candidate summary sentences labelled supported or not (new claims, wrong details, contradictions,
   wrong attribution, judgments). Each sentence is checked alone against its scenario's facts. The check's two
   thresholds are swept on the dev half and the pair with the best F0.5 (precision weighs more: a kept false
   sentence is the failure, a dropped true one only shortens the summary) is chosen, ties going to the middle
   of the tied values (lower median of each threshold); precision and recall are reported on both halves (test
   is the headline).
2. **The bundled model on LoCoMo dev conversations**: the first sessions of conv-26 and conv-30 retained raw,
   then for the entities mentioned most the observation job's draft (the model's summary) and what it keeps.
   Supported share *before* = share of the model's sentences the check supports; *after* = share of the kept
   sentences that are supported (1.0 by construction of the check: the test-half precision of part 1 is the
   estimate of how many kept sentences a reader would call supported). Also: repeated sentences dropped,
   observations not written (nothing supported), and whether each observation's time lies within the
   conversation and leaves the entity's last-seen where its facts put it.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median_low
from typing import Any

import numpy as np

from hindsight_core.reflect.observation_support import MIN_OVERLAP, MIN_SIMILARITY, check_support

DATA = Path(__file__).resolve().parent / "data" / "observation_support.jsonl"
DEV_CONVERSATIONS = ("conv-26", "conv-30")
OVERLAP_GRID = (0.5, 0.6, 2 / 3, 0.75, 0.8, 0.9, 1.0)  # 2/3: two of three content words
SIMILARITY_GRID: tuple[float | None, ...] = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, None)  # None: overlap only

Embed = Callable[[Sequence[str]], np.ndarray]


def cached(embed: Embed) -> Embed:
    """``embed`` remembering each text's vector: the threshold sweep checks the same sentences many times."""
    memo: dict[str, np.ndarray] = {}

    def embed_cached(texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        if missing:
            memo.update(zip(missing, np.asarray(embed(missing), dtype=np.float32), strict=True))
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    return embed_cached


def load_labelled(path: Path = DATA) -> list[dict[str, Any]]:
    """The labelled scenarios (the first line, ``{"_meta": ...}``, describes the set and is skipped)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if "_meta" not in r]


def score_labelled(
    scenarios: Sequence[dict[str, Any]], split: str, embed: Embed | None, min_overlap: float,
    min_similarity: float | None,
) -> dict[str, Any]:
    """Precision, recall and accuracy of the check (supported = kept) on one split, with its mistakes."""
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    mistakes: list[dict[str, Any]] = []
    for scenario in scenarios:
        if split != "all" and scenario["split"] != split:
            continue
        facts = [(str(i), text) for i, text in enumerate(scenario["facts"])]
        for item in scenario["sentences"]:
            verdict = check_support(item["text"], facts, scenario["entity"],
                                    embed=embed if min_similarity is not None else None, min_overlap=min_overlap,
                                    min_similarity=min_similarity if min_similarity is not None else 2.0
                                    ).sentences[0]
            key = ("t" if verdict.supported == item["supported"] else "f") + ("p" if verdict.supported else "n")
            counts[key] += 1
            if key in ("fp", "fn"):
                mistakes.append({"scenario": scenario["id"], "sentence": item["text"], "kind": item["kind"],
                                 "error": key, "reason": verdict.reason, "overlap": verdict.overlap,
                                 "similarity": verdict.similarity})
    n = sum(counts.values())
    kept, positives = counts["tp"] + counts["fp"], counts["tp"] + counts["fn"]
    precision = counts["tp"] / kept if kept else 1.0
    recall = counts["tp"] / positives if positives else 1.0
    return {"sentences": n, **counts, "accuracy": (counts["tp"] + counts["tn"]) / n if n else 0.0,
            "precision": precision, "recall": recall, "f05": _f05(precision, recall), "mistakes": mistakes}


def _f05(precision: float, recall: float) -> float:
    return 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0


def choose_thresholds(scenarios: Sequence[dict[str, Any]], embed: Embed) -> dict[str, Any]:
    """Sweep both thresholds on the dev half and keep the best F0.5. When several pairs tie (dev cannot tell
    them apart), take the middle of the tied values of each threshold (the lower median), the point farthest
    from where dev errors begin, so that neither a loose edge nor a strict edge of the plateau is picked by
    accident. Returns the choice and the sweep."""
    embed = cached(embed)
    sweep = []
    for overlap in OVERLAP_GRID:
        for similarity in SIMILARITY_GRID:
            s = score_labelled(scenarios, "dev", embed, overlap, similarity)
            sweep.append({"min_overlap": overlap, "min_similarity": similarity, "f05": round(s["f05"], 4),
                          "precision": round(s["precision"], 4), "recall": round(s["recall"], 4)})
    top = max(r["f05"] for r in sweep)
    tied = [r for r in sweep if r["f05"] == top]
    overlap = median_low(r["min_overlap"] for r in tied)
    # None (overlap only) is the strictest similarity setting: it sorts above every number.
    similarity = median_low(_sim_order(r["min_similarity"]) for r in tied)
    pick = next((r for r in tied if r["min_overlap"] == overlap and _sim_order(r["min_similarity"]) == similarity),
                None)
    if pick is None:  # the medians' pair is not itself on the plateau: the tied pair nearest to it
        pick = min(tied, key=lambda r: (abs(r["min_overlap"] - overlap)
                                        + abs(_sim_order(r["min_similarity"]) - similarity)))
    return {"chosen": {"min_overlap": pick["min_overlap"], "min_similarity": pick["min_similarity"]},
            "dev_f05": top, "tied": len(tied), "sweep": sweep}


def _sim_order(value: float | None) -> float:
    return 2.0 if value is None else value


def run_labelled(embed: Embed, path: Path = DATA) -> dict[str, Any]:
    """Part 1: the dev sweep and the shipped thresholds' precision and recall on dev and test."""
    scenarios = load_labelled(path)
    embed = cached(embed)
    chosen = choose_thresholds(scenarios, embed)
    shipped = {split: score_labelled(scenarios, split, embed, MIN_OVERLAP, MIN_SIMILARITY)
               for split in ("dev", "test")}
    return {"data": path.name, "shipped": {"min_overlap": MIN_OVERLAP, "min_similarity": MIN_SIMILARITY},
            "dev_choice": chosen["chosen"], "dev_choice_f05": chosen["dev_f05"], "sweep": chosen["sweep"],
            "splits": shipped}


def run_locomo_observations(
    data: Path, *, conversations: Sequence[str] = DEV_CONVERSATIONS, sessions: int = 1, entities: int = 4,
    llm: Any = None, log: Callable[..., None] = print,
) -> dict[str, Any]:
    """Part 2: retain the first ``sessions`` of each conversation raw, then draft and write the observation of
    its ``entities`` most mentioned entities with the model (the bundled local one when ``llm`` is None)."""
    from hindsight_core import Hindsight
    from hindsight_core.cli.formats import locomo_sessions
    from hindsight_core.llm import LocalLLM

    samples = {s["sample_id"]: s for s in json.loads(data.read_text(encoding="utf-8"))}
    missing = [c for c in conversations if c not in samples]
    if missing:
        raise ValueError(f"unknown LoCoMo conversations: {', '.join(missing)}")
    model = llm if llm is not None else LocalLLM("qwen2.5-1.5b")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in conversations:
            chosen = locomo_sessions(samples[conv])[:sessions]
            with Hindsight.open(Path(tmp) / conv, llm=model, start_worker=False) as hs:
                bank = hs.bank(conv)
                for s in chosen:
                    bank.retain(s.content, timestamp=s.timestamp, document_id=s.document_id, extract=False)
                span = (min(s.timestamp for s in chosen if s.timestamp), max(s.timestamp for s in chosen
                                                                             if s.timestamp))
                ranked = sorted(hs.store.list_entities(bank.id), key=lambda e: (-e.mention_count, e.name))
                writer = hs.engine.observations
                for entity in ranked[:entities]:
                    began = time.perf_counter()
                    draft = writer.draft(bank.id, entity.id)
                    if draft is None:
                        continue
                    memory = writer.write(bank.id, draft)
                    after = next(e for e in hs.store.list_entities(bank.id) if e.id == entity.id)
                    rows.append(_row(conv, entity, draft, memory, after, span, time.perf_counter() - began))
                    log(f"{conv} {entity.name}: {rows[-1]['supported_before']}/{rows[-1]['sentences']} supported, "
                        f"{rows[-1]['kept']} kept ({rows[-1]['seconds']} s)", flush=True)
    return {"conversations": list(conversations), "sessions": sessions, "entities_per_conversation": entities,
            "model": getattr(model, "name", str(model)), "summary": summarise_observations(rows),
            "observations": rows}


def _row(conv: str, entity: Any, draft: Any, memory: Any, after: Any, span: tuple[Any, Any],
         seconds: float) -> dict[str, Any]:
    check = draft.check
    # Said when its latest fact was said: within the retained sessions, not today. (Its occurrence range is
    # that of its facts, which may lie before or after the sessions when a message names another date.)
    dated = memory is None or (memory.mentioned_at is not None and span[0] <= memory.mentioned_at <= span[1])
    return {
        "conversation": conv, "entity": entity.name, "facts_shown": len(draft.facts),
        "sentences": len(check.sentences), "supported_before": sum(1 for s in check.sentences if s.supported),
        "kept": len(check.kept), "repeated": sum(1 for s in check.sentences if s.reason == "repeated"),
        "written": memory is not None, "dated_within_conversation": dated,
        "last_seen_unchanged": after.last_seen == entity.last_seen,
        "mentioned_at": memory.mentioned_at.isoformat() if memory is not None and memory.mentioned_at else None,
        "occurred": [memory.occurred_start.isoformat() if memory.occurred_start else None,
                     memory.occurred_end.isoformat() if memory.occurred_end else None] if memory is not None else None,
        "fact_ids": list(memory.metadata.get("facts", [])) if memory is not None else [],
        "summary": draft.summary, "seconds": round(seconds, 1),
        "verdicts": [{"text": s.text, "reason": s.reason, "overlap": s.overlap, "similarity": s.similarity,
                      "facts": len(s.fact_ids)} for s in check.sentences],
    }


def summarise_observations(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Supported share before (the model's sentences) and after (the kept ones), and the counts around it."""
    total = sum(r["sentences"] for r in rows)
    kept = sum(r["kept"] for r in rows)
    return {
        "entities": len(rows), "sentences": total, "kept": kept,
        "supported_share_before": round(sum(r["supported_before"] for r in rows) / total, 3) if total else None,
        "supported_share_after": round(sum(r["kept"] for r in rows) / kept, 3) if kept else None,
        "repeated_dropped": sum(r["repeated"] for r in rows),
        "written": sum(1 for r in rows if r["written"]),
        "not_written": sum(1 for r in rows if not r["written"]),
        "dated_within_conversation": sum(1 for r in rows if r["dated_within_conversation"]),
        "last_seen_unchanged": sum(1 for r in rows if r["last_seen_unchanged"]),
        "seconds": round(sum(r["seconds"] for r in rows), 1),
    }


def run_observation_bench(
    data: Path | None, *, conversations: Sequence[str] = DEV_CONVERSATIONS, sessions: int = 1, entities: int = 4,
    labelled: Path = DATA, llm: Any = None, log: Callable[..., None] = print,
) -> dict[str, Any]:
    """Both parts; part 2 only when ``data`` (LoCoMo) is given."""
    from hindsight_core.embedders import make_embedder

    embedder = make_embedder("minilm")
    result: dict[str, Any] = {"labelled": run_labelled(embedder.embed, labelled)}
    if data is not None:
        result["locomo"] = run_locomo_observations(data, conversations=conversations, sessions=sessions,
                                                   entities=entities, llm=llm, log=log)
    return result


def format_observation_bench(result: dict[str, Any]) -> str:
    """Plain-text report of :func:`run_observation_bench`."""
    lab = result["labelled"]
    def pair(t: dict[str, Any]) -> str:
        return f"min_overlap {t['min_overlap']:.3f}, min_similarity {t['min_similarity']}"

    lines = [f"support check on {lab['data']}: {pair(lab['shipped'])} (dev sweep's choice: {pair(lab['dev_choice'])})",
             "split  sentences  precision  recall  accuracy"]
    for split, s in lab["splits"].items():
        lines.append(f"{split:5}  {s['sentences']:9}  {s['precision']:9.3f}  {s['recall']:6.3f}  {s['accuracy']:8.3f}")
    for split, s in lab["splits"].items():
        for m in s["mistakes"]:
            lines.append(f"  {split} {m['error']} [{m['kind']}] {m['sentence']} ({m['reason']}, overlap "
                         f"{m['overlap']}, similarity {m['similarity']})")
    if "locomo" in result:
        loc = result["locomo"]
        s = loc["summary"]
        lines += ["", f"LoCoMo {', '.join(loc['conversations'])}, first {loc['sessions']} session(s) raw, "
                      f"{s['entities']} entities, model {loc['model']}:",
                  f"supported share before {s['supported_share_before']} ({s['sentences']} sentences), after "
                  f"{s['supported_share_after']} ({s['kept']} kept); repeated dropped {s['repeated_dropped']}; "
                  f"written {s['written']}, not written {s['not_written']}; dated within the conversation "
                  f"{s['dated_within_conversation']}/{s['entities']}; last-seen unchanged "
                  f"{s['last_seen_unchanged']}/{s['entities']}; {s['seconds']} s"]
        for r in loc["observations"]:
            lines.append(f"  {r['conversation']} {r['entity']} ({r['mentioned_at']}):")
            lines.extend(f"    [{v['reason']}] {v['text']} (overlap {v['overlap']}, similarity {v['similarity']})"
                         for v in r["verdicts"])
    return "\n".join(lines)
