"""Greedy packing of ranked memories into a token budget, distinct evidence first."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..models import Memory

T = TypeVar("T")


MAX_SKIPS = 25  # consecutive items too large for what is left before packing stops looking further down


def pack(
    items: Iterable[tuple[T, str]],
    budget: int,
    count_tokens: Callable[[str], int],
    max_items: int | None = None,
    max_skips: int = MAX_SKIPS,
) -> tuple[list[tuple[T, int]], int]:
    """Take items best first while they fit; an item too large for what is left is skipped, not truncated.

    ``items`` yields (item, text) pairs; the text is exactly what the caller receives and what is counted.
    After ``max_skips`` consecutive items that do not fit, packing stops: what lies further down the
    ranking is rarely worth fetching just to fill the last few tokens.
    Returns the chosen (item, tokens) pairs in rank order and the total token count (never above budget).
    """
    chosen: list[tuple[T, int]] = []
    used = 0
    skips = 0
    if budget <= 0:
        return chosen, 0
    for item, text in items:
        if max_items is not None and len(chosen) >= max_items:
            break
        if budget - used <= 0 or skips >= max_skips:
            break
        tokens = count_tokens(text)
        if used + tokens <= budget:
            chosen.append((item, tokens))
            used += tokens
            skips = 0
        else:
            skips += 1
    return chosen, used


def distinct_evidence_first(memories: Iterable[Memory], covered_by: dict[str, str]) -> Iterator[Memory]:
    """The memories in rank order, except that one whose evidence a higher-ranked memory already showed comes after
    every memory that adds new evidence (in rank order among themselves).

    A raw message's evidence is itself; an LLM fact's is the raw messages it cites (``Memory.cites``; itself when
    it cites none). So a fact packed high defers the messages it cites, and a fact whose messages are all packed
    above it is deferred too: the budget holds as much distinct evidence as it can. ``covered_by`` receives, for
    each deferred memory, the memory that showed its evidence first. Lazy: a budget spent early reads no further.
    """
    shown: dict[str, str] = {}  # evidence id -> the memory that showed it
    later: list[Memory] = []
    for memory in memories:
        evidence = memory.cites or [memory.id]
        if all(e in shown for e in evidence):
            covered_by[memory.id] = shown[evidence[0]]
            later.append(memory)
            continue
        for e in evidence:
            shown.setdefault(e, memory.id)
        yield memory
    yield from later
