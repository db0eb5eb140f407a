"""Plain-text rendering for people: recall results and traces, bank statistics and tables.

Shared by the command line (``cli.py``) and the demo (``demo.py``), so that neither imports the other. Imports
nothing heavy: the models are only named in type hints.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import Memory, Recall

CHANNEL_ABBREV = {"semantic": "sem", "keyword": "kw", "graph": "graph", "temporal": "time"}
"""Short column names of the recall channels, in the order tables show them."""


def format_recall(rec: Recall, budget: int) -> str:
    """Ranked memories, each with score, network, date, sources and document, then tokens used."""
    if not rec.memories:
        return f"no memories found for {rec.query!r}"
    lines = []
    for rank, m in enumerate(rec.memories, start=1):
        lines.append(f"{rank:>2}. {m.text}")
        details = [f"score {m.score:.4f}" if m.score is not None else "score -", m.network.value, when(m)]
        if m.sources:
            details.append("sources " + ", ".join(m.sources))
        if m.document_id:
            details.append(f"doc {m.document_id}")
        lines.append("    " + " · ".join(details))
    lines.append(f"{plural(len(rec.memories), 'memory', 'memories')}, {rec.tokens}/{budget} tokens")
    return "\n".join(lines)


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
