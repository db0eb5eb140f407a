"""Plain-text rendering for people: recall results and traces, bank statistics and tables.

Shared by the command line (``cli.py``) and the demo (``demo.py``), so that neither imports the other. Imports
nothing heavy: the models are only named in type hints.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import Memory, Recall, TraceItem

CHANNEL_ABBREV = {"semantic": "sem", "keyword": "kw", "graph": "graph", "temporal": "time"}
"""Short column names of the recall channels, in the order tables show them."""


def format_recall(rec: Recall, budget: int) -> str:
    """The memories in the order they were packed, each with score, network, date, sources and document (a
    superseded memory or a correction marked, ``history_mark``), and, under one that is out of score order or placed
    beside what superseded it, why it stands there (``placement_notes``: needs the recall's trace); then the tokens
    used."""
    if not rec.memories:
        return f"no memories found for {rec.query!r}"
    notes = placement_notes(rec)
    position = {m.id: i for i, m in enumerate(rec.memories, start=1)}
    lines = []
    for rank, m in enumerate(rec.memories, start=1):
        mark = history_mark(m, position)
        lines.append(f"{rank:>2}. {m.text}" + (f"  {mark}" if mark else ""))
        details = [f"score {m.score:.4f}" if m.score is not None else "score -", m.network.value, when(m)]
        if m.sources:
            details.append("sources " + ", ".join(m.sources))
        if m.document_id:
            details.append(f"doc {m.document_id}")
        lines.append("    " + " · ".join(details))
        if m.id in notes:
            lines.append(f"    placed here: {notes[m.id]}")
    summary = f"{plural(len(rec.memories), 'memory', 'memories')}, {rec.tokens}/{budget} tokens"
    if notes:
        moved = sum(1 for note in notes.values() if note.startswith(SUPERSESSION_NOTES))
        counts = [f"{len(notes) - moved} out of score order" if len(notes) > moved else "",
                  f"{moved} placed by supersession" if moved else ""]
        summary += f", in the order packed ({', '.join(c for c in counts if c)}, each with the reason)"
    lines.append(summary)
    return "\n".join(lines)


def history_mark(m: Memory, position: dict[str, int]) -> str:
    """``[superseded 2024-02-05 by #1]`` for a memory no longer current (when it stopped holding, and what replaced
    it: its number in the listing, or its id when not listed), ``[corrects #2]`` for a correction; else empty."""
    marks = []
    if m.superseded_by is not None:
        since = f" {_date(m.valid_until)}" if m.valid_until is not None else ""
        marks.append(f"[superseded{since} by {_listed(m.superseded_by, position)}]")
    fix = m.metadata.get("correction")
    if isinstance(fix, dict) and isinstance(fix.get("of"), str):
        by = f", by {clip(str(fix['by']), 40)}" if fix.get("by") else ""
        marks.append(f"[corrects {_listed(fix['of'], position)}{by}]")
    return " ".join(marks)


def _listed(memory_id: str, position: dict[str, int]) -> str:
    """A memory as the listing names it: ``#n``, or ``memory <id>`` when it is not listed."""
    return f"#{position[memory_id]}" if memory_id in position else f"memory {memory_id}"


def placement_notes(rec: Recall) -> dict[str, str]:
    """Why each memory that stands out of score order was packed where it is, by memory id.

    Recall packs memories in rank order except where a packing rule moves one (``RecallSettings``): the context
    beside a hit, a memory whose evidence an earlier one already showed (deferred), an LLM fact kept below the
    message it cites, a message a fact brought in at the fact's rank, or a reranker's order. A memory is out of
    score order when a memory after it scored higher or one before it scored lower; the note names the rule that
    moved it, from the recall's trace (empty without one). A memory that was not moved but only stands beside one
    that was gets no note: the moved one explains the pair.

    Supersession moves memories too, and always gets its note (a memory brought in by another carries that one's
    score, so the pair may look in score order): a superseded memory packed after the current memory that replaced
    it (``TraceItem.demoted``), the current memory brought in by the one it superseded, and, for a question about the
    past, a superseded memory brought in before its successor (``TraceItem.brought_by``).
    """
    trace = rec.trace
    if trace is None or len(rec.memories) < 2:
        return {}
    items = {item.memory_id: item for item in trace.items}
    position = {m.id: i for i, m in enumerate(rec.memories, start=1)}
    scores = [m.score if m.score is not None else 0.0 for m in rec.memories]
    best_after = [max(scores[i + 1:], default=float("-inf")) for i in range(len(scores))]
    worst_before = [min(scores[:i], default=float("inf")) for i in range(len(scores))]
    reranked = any(k.startswith("rerank") for k in trace.timings_ms)
    # current memory -> the superseded one that brought it in (a pair current_first moved)
    replaced = {item.brought_by: item.memory_id for item in trace.items
                if item.brought_by is not None and item.brought_by in position}
    notes: dict[str, str] = {}
    for i, m in enumerate(rec.memories):
        note = _supersession(m, items.get(m.id), position, replaced)
        if note is None and (scores[i] < best_after[i] or scores[i] > worst_before[i]):
            note = _placement(m, items.get(m.id), position, reranked)
        if note:
            notes[m.id] = note
    return notes


SUPERSESSION_NOTES = ("superseded by #", "brought in by ", "brought in before ")
"""How the notes of ``_supersession`` begin (``format_recall`` counts them apart)."""


def _supersession(m: Memory, item: TraceItem | None, position: dict[str, int],
                  replaced: dict[str, str]) -> str | None:
    """Why ``m`` stands beside a memory it superseded or that superseded it (None when supersession did not move
    it); ``replaced`` maps each superseded memory to the current one it brought in."""
    if item is None:
        return None
    if item.brought_by is not None:
        if (item.superseded_by or m.superseded_by) == item.brought_by:  # the past-first order: the old one first
            return (f"brought in before {_ref(item.brought_by, position)}, which superseded it, for a question about "
                    "the past")
        return f"brought in by {_ref(item.brought_by, position)}, which it superseded"
    successor = replaced.get(m.id)
    if item.demoted and successor in position and position[successor] < position[m.id]:
        return f"superseded by #{position[successor]}, which is current: packed after it"
    return None


def _ref(memory_id: str, position: dict[str, int]) -> str:
    return f"#{position[memory_id]}" if memory_id in position else f"memory {memory_id} (not packed)"


def _placement(m: Memory, item: TraceItem | None, position: dict[str, int], reranked: bool) -> str | None:
    """The packing rule that put ``m`` where it is, in words, with the ranks (``#n``) of the memories it names."""

    def ref(memory_id: str) -> str:
        return _ref(memory_id, position)

    if item is not None and item.context_of:
        return f"context: the memory just before or after {ref(item.context_of)} in its document"
    if item is not None and item.later_statement:
        return (f"the same speaker said {ref(item.later_statement)} later on the same subject: packed after it, for a "
                "question about how things are now")
    if item is not None and item.demoted_as in ("question", "acknowledgement"):
        what = "only asks" if item.demoted_as == "question" else "only acknowledges"
        return f"it {what}: packed after the next memory that says something"
    if item is not None and item.found_by:
        return f"a message that LLM fact {ref(item.found_by)} cites, brought in at the fact's rank"
    if item is not None and item.covered_by:
        return (f"its evidence was already shown by {ref(item.covered_by)}, so it comes after the memories that "
                "add new evidence")
    cites = (item.cites if item is not None else None) or m.cites or []
    if cites:
        shown = [c for c in cites if c in position and position[c] < position[m.id]]
        if shown:
            return f"an LLM fact, placed below the message it cites ({ref(min(shown, key=position.__getitem__))})"
        return "an LLM fact, placed after the ranked memories: no message it cites was ranked above it"
    if reranked:
        return "the reranker's order (the score shown is the fusion's)"
    return None


def format_trace(rec: Recall, *, scores: bool = True, text_width: int = 60) -> str:
    """The trace as a table: per returned memory, its fused rank and score and its rank (and raw score)
    in every channel; then the parsed time constraint, channel sizes and stage timings."""
    trace = rec.trace
    if trace is None:
        return "no trace (recall ran without trace=True)"
    channels = [c for c in ("semantic", "keyword", "graph", "temporal") if c in trace.channel_sizes]
    items = {item.memory_id: item for item in trace.items}
    header = ["#", "fused", *(c if scores else CHANNEL_ABBREV[c] for c in channels), "tokens", "memory"]
    rows = []
    for rank, m in enumerate(rec.memories, start=1):
        item = items.get(m.id)
        cells: list[Any] = [rank, f"{item.fused_score:.4f}" if item else "-"]
        for c in channels:
            hit = item.channels.get(c) if item else None
            cells.append("-" if hit is None else f"{hit.rank} ({_num(hit.score)})" if scores else hit.rank)
        cells += [item.tokens if item else "-", clip(m.text, text_width)]
        rows.append(cells)
    lines = [format_table(header, rows, align="rr" + "r" * len(channels) + "rl")]
    info = [f"reference time {trace.reference_time:%Y-%m-%d %H:%M}"]
    if trace.time_range is not None:
        info.append(f"time constraint {_date(trace.time_range.start)} .. {_date(trace.time_range.end)}")
    info.append("candidates " + ", ".join(f"{c} {n}" for c, n in trace.channel_sizes.items()))
    lines.append(" · ".join(info))
    lines.append("stages (ms): " + format_timings(trace.timings_ms))
    return "\n".join(lines)


def format_timings(timings: dict[str, float]) -> str:
    """``embed 12.0 · semantic 1.3 · ... · total 30.1`` (the ``_ms`` suffixes dropped)."""
    return " · ".join(f"{k.removesuffix('_ms')} {v:.1f}" for k, v in timings.items())


def format_stats(bank_id: str, stats: dict[str, Any]) -> str:
    """One bank's counts; nested counts (per network, per link type) shown with their total."""
    lines = [f"bank {bank_id}"]
    for key, value in stats.items():
        if isinstance(value, dict):
            detail = ", ".join(f"{k} {v}" for k, v in value.items())
            lines.append(f"  {key:<10} {total(value):>7}" + (f"  ({detail})" if detail else ""))
        else:
            lines.append(f"  {key:<10} {value:>7}")
    return "\n".join(lines)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A plain-text table with padded columns; ``align`` holds ``l``/``r`` per column (default left)."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        parts = [c.rjust(w) if align[i:i + 1] == "r" else c.ljust(w) for i, (c, w) in pairs]
        return "  ".join(parts).rstrip()

    return "\n".join(line(row) for row in cells)


def when(m: Memory) -> str:
    """When a memory happened: one date, or ``start..end`` for a span of several days."""
    start = m.occurred_start or m.mentioned_at
    end = m.occurred_end or start
    if start is None:
        return "undated"
    if end is None or end.date() == start.date():
        return _date(start)
    return f"{_date(start)}..{_date(end)}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``"1 memory"``, ``"3 memories"``: ``n`` with the right form of the noun."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def total(value: Any) -> int:
    """A count that may be broken down (``{"world": 3, "experience": 2}`` -> 5) or plain."""
    return sum(value.values()) if isinstance(value, dict) else int(value or 0)


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _num(x: float) -> str:
    return f"{x:.3f}" if 1e-3 <= abs(x) < 1e4 else f"{x:.1e}" if x else "0"


def _date(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d}" if value is not None else "open"
