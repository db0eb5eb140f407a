"""Turn the model's answer for one window into ``ExtractedFact`` s, trusting nothing it says.

A 1.5B model gets ids, dates and enum values wrong often enough that trusting it would corrupt
provenance, so every field is checked:

* **Text.** Facts with empty or meaningless text are dropped (an answer whose facts are all dropped is
  rejected, and retried). Near-duplicates (word-set Jaccard >= 0.85; numbers are words, so "on 7 May" and
  "on 14 May" versions stay apart) collapse into the first copy; relations to a copy point at it.
* **Sources.** Only ids of the window's own messages count (matched after stripping brackets, whitespace
  and case). Invented ids are dropped. The earlier context message (shown for pronouns only) is a source only
  of a fact that cites it and repeats it more than any window message it cites (or, citing none, than any
  window message): such a fact restates that message, and it alone becomes the source; otherwise its id is
  dropped too. When a message the fact does not cite shares at least two more content words with it than
  every cited one (models often cite the question before an answer, the reply after it, or a run of
  neighbouring ids), that message becomes a source and cited ones that share fewer than half as many words
  (or fewer than two) are dropped. A fact left without a valid source is attributed by lexical overlap: the
  window messages sharing the most content words with the fact (+0.5 when the fact names the speaker; at
  most 3 tied) become its sources; with no overlap at all, every message of the window is listed (the fact
  certainly came from that window). Messages without an id are shown as ``[m<position>]`` and cannot be cited.
* **Times.** See ``dates``: ``mentioned_at`` is always the earliest source message's time.
* **Networks and enums.** Values outside world/experience/opinion become world (the extractor never makes
  observations); experience/opinion are kept only for the agent's own voice (first person, or an assistant
  speaker), else world. Opinion confidence defaults to 0.5, "80" reads as 0.8. Unknown entity types become
  OTHER; pronoun and role-name entities are dropped; participants are added as PERSON entities. Causal
  links with unknown types, to themselves or outside the window's answer are dropped; indices are remapped
  to document positions (``position`` runs over the whole document).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ..errors import EmptyExtractionError
from ..models import EntityType, LinkType, Network
from .base import CausalRelation, ExtractedEntity, ExtractedFact
from .dates import annotate_relative, occurrence, said_at
from .fact_schema import AnyFact, _Entity, _Rel
from .windows import ExtractionWindow, WindowLine

__all__ = ["ChunkResult", "Draft", "Rejected", "assemble", "validate"]

_MIN_FACT_CHARS = 8
# Word-set Jaccard at or above which two facts of one answer count as the same fact. Numbers are words
# here, so "on 7 May" and "on 14 May" versions of a short fact stay apart.
_NEAR_DUPLICATE = 0.85

_STOPWORDS_TEXT = """the a an and or but of to in on at for with from by about as is are was were be
been being it its this that these those he she they them his her their i me my we our you your so very just
really also too have has had do did does not no yes what when where who how which would could should will can
there then than some any all one get got like well"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_PRONOUNS = frozenset({"me", "i", "you", "he", "she", "they", "we", "it", "him", "her", "them", "us"})
# Not entities: pronouns and role names would link every fact of every conversation together.
_GENERIC_PEOPLE = _PRONOUNS | {"user", "assistant", "system", "ai", "bot", "human", "unknown", "speaker"}
_AGENT_ROLES = frozenset({"assistant", "ai", "bot", "agent"})
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b")


@dataclass
class Draft:
    """A validated fact of one window, before document positions are assigned."""

    fact: ExtractedFact
    rels: list[tuple[int, LinkType]]  # targets are indices into the window's raw answer


@dataclass
class ChunkResult:
    """The drafts of one window's answer and how the answer's indices map onto them."""

    drafts: list[Draft]
    local_index: dict[int, int]  # raw answer index -> index into drafts (duplicates share one)
    raw: str
    duplicates: int = 0

    @property
    def looped(self) -> bool:
        """The model mostly repeated itself (a degenerate loop worth one more try)."""
        return self.duplicates >= 2 and self.duplicates >= len(self.drafts)


class Rejected(Exception):
    """An answer that parsed but failed the extractor's own validation."""


def validate(answer: BaseModel, chunk: ExtractionWindow, raw: str) -> ChunkResult:
    """Turn one parsed answer into drafts; raise ``Rejected`` when it has facts but none usable."""
    facts: list[AnyFact] = list(getattr(answer, "facts", []))
    by_id: dict[str, WindowLine] = {}
    for line in chunk.lines:
        if line.msg_id is not None:
            by_id.setdefault(_norm_id(line.msg_id), line)
    drafts: list[Draft] = []
    local_index: dict[int, int] = {}
    seen_words: list[frozenset[str]] = []
    duplicates = 0
    problems: list[str] = []
    for i, item in enumerate(facts):
        text = " ".join(item.text.split())
        if len(text) < _MIN_FACT_CHARS or not re.search(r"[A-Za-z]", text):
            problems.append(f"fact {i} has empty or meaningless text")
            continue
        words = frozenset(re.findall(r"\w+", text.lower()))
        twin = next((k for k, seen in enumerate(seen_words) if _jaccard(words, seen) >= _NEAR_DUPLICATE), None)
        if twin is not None:
            # Small models repeat themselves, often with one word swapped ("with their mom", "... dad"):
            # keep the first copy; relations to a copy point at the kept fact.
            local_index[i] = twin
            duplicates += 1
            continue
        local_index[i] = len(drafts)
        seen_words.append(words)
        drafts.append(_draft(item, text, chunk, by_id))
    if facts and not drafts:
        raise Rejected("; ".join(problems[:3]))
    return ChunkResult(drafts, local_index, raw, duplicates)


def _draft(item: AnyFact, text: str, chunk: ExtractionWindow, by_id: dict[str, WindowLine]) -> Draft:
    # Sources: only ids of this window's messages; inventions are dropped. The earlier context line counts
    # only for a fact that restates it (see ``_restated_previous``).
    lines: list[WindowLine] = []
    for src in item.src:
        line = by_id.get(_norm_id(src))
        if line is not None and line not in lines:
            lines.append(line)
    restated = _restated_previous(text, item, chunk, lines)
    if restated is not None:
        lines = [restated]
    elif not lines:
        lines = _attribute(text, item, chunk)
    else:
        lines = _recheck(text, item, chunk, lines)
    lines.sort(key=lambda ln: ln.index)
    mentioned = min(ln.time for ln in lines)
    sources = list(dict.fromkeys(ln.msg_id for ln in lines if ln.msg_id is not None))
    # Dates count from the time of the message that says them, not from the earliest one cited (issue 36).
    said = said_at(text, [(ln.text, ln.time) for ln in lines])
    start, end = occurrence(text, getattr(item, "start", ""), getattr(item, "end", ""), said)

    stated = getattr(item, "net", None)
    if stated is None:  # the lean schema: the agent's own words are its experience, everything else the world's
        agent = all(ln.speaker.lower() in _AGENT_ROLES for ln in lines)
        network = Network.EXPERIENCE if agent else Network.WORLD
    else:
        network = Network(stated)
    if network is not Network.WORLD and not _agent_voice(text, lines):
        # Experience and opinion belong to the agent itself; small models also tag a *person's*
        # experiences and views that way, which are world facts about that person.
        network = Network.WORLD
    confidence: float | None = None
    if network is Network.OPINION:
        given = float(getattr(item, "conf", 0.0))
        conf = given / 100 if 1 < given <= 100 else given  # "80" meant 80%
        confidence = min(1.0, max(0.0, conf)) if conf > 0 else 0.5  # unstated: neither sure nor unsure

    participants = _dedupe(p for p in _who(item) if p.strip().lower() not in _PRONOUNS)
    if not participants:  # the speakers of the source messages are involved by default
        participants = _dedupe(ln.speaker for ln in lines if ln.speaker.lower() != "unknown")
    fact = ExtractedFact(
        text=annotate_relative(text, said),
        network=network,
        occurred_start=start,
        occurred_end=end,
        mentioned_at=mentioned,
        entities=_entities(item, participants),
        participants=participants,
        sources=sources,
        confidence=confidence,
    )
    rels: list[_Rel] = getattr(item, "rel", [])
    return Draft(fact, [(rel.to, LinkType(rel.type)) for rel in rels])


def _who(item: AnyFact) -> list[str]:
    """The people the model named (the lean schema names none: the source messages' speakers are used)."""
    return list(getattr(item, "who", []))


def _ents(item: AnyFact) -> list[_Entity]:
    """The entities the model named (the lean schema names none: NER on the text finds them)."""
    return list(getattr(item, "ents", []))


def _entities(item: AnyFact, participants: list[str]) -> list[ExtractedEntity]:
    """The fact's named entities without pronouns or role names, plus its participants as people."""
    entities: list[ExtractedEntity] = []
    names: set[str] = set()
    for ent in _ents(item):
        name = " ".join(ent.name.split())
        if not name or name.lower() in _GENERIC_PEOPLE or name.casefold() in names:
            continue
        names.add(name.casefold())
        entities.append(ExtractedEntity(name=name, type=EntityType(ent.type)))
    for person in participants:  # participants are people the graph should know about
        if person.casefold() not in names and person.lower() not in _GENERIC_PEOPLE:
            names.add(person.casefold())
            entities.append(ExtractedEntity(name=person, type=EntityType.PERSON))
    return entities


def _overlap_scores(text: str, item: AnyFact, lines: Sequence[WindowLine]) -> list[float]:
    """How much of each line a fact repeats: shared content words, +0.5 when the fact names its speaker."""
    words = _content_words(" ".join([text, *_who(item), *(e.name for e in _ents(item))]))
    lowered = text.lower()
    scores = []
    for line in lines:
        score: float = len(words & _content_words(line.text))
        if line.speaker.lower() not in _GENERIC_PEOPLE and line.speaker.lower() in lowered:
            score += 0.5
        scores.append(score)
    return scores


def _restated_previous(
    text: str, item: AnyFact, chunk: ExtractionWindow, cited: list[WindowLine]
) -> WindowLine | None:
    """The earlier context line when a fact cites it and restates it rather than this window's messages.

    The model is shown the previous window's last message for pronouns only, but a small model sometimes
    extracts it again and cites it, alone or among this window's ids ("[D2:12, D2:13, D2:14, D2:15]"). When
    the fact shares more content words with that message (at least two) than with any window message it cites
    (or, citing none, than with any window message), the message it came from is the earlier one: crediting a
    window message instead would give the fact a source that does not say it.
    """
    previous = chunk.previous
    if previous is None or previous.msg_id is None:
        return None
    if _norm_id(previous.msg_id) not in {_norm_id(src) for src in item.src}:
        return None
    (own,) = _overlap_scores(text, item, [previous])
    rivals = _overlap_scores(text, item, cited or chunk.lines)
    return previous if own >= 2 and own > max(rivals, default=0.0) else None


def _recheck(text: str, item: AnyFact, chunk: ExtractionWindow, cited: list[WindowLine]) -> list[WindowLine]:
    """The cited lines, corrected when a message the fact does not cite says it clearly better.

    Small models often cite a neighbour of the message a fact comes from (the question before an answer, the
    reply after it, or a run of ids such as "[D3:10, D3:11, D3:12, D3:13]"). When a window message (or the
    earlier context message) shares at least two more content words with the fact than every cited one, it
    becomes a source (ties: at most 3), and cited messages sharing fewer than half as many words (or fewer
    than two) are dropped; a cited message that says a real part of the fact stays.
    """
    candidates = list(chunk.lines)
    if chunk.previous is not None and chunk.previous.msg_id is not None:
        candidates.append(chunk.previous)
    score = dict(zip(candidates, _overlap_scores(text, item, candidates), strict=True))
    best = max(score.values())
    if best < max(2.0, max(score[line] for line in cited) + 2):
        return cited
    better = [line for line in candidates if score[line] == best][:3]
    return better + [line for line in cited if line not in better and score[line] >= max(2.0, best / 2)]


def _attribute(text: str, item: AnyFact, chunk: ExtractionWindow) -> list[WindowLine]:
    """Most likely source lines of a fact that cited none validly (lexical overlap, speaker bonus)."""
    scores = _overlap_scores(text, item, chunk.lines)
    best = max(scores)
    if best < 1:  # no real overlap: the fact came from this window, but we cannot say which message
        return list(chunk.lines)
    return [line for line, score in zip(chunk.lines, scores, strict=True) if score == best][:3]


def assemble(
    chunks: Sequence[ExtractionWindow], results: Sequence[ChunkResult | None], raws: Sequence[str], llm_name: str
) -> list[ExtractedFact]:
    """The document's facts in window order, with document positions and remapped causal links.

    Raises ``EmptyExtractionError`` (with every raw answer) when non-empty windows yielded no fact at all.
    """
    facts: list[ExtractedFact] = []
    for result in results:
        if result is None:
            continue
        offset = len(facts)
        for k, draft in enumerate(result.drafts):
            position = offset + k
            causal: list[CausalRelation] = []
            for target, kind in draft.rels:
                local = result.local_index.get(target)
                if local is None or local == k:
                    continue  # out of range, a rejected fact, or the fact itself
                relation = CausalRelation(target=offset + local, type=kind)
                if relation not in causal:
                    causal.append(relation)
            facts.append(draft.fact.model_copy(update={"position": position, "causal": causal}))
    if chunks and not facts:
        raise EmptyExtractionError(
            f"LLM extraction produced zero facts from {sum(len(c.lines) for c in chunks)} non-empty "
            f"message line(s) in {len(chunks)} window(s) with {llm_name}",
            raw_output="\n".join(raws) if raws else None,
        )
    return facts


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _norm_id(value: str) -> str:
    return re.sub(r"\s+", "", value.strip().strip("[]()").strip()).casefold()


def _agent_voice(text: str, lines: list[WindowLine]) -> bool:
    """Whether a fact can be the agent's own: written in the first person or said by the assistant."""
    return bool(_FIRST_PERSON.search(text)) or any(ln.speaker.lower() in _AGENT_ROLES for ln in lines)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _dedupe(values: Iterable[object]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        name = " ".join(str(value).split())
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return out
