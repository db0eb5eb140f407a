"""Observation benchmark: are the sentences of entity observations true of what was said about the entity?

Four parts (``hindsight bench observations``):

1. **The fact-based support check on a labelled set** (``data/observation_support.jsonl``, written for the project):
   entity facts and candidate summary sentences labelled supported or not (new claims, wrong details,
   contradictions, wrong attribution, judgments). Each sentence is checked alone against its scenario's facts
   (``check_support``). The check's two thresholds are swept on the dev half and the pair with the best F0.5
   (precision weighs more: a kept false sentence is the failure, a dropped true one only shortens the summary) is
   chosen, ties going to the middle of the tied values (lower median of each threshold); precision and recall are
   reported on both halves (test is the headline).
2. **The grounded check** (issue 36, ``check_grounded``: raw messages with their speakers are the evidence, and a
   kept sentence must be whole and about the entity) on both labelled sets: the fact-based set read as messages
   (its facts are chat lines), and ``data/observation_grounding.jsonl`` (raw messages, the facts a model drew from
   them, some wrong, and candidate sentences: wrong attribution, a wrong fact repeated, another entity, cut-off
   sentences...). Its thresholds are swept on the dev halves of both sets together, the same way. On the grounding
   set the old check is scored too, against the facts as the old job saw them ("before"), and the facts themselves
   are checked against the messages (wrong ones dropped, true ones kept).
3. **The bundled model on LoCoMo dev conversations**: the first sessions of conv-26 and conv-30 retained raw,
   then for the entities mentioned most the observation job's draft (the model's summary) and what it keeps.
   Supported share *before* = share of the model's sentences the grounded check supports; *after* = share of the
   kept sentences that are supported (1.0 by construction of the check: the test-half precision of part 2 is the
   estimate of how many kept sentences a reader would call supported). Also: model calls and seconds per
   observation and per retained message, repeated and cut-off sentences dropped, observations not written
   (nothing supported), and whether each observation's time lies within the conversation and leaves the entity's
   last-seen where its messages put it.
4. **What the job policy costs** (no model: a stand-in answers): the same sessions retained one message per retain
   with background work, every queued job run after each retain; the summary calls per message with the default
   policy (first observation at ``observation_first_evidence`` memories, then every ``observation_new_evidence``)
   against one call per entity per retain (the behaviour before issue 36).
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

from hindsight_core.observations.support import (
    GROUNDED_MIN_OVERLAP,
    GROUNDED_MIN_SIMILARITY,
    MIN_OVERLAP,
    MIN_SIMILARITY,
    check_grounded,
    check_support,
    grounded_facts,
    mentions,
)

DATA = Path(__file__).resolve().parent / "data" / "observation_support.jsonl"
GROUNDING = Path(__file__).resolve().parent / "data" / "observation_grounding.jsonl"
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


def scenario_messages(
    scenario: dict[str, Any], embed: Embed | None = None
) -> tuple[list[tuple[str, str]], set[str] | None]:
    """A scenario's raw messages as the observation job gives them to the grounded check (``(id, "[date] Speaker:
    text")``), and the ids of those about its entity, found as the job finds them: those naming it or said by it,
    and those that a fact naming it cites, when the messages bear that fact out. (None for a fact-based scenario,
    whose facts are all the entity's: its facts are chat lines, read as its messages.)"""
    if "messages" not in scenario:
        return [(str(i), str(t)) for i, t in enumerate(scenario["facts"])], None
    key = (id(scenario), embed is None)
    if key not in _ABOUT:
        entity = scenario["entity"]
        lines = []
        for m in scenario["messages"]:
            said = f"{m['speaker']}: {m['text']}" if m.get("speaker") else m["text"]
            lines.append((m["id"], f"[{m['date']}] {said}"))
        about = {m["id"] for m in scenario["messages"]
                 if mentions(m["text"], [entity]) or m.get("speaker") == entity}
        facts = [(f"f{i}", f) for i, f in enumerate(scenario.get("facts", [])) if mentions(f["text"], [entity])]
        cited = about | {c for _, f in facts for c in f["cites"]}
        kept = {i for i, _ in grounded_facts([(i, f["text"]) for i, f in facts], lines, entity, about_ids=cited,
                                              embed=embed)[0]}
        _ABOUT[key] = (lines, about | {c for i, f in facts if i in kept for c in f["cites"]})
    lines, about = _ABOUT[key]
    return list(lines), set(about)


_ABOUT: dict[tuple[int, bool], tuple[list[tuple[str, str]], set[str]]] = {}


def scenario_facts(scenario: dict[str, Any]) -> list[tuple[str, str]]:
    """A grounding scenario's facts as the old job showed and checked them: dated by their first cited message."""
    dates = {m["id"]: m["date"] for m in scenario["messages"]}
    return [(f"f{i}", f"[{dates[f['cites'][0]]}] {f['text']}") for i, f in enumerate(scenario["facts"])]


Checker = Callable[[dict[str, Any], str, "Embed | None", float, float], Any]
"""(scenario, sentence, embed, min_overlap, min_similarity) -> the sentence's ``SentenceSupport``."""


def fact_check(scenario: dict[str, Any], sentence: str, embed: Embed | None, min_overlap: float,
               min_similarity: float) -> Any:
    """The fact-based check (``check_support``) of one sentence against the scenario's facts."""
    facts = scenario_facts(scenario) if "messages" in scenario else [
        (str(i), text) for i, text in enumerate(scenario["facts"])]
    return check_support(sentence, facts, scenario["entity"], embed=embed, min_overlap=min_overlap,
                         min_similarity=min_similarity).sentences[0]


def grounded_check(scenario: dict[str, Any], sentence: str, embed: Embed | None, min_overlap: float,
                   min_similarity: float) -> Any:
    """The grounded check (``check_grounded``) of one sentence against the scenario's raw messages."""
    lines, about = scenario_messages(scenario, embed)
    return check_grounded(sentence, lines, scenario["entity"], about_ids=about, embed=embed, min_overlap=min_overlap,
                          min_similarity=min_similarity).sentences[0]


def score_labelled(
    scenarios: Sequence[dict[str, Any]], split: str, embed: Embed | None, min_overlap: float,
    min_similarity: float | None, check: Checker = fact_check,
) -> dict[str, Any]:
    """Precision, recall and accuracy of ``check`` (supported = kept) on one split, with its mistakes and the
    share kept of each kind of sentence."""
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    mistakes: list[dict[str, Any]] = []
    kinds: dict[str, list[int]] = {}
    for scenario in scenarios:
        if split != "all" and scenario["split"] != split:
            continue
        for item in scenario["sentences"]:
            verdict = check(scenario, item["text"], embed if min_similarity is not None else None, min_overlap,
                            min_similarity if min_similarity is not None else 2.0)
            # The grounded check keeps only what is about the entity: a true sentence about someone else is a miss.
            expected = item["supported"] and (check is not grounded_check or item.get("about", True))
            key = ("t" if verdict.supported == expected else "f") + ("p" if verdict.supported else "n")
            counts[key] += 1
            kept = kinds.setdefault(item["kind"], [0, 0])
            kept[0] += verdict.supported
            kept[1] += 1
            if key in ("fp", "fn"):
                mistakes.append({"scenario": scenario["id"], "sentence": item["text"], "kind": item["kind"],
                                 "error": key, "reason": verdict.reason, "overlap": verdict.overlap,
                                 "similarity": verdict.similarity})
    n = sum(counts.values())
    kept_n, positives = counts["tp"] + counts["fp"], counts["tp"] + counts["fn"]
    precision = counts["tp"] / kept_n if kept_n else 1.0
    recall = counts["tp"] / positives if positives else 1.0
    return {"sentences": n, **counts, "accuracy": (counts["tp"] + counts["tn"]) / n if n else 0.0,
            "precision": precision, "recall": recall, "f05": _f05(precision, recall), "mistakes": mistakes,
            "kept_by_kind": {k: v for k, v in sorted(kinds.items())}}


def _f05(precision: float, recall: float) -> float:
    return 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0


def choose_thresholds(scenarios: Sequence[dict[str, Any]], embed: Embed, check: Checker = fact_check
                      ) -> dict[str, Any]:
    """Sweep both thresholds on the dev half and keep the best F0.5. When several pairs tie (dev cannot tell
    them apart), take the middle of the tied values of each threshold (the lower median), the point farthest
    from where dev errors begin, so that neither a loose edge nor a strict edge of the plateau is picked by
    accident. Returns the choice and the sweep."""
    embed = cached(embed)
    sweep = []
    for overlap in OVERLAP_GRID:
        for similarity in SIMILARITY_GRID:
            s = score_labelled(scenarios, "dev", embed, overlap, similarity, check)
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


def score_facts(scenarios: Sequence[dict[str, Any]], split: str, embed: Embed | None) -> dict[str, Any]:
    """How well the grounded check sorts a grounding scenario's facts (what the job shows the model): wrong facts
    dropped and true facts kept."""
    wrong = wrong_dropped = true = true_kept = 0
    for scenario in scenarios:
        if "messages" not in scenario or (split != "all" and scenario["split"] != split):
            continue
        lines, _ = scenario_messages(scenario, embed)
        about = {c for f in scenario["facts"] if mentions(f["text"], [scenario["entity"]]) for c in f["cites"]}
        about |= {m["id"] for m in scenario["messages"]
                  if mentions(m["text"], [scenario["entity"]]) or m.get("speaker") == scenario["entity"]}
        facts = [(f"f{i}", f["text"]) for i, f in enumerate(scenario["facts"])]
        kept = {i for i, _ in grounded_facts(facts, lines, scenario["entity"], about_ids=about, embed=embed)[0]}
        for i, f in enumerate(scenario["facts"]):
            if f["true"]:
                true += 1
                true_kept += f"f{i}" in kept
            else:
                wrong += 1
                wrong_dropped += f"f{i}" not in kept
    return {"facts": wrong + true, "wrong": wrong, "wrong_dropped": wrong_dropped, "true": true,
            "true_kept": true_kept}


def run_labelled(embed: Embed, path: Path = DATA, grounding: Path = GROUNDING) -> dict[str, Any]:
    """Parts 1 and 2: the dev sweeps and the shipped thresholds' precision and recall on dev and test, for the
    fact-based check on its set, the grounded check on both sets, and the old check on the grounding set."""
    scenarios = load_labelled(path)
    grounded_sets = load_labelled(grounding)
    embed = cached(embed)
    chosen = choose_thresholds(scenarios, embed)
    shipped = {split: score_labelled(scenarios, split, embed, MIN_OVERLAP, MIN_SIMILARITY)
               for split in ("dev", "test")}
    both = [*scenarios, *grounded_sets]
    grounded_choice = choose_thresholds(both, embed, grounded_check)
    grounded = {
        name: {split: score_labelled(sets, split, embed, GROUNDED_MIN_OVERLAP, GROUNDED_MIN_SIMILARITY,
                                     grounded_check) for split in ("dev", "test")}
        for name, sets in ((path.name, scenarios), (grounding.name, grounded_sets))}
    before = {split: score_labelled(grounded_sets, split, embed, MIN_OVERLAP, MIN_SIMILARITY, fact_check)
              for split in ("dev", "test")}
    return {"data": path.name, "shipped": {"min_overlap": MIN_OVERLAP, "min_similarity": MIN_SIMILARITY},
            "dev_choice": chosen["chosen"], "dev_choice_f05": chosen["dev_f05"], "sweep": chosen["sweep"],
            "splits": shipped,
            "grounded": {"data": [path.name, grounding.name],
                         "shipped": {"min_overlap": GROUNDED_MIN_OVERLAP, "min_similarity": GROUNDED_MIN_SIMILARITY},
                         "dev_choice": grounded_choice["chosen"], "dev_choice_f05": grounded_choice["dev_f05"],
                         "sweep": grounded_choice["sweep"], "sets": grounded, "fact_check_on_grounding": before,
                         "facts": {split: score_facts(grounded_sets, split, embed) for split in ("dev", "test")}}}


def run_locomo_observations(
    data: Path, *, conversations: Sequence[str] = DEV_CONVERSATIONS, sessions: int = 1, entities: int = 4,
    llm: Any = None, log: Callable[..., None] = print,
) -> dict[str, Any]:
    """Part 3: retain the first ``sessions`` of each conversation raw, then draft and write the observation of
    its ``entities`` most mentioned entities with the model (the bundled local one when ``llm`` is None)."""
    from hindsight_core import Hindsight
    from hindsight_core.llm import LocalLLM

    chosen_sessions = _sessions(data, conversations, sessions)
    model = llm if llm is not None else LocalLLM("qwen2.5-1.5b")
    rows: list[dict[str, Any]] = []
    messages = 0
    with tempfile.TemporaryDirectory() as tmp:
        for conv, chosen in chosen_sessions.items():
            with Hindsight.open(Path(tmp) / conv, llm=model, start_worker=False) as hs:
                bank = hs.bank(conv)
                for s in chosen:
                    bank.retain(s.content, timestamp=s.timestamp, document_id=s.document_id, extract=False)
                    messages += len(s.messages)
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
            "model": getattr(model, "name", str(model)), "messages": messages,
            "summary": summarise_observations(rows, messages), "observations": rows}


def _sessions(data: Path, conversations: Sequence[str], sessions: int) -> dict[str, list[Any]]:
    """The first ``sessions`` LoCoMo sessions of each conversation."""
    from hindsight_core.cli.formats import locomo_sessions

    samples = {s["sample_id"]: s for s in json.loads(data.read_text(encoding="utf-8"))}
    missing = [c for c in conversations if c not in samples]
    if missing:
        raise ValueError(f"unknown LoCoMo conversations: {', '.join(missing)}")
    return {conv: locomo_sessions(samples[conv])[:sessions] for conv in conversations}


def _row(conv: str, entity: Any, draft: Any, memory: Any, after: Any, span: tuple[Any, Any],
         seconds: float) -> dict[str, Any]:
    check = draft.check
    # Said when its latest message was said: within the retained sessions, not today. (Its occurrence range is
    # that of its messages, which may lie before or after the sessions when a message names another date.)
    dated = memory is None or (memory.mentioned_at is not None and span[0] <= memory.mentioned_at <= span[1])

    def count(reason: str) -> int:
        return sum(1 for s in check.sentences if s.reason == reason)

    return {
        "conversation": conv, "entity": entity.name, "messages_shown": len(draft.messages),
        "facts_shown": len(draft.facts), "facts_dropped": len(draft.dropped_facts),
        "sentences": len(check.sentences), "supported_before": sum(1 for s in check.sentences if s.supported),
        "kept": len(check.kept), "repeated": count("repeated"), "cut_off": count("cut off"),
        "other_entity": count("other entity"),
        "written": memory is not None, "dated_within_conversation": dated,
        "last_seen_unchanged": after.last_seen == entity.last_seen,
        "mentioned_at": memory.mentioned_at.isoformat() if memory is not None and memory.mentioned_at else None,
        "occurred": [memory.occurred_start.isoformat() if memory.occurred_start else None,
                     memory.occurred_end.isoformat() if memory.occurred_end else None] if memory is not None else None,
        "fact_ids": list(memory.metadata.get("facts", [])) if memory is not None else [],
        "summary": draft.summary, "seconds": round(seconds, 1), "calls": draft.calls,
        "model_seconds": round(draft.seconds, 1),
        "verdicts": [{"text": s.text, "reason": s.reason, "overlap": s.overlap, "similarity": s.similarity,
                      "facts": len(s.fact_ids)} for s in check.sentences],
    }


def summarise_observations(rows: Sequence[dict[str, Any]], messages: int = 0) -> dict[str, Any]:
    """Supported share before (the model's sentences) and after (the kept ones), the counts around it, and what
    the observations cost: model calls and seconds, in all and per retained message."""
    total = sum(r["sentences"] for r in rows)
    kept = sum(r["kept"] for r in rows)
    seconds = round(sum(r["seconds"] for r in rows), 1)
    calls = sum(r.get("calls", 0) for r in rows)
    return {
        "entities": len(rows), "sentences": total, "kept": kept,
        "supported_share_before": round(sum(r["supported_before"] for r in rows) / total, 3) if total else None,
        "supported_share_after": round(sum(r["kept"] for r in rows) / kept, 3) if kept else None,
        "repeated_dropped": sum(r["repeated"] for r in rows),
        "cut_off_dropped": sum(r.get("cut_off", 0) for r in rows),
        "other_entity_dropped": sum(r.get("other_entity", 0) for r in rows),
        "facts_dropped": sum(r.get("facts_dropped", 0) for r in rows),
        "written": sum(1 for r in rows if r["written"]),
        "not_written": sum(1 for r in rows if not r["written"]),
        "dated_within_conversation": sum(1 for r in rows if r["dated_within_conversation"]),
        "last_seen_unchanged": sum(1 for r in rows if r["last_seen_unchanged"]),
        "seconds": seconds, "calls": calls, "messages": messages,
        "seconds_per_message": round(seconds / messages, 2) if messages else None,
    }


class StandInLLM:
    """A model stand-in for the cost part: answers a summary call at once with the first message it was shown
    (turned into a sentence about the speaker), so that what is counted is the calls the job policy makes."""

    name = "stand-in"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, messages: Sequence[Any], schema: Any, *, max_tokens: int | None = None,
                 temperature: float = 0.0) -> Any:
        self.calls += 1
        user = next(m["content"] for m in reversed(list(messages)) if m["role"] == "user")
        first = next((line[2:] for line in user.splitlines() if line.startswith("- ")), "Nothing.")
        text = first.split("] ", 1)[-1]
        return schema.model_validate({"summary": text.replace(": ", " said: ", 1)})

    async def agenerate(self, messages: Sequence[Any], schema: Any, *, max_tokens: int | None = None,
                        temperature: float = 0.0) -> Any:
        return self.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)


def run_observation_cost(
    data: Path, *, conversations: Sequence[str] = DEV_CONVERSATIONS, sessions: int = 1,
    log: Callable[..., None] = print,
) -> dict[str, Any]:
    """Part 4: the summary calls the job policy makes per retained message, each message retained on its own with
    background work and every queued job run after it: the shipped policy (``CaraSettings``' defaults) against one
    call per entity per retain (first and new evidence 1: the behaviour before issue 36). No model: a stand-in
    answers (``StandInLLM``), so only the number of calls is measured; multiply by a summary call's time (part 3)."""
    from hindsight_core import Hindsight
    from hindsight_core.config import CaraSettings, Settings

    chosen_sessions = _sessions(data, conversations, sessions)
    shipped = CaraSettings()
    policies = {"per_retain": CaraSettings(observation_first_evidence=1, observation_new_evidence=1),
                "policy": shipped}
    out: dict[str, Any] = {"conversations": list(conversations), "sessions": sessions,
                           "policy_settings": {"first_evidence": shipped.observation_first_evidence,
                                               "new_evidence": shipped.observation_new_evidence}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cara in policies.items():
            model = StandInLLM()
            messages = jobs = written = 0
            for conv, chosen in chosen_sessions.items():
                with Hindsight.open(Path(tmp) / f"{name}-{conv}", llm=model, start_worker=False,
                                    settings=Settings(cara=cara)) as hs:
                    bank = hs.bank(conv)
                    for s in chosen:
                        for i, message in enumerate(s.messages):
                            bank.retain([message], timestamp=s.timestamp, document_id=f"{s.document_id}:{i}",
                                        extract=False, background=True)
                            messages += 1
                            while hs.worker.run_once():
                                pass
                    done = [j for j in bank.jobs() if j.kind == "observations"]
                    jobs += len(done)
                    written += sum(1 for e in hs.store.list_entities(bank.id) if bank.observation(e.name))
            out[name] = {"messages": messages, "jobs": jobs, "calls": model.calls, "observations": written,
                         "calls_per_message": round(model.calls / messages, 3) if messages else None}
            log(f"cost, {name}: {model.calls} summary calls for {messages} messages ({jobs} jobs)", flush=True)
    return out


def run_observation_bench(
    data: Path | None, *, conversations: Sequence[str] = DEV_CONVERSATIONS, sessions: int = 1, entities: int = 4,
    labelled: Path = DATA, llm: Any = None, log: Callable[..., None] = print, model_part: bool = True,
) -> dict[str, Any]:
    """Parts 1 and 2; parts 3 (unless ``model_part`` is False) and 4 only when ``data`` (LoCoMo) is given."""
    from hindsight_core.embedders import make_embedder

    embedder = make_embedder("minilm")
    result: dict[str, Any] = {"labelled": run_labelled(embedder.embed, labelled)}
    if data is not None:
        result["cost"] = run_observation_cost(data, conversations=conversations, sessions=sessions, log=log)
        if model_part:
            result["locomo"] = run_locomo_observations(data, conversations=conversations, sessions=sessions,
                                                       entities=entities, llm=llm, log=log)
    return result


def _split_lines(title: str, splits: dict[str, Any], pair: str) -> list[str]:
    lines = [f"{title}: {pair}", "split  sentences  precision  recall  accuracy"]
    for split, s in splits.items():
        lines.append(f"{split:5}  {s['sentences']:9}  {s['precision']:9.3f}  {s['recall']:6.3f}  {s['accuracy']:8.3f}")
    for split, s in splits.items():
        for m in s["mistakes"]:
            lines.append(f"  {split} {m['error']} [{m['kind']}] {m['sentence']} ({m['reason']}, overlap "
                         f"{m['overlap']}, similarity {m['similarity']})")
    return lines


def format_observation_bench(result: dict[str, Any]) -> str:
    """Plain-text report of :func:`run_observation_bench`."""
    lab = result["labelled"]

    def pair(t: dict[str, Any]) -> str:
        return f"min_overlap {t['min_overlap']:.3f}, min_similarity {t['min_similarity']}"

    lines = _split_lines(f"fact-based check (check_support) on {lab['data']}", lab["splits"],
                         f"{pair(lab['shipped'])} (dev sweep's choice: {pair(lab['dev_choice'])})")
    grounded = lab.get("grounded")
    if grounded:
        lines += ["", f"grounded check (check_grounded): {pair(grounded['shipped'])} (dev sweep over both sets' dev "
                      f"halves: {pair(grounded['dev_choice'])})"]
        for name, splits in grounded["sets"].items():
            lines += _split_lines(f"  on {name}", splits, "raw messages as evidence")
        before = grounded["fact_check_on_grounding"]
        after = grounded["sets"][grounded["data"][1]]
        lines += ["", f"on {grounded['data'][1]}, kept / sentences by kind: fact-based check against the facts "
                      "(before) | grounded check against the messages (after)"]
        for split in ("dev", "test"):
            b, a = before[split], after[split]
            lines.append(f"  {split}: precision {b['precision']:.3f} -> {a['precision']:.3f}, recall "
                         f"{b['recall']:.3f} -> {a['recall']:.3f}")
            for kind in sorted(a["kept_by_kind"]):
                kb, ka = b["kept_by_kind"].get(kind, [0, 0]), a["kept_by_kind"][kind]
                lines.append(f"    {kind:18} {kb[0]}/{kb[1]} | {ka[0]}/{ka[1]}")
        for split, f in grounded["facts"].items():
            lines.append(f"  facts shown to the model, {split}: wrong dropped {f['wrong_dropped']}/{f['wrong']}, "
                         f"true kept {f['true_kept']}/{f['true']}")
    if "cost" in result:
        c = result["cost"]
        before, after, policy = c["per_retain"], c["policy"], c["policy_settings"]
        lines += ["", f"summary calls per retained message ({', '.join(c['conversations'])}, first {c['sessions']} "
                      "session(s), one message per retain, jobs run after each; a stand-in model):",
                  f"  one per entity per retain: {before['calls']} calls / {before['messages']} messages = "
                  f"{before['calls_per_message']}",
                  f"  shipped policy (first at {policy['first_evidence']} memories, then every "
                  f"{policy['new_evidence']} new): {after['calls']} / {after['messages']} = "
                  f"{after['calls_per_message']} ({after['observations']} entities with an observation)"]
    if "locomo" in result:
        loc = result["locomo"]
        s = loc["summary"]
        lines += ["", f"LoCoMo {', '.join(loc['conversations'])}, first {loc['sessions']} session(s) raw, "
                      f"{s['entities']} entities, model {loc['model']}:",
                  f"supported share before {s['supported_share_before']} ({s['sentences']} sentences), after "
                  f"{s['supported_share_after']} ({s['kept']} kept); repeated dropped {s['repeated_dropped']}, cut "
                  f"off {s['cut_off_dropped']}, other entity {s['other_entity_dropped']}; facts not shown "
                  f"{s['facts_dropped']}; written {s['written']}, not written {s['not_written']}; dated within the "
                  f"conversation {s['dated_within_conversation']}/{s['entities']}; last-seen unchanged "
                  f"{s['last_seen_unchanged']}/{s['entities']}",
                  f"cost: {s['calls']} model calls, {s['seconds']} s for {s['entities']} observations of "
                  f"{s['messages']} messages ({s['seconds_per_message']} s per message)"]
        for r in loc["observations"]:
            lines.append(f"  {r['conversation']} {r['entity']} ({r['mentioned_at']}):")
            lines.extend(f"    [{v['reason']}] {v['text']} (overlap {v['overlap']}, similarity {v['similarity']})"
                         for v in r["verdicts"])
    return "\n".join(lines)
