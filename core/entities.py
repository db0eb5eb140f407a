"""Entity resolution: map extracted mentions to canonical entities of a bank (paper 4.1.3).

A mention joins an existing entity on an exact (case-insensitive) name or alias match, or when a
weighted score of string similarity, co-occurrence with the other entities of the same fact, and temporal
proximity to the entity's last mention passes a threshold. Otherwise it becomes a new entity.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .config import EntityResolutionSettings
from .extract.base import ExtractedEntity, ExtractedFact
from .models import Entity, EntityType
from .stores.base import GraphStore, Mention


@dataclass
class Resolution:
    """Result of resolving the mentions of one retain."""

    new_entities: list[Entity] = field(default_factory=list)
    updated_entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    names: list[list[str]] = field(default_factory=list)  # canonical names per fact


def _compatible(a: EntityType, b: EntityType) -> bool:
    return a == b or EntityType.OTHER in (a, b)


class EntityResolver:
    """Resolves mentions against one bank's entities."""

    def __init__(self, store: GraphStore, settings: EntityResolutionSettings | None = None) -> None:
        self.store = store
        self.settings = settings or EntityResolutionSettings()

    def score(self, similarity: float, cooccurrence: float, dt_days: float | None) -> float:
        """Combined match score in [0, 1] from the three signals (each in [0, 1])."""
        s = self.settings
        temporal = math.exp(-abs(dt_days) / s.temporal_scale_days) if dt_days is not None else 0.0
        total = s.string_weight + s.cooccurrence_weight + s.temporal_weight
        if total <= 0:
            return similarity
        return (s.string_weight * similarity + s.cooccurrence_weight * cooccurrence
                + s.temporal_weight * temporal) / total

    def resolve(self, bank_id: str, facts: Sequence[ExtractedFact], unit_ids: Sequence[str]) -> Resolution:
        """Resolve every fact's mentions; returns entity rows to write and the unit-entity mentions."""
        from rapidfuzz import fuzz, process

        existing = self.store.list_entities(bank_id)
        by_id: dict[str, Entity] = {e.id: e for e in existing}
        index: dict[str, str] = {}
        for e in existing:
            for n in (e.name, *e.aliases):
                index.setdefault(n.casefold(), e.id)
        new_ids: set[str] = set()
        touched: set[str] = set()
        result = Resolution()

        for fact, unit_id in zip(facts, unit_ids, strict=True):
            when = fact.occurred_start or fact.mentioned_at
            names: list[str] = []
            resolved_here: list[str] = []
            for mention in _dedupe(fact.entities):
                eid = index.get(mention.name.casefold())
                if eid is None and len(mention.name) >= 3:
                    eid = self._fuzzy(bank_id, mention, when, resolved_here, index, by_id, fuzz, process)
                    if eid is not None:
                        index[mention.name.casefold()] = eid
                        entity = by_id[eid]
                        if mention.name not in entity.aliases and mention.name != entity.name:
                            entity.aliases.append(mention.name)
                if eid is None:
                    eid = str(uuid.uuid4())
                    by_id[eid] = Entity(id=eid, bank_id=bank_id, name=mention.name, type=mention.type)
                    index[mention.name.casefold()] = eid
                    new_ids.add(eid)
                entity = by_id[eid]
                if eid in resolved_here:
                    continue
                if entity.type == EntityType.OTHER and mention.type != EntityType.OTHER:
                    entity.type = mention.type
                entity.mention_count += 1
                if when is not None:
                    entity.first_seen = min(entity.first_seen or when, when)
                    entity.last_seen = max(entity.last_seen or when, when)
                touched.add(eid)
                resolved_here.append(eid)
                names.append(entity.name)
                result.mentions.append(Mention(unit_id=unit_id, entity_id=eid))
            result.names.append(names)

        result.new_entities = [by_id[i] for i in by_id if i in new_ids]
        result.updated_entities = [by_id[i] for i in by_id if i in touched and i not in new_ids]
        return result

    def _fuzzy(
        self,
        bank_id: str,
        mention: ExtractedEntity,
        when: datetime | None,
        context_ids: list[str],
        index: dict[str, str],
        by_id: dict[str, Entity],
        fuzz: object,
        process: object,
    ) -> str | None:
        s = self.settings
        matches = process.extract(  # type: ignore[attr-defined]
            mention.name.casefold(), list(index), scorer=fuzz.WRatio,  # type: ignore[attr-defined]
            score_cutoff=s.min_string_similarity * 100, limit=5,
        )
        candidates: dict[str, float] = {}
        for choice, sim, _ in matches:
            eid = index[choice]
            if _compatible(by_id[eid].type, mention.type):
                candidates[eid] = max(candidates.get(eid, 0.0), sim / 100.0)
        if not candidates:
            return None
        cooc: dict[tuple[str, str], int] = {}
        if context_ids:
            cooc = self.store.entity_cooccurrence(bank_id, [*candidates, *context_ids])
        best, best_score = None, -1.0
        for eid, sim in candidates.items():
            shared = sum(1 for c in context_ids if cooc.get(tuple(sorted((eid, c))), 0) > 0)  # type: ignore[arg-type]
            co = shared / len(context_ids) if context_ids else 0.0
            last = by_id[eid].last_seen
            dt = abs((when - last).total_seconds()) / 86400 if when is not None and last is not None else None
            score = self.score(sim, co, dt)
            if score > best_score:
                best, best_score = eid, score
        return best if best_score >= s.threshold else None


def _dedupe(entities: Sequence[ExtractedEntity]) -> list[ExtractedEntity]:
    seen: dict[str, ExtractedEntity] = {}
    for e in entities:
        name = " ".join(e.name.split())[:200]
        if name and name.casefold() not in seen:
            seen[name.casefold()] = ExtractedEntity(name=name, type=e.type)
    return list(seen.values())
