"""Greedy packing of ranked memories into a token budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def pack(
    items: Iterable[tuple[T, str]],
    budget: int,
    count_tokens: Callable[[str], int],
    max_items: int | None = None,
) -> tuple[list[tuple[T, int]], int]:
    """Take items best first while they fit; an item too large for what is left is skipped, not truncated.

    ``items`` yields (item, text) pairs; the text is exactly what the caller receives and what is counted.
    Returns the chosen (item, tokens) pairs in rank order and the total token count (never above budget).
    """
    chosen: list[tuple[T, int]] = []
    used = 0
    if budget <= 0:
        return chosen, 0
    for item, text in items:
        if max_items is not None and len(chosen) >= max_items:
            break
        if budget - used <= 0:
            break
        tokens = count_tokens(text)
        if used + tokens <= budget:
            chosen.append((item, tokens))
            used += tokens
    return chosen, used
