"""Supersession on real chat: what the model-free rules hide when people talk as they do (``hindsight bench updates
--real-chat``).

The update set (``data/updates.jsonl``) is written for the project: its changes are said plainly. Real chat uses
the same words in other senses ("left a lasting impression", "too far gone", "I stopped and got food"), and a wrong
supersession hides a true message. So the dev data's real chats (``realtalk_dev.json`` and LoCoMo's dev half) are
retained raw, one session at a time, and every supersession the rules make is judged against
``data/real_chat_supersessions.jsonl``: pairs read beside their two messages and labelled right or wrong. A pair no
row matches is printed as unlabelled, to be read before a rule change lands. Dev data only: LoCoMo's test half is not
read here.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LABELS = Path(__file__).resolve().parent / "data" / "real_chat_supersessions.jsonl"


@dataclass(frozen=True)
class Label:
    """One supersession read by a person: the start of each message's text and whether it is right."""

    source: str
    old: str
    new: str
    right: bool
    why: str

    def matches(self, old: str, new: str) -> bool:
        """Whether a supersession of ``old`` by ``new`` (the memories' texts) is this one."""
        return old.startswith(self.old) and new.startswith(self.new)


def load_labels(path: str | Path = LABELS) -> list[Label]:
    """The labelled pairs (the ``_meta`` row skipped)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        if not row or "_meta" in row:
            continue
        if row.get("label") not in ("right", "wrong"):
            raise ValueError(f"{path}: label must be right or wrong: {row}")
        out.append(Label(row["source"], row["old"], row["new"], row["label"] == "right", row.get("why", "")))
    return out


def supersessions_made(sources: dict[str, list[dict[str, Any]]], root: Path, *,
                       log: Callable[[str], None] = print, open_kwargs: dict[str, Any] | None = None,
                       ) -> list[dict[str, str]]:
    """Retain every conversation of ``sources`` (name -> LoCoMo-format samples) raw into its own bank under
    ``root`` and return every supersession made: {source, conversation, old, new, cue}."""
    from hindsight_core.cli.formats import locomo_sessions
    from hindsight_core.hindsight import Hindsight

    out: list[dict[str, str]] = []
    with Hindsight.open(root, **(open_kwargs or {})) as hs:
        for source, samples in sources.items():
            for i, sample in enumerate(samples):
                name = str(sample.get("sample_id", i))
                bank = hs.bank(f"{source}-{i}")
                started = time.perf_counter()
                for session in locomo_sessions(sample):
                    bank.retain(session.messages, document_id=session.document_id, timestamp=session.timestamp,
                                extract=False)
                memories = {m.id: m for m in bank.memories(sorted(hs.store.unit_ids(bank.id)))}
                made = [(m, memories.get(m.superseded_by or "")) for m in memories.values() if m.superseded_by]
                for old, new in made:
                    how = old.metadata.get("supersession") if isinstance(old.metadata, dict) else None
                    out.append({"source": source, "conversation": name, "old": old.text,
                                "new": new.text if new is not None else "?",
                                "cue": str(how.get("cue", "")) if isinstance(how, dict) else ""})
                log(f"real chat [{source}] {name}: {len(memories)} memories, {len(made)} supersessions "
                    f"({time.perf_counter() - started:.0f} s)")
    return out


def judge(made: Sequence[dict[str, str]], labels: Sequence[Label]) -> dict[str, Any]:
    """Each supersession made, labelled right, wrong or unlabelled; counts per source and precision over the
    labelled ones."""
    rows = []
    for s in made:
        label = next((x for x in labels if x.source == s["source"] and x.matches(s["old"], s["new"])), None)
        verdict = "unlabelled" if label is None else "right" if label.right else "wrong"
        rows.append({**s, "verdict": verdict, "why": label.why if label is not None else ""})
    by_source: dict[str, dict[str, Any]] = {}
    for source in sorted({r["source"] for r in rows} | {x.source for x in labels}):
        mine = [r for r in rows if r["source"] == source]
        right = sum(r["verdict"] == "right" for r in mine)
        wrong = sum(r["verdict"] == "wrong" for r in mine)
        by_source[source] = {"made": len(mine), "right": right, "wrong": wrong, "unlabelled": len(mine) - right - wrong,
                             "precision": round(right / (right + wrong), 3) if right + wrong else None}
    return {"sources": by_source, "supersessions": rows}


def run_real_chat(data_files: dict[str, Path], *, labels_path: str | Path = LABELS, workdir: str | Path | None = None,
                  log: Callable[[str], None] = print, open_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Retain the dev data's real chats raw and judge every supersession; ``data_files``: ``realtalk`` ->
    realtalk_dev.json, ``locomo`` -> locomo10.json (its dev half only)."""
    from .locomo import split_samples

    sources: dict[str, list[dict[str, Any]]] = {}
    for source, path in data_files.items():
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
        sources[source] = split_samples(samples, "dev")
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-real-chat-") if workdir is None else None
    root = Path(workdir) if workdir is not None else Path(tmp.name)  # type: ignore[union-attr]
    try:
        made = supersessions_made(sources, root, log=log, open_kwargs=open_kwargs)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return judge(made, load_labels(labels_path))


def format_real_chat(result: dict[str, Any]) -> str:
    """A table per source, then every supersession that is wrong or unlabelled with its two messages."""
    from .report import md_table

    lines = ["Supersession on real chat (dev data, raw path): every supersession the rules made, against labels "
             "given by reading", ""]
    lines += md_table(["source", "made", "right", "wrong", "unlabelled (read them)", "precision (labelled)"],
                      [[s, str(m["made"]), str(m["right"]), str(m["wrong"]), str(m["unlabelled"]),
                        "-" if m["precision"] is None else f"{m['precision']:.2f}"]
                       for s, m in result["sources"].items()])
    for row in result["supersessions"]:
        if row["verdict"] != "right":
            lines += ["", f"{row['verdict'].upper()} [{row['source']} {row['conversation']}] cue {row['cue']!r}"
                          + (f" ({row['why']})" if row["why"] else ""),
                      f"  old: {row['old'][:240]}", f"  new: {row['new'][:240]}"]
    return "\n".join(lines)
