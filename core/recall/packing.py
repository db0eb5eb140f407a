"""Greedy packing of ranked memories into a token budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

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
