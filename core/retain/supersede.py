"""Supersession without a model: a new statement that says something changed supersedes the earlier one it changes.

"We moved to Porto last month" supersedes "I live in Lisbon" when the code can see all of this: the same speaker
says both, about themself (not "my friend moved"); the new one states a change (a cue such as moved, quit, sold,
postponed, broke up, no longer, now) and is no question, plan or wish; the earlier one states the same attribute
(home, job, partner, pet, ...: a lexicon of terms per attribute) and is close in meaning (the vector index finds it
among the new unit's nearest neighbours). A wrong supersession hides a true memory, so every rule leans to saying
nothing: a restatement ("still in Lisbon"), an addition ("I also work weekends"), a story about the past ("when I
was a kid we lived in Faro") or another person's news supersede nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import SupersessionSettings
from ..extract.base import ExtractedFact
from ..models import Memory, Network
from ..stores.base import Supersession, UnitStore, VectorIndex

NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""Only statements about the world and the agent's experience supersede one another (never opinions or
observations, which follow their evidence)."""


@dataclass(frozen=True)
class Attribute:
    """One kind of attribute a person has at a time: the words that state it, and the cues that say it changed."""

    name: str
    terms: re.Pattern[str]
    changes: re.Pattern[str]


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("home",
              _words(r"live[sd]?", r"living", r"apartment", r"flat", r"house", r"home", r"neighbou?rhood",
                     r"rent(?:ing)?", r"moved", r"place"),
              _words(r"moved", r"relocated", r"new (?:place|apartment|flat|house|home)", r"settled in",
                     r"living in \w+ now", r"now live", r"live in \w+ now")),
    Attribute("job",
              _words(r"work(?:s|ed|ing)?", r"job", r"employed", r"position", r"career", r"company", r"shifts?",
                     r"hired", r"office", r"profession"),
              _words(r"quit", r"resigned", r"left (?:my|the|our) (?:job|company|position)", r"fired", r"laid off",
                     r"got hired", r"new job", r"started (?:a new job|working)", r"promoted", r"now work(?:ing)?",
                     r"switched (?:jobs|careers)", r"retired", r"career change", r"first (?:week|day|month) (?:at|as)",
                     r"no longer work", r"don'?t work .{0,30} anymore", r"left nursing", r"left teaching",
                     r"i'?m (?:now )?an? \w+ now")),
    Attribute("partner",
              _words(r"boyfriend", r"girlfriend", r"partner", r"husband", r"wife", r"fianc[eé]e?", r"dating",
                     r"married", r"engaged", r"single", r"relationship"),
              _words(r"broke up", r"split up", r"divorced", r"separated", r"got married", r"got engaged",
                     r"new (?:boyfriend|girlfriend|partner)", r"single (?:again|now)", r"ended (?:it|things)",
                     r"no longer (?:together|dating|with)")),
    Attribute("pet",
              _words(r"cats?", r"dogs?", r"pupp(?:y|ies)", r"kittens?", r"pets?", r"hamsters?", r"rabbits?",
                     r"parrots?", r"fish", r"turtles?"),
              _words(r"died", r"passed away", r"put down", r"adopted", r"rehomed", r"gave (?:him|her|them) away",
                     r"lost (?:him|her|our|my)", r"new (?:puppy|kitten|dog|cat|pet)",
                     r"got a (?:dog|cat|puppy|kitten)")),
    Attribute("vehicle",
              _words(r"car", r"bike", r"motorcycle", r"motorbike", r"scooter", r"truck", r"van", r"drive", r"driving",
                     r"drives"),
              _words(r"sold", r"bought", r"traded (?:in|it)", r"new (?:car|bike|motorcycle|scooter|truck|van)",
                     r"crashed", r"totaled", r"totalled", r"got rid of", r"replaced", r"switched to")),
    Attribute("diet",
              _words(r"vegetarian", r"vegan", r"meat", r"eat(?:ing)?", r"diet", r"gluten", r"dairy", r"keto",
                     r"pescatarian", r"sugar"),
              _words(r"stopped eating", r"gave up", r"went (?:vegan|vegetarian|keto)", r"no longer eat",
                     r"started eating", r"quit (?:meat|sugar|dairy)", r"switched to", r"back to eating",
                     r"not (?:vegan|vegetarian) anymore")),
    Attribute("team",
              _words(r"support(?:er)?", r"fan", r"root(?:ing)? for", r"team", r"club"),
              _words(r"switched (?:teams|to)", r"now (?:support|root for)", r"no longer support", r"gave up on",
                     r"(?:not|no longer) a \w+ fan")),
    Attribute("school",
              _words(r"stud(?:y|ying|ies)", r"student", r"university", r"college", r"school", r"major(?:ing)?",
                     r"degree", r"course", r"program(?:me)?"),
              _words(r"transferred", r"switched (?:majors|my major|to)", r"dropped out", r"graduated",
                     r"changed (?:my )?major", r"enrolled", r"now (?:study|studying)", r"started (?:at|studying)")),
    Attribute("event",
              _words(r"wedding", r"party", r"appointment", r"meeting", r"ceremony", r"trip", r"flight", r"concert",
                     r"surgery", r"interview", r"scheduled", r"booked", r"planned", r"date"),
              _words(r"postponed", r"rescheduled", r"moved (?:it|the \w+) to", r"pushed (?:it |the \w+ )?back",
                     r"cancell?ed", r"brought (?:it )?forward", r"delayed", r"changed the date", r"new date",
                     r"moved to (?:january|february|march|april|may|june|july|august|september|october|november|"
                     r"december)")),
    Attribute("habit",
              _words(r"run(?:s|ning)?", r"smok(?:e|es|ing)", r"gym", r"yoga", r"swim(?:ming)?", r"drink(?:ing)?",
                     r"coffee", r"meditat(?:e|ing)", r"routine", r"cycl(?:e|ing)", r"workouts?"),
              _words(r"quit", r"stopped", r"gave up", r"took up", r"no longer", r"switched to", r"started",
                     r"picked up")),
    Attribute("device",
              _words(r"phone", r"iphone", r"android", r"laptop", r"computer", r"pixel", r"samsung", r"macbook",
                     r"tablet"),
              _words(r"switched (?:to|from)", r"new (?:phone|laptop|computer|tablet)", r"replaced", r"upgraded",
                     r"sold", r"bought", r"broke")),
    Attribute("hobby",
              _words(r"paint(?:ing)?", r"guitar", r"piano", r"knit(?:ting)?", r"photography", r"hobby", r"chess",
                     r"pottery", r"climbing", r"dance|dancing", r"violin", r"baking"),
              _words(r"took up", r"gave up", r"stopped", r"quit", r"picked up", r"switched to", r"no longer")),
    Attribute("health",
              _words(r"medication", r"meds", r"pills?", r"diagnos(?:is|ed)", r"allerg(?:y|ic)", r"insulin",
                     r"therapy", r"treatment", r"dose", r"prescri(?:bed|ption)"),
              _words(r"stopped taking", r"switched (?:to|from)", r"new (?:medication|meds|prescription)",
                     r"changed (?:my )?dose", r"off (?:the|my) (?:meds|medication|pills)", r"no longer (?:take|on)")),
    Attribute("name",
              _words(r"name", r"call me", r"nickname", r"go by", r"surname"),
              _words(r"changed my (?:name|surname)", r"now go by", r"call me \w+ now", r"took (?:his|her) name",
                     r"go by \w+ now")),
    Attribute("language",
              _words(r"learning", r"spanish", r"french", r"german", r"japanese", r"italian", r"chinese", r"mandarin",
                     r"korean", r"portuguese", r"lessons"),
              _words(r"switched to", r"gave up", r"quit", r"stopped", r"started learning", r"now learning")),
)

_GENERIC_CHANGE = _words(r"no longer", r"anymore", r"any more", r"not \w+ anymore", r"instead", r"these days")
_HEDGE = _words(r"if", r"would", r"might", r"maybe", r"perhaps", r"thinking (?:about|of)", r"considering",
                r"plan(?:ning)? to", r"want(?:s|ed)? to", r"hope to", r"hoping to", r"could", r"should", r"wish",
                r"someday", r"one day", r"going to", r"gonna", r"will", r"might", r"dream", r"imagine")
_SAME = _words(r"still", r"also", r"too", r"as well", r"again", r"on (?:the )?weekends", r"part[- ]time",
               r"on the side")
_PAST_STORY = _words(r"when i was", r"as a kid", r"as a child", r"growing up", r"years ago", r"used to",
                     r"back (?:then|in)", r"in high school", r"in college")
_NEGATED = re.compile(r"\b(?:didn'?t|did not|haven'?t|have not|hasn'?t|never|not)\s+(?:\w+\s+){0,2}?"
                      r"(?:move|moved|quit|sell|sold|leave|left|break|broke|postpone|postponed|switch|switched|"
                      r"change|changed|adopt|adopted|stop|stopped)\b", re.IGNORECASE)
_FIRST_PERSON = _words(r"i", r"i'?m", r"i'?ve", r"i'?d", r"i'?ll", r"my", r"me", r"we", r"we'?re", r"we'?ve", r"our",
                       r"us", r"mine")
_OTHERS = _words(r"my (?:friend|sister|brother|mom|mum|mother|dad|father|cousin|neighbou?r|colleague|coworker|"
                 r"co-worker|boss|roommate|flatmate|aunt|uncle|son|daughter|parents|grandma|grandpa|grandmother|"
                 r"grandfather|niece|nephew|kids?|children|friends|family)", r"he", r"she", r"they", r"his", r"her",
                 r"their", r"he'?s", r"she'?s", r"they'?re")
_SPEAKER = re.compile(r"^([^:\n]{1,60}):\s+")


def speaker_and_body(memory: Memory) -> tuple[str | None, str]:
    """A raw message's speaker (``"Speaker: text"``) and its words; a fact's subject is its first entity."""
    m = _SPEAKER.match(memory.text)
    if m is not None and memory.cites is None:
        return m.group(1).strip(), memory.text[m.end():]
    return None, memory.text


@dataclass(frozen=True)
class Change:
    """What a new statement says changed: its speaker and the attributes it changes, with the cue found."""

    speaker: str
    attributes: frozenset[str]
    cue: str


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<=[.!?;])\s+|\s+(?:but|and then|so)\s+", text) if c.strip()]


def change_of(memory: Memory) -> Change | None:
    """The change a raw message states about its own speaker, or None (a question, a plan or wish, a restatement,
    an addition, a story about the past, another person's news, a negated change, no cue)."""
    speaker, body = speaker_and_body(memory)
    if speaker is None:
        return None
    for clause in _clauses(body):
        if clause.endswith("?"):
            continue
        found: list[tuple[str, str]] = []
        for attr in ATTRIBUTES:
            cue = attr.changes.search(clause)
            if cue is not None:
                found.append((attr.name, cue.group(0)))
        if not found:
            continue
        cue_at = min(clause.lower().find(c.lower()) for _, c in found)
        before = clause[: max(cue_at, 0)]
        if (_HEDGE.search(before) or _SAME.search(clause) or _PAST_STORY.search(clause) or _NEGATED.search(clause)
                or _OTHERS.search(before)):
            continue
        if not _FIRST_PERSON.search(clause) and not re.search(r"\b(?:wedding|party|trip|flight)\b", clause, re.I):
            continue
        return Change(speaker, frozenset(a for a, _ in found), found[0][1])
    return None


def states(memory: Memory, speaker: str, attributes: frozenset[str]) -> str | None:
    """Which of ``attributes`` an earlier raw message of ``speaker`` states about them (first person, not a question,
    a plan or a story about the past), or None."""
    who, body = speaker_and_body(memory)
    if who is None or who.casefold() != speaker.casefold():
        return None
    for clause in _clauses(body):
        if clause.endswith("?") or _HEDGE.search(clause) or _PAST_STORY.search(clause):
            continue
        for attr in ATTRIBUTES:
            if attr.name not in attributes or not attr.terms.search(clause):
                continue
            if _OTHERS.search(clause) and not _FIRST_PERSON.search(clause):
                continue
            if attr.name != "event" and not _FIRST_PERSON.search(clause):
                continue
            return attr.name
    return None


class SupersessionDetector:
    """Finds, for a retain's new raw messages, the earlier messages they supersede (see the module)."""

    def __init__(self, store: UnitStore, index: VectorIndex, settings: SupersessionSettings) -> None:
        """Reads earlier memories through ``store`` and finds close ones with ``index``."""
        self.store = store
        self.index = index
        self.settings = settings

    def __call__(self, bank_id: str, units: Sequence[Memory], facts: Sequence[ExtractedFact],
                 vectors: np.ndarray) -> list[Supersession]:
        """The supersessions to record with ``units`` (none when nothing states a change)."""
        if not self.settings.enabled or len(vectors) != len(units):
            return []
        out: list[Supersession] = []
        batch = {u.id for u in units}
        taken: set[str] = set()
        for unit, vector in zip(units, vectors, strict=True):
            if unit.network not in NETWORKS or unit.cites is not None:
                continue
            change = change_of(unit)
            if change is None:
                continue
            said = unit.mentioned_at or unit.created_at
            hits = [(i, s) for i, s in self.index.query(bank_id, vector, self.settings.candidates)
                    if i not in batch and i not in taken and s >= self.settings.min_similarity]
            found = {m.id: m for m in self.store.get_units(bank_id, [i for i, _ in hits])}
            for uid, score in hits:  # best first: the closest earlier statement of the attribute
                old = found.get(uid)
                if old is None or old.network not in NETWORKS or old.cites is not None or old.superseded_by:
                    continue
                if (old.mentioned_at or old.created_at) >= said:
                    continue
                attribute = states(old, change.speaker, change.attributes)
                if attribute is None:
                    continue
                taken.add(old.id)
                out.append(Supersession(old.id, unit.id, said, {
                    "by": "rule", "attribute": attribute, "cue": change.cue, "similarity": round(float(score), 3)}))
                break
        return out
