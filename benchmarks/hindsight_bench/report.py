"""Writing benchmark results: JSON, markdown and PNG plots in one results folder, plus run metadata.

matplotlib is imported lazily with the Agg backend (no display needed), so importing a benchmark module
stays cheap and works on a headless machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def run_info() -> dict[str, Any]:
    """Where and when a result was measured: machine, CPU count and load, Python, git commit."""
    info: dict[str, Any] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    with contextlib.suppress(OSError):  # not on every platform
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    repo = Path(__file__).resolve().parent  # git finds the checkout from here (editable install)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                                timeout=5, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, timeout=5, check=False).stdout.strip()
        if commit:
            info["git_commit"] = commit
            info["git_dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented JSON (``default=str`` for datetimes); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_text(path: Path, text: str) -> Path:
    """Write a text file (markdown), creating the folder; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Lines of a markdown table; floats are shown with one decimal."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.1f}"
        return "-" if v is None else str(v)

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)  # headless: never try to open a window
    import matplotlib.pyplot as plt

    return plt


def line_plot(
    path: Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    reference: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    logx: bool = False,
    logy: bool = False,
) -> Path:
    """One line per series (x values, y values); reference series are drawn as dashed markers."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for name, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o", markersize=3, label=name)
    for name, (xs, ys) in (reference or {}).items():
        ax.plot(list(xs), list(ys), linestyle="--", marker="s", color="grey", label=name)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def bar_plot(
    path: Path,
    groups: Sequence[str],
    bars: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str,
) -> Path:
    """Grouped bars: for each name in ``bars`` one bar per group."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(min(12.0, max(6.0, 0.9 * len(groups) + 2)), 4.8), dpi=110)
    width = 0.8 / max(1, len(bars))
    for i, (name, values) in enumerate(bars.items()):
        xs = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, list(values), width=width, label=name)
    ax.set_xticks(list(range(len(groups))))
    ax.set_xticklabels(list(groups), rotation=20, ha="right", fontsize=8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    if len(bars) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
