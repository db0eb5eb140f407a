"""Entity resolution: map extracted mentions to canonical entities of a bank (paper 4.1.3).

Precision first: two different people merged mix their observations, links and graph recall, while an
entity left split only costs some recall. So:

1. **Same key**: a mention whose ``normalise_name`` equals the key of an entity's name or alias *is* that
   entity (case, diacritics, quotes, possessive, initials; the stores key entities by it), whatever the types.
2. **Same letters**: a name spelled with other spacing, hyphens or apostrophes ("Coca-Cola" / "Coca Cola",
   "O'Brien" / "OBrien") joins the one type-compatible entity spelled with the same letters.
3. **Related names need evidence**: a short form (a nickname from the tables in ``names``: "Em" / "Emma",
   "Dave" / "David"), a partial name (a single name equal to the first or last name of a person's full name,
   or a leading part of a place's or organisation's name: "New York" / "New York City") or an acronym
   ("NYC", "UN") joins an existing entity only when

   - the types are compatible (equal, or one is OTHER),
   - there is supporting evidence: another entity named in the same fact has been named together with the
     candidate before (in a stored unit or an earlier fact of the same retain), and points at it: at least
     ``min_support`` of that entity's earlier mentions were with the candidate, so that an entity named in
     nearly every fact (the user, a conversation's speaker) is no evidence for everyone it co-occurs with;
     ``min_shared_entities`` such entities are needed,
   - exactly one existing entity qualifies (ambiguous -> a new entity).

   Time closeness is never evidence, and neither is string similarity: "Emma" / "Emmanuel", "Dan" / "Dana",
   "Jon" / "John" stay apart however close in time.
4. Otherwise the mention becomes a new entity. Two different names in one fact are two entities.

**Types are voted.** Each mention records the type it is evidence for and how strong the evidence is
(``ExtractedEntity.evidence``: a speaker, a cue or a gazetteer, a model's label, a guess); an entity's type is the
one its mentions' evidence supports most (``stores.records.voted_type``), across every retain into the bank: the
store recounts it inside each retain's transaction from all the entity's mentions. Within one retain the resolver
votes the same way over the bank's type (as one vote of the weight its mentions hold) and this retain's evidence,
so that a new entity is stored with the type its mentions support.

Relations are checked against the entity's fullest name (most words, then longest, among name and aliases),
so that once "Emma" is known as "Emma Watson", "Emma Stone" cannot join it through the bare first name.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..config import EntityResolutionSettings
from ..extract.base import ExtractedEntity, ExtractedFact
from ..models import Entity, EntityType
from ..stores.base import EntityStore, Mention
from ..stores.records import voted_type
from ..text.names import compact_name, is_short_form, name_tokens, normalise_name, short_form_relatives

__all__ = ["EntityResolver", "Resolution", "name_relation"]

# Titles dropped before comparing person names ("Dr. Smith" is a partial form of "Anna Smith").
_HONORIFICS = frozenset({"mr", "mrs", "ms", "mx", "miss", "mister", "dr", "prof", "sir", "dame"})
# Words an acronym skips ("MIT": Massachusetts Institute of Technology).
_ACRONYM_SKIP = frozenset({"of", "the", "and", "&", "for", "a", "an", "in", "on", "at", "de", "la", "du", "des",
                           "del", "der", "von", "van"})
_MAX_NAME = 200


@dataclass
class Resolution:
    """Result of resolving the mentions of one retain."""

    new_entities: list[Entity] = field(default_factory=list)
    updated_entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    names: list[list[str]] = field(default_factory=list)  # canonical names per fact


def _compatible(a: EntityType, b: EntityType) -> bool:
    return a == b or EntityType.OTHER in (a, b)


def _person_tokens(tokens: list[str]) -> list[str]:
    rest = [t for t in tokens if t not in _HONORIFICS]
    return rest or tokens


def _initials(tokens: Sequence[str]) -> str:
    words = [t for t in tokens if t not in _ACRONYM_SKIP]
    return "".join(w[0] for w in words) if len(words) >= 2 else ""


def name_relation(mention: str, mention_type: EntityType, name: str, name_type: EntityType,
                  settings: EntityResolutionSettings | None = None) -> str | None:
    """How two normalised names may denote one entity: ``"same"`` (equal keys), ``"spelling"`` (same letters),
    ``"short-form"``, ``"partial"`` or ``"acronym"`` (each needs evidence to merge), or None.

    Symmetric in the two names. Types only choose the rules (person names match on first or last name,
    other names on a leading part); their compatibility is checked by the caller.
    """
    s = settings or EntityResolutionSettings()
    if mention == name:
        return "same"
    if compact_name(mention) == compact_name(name):
        return "spelling"
    person = EntityType.PERSON in (mention_type, name_type)
    a, b = name_tokens(mention), name_tokens(name)
    if person:
        a, b = _person_tokens(a), _person_tokens(b)
    short, long = (a, b) if (len(a), len(" ".join(a))) <= (len(b), len(" ".join(b))) else (b, a)
    if not short or not long:
        return None
    if len(short) == len(long):
        # Same number of words: only a nickname of the first (given) name, with the rest equal.
        # (Nicknames are for people, or names of unknown type: "Sam" the company is not "Samantha".)
        given = person or mention_type == name_type == EntityType.OTHER
        if s.nicknames and given and short[1:] == long[1:] and (
            is_short_form(short[0], long[0]) or is_short_form(long[0], short[0])
        ):
            return "short-form"
        return None
    if len(short) == 1:
        word = short[0]
        if s.acronyms and 2 <= len(word) <= 6 and word.isalpha() and word == _initials(long):
            return "acronym"
        if not s.partial_names or len(word) < 2 or word in _ACRONYM_SKIP:
            return None
        if person:
            if word in (long[0], long[-1]) or (s.nicknames and is_short_form(word, long[0])):
                return "partial"
            return None
        return "partial" if word == long[0] else None
    if not s.partial_names:
        return None
    if long[: len(short)] == short:  # "new york" / "new york city", "mary jane" / "mary jane watson"
        return "partial"
    if person and len(short) == 2 and short == [long[0], long[-1]]:  # middle names dropped
        return "partial"
    return None


class _BankView:
    """The bank's entities indexed by name for one ``resolve`` call, plus what this retain added."""

    def __init__(self, entities: Iterable[Entity]) -> None:
        self.by_id: dict[str, Entity] = {}
        self.keys: dict[str, str] = {}  # normalised name or alias -> entity id
        self.compact: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}  # first / last word of the fullest name -> entity ids
        self.initials: dict[str, set[str]] = {}
        self.full: dict[str, str] = {}  # entity id -> key of its fullest name
        for e in entities:  # most mentioned first: on a legacy duplicate key, the main entity wins
            self.add(e)

    def add(self, entity: Entity) -> None:
        self.by_id[entity.id] = entity
        for name in (entity.name, *entity.aliases):
            self.index_name(entity.id, name)

    def index_name(self, eid: str, name: str) -> None:
        key = normalise_name(name)
        if not key:
            return
        self.keys.setdefault(key, eid)
        self.compact.setdefault(compact_name(key), set()).add(eid)
        current = self.full.get(eid)
        if current is None or (len(name_tokens(key)), len(key)) > (len(name_tokens(current)), len(current)):
            self.full[eid] = key
            tokens = name_tokens(key)
            for word in {tokens[0], tokens[-1]}:
                self.words.setdefault(word, set()).add(eid)
            if len(tokens) > 1 and tokens[0] in _HONORIFICS:
                self.words.setdefault(tokens[1], set()).add(eid)
            if initials := _initials(tokens):
                self.initials.setdefault(initials, set()).add(eid)

    def candidates(self, key: str) -> set[str]:
        """Entities whose fullest name could relate to ``key`` (checked afterwards by ``name_relation``)."""
        tokens = name_tokens(key)
        probes = {tokens[0], tokens[-1], *short_form_relatives(tokens[0])}
        if len(tokens) > 1 and tokens[0] in _HONORIFICS:
            probes.add(tokens[1])
        if initials := _initials(tokens):
            probes.add(initials)
        found = set(self.compact.get(compact_name(key), ()))
        for p in probes:
            found |= self.words.get(p, set())
        found |= self.initials.get(key, set())
        return found


class EntityResolver:
    """Resolves mentions against one bank's entities (see the module docstring for the rules)."""

    def __init__(self, store: EntityStore, settings: EntityResolutionSettings | None = None) -> None:
        self.store = store
        self.settings = settings or EntityResolutionSettings()

    def resolve(self, bank_id: str, facts: Sequence[ExtractedFact], unit_ids: Sequence[str]) -> Resolution:
        """Resolve every fact's mentions; returns entity rows to write and the unit-entity mentions."""
        view = _BankView(self.store.list_entities(bank_id))
        stored = set(view.by_id)
        prior = {eid: (e.type, e.mention_count) for eid, e in view.by_id.items()}  # the bank's, before this retain
        batch_cooc: Counter[tuple[str, str]] = Counter()  # co-mentions in this retain, not yet stored
        batch_votes: dict[str, dict[str, float]] = {}  # entity id -> type -> this retain's evidence
        new_ids: list[str] = []
        touched: set[str] = set()
        result = Resolution()

        for fact, unit_id in zip(facts, unit_ids, strict=True):
            when = fact.occurred_start or fact.mentioned_at
            mentions = _dedupe(fact.entities)
            resolved: dict[str, str] = {}  # mention key -> entity id
            # Exact keys first, so that the related-name rules see the whole fact as context.
            for key, mention in mentions:
                if key in view.keys:
                    resolved[key] = view.keys[key]
                    entity = view.by_id[resolved[key]]
                    if resolved[key] in new_ids and _casing_rank(mention.name) > _casing_rank(entity.name):
                        entity.name = mention.name  # not stored yet: show the best-cased form seen
            for key, mention in mentions:
                if key in resolved:
                    continue
                eid = self._related(bank_id, key, mention, view, stored, resolved, batch_cooc)
                if eid is None:
                    eid = str(uuid.uuid4())
                    view.add(Entity(id=eid, bank_id=bank_id, name=mention.name, type=mention.type))
                    new_ids.append(eid)
                else:
                    entity = view.by_id[eid]
                    if key not in {normalise_name(n) for n in (entity.name, *entity.aliases)}:
                        entity.aliases.append(mention.name)
                    view.index_name(eid, mention.name)
                resolved[key] = eid

            names: list[str] = []
            seen: list[str] = []
            for key, mention in mentions:
                eid = resolved[key]
                if eid in seen:
                    continue
                seen.append(eid)
                entity = view.by_id[eid]
                votes = batch_votes.setdefault(eid, {})
                votes[mention.type.value] = votes.get(mention.type.value, 0.0) + max(mention.evidence, 0.0)
                entity.type = _voted(votes, *prior.get(eid, (EntityType.OTHER, 0)))
                entity.mention_count += 1
                if when is not None:
                    entity.first_seen = min(entity.first_seen or when, when)
                    entity.last_seen = max(entity.last_seen or when, when)
                touched.add(eid)
                names.append(entity.name)
                result.mentions.append(Mention(unit_id=unit_id, entity_id=eid, type=mention.type.value,
                                               weight=max(mention.evidence, 0.0)))
            for i, a in enumerate(seen):
                for b in seen[i + 1:]:
                    batch_cooc[_pair(a, b)] += 1
            result.names.append(names)

        result.new_entities = [view.by_id[i] for i in new_ids]
        result.updated_entities = [view.by_id[i] for i in view.by_id if i in touched and i not in new_ids]
        return result

    def _related(
        self,
        bank_id: str,
        key: str,
        mention: ExtractedEntity,
        view: _BankView,
        stored: set[str],
        resolved: dict[str, str],
        batch_cooc: Counter[tuple[str, str]],
    ) -> str | None:
        """The one entity a non-exact mention joins, or None (then it is a new entity)."""
        in_fact = set(resolved.values())
        spelled_alike = view.compact.get(compact_name(key), set())  # against every name and alias
        evidence_needed: list[str] = []
        spelling: list[str] = []
        for eid in view.candidates(key) - in_fact:
            entity = view.by_id[eid]
            if not _compatible(entity.type, mention.type):
                continue
            if eid in spelled_alike:
                spelling.append(eid)
            elif name_relation(key, mention.type, view.full[eid], entity.type, self.settings) is not None:
                evidence_needed.append(eid)
        if spelling:
            return spelling[0] if len(spelling) == 1 else None
        if not evidence_needed:
            return None
        context = sorted(in_fact)
        if not context:
            return None  # nothing else named in the fact: no evidence can exist
        qualifying = [eid for eid in evidence_needed
                      if self._supported(bank_id, eid, context, view, stored, batch_cooc, in_fact)]
        return qualifying[0] if len(qualifying) == 1 else None

    def _supported(
        self,
        bank_id: str,
        eid: str,
        context: list[str],
        view: _BankView,
        stored: set[str],
        batch_cooc: Counter[tuple[str, str]],
        in_fact: set[str],
    ) -> bool:
        """Whether enough entities named in this fact point at ``eid`` (see the module docstring)."""
        s = self.settings
        ids = [i for i in (eid, *context) if i in stored]
        cooc = self.store.entity_cooccurrence(bank_id, ids) if eid in stored and len(ids) > 1 else {}
        support = 0
        for c in context:
            together = (cooc.get((eid, c)) or cooc.get((c, eid)) or 0) + batch_cooc[_pair(eid, c)]
            # Counts are raised after a fact is matched: this is how often ``c`` was named before it.
            before = max(view.by_id[c].mention_count, 1)
            if together > 0 and together / before >= s.min_support:
                support += 1
        return support >= s.min_shared_entities


def _voted(votes: dict[str, float], stored_type: EntityType, stored_mentions: int) -> EntityType:
    """An entity's type for the rest of this retain: the vote of this retain's evidence and of the bank's type,
    which counts as the weight of its stored mentions (one each; the store votes over every mention's own evidence
    when it commits)."""
    tally: dict[str, float] = dict(votes)
    if stored_type != EntityType.OTHER:
        tally[stored_type.value] = tally.get(stored_type.value, 0.0) + float(stored_mentions)
    return EntityType(voted_type(tally, stored_type.value))


def _casing_rank(name: str) -> int:
    """How well a spelling shows a name: every word capitalised (not shouted) > some capitalised > none."""
    words = [w for w in name.split() if any(c.isalpha() for c in w)]
    proper = sum(1 for w in words if w[:1].isupper() and not (w.isupper() and len(w) > 5))
    return 2 if words and proper == len(words) else 1 if proper else 0


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _dedupe(entities: Sequence[ExtractedEntity]) -> list[tuple[str, ExtractedEntity]]:
    """Mentions of one fact by key, first spelling kept, a specific type preferred over OTHER and stronger type
    evidence over weaker; names that normalise to nothing (no letter or digit) are dropped."""
    seen: dict[str, ExtractedEntity] = {}
    for e in entities:
        name = " ".join(e.name.split())[:_MAX_NAME]
        key = normalise_name(name)
        if not key:
            continue
        if key not in seen:
            seen[key] = ExtractedEntity(name=name, type=e.type, evidence=e.evidence)
        elif (seen[key].type == EntityType.OTHER and e.type != EntityType.OTHER) or (
            e.type != EntityType.OTHER and e.evidence > seen[key].evidence
        ):
            seen[key] = ExtractedEntity(name=seen[key].name, type=e.type, evidence=e.evidence)
    return list(seen.items())
