"""Entity-resolution benchmark: pairwise precision and recall of merges on a labelled set of scenarios.

The set (``data/entity_pairs.jsonl`` in this package, one scenario per line) covers confusable different
names (Emma/Emmanuel, Dan/Dana, Jon/John...), nicknames and short forms with and without supporting
evidence, case/diacritics/punctuation variants, partial names, different full names sharing a first name,
places and organisations (prefixes, acronyms), the same name in different banks, LoCoMo's speaker names
(names only), homonyms, and multi-mention stories.

A scenario is a list of retains, replayed in order, each ``{"bank": "b", "at": "3h", "facts": [...]}``
(bank defaults to ``"b"``; ``at`` is an offset from a fixed start in ``m``, ``h`` or ``d``). A fact is a
list of mentions ``[name, TYPE]`` or ``[name, TYPE, identity]``; the mentions that carry an identity are
scored, the others are context. Every retain goes through a real ``SQLiteGraphStore(":memory:")``,
``EntityResolver.resolve`` and ``store.add_units``, as the retain pipeline does. Each pair of scored
mentions of a scenario is gold-same when their identities are equal, and merged when the store holds both
under one entity. Precision = correct merges / merges; recall = correct merges / gold-same pairs.

The split into dev and test halves is fixed by scenario: the first byte of sha256(scenario id) is even for
dev, odd for test. Rules were designed looking at dev only; test is the headline.

With the bundled scenarios, the bench also scores the chat-mention set (``mentions.py``): precision and
recall of "is this a name" and type accuracy of the mentions the raw extractor keeps.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

from hindsight_core.config import EntityResolutionSettings

from .mentions import MENTIONS_DATA, format_mention_bench, run_mention_bench

DATA = Path(__file__).resolve().parent / "data" / "entity_pairs.jsonl"
SPLITS = ("dev", "test", "all")
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
_OFFSET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhd])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


@dataclass(frozen=True)
class ScoredMention:
    """Where a scored mention ended up: its bank and the id of the entity the store holds it under."""

    name: str
    identity: str
    bank: str
    entity_id: str | None
    retain: int


def load_scenarios(path: str | Path = DATA) -> list[dict[str, Any]]:
    """The scenarios of a JSONL file, in file order (blank lines and ``#`` comments skipped)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(json.loads(line))
    return out


def split_of(scenario_id: str) -> str:
    """``"dev"`` or ``"test"``: fixed by the first byte of sha256 of the scenario id."""
    return "dev" if hashlib.sha256(scenario_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def parse_offset(text: str) -> timedelta:
    """``"30m"``, ``"3h"``, ``"2d"`` (or a plain number of hours) -> timedelta."""
    match = _OFFSET.match(text)
    if match is None:
        return timedelta(hours=float(text))
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def replay(scenario: dict[str, Any], settings: EntityResolutionSettings | None = None) -> list[ScoredMention]:
    """Run a scenario's retains through a fresh in-memory SQLite store and the resolver; where each scored
    mention was stored."""
    from hindsight_core.extract.base import ExtractedEntity, ExtractedFact
    from hindsight_core.models import BankProfile, EntityType, Memory
    from hindsight_core.retain.entities import EntityResolver
    from hindsight_core.stores.base import UnitBatch
    from hindsight_core.stores.sqlite import SQLiteGraphStore

    store = SQLiteGraphStore(":memory:")
    try:
        resolver = EntityResolver(store, settings)
        banks: set[str] = set()
        scored: list[ScoredMention] = []
        for r_index, retain in enumerate(scenario["retains"]):
            bank = retain.get("bank", "b")
            if bank not in banks:
                store.create_bank(BankProfile(id=bank, name=bank))
                banks.add(bank)
            when = T0 + parse_offset(retain["at"])
            facts = [
                ExtractedFact(text=", ".join(m[0] for m in mentions), occurred_start=when, mentioned_at=when,
                              entities=[ExtractedEntity(name=m[0], type=EntityType(m[1])) for m in mentions])
                for mentions in retain["facts"]
            ]
            unit_ids = [f"{scenario['id']}:{r_index}:{i}" for i in range(len(facts))]
            res = resolver.resolve(bank, facts, unit_ids)
            units = [Memory(id=u, bank_id=bank, text=f.text, occurred_start=f.occurred_start,
                            mentioned_at=f.mentioned_at) for u, f in zip(unit_ids, facts, strict=True)]
            store.add_units(bank, UnitBatch(units=units, new_entities=res.new_entities,
                                            updated_entities=res.updated_entities, mentions=res.mentions))
            for unit_id, mentions in zip(unit_ids, retain["facts"], strict=True):
                for mention in mentions:
                    if len(mention) > 2:
                        entity_id = _stored_entity(store, bank, unit_id, mention[0])
                        scored.append(ScoredMention(mention[0], mention[2], bank, entity_id, r_index))
        return scored
    finally:
        store.close()


def _stored_entity(store: Any, bank: str, unit_id: str, name: str) -> str | None:
    """The entity the unit mentions under this name: the one holding the name (or an alias), else one of the
    unit's entities whose names normalise alike; None when the store holds no such mention."""
    from hindsight_core.text.names import normalise_name

    entity = store.find_entity(bank, name)
    if entity is not None and unit_id in store.units_of_entity(bank, entity.id):
        return str(entity.id)
    key = normalise_name(name)
    for unit in store.get_units(bank, [unit_id]):
        for ename in unit.entities:
            other = store.find_entity(bank, ename)
            if other is not None and key in {normalise_name(n) for n in (other.name, *other.aliases)}:
                return str(other.id)
    return None


def score_pairs(scenario: dict[str, Any], scored: list[ScoredMention]) -> list[dict[str, Any]]:
    """Every pair of scored mentions with gold (same identity) and got (same stored entity)."""
    pairs = []
    for a, b in combinations(scored, 2):
        got = a.entity_id is not None and a.bank == b.bank and a.entity_id == b.entity_id
        pairs.append({"scenario": scenario["id"], "category": scenario.get("category", ""),
                      "a": f"{a.name} ({a.bank}, retain {a.retain})", "b": f"{b.name} ({b.bank}, retain {b.retain})",
                      "expected": "same" if a.identity == b.identity else "different",
                      "got": "same" if got else "different"})
    return pairs


def metrics(pairs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Pairwise precision/recall/F1 of merges with the counts they come from."""
    c: Counter[str] = Counter()
    for p in pairs:
        c["pairs"] += 1
        gold, got = p["expected"] == "same", p["got"] == "same"
        c["gold_same"] += gold
        c["merges"] += got
        c["correct_merges"] += gold and got
        c["false_merges"] += got and not gold
        c["missed_merges"] += gold and not got
    precision = c["correct_merges"] / c["merges"] if c["merges"] else 1.0
    recall = c["correct_merges"] / c["gold_same"] if c["gold_same"] else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    keys = ("pairs", "gold_same", "merges", "correct_merges", "false_merges", "missed_merges")
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            **{k: c[k] for k in keys}}


def run_entity_bench(
    split: str = "test", path: str | Path = DATA, settings: EntityResolutionSettings | None = None,
    mentions: str | Path | bool | None = True,
) -> dict[str, Any]:
    """Replay the scenarios of ``split`` (dev, test or all) and score them.

    ``mentions``: also score the chat-mention set (``mentions.py``: is each kept mention a name, of the
    right type) from this path; ``True`` means the bundled set when ``path`` is the bundled scenario set,
    else none; ``False``/``None`` skips it. Its result is under ``"mentions"``.

    Returns ``{"split", "data", "scenarios", "metrics", "by_split", "by_category", "errors"}``: ``metrics``
    for the split asked, ``by_split`` for dev and test separately (those present), ``errors`` every pair
    whose merge decision was wrong (``scenario, category, a, b, expected, got``).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; one of {', '.join(SPLITS)}")
    scenarios = [s for s in load_scenarios(path) if split == "all" or split_of(s["id"]) == split]
    pairs_by_split: dict[str, list[dict[str, Any]]] = {}
    for scenario in scenarios:
        pairs = score_pairs(scenario, replay(scenario, settings))
        pairs_by_split.setdefault(split_of(scenario["id"]), []).extend(pairs)
    everything = [p for ps in pairs_by_split.values() for p in ps]
    by_category: dict[str, list[dict[str, Any]]] = {}
    for p in everything:
        by_category.setdefault(p["category"], []).append(p)
    if mentions is True:
        mentions = MENTIONS_DATA if Path(path).resolve() == DATA else None
    mention_result = run_mention_bench(split, mentions) if mentions else None
    return {
        **({"mentions": mention_result} if mention_result is not None else {}),
        "split": split,
        "data": str(path),
        "scenarios": len(scenarios),
        "metrics": metrics(everything),
        "by_split": {name: metrics(pairs_by_split[name]) for name in ("test", "dev") if name in pairs_by_split},
        "by_category": {k: metrics(v) for k, v in sorted(by_category.items())},
        "errors": [p for p in everything if p["expected"] != p["got"]],
    }


def format_entity_bench(result: dict[str, Any]) -> str:
    """A plain-text report: the figures per split (test first), per category, then every error."""
    def line(name: str, m: dict[str, Any]) -> str:
        return (f"{name:<18} precision {m['precision']:.4f}  recall {m['recall']:.4f}  f1 {m['f1']:.4f}  "
                f"pairs {m['pairs']}  gold-same {m['gold_same']}  merges {m['merges']}  "
                f"false merges {m['false_merges']}  missed {m['missed_merges']}")

    out = [f"entity resolution, {result['scenarios']} scenarios ({result['split']}) from {result['data']}"]
    for name, m in result["by_split"].items():
        out.append(line(name, m))
    if len(result["by_split"]) > 1:
        out.append(line("all", result["metrics"]))
    out.append("\nby category")
    out.extend(line("  " + k, m) for k, m in result["by_category"].items())
    out.append(f"\nerrors ({len(result['errors'])})")
    out.extend(f"  [{split_of(e['scenario'])}] {e['scenario']}: {e['a']} ~ {e['b']}: expected {e['expected']}, "
               f"got {e['got']}" for e in result["errors"])
    if "mentions" in result:
        out.append("\n" + format_mention_bench(result["mentions"]))
    return "\n".join(out)
