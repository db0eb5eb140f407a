"""Date benchmark: does a stated sentence get the right occurrence days, plans and reports alike?

The set (``data/date_sentences.jsonl`` in this package, written for the project) holds one sentence per line
with the time it was said and the gold days (first and last, inclusive; ``null`` when the sentence names no
time, e.g. a duration). Kinds: ``plan`` and ``report`` (a month or relative phrase whose direction the tense
decides), ``holiday``, ``date_year`` and ``date_no_year`` (explicit dates with and without a year), ``weekday``,
``day_count`` and ``week_count`` (counts from now, "ago", "next week"...), ``season`` and ``range``.

Each sentence goes through ``hindsight_core.temporal.statement_time`` (what raw retain stores as a message's
occurrence); the answer is correct when its days equal the gold days exactly (a part of a day counts as its
day), or when both are empty. The split is the file's ``split`` field (alternating within each kind, fixed
when the set was written, before any rule was tuned); rules were tuned on dev only, test is the headline.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "date_sentences.jsonl"
SPLITS = ("dev", "test", "all")

DayRange = tuple[date, date] | None
Resolver = Callable[[str, datetime], DayRange]


def load_sentences(path: str | Path = DATA) -> list[dict[str, Any]]:
    """The labelled sentences of a JSONL file, in file order (blank lines and ``#`` comments skipped)."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = json.loads(line)
            for key in ("id", "split", "kind", "reference_time", "text"):
                if not isinstance(row.get(key), str):
                    raise ValueError(f"missing or non-text field {key!r}")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise ValueError(f"{path}:{n}: {exc}") from None
        out.append(row)
    return out


def _gold(row: dict[str, Any]) -> DayRange:
    if row.get("start") is None:
        return None
    return date.fromisoformat(row["start"]), date.fromisoformat(row["end"])


def statement_days(text: str, reference_time: datetime) -> DayRange:
    """The engine's answer: the days of ``statement_time`` in the reference's timezone (None: no time found)."""
    from hindsight_core.extract.dates import constraint_days
    from hindsight_core.temporal import statement_time

    return constraint_days(statement_time(text, reference_time), reference_time)


def run_date_bench(split: str = "all", path: str | Path = DATA, resolver: Resolver = statement_days) -> dict[str, Any]:
    """Accuracy by split and kind; ``split`` limits the rows scored (``dev``, ``test`` or ``all``).

    Returns ``{"splits": {split: {"accuracy", "n", "kinds": {kind: {"accuracy", "n"}}}}, "errors": [...]}``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    rows = [r for r in load_sentences(path) if split == "all" or r["split"] == split]
    tally: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    errors = []
    for row in rows:
        ref = datetime.fromisoformat(row["reference_time"])
        got = resolver(row["text"], ref)
        ok = got == _gold(row)
        for key in (row["split"], "all") if split == "all" else (row["split"],):
            for kind in (row["kind"], "*"):
                cell = tally[key][kind]
                cell[0] += ok
                cell[1] += 1
        if not ok:
            errors.append({"id": row["id"], "split": row["split"], "kind": row["kind"], "text": row["text"],
                           "reference_time": row["reference_time"], "gold": _fmt(_gold(row)), "got": _fmt(got)})
    splits = {}
    for key, kinds in tally.items():
        total = kinds.pop("*")
        splits[key] = {"accuracy": total[0] / total[1], "n": total[1],
                       "kinds": {k: {"accuracy": c[0] / c[1], "n": c[1]} for k, c in sorted(kinds.items())}}
    return {"splits": splits, "errors": errors}


def _fmt(rng: DayRange) -> str:
    if rng is None:
        return "-"
    return rng[0].isoformat() if rng[0] == rng[1] else f"{rng[0].isoformat()}..{rng[1].isoformat()}"


def format_date_bench(result: dict[str, Any]) -> str:
    """A table of accuracy by kind (one column per split), then every wrong answer."""
    splits = [s for s in ("dev", "test", "all") if s in result["splits"]]
    kinds = sorted({k for s in splits for k in result["splits"][s]["kinds"]})
    lines = ["| kind | " + " | ".join(splits) + " |", "|---|" + "---:|" * len(splits)]
    for kind in kinds:
        cells = []
        for s in splits:
            c = result["splits"][s]["kinds"].get(kind)
            cells.append(f"{c['accuracy']:.3f} ({c['n']})" if c else "-")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append("| **all kinds** | " + " | ".join(
        f"**{result['splits'][s]['accuracy']:.3f}** ({result['splits'][s]['n']})" for s in splits) + " |")
    if result["errors"]:
        lines += ["", f"wrong ({len(result['errors'])}):"]
        for e in result["errors"]:
            lines.append(f"  [{e['split']}] {e['id']} said {e['reference_time'][:10]}: {e['text']!r} "
                         f"gold {e['gold']}, got {e['got']}")
    return "\n".join(lines)
