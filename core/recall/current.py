"""What is current: superseded memories come after what superseded them, unless the question asks about the past.

A memory superseded by a later one (``Memory.superseded_by``: a move, a new job, a correction) keeps its text and
its place in every channel; only the packing order changes. When the ranking reaches a superseded memory before the
memory that superseded it, the current one is brought in at that place and the superseded one follows it, so the
answer to "Where does Ana live now?" comes first and the history stays right behind it (a question about the
past still finds it). A question about the past ("before", "used to", a year, ``time_range``) or a recall
``as_of`` a time before the change keeps the fused order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

import numpy as np

from ..models import SUPERSEDED_BY_KEY, SUPERSESSION_KEY, VALID_UNTIL_KEY, Memory, Network, TimeRange
from ..temporal import TemporalConstraint

MAX_CHAIN = 8
"""A memory superseded by one that was superseded in turn is followed this far to what is current now."""

_PAST = re.compile(
    r"\b(before|used to|use to|previous(ly)?|former(ly)?|originally|at first|back then|in the past|earlier|old|"
    r"ago|prior|until|no longer|any ?more)\b",
    re.IGNORECASE,
)


def asks_about_past(query: str, constraint: TemporalConstraint | None, reference_time: datetime) -> bool:
    """Whether a question asks how things were rather than how they are: a past cue ("before", "used to",
    "previously", "originally", "no longer"), or a time it names that ends before the reference time ("in 2023",
    "last spring"). A bare past tense ("Where did Ana live?") is not enough: the superseded memory still comes
    right after the current one."""
    window = constraint.range if constraint is not None else None
    if window is not None and window.end is not None and window.end < reference_time:
        return True
    return _PAST.search(query) is not None


@dataclass
class CurrentNotes:
    """What the current-first (or past-first) order did, for the trace: superseded memories packed after their
    successor (``demoted``) and memories another brought in (``brought_by``: a current one by the memory it
    superseded, or for a question about the past, a superseded one by its successor)."""

    demoted: set[str] = field(default_factory=set)
    brought_by: dict[str, str] = field(default_factory=dict)
    later_first: dict[str, str] = field(default_factory=dict)
    """Memories moved ahead by ``later_first``: the later memory's id -> the id of the earlier one it now precedes."""
    not_of_asked: set[str] = field(default_factory=set)
    """Memories ``asked_first`` packed after those about the person the question names."""


def current_first(
    memories: Iterator[Memory], load: Callable[[Sequence[str]], list[Memory]], when: datetime | None,
    notes: CurrentNotes, only: Callable[[Memory, Memory], bool] | None = None,
) -> Iterator[Memory]:
    """The memories in rank order, except that a memory not current at ``when`` (now when None) never comes before
    the memory that is current in its place: that one is brought in (``load``) where the superseded one ranked,
    and the superseded one follows it. ``only(old, current)``: when given, only such pairs are reordered. Lazy like
    the ranking it wraps."""
    shown: set[str] = set()
    for m in memories:
        if m.id in shown:
            continue
        if m.current_at(when):
            shown.add(m.id)
            yield m
            continue
        successor = _current_successor(m, load, when)
        if successor is not None and only is not None and not only(m, successor):
            successor = None
        if successor is not None and successor.id not in shown:
            shown.add(successor.id)
            notes.brought_by[successor.id] = m.id
            yield successor
        if successor is not None:
            notes.demoted.add(m.id)
        shown.add(m.id)
        yield m


_PRESENT = re.compile(r"\b(?:now|currently|these days|nowadays|at the moment|still|any ?more)\b", re.IGNORECASE)


def asks_how_things_are(query: str) -> bool:
    """Whether a question asks how things are at present, in so many words: "now", "currently", "these days",
    "still", "any more" ("Where does Ana live now?"; not "Where does Ana live?", which LoCoMo-style questions ask of
    the past as often as of the present)."""
    return _PRESENT.search(query) is not None


_QUESTION_WORDS = frozenset(
    "what where who whom whose which when why how does do did is are was were has have had can could would should "
    "i".split()
)
_CAPITALISED = re.compile(r"\b[^\W\d_][\w'’-]*", re.UNICODE)


def asked_names(query: str) -> set[str]:
    """Whom a question may name: its capitalised words other than question words, lower-cased, without a possessive
    ("Which company does Eugene work for now?" -> {"eugene"}; "Is Joris's collarbone still broken?" -> {"joris"}).
    ``asked_first`` keeps those that name someone among the memories it orders ("Now", "Tell", "I'm" name nobody)."""
    out = set()
    for word in _CAPITALISED.findall(query):
        if not word[:1].isupper() or word.lower() in _QUESTION_WORDS:
            continue
        name = re.sub(r"['’]s$", "", word.strip("'’-")).strip("'’-").lower()
        if name:
            out.add(name)
    return out


def asked_first(
    memories: Iterator[Memory], names: set[str], close: set[str], subject: Callable[[Memory], str | None],
    notes: CurrentNotes, window: int,
) -> Iterator[Memory]:
    """For a question about how a named person is now: within the first ``window`` memories, those about nobody it
    names follow those that are about someone it names, in rank order otherwise. ``names`` (``asked_names``) count
    only where one of the memories has it among its entities (a message's speaker is one): a capitalised word that
    names nobody here is not a name. A memory is about a name when it says the name, names it among its entities, has
    it as its ``subject`` or is its observation; or when it is among the semantic channel's closest to the question
    (``close``), which finds what speaks of the person without the name ("Grace: Mum finished her last round of
    chemo" for "Is Patricia still having chemotherapy?"); or when ``current_first`` brought it in for a memory that
    is about them (a correction keeps its place ahead of what it corrected). The keyword channel's matches of a word of
    the question in another person's messages ("Aisha: ... three weeks while she's in Jamaica" for "Where does Jen
    live now?", by its neighbour's "live") and their graph neighbours then no longer come before what the person
    said. Ranks beyond ``window`` are untouched."""
    if not names or window <= 0:
        yield from memories
        return
    head = list(islice(memories, window))

    def named(m: Memory) -> set[str]:  # the words of its entities' names ("Jen Park" is "jen" and "park")
        found = [*m.entities, str(m.metadata.get("entity", "")) if m.network == Network.OBSERVATION else ""]
        who = subject(m)
        return {w for name in [*found, who or ""] for w in name.lower().split()}

    words = {m.id: named(m) for m in head}
    names = names & set().union(*words.values())
    if not names:
        yield from head
        yield from memories
        return
    patterns = [re.compile(rf"\b{re.escape(n)}\b", re.IGNORECASE) for n in names]
    flags = {m.id: m.id in close or bool(words[m.id] & names) or any(p.search(m.text) for p in patterns)
             for m in head}
    # What replaced a memory about them is about them too: it stays ahead of what it replaced (along a chain of
    # corrections, in whatever order the window holds them).
    newer = {old: new for new, old in notes.brought_by.items()}
    edges = [(m.id, n) for m in head for n in (newer.get(m.id), m.superseded_by) if n in flags]
    changed = True
    while changed:
        changed = False
        for old, new in edges:
            if flags[old] and not flags[new]:
                flags[new] = changed = True
    if any(flags.values()):
        last = max(i for i, m in enumerate(head) if flags[m.id])
        notes.not_of_asked.update(m.id for i, m in enumerate(head) if not flags[m.id] and i < last)
        head = [m for m in head if flags[m.id]] + [m for m in head if not flags[m.id]]
    yield from head
    yield from memories


def later_first(
    memories: Iterator[Memory], vectors: Callable[[Sequence[str]], dict[str, np.ndarray]],
    plain: Callable[[Memory], bool], subject: Callable[[Memory], str | None], notes: CurrentNotes,
    depth: int, min_similarity: float,
) -> Iterator[Memory]:
    """The memories in rank order, except that within the first ``depth`` a later memory that states plainly how
    things are for its subject (``plain``: no plan, addition, visit, story or news of others; ``subject``: a message's
    speaker, a fact's person) comes before an earlier memory of the same subject on the same subject matter (cosine
    of their vectors >= ``min_similarity``) that outranked it, said on an earlier day. For a question about how things
    are now, where no supersession was recorded: the change rules know the words of a change, this order only that
    the same person said something newer about the same thing. The earlier memory stays right behind it; ranks
    beyond ``depth`` are untouched.

    ``depth`` counts messages, not memories (``head_of``): a fact of a message already in the head, or an observation,
    adds none, so the default path's head (a message, its facts, an observation) reaches as far into the
    conversation as the raw path's."""
    head = head_of(memories, depth)
    if len(head) > 1:
        who = [who.casefold() if (who := subject(m)) is not None else None for m in head]
        day = [d.date() if (d := m.mentioned_at or m.occurred_start) is not None else None for m in head]

        def before(i: int, j: int) -> bool:  # i, still current, is of the same subject as j, said on an earlier day
            a, b = day[i], day[j]
            return (who[j] is not None and who[i] == who[j] and a is not None and b is not None and a < b
                    and head[i].superseded_by is None)  # a superseded one already follows what replaced it

        movable = [j for j in range(1, len(head)) if head[j].superseded_by is None
                   and any(before(i, j) for i in range(j)) and plain(head[j])]
        if movable:
            vec = vectors([m.id for m in head])
            order = list(range(len(head)))
            for j in movable:
                at = order.index(j)
                for pos in range(at):
                    i = order[pos]
                    if (before(i, j) and head[i].id in vec and head[j].id in vec
                            and _cosine(vec[head[i].id], vec[head[j].id]) >= min_similarity):
                        order.insert(pos, order.pop(at))
                        notes.later_first[head[j].id] = head[i].id
                        break
            head = [head[k] for k in order]
    yield from head
    yield from memories


MAX_HEAD_FACTOR = 4
"""``head_of`` takes at most this many times ``depth`` memories, whatever they cover."""


def head_of(memories: Iterator[Memory], depth: int) -> list[Memory]:
    """The first memories of the ranking until they cover ``depth`` messages: a raw message covers itself, a fact the
    messages it cites (``Memory.cites``: raw units, whatever labels the caller gave them), an observation none (it
    summarises facts). At most ``MAX_HEAD_FACTOR * depth`` memories."""
    head: list[Memory] = []
    covered: set[str] = set()
    if depth <= 0:
        return head
    for m in memories:
        head.append(m)
        if m.network != Network.OBSERVATION:
            covered.update(m.cites or (m.id,))
        if len(covered) >= depth or len(head) >= MAX_HEAD_FACTOR * depth:
            break
    return head


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b)) / norm if norm else 0.0


def past_first(
    memories: Iterator[Memory], superseded: Callable[[Sequence[str]], dict[str, list[str]]],
    load: Callable[[Sequence[str]], list[Memory]], notes: CurrentNotes, batch: int = 20,
    unless: Callable[[Memory, Memory], bool] | None = None,
) -> Iterator[Memory]:
    """For a question about the past: the memories in rank order, each preceded by the memories it superseded (what
    was true before it), brought in where it ranked (``notes.brought_by``: old id -> the current one), unless
    ``unless(old, newer)``. Reads ahead ``batch`` memories at a time, one lookup for each batch."""
    shown: set[str] = set()
    while True:
        head = list(islice(memories, batch))
        if not head:
            return
        olds = superseded([m.id for m in head])
        wanted = [o for m in head for o in olds.get(m.id, []) if o not in shown]
        found = {m.id: m for m in load(wanted)} if wanted else {}
        for m in head:
            for old_id in olds.get(m.id, []):
                old = found.get(old_id)
                if old is not None and unless is not None and unless(old, m):
                    continue
                if old is not None and old.id not in shown:
                    shown.add(old.id)
                    notes.brought_by[old.id] = m.id
                    yield old
            if m.id not in shown:
                shown.add(m.id)
                yield m


def _current_successor(
    m: Memory, load: Callable[[Sequence[str]], list[Memory]], when: datetime | None
) -> Memory | None:
    """The memory current at ``when`` that (through a chain of supersessions) replaced ``m``; None when it is gone
    or filtered out (then ``m`` keeps its place)."""
    seen = {m.id}
    current = m
    for _ in range(MAX_CHAIN):
        nxt = current.superseded_by
        if nxt is None or nxt in seen:
            return None if current is m else current
        seen.add(nxt)
        found = load([nxt])
        if not found:
            return None if current is m else current
        current = found[0]
        if current.current_at(when):
            return current
    return current if current is not m else None


def as_believed(memory: Memory, when: datetime) -> Memory:
    """``memory`` as the bank held it at ``when``: a supersession recorded later is left out."""
    if memory.superseded_by is None or not memory.current_at(when):
        return memory
    keys = (SUPERSEDED_BY_KEY, VALID_UNTIL_KEY, SUPERSESSION_KEY)
    return memory.model_copy(update={"metadata": {k: v for k, v in memory.metadata.items() if k not in keys}})


def speaks_of(window: TimeRange) -> Callable[[Memory, Memory], bool]:
    """For a question that names a past time ("Where is Kavya going on her December trip?" asked in May): whether the
    newer of two memories tells of that time too (its occurrence overlaps ``window``). Then the newer one corrects
    what the older said of it ("we cancelled Goa, we're going to Kerala in December instead"), and the order stays
    current-first for that pair; a newer memory of another time ("we moved to Porto" for "Where did Ana live in
    2022?") leaves the older one first."""
    def newer_tells_of_it(_old: Memory, newer: Memory) -> bool:
        start = newer.occurred_start or newer.mentioned_at
        end = newer.occurred_end or start
        if start is None or end is None:
            return False
        return (window.end is None or start <= window.end) and (window.start is None or end >= window.start)
    return newer_tells_of_it
