"""Entity-mention benchmark: is each mention the raw extractor keeps a name, and is its type right?

The set (``data/chat_mentions.jsonl``, one conversation per line, written for this project: not LoCoMo text)
holds chat conversations with, per message, the names it contains (``"Name:TYPE"``) and the capitalised or
chat words that are not names (``not_names``: interjections, chat spellings, weekdays, terms of address,
common nouns and activities, recipe and list lines). Each conversation is one raw retain's worth of messages:
it goes through ``RawExtractor`` (spaCy NER and the rules around it, speakers passed as in ``retain``).

Per message, the mentions kept are compared with the gold names by key (``normalise_name`` without a
leading "the"). The message's own speaker, which the extractor always adds, counts only when the text names
them. Precision = kept mentions that are gold names / kept mentions (every kept mention counts, listed as a
not-name or not); recall = gold names kept / gold names; type accuracy over the gold names kept. The split
is fixed per conversation by its ``split`` field (alternating in file order); rules were tuned on dev only.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MENTIONS_DATA = Path(__file__).resolve().parent / "data" / "chat_mentions.jsonl"
T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)


def load_conversations(path: str | Path = MENTIONS_DATA) -> list[dict[str, Any]]:
    """The conversations of a JSONL file, in file order (blank lines and ``#`` comments skipped)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def mention_key(name: str) -> str:
    """The key two mentions are compared by: the entity key, without a leading article."""
    from hindsight_core.text.names import normalise_name

    key = normalise_name(name)
    return key[4:] if key.startswith("the ") and len(key) > 4 else key


def parse_label(label: str) -> tuple[str, str]:
    """``"Name:TYPE"`` -> (name, TYPE); the name may itself hold a colon ("re:Invent:CONCEPT")."""
    name, _, etype = label.rpartition(":")
    return name, etype


def _names_speaker(text: str, speaker: str) -> bool:
    """Whether the message's own words name its speaker, as the recogniser reads them ("need a jack" does not
    name Jack; "Jack here!" does)."""
    from hindsight_core.extract.ner import EntityRecognizer

    if not speaker or re.search(rf"(?<![\w']){re.escape(speaker)}(?![\w])", text, re.IGNORECASE) is None:
        return False
    found = EntityRecognizer().recognize([text], [speaker])[0]
    return any(mention_key(e.name) == mention_key(speaker) for e in found)


def score_conversation(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one conversation through the raw extractor; one row per message with gold and kept mentions."""
    from hindsight_core.extract.raw_extractor import RawExtractor
    from hindsight_core.models import Message

    messages = [Message(speaker=m[0], text=m[1], id=f"{conv['id']}:{i}") for i, m in enumerate(conv["messages"])]
    facts = RawExtractor().extract(messages, document_time=T0)
    by_source = {f.sources[0]: f for f in facts}
    rows = []
    for message, (speaker, text, names, not_names) in zip(messages, conv["messages"], strict=True):
        fact = by_source.get(message.id)
        kept: dict[str, tuple[str, str]] = {}
        for e in fact.entities if fact is not None else []:
            key = mention_key(e.name)
            if key == mention_key(speaker) and not _names_speaker(text, speaker):
                continue  # the speaker of the message, added by the extractor, is not a mention in the text
            kept.setdefault(key, (e.name, e.type.value))
        gold = {mention_key(parse_label(n)[0]): parse_label(n) for n in names}
        rows.append({"conversation": conv["id"], "split": conv["split"], "text": text, "kept": kept, "gold": gold,
                     "not_names": {mention_key(n) for n in not_names}})
    return rows


def mention_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision, recall and F1 of "is this a name", type accuracy, and the counts they come from."""
    c: Counter[str] = Counter()
    for r in rows:
        kept, gold = r["kept"], r["gold"]
        c["kept"] += len(kept)
        c["gold"] += len(gold)
        c["not_names"] += len(r["not_names"])
        c["not_names_kept"] += len(r["not_names"] & set(kept))
        for key, (_name, etype) in kept.items():
            if key in gold:
                c["correct"] += 1
                c["type_correct"] += gold[key][1] == etype
    precision = c["correct"] / c["kept"] if c["kept"] else 1.0
    recall = c["correct"] / c["gold"] if c["gold"] else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    type_acc = c["type_correct"] / c["correct"] if c["correct"] else 1.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "type_accuracy": round(type_acc, 4), "messages": len(rows),
            **{k: c[k] for k in ("gold", "kept", "correct", "type_correct", "not_names", "not_names_kept")}}


def mention_errors(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Every kept non-name, missed name and wrong type, with its message."""
    out = []
    for r in rows:
        kept, gold = r["kept"], r["gold"]
        base = {"split": r["split"], "conversation": r["conversation"], "text": r["text"]}
        for key, (name, etype) in kept.items():
            if key not in gold:
                out.append({**base, "kind": "not a name", "mention": f"{name} ({etype})"})
            elif gold[key][1] != etype:
                out.append({**base, "kind": "type", "mention": f"{name}: {etype}, gold {gold[key][1]}"})
        for key, (name, etype) in gold.items():
            if key not in kept:
                out.append({**base, "kind": "missed", "mention": f"{name} ({etype})"})
    return out


def run_mention_bench(split: str = "test", path: str | Path = MENTIONS_DATA) -> dict[str, Any]:
    """Score the conversations of ``split`` (dev, test or all): ``metrics``, ``by_split`` and ``errors``."""
    if split not in ("dev", "test", "all"):
        raise ValueError(f"unknown split {split!r}; one of dev, test, all")
    convs = [c for c in load_conversations(path) if split == "all" or c["split"] == split]
    rows = [row for conv in convs for row in score_conversation(conv)]
    by_split = {s: mention_metrics([r for r in rows if r["split"] == s]) for s in ("test", "dev")
                if any(r["split"] == s for r in rows)}
    return {"split": split, "data": str(path), "conversations": len(convs), "metrics": mention_metrics(rows),
            "by_split": by_split, "errors": mention_errors(rows)}


def format_mention_bench(result: dict[str, Any]) -> str:
    """A plain-text report: the figures per split (test first), then every error."""
    def line(name: str, m: dict[str, Any]) -> str:
        return (f"{name:<6} precision {m['precision']:.4f}  recall {m['recall']:.4f}  f1 {m['f1']:.4f}  "
                f"type accuracy {m['type_accuracy']:.4f}  messages {m['messages']}  gold names {m['gold']}  "
                f"kept {m['kept']}  listed not-names kept {m['not_names_kept']}/{m['not_names']}")

    out = [f"entity mentions ('is this a name'), {result['conversations']} conversations ({result['split']}) "
           f"from {result['data']}"]
    out.extend(line(name, m) for name, m in result["by_split"].items())
    if len(result["by_split"]) > 1:
        out.append(line("all", result["metrics"]))
    out.append(f"\nmention errors ({len(result['errors'])})")
    out.extend(f"  [{e['split']}] {e['kind']}: {e['mention']}  <- {e['text'][:90]!r}" for e in result["errors"])
    return "\n".join(out)
