"""Text made safe to show on a terminal or in a log line: characters that can rewrite what a reader sees become
visible escapes (``\\u202e``).

A memory's text, a bank id or an upstream's error can hold characters that are harmless in storage but not on a
screen: C0 and C1 control characters (a terminal escape sequence starts with ``\\x1b`` or ``\\x9b``), a carriage
return that overwrites the line, bidirectional overrides and isolates that reorder what follows (the "Trojan
Source" trick), and zero-width characters that hide text or make two ids look equal. ``escape_controls`` replaces
each with its ``\\uXXXX`` spelling, which inside a JSON string is the same character, so JSON stays valid and
means the same.
"""

from __future__ import annotations

import re

__all__ = ["UNSAFE", "escape_controls"]

_BIDI_AND_INVISIBLE = (
    "\u061c"  # Arabic letter mark
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner; left-to-right and right-to-left marks
    "\u2028\u2029"  # line and paragraph separators (some terminals and log viewers break lines there)
    "\u202a-\u202e"  # bidirectional embeddings and overrides
    "\u2060-\u2064"  # word joiner and invisible operators
    "\u2066-\u2069"  # bidirectional isolates
    "\ufeff"  # zero-width no-break space (byte order mark)
)
UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_INVISIBLE}]")
"""What ``escape_controls`` escapes, besides the line feeds it is told to: every C0 control but tab and line
feed (a carriage return included), DEL, every C1 control, bidirectional controls and zero-width characters."""
_UNSAFE_BUT_CR = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI_AND_INVISIBLE}]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_controls(text: str, *, keep_newlines: bool = True, keep_carriage_returns: bool = False) -> str:
    """``text`` with every character of ``UNSAFE`` spelled as a ``\\uXXXX`` escape, and line feeds too unless
    ``keep_newlines``; ``keep_carriage_returns`` leaves carriage returns (a progress bar redraws its line with
    them). Tabs and ordinary text are left alone."""
    out = (_UNSAFE_BUT_CR if keep_carriage_returns else UNSAFE).sub(_escaped, text)
    return out if keep_newlines else out.replace("\n", "\\u000a")
