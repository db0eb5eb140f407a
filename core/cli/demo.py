"""A guided tour of the engine on a bundled conversation, with no LLM: ``hindsight demo``.

The conversation (``data/demo_conversation.json``, written for this project) is four chats between Maya and
her friend Jonah from March to June 2025: a newly adopted dog, a park redesign, a holiday that moves from
Lisbon in May to Porto in June. It is retained raw (``extract=False``: one memory per message, entities by
NER, relative dates such as "last week" resolved against the session date), then recalled with questions
that need a time expression, provenance, or facts from more than one session.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .display import CHANNEL_ABBREV, clip, format_table, format_timings, when

BANK_ID = "demo"
BUDGET = 300  # small on purpose: shows greedy packing stop at the budget
MAX_MEMORIES = 5

if TYPE_CHECKING:
    from ..models import Recall
    from .formats import Session

# (question, reference time or None, why it is interesting)
QUERIES: tuple[tuple[str, str | None, str], ...] = (
    ("What is the name of Maya's dog?", None, "single fact, answered by one message"),
    ("What did Maya do last week?", "2025-03-23T12:00:00+00:00",
     "time expression: 'last week' relative to 23 March 2025 is 10-16 March"),
    ("How did Maya's holiday plans with her sister Clara change?", None,
     "spans sessions: Lisbon in May, pushed to June, then Porto"),
    ("Who looked after Pepper while Maya was in Porto?", None,
     "joins two sessions: the favour asked in April and the thanks in June"),
    ("What does Maya like to drink?", None, "a preference stated in passing"),
)


def load_conversation() -> dict[str, Any]:
    """The bundled LoCoMo-shaped conversation."""
    resource = files("hindsight_core") / "data" / "demo_conversation.json"
    return json.loads(resource.read_text(encoding="utf-8"))


REFLECT_QUESTION = "Is Maya a good person to ask for help with a dog?"
DISPOSITIONS = {
    "warm (S=1, L=2, E=5, bias=0.8)": (1, 2, 5, 0.8),
    "strict (S=5, L=5, E=1, bias=0.8)": (5, 5, 1, 0.8),
}


def run_demo(
    path: str | None = None, out: Callable[..., None] = print, *, reflect: bool = True, llm: Any = None
) -> dict[str, Any]:
    """Retain the bundled conversation into bank ``demo`` and run a few traced recalls, printing as it goes.

    ``path`` is the memory directory; ``None`` uses a temporary one that is removed afterwards. ``out`` is
    called like ``print`` for every line shown. Returns a summary: counts, and per query the returned
    memories (id, sources, document, score), tokens used and stage timings.
    """
    from ..config import CaraSettings, Settings
    from ..hindsight import Hindsight
    from .formats import locomo_sessions

    tmp = tempfile.mkdtemp(prefix="hindsight-demo-") if path is None else None
    root = Path(tmp or str(path))
    try:
        sample = load_conversation()
        sessions = locomo_sessions(sample)
        conv = sample["conversation"]
        out(f"Hindsight demo: a conversation between {conv['speaker_a']} and {conv['speaker_b']}, "
            f"{len(sessions)} sessions, retained raw (extract=False, no LLM) into bank {BANK_ID!r} at {root}")
        out("")
        summary: dict[str, Any] = {"path": None if tmp else str(root), "bank": BANK_ID, "documents": [],
                                   "queries": []}
        t0 = time.perf_counter()
        # The demo shows what each disposition does to reflect's one call (the prompt, the cited evidence and the
        # computed confidence), so it asks for that path (the per-memory judgement: `bench cara --set balance`).
        settings = Settings(cara=CaraSettings(reflect_judgement="in_call"))
        with Hindsight.open(root, settings=settings, **({"llm": llm} if llm is not None else {})) as hs:
            bank = hs.bank(BANK_ID)
            _retain_sessions(bank, sessions, out, summary, t0)
            for n, (question, reference, why) in enumerate(QUERIES, start=1):
                summary["queries"].append(_recall_query(bank, n, question, reference, why, out))
            if reflect:
                summary["reflections"] = _reflect(bank, out)
        out("")
        out("Each memory keeps the ids of the messages it came from (source) and its document: that is the "
            "audit trail.")
        return summary
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _retain_sessions(
    bank: Any, sessions: list[Session], out: Callable[..., None], summary: dict[str, Any], t0: float
) -> None:
    """Retain each session raw, then print what is stored; adds the documents and counts to ``summary``.

    ``t0`` is when the demo started opening the store: the time shown includes the opening.
    """
    rows = []
    for s in sessions:
        res = bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id, extract=False)
        rows.append([s.document_id, f"{s.timestamp:%Y-%m-%d}" if s.timestamp else "-",
                     len(res.memories), len(res.entities), res.links])
        summary["documents"].append({"document_id": res.document_id, "memories": len(res.memories),
                                     "entities": len(res.entities), "links": res.links})
    retain_s = time.perf_counter() - t0
    out(format_table(["document", "date", "memories", "entities", "links"], rows, align="llrrr"))
    stats = bank.stats()
    entities = bank.entities()
    links = stats.get("links", {})
    n_links = sum(links.values()) if isinstance(links, dict) else int(links or 0)
    out(f"stored {stats['units']} memories, {len(entities)} entities, {n_links} links "
        f"({', '.join(f'{k} {v}' for k, v in links.items()) if isinstance(links, dict) else ''}) "
        f"in {retain_s:.1f} s")
    top = ", ".join(f"{e.name} ({e.mention_count})" for e in entities[:10])
    out(f"most mentioned entities: {top}")
    summary.update(memories=stats["units"], entities=len(entities), links=n_links,
                   entity_names=[e.name for e in entities])


def _recall_query(
    bank: Any, n: int, question: str, reference: str | None, why: str, out: Callable[..., None]
) -> dict[str, Any]:
    """Recall ``question`` with its trace, print the ranked memories per channel; the query's summary entry."""
    rec = bank.recall(question, budget=BUDGET, max_memories=MAX_MEMORIES, reference_time=reference, trace=True)
    out("")
    out(f"Q{n}. {question}")
    trace = rec.trace
    assert trace is not None  # asked for with trace=True
    ref = f"reference time {trace.reference_time:%Y-%m-%d}" if reference else "reference time now"
    constraint = ""
    if trace.time_range is not None:
        constraint = (f", parsed time constraint {trace.time_range.start:%Y-%m-%d} .. "
                      f"{trace.time_range.end:%Y-%m-%d}")
    out(f"    ({why}; {ref}{constraint})")
    out(_indent(_channel_table(rec)))
    out(f"    tokens {rec.tokens}/{BUDGET} · columns sem..time: rank in each channel, "
        "'-' = not found by it")
    out(f"    stages (ms): {format_timings(trace.timings_ms)}")
    return {
        "query": question,
        "reference_time": reference,
        "time_range": [trace.time_range.start.isoformat() if trace.time_range.start else None,
                       trace.time_range.end.isoformat() if trace.time_range.end else None]
        if trace.time_range is not None else None,
        "tokens": rec.tokens,
        "budget": BUDGET,
        "memories": [{"id": m.id, "sources": m.sources, "document_id": m.document_id,
                      "score": m.score} for m in rec.memories],
        "top_sources": [s for m in rec.memories for s in m.sources],
        "timings_ms": trace.timings_ms,
    }


def _channel_table(rec: Recall) -> str:
    """The returned memories as a table: score, rank in each channel that ran ('-': not found by it), source."""
    trace = rec.trace
    assert trace is not None  # asked for with trace=True
    items = {item.memory_id: item for item in trace.items}
    channels = [c for c in CHANNEL_ABBREV if c in trace.channel_sizes]
    table = []
    for rank, m in enumerate(rec.memories, start=1):
        item = items.get(m.id)
        hits = [item.channels.get(c) if item else None for c in channels]
        table.append([rank, f"{m.score:.4f}" if m.score is not None else "-",
                      *("-" if h is None else h.rank for h in hits), when(m),
                      ",".join(m.sources) or "-", clip(m.text, 72)])
    header = ["#", "score", *(CHANNEL_ABBREV[c] for c in channels), "when", "source", "memory"]
    return format_table(header, table, align="rr" + "r" * len(channels) + "lll")


def _reflect(bank: Any, out: Callable[..., None]) -> list[dict[str, Any]]:
    """Reflect on one question with two contrasting dispositions; print what each did and why it differs."""
    from ..models import Disposition, utcnow
    from ..opinions.confidence import confidence_basis
    from ..text.inputs import parse_timestamp

    out("")
    out(f"Reflect: {REFLECT_QUESTION!r} with two dispositions over the same memories (local LLM; the first "
        "call starts it)")
    out("  Each trait acts in code as well as in the prompt: empathy orders the memories the model sees, "
        "skepticism sets the support a confidence needs, literalism whether inferred memories (observations, "
        "opinions) count. Each opinion is forgotten again after it is shown, so both see the same memories.")
    results = []
    reference = "2025-07-01"
    for label, (s, lit, e, b) in DISPOSITIONS.items():
        disposition = Disposition(skepticism=s, literalism=lit, empathy=e, bias=b)
        t = time.perf_counter()
        r = bank.reflect(REFLECT_QUESTION, disposition=disposition, reference_time=reference)
        out("")
        out(f"  {label}  ({time.perf_counter() - t:.1f} s)")
        out(_indent(f"shown first (empathy {e}): " + " | ".join(clip(m.text, 40) for m in r.memories[:3])))
        out(_indent(f"answer ({r.stance or 'no stance'}): {r.answer}"))
        by_id = {m.id: m for m in r.memories}
        cited = [by_id[i] for i in r.based_on if i in by_id]  # in the order the answer relies on them
        opposed = [by_id[i] for i in r.against if i in by_id]
        cites = dict.fromkeys(s for m in cited for s in (
            m.sources if m.network.value in ("world", "experience") else [f"{m.network.value}: {clip(m.text, 30)}"]))
        out(_indent(f"based on: {', '.join(cites) or '-'}; cited against: {len(opposed)}"))
        basis = confidence_basis(cited, opposed, disposition, parse_timestamp(reference) or utcnow())
        for o in r.opinions:
            said = o.metadata.get("model_confidence")
            out(_indent(f"opinion (confidence {o.confidence:.2f}, the model said "
                        f"{said if said is not None else '-'}): {o.text}"))
            out(_indent(f"  why: {o.metadata.get('confidence_basis') or basis['explanation']}"))
        if not r.opinions:
            reason = ("the model formed none" if basis["confidence"] else
                      f"no opinion: nothing it cited counts at this disposition ({basis['explanation']})")
            out(_indent(reason))
        for o in r.opinions:  # so that the next disposition reflects on the same memories, not on this opinion
            bank.forget(memory_id=o.id)
        results.append({"disposition": label, "answer": r.answer, "known": r.known, "stance": r.stance,
                        "based_on": r.based_on, "against": r.against, "basis": basis,
                        "shown": [m.id for m in r.memories],
                        "opinions": [{"id": o.id, "text": o.text, "confidence": o.confidence,
                                      "model_confidence": o.metadata.get("model_confidence")} for o in r.opinions],
                        "system_message": r.system_message})
    return results


def _indent(block: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in block.splitlines())
