"""Keep credentials out of what the LLM seam says: error messages, reprs and names.

An endpoint URL may carry ``user:password@``; an upstream may echo the Authorization header or the key in its
error body; and those messages travel far (MCP tool errors, a failed job's stored error, the explorer, exports,
logs). So every text the OpenAI-compatible client builds from a URL or an upstream answer goes through here:
userinfo is removed from URLs, the configured secrets are masked wherever they occur, and anything shaped like
a bearer token, an ``sk-`` key or a ``key=value`` credential is masked too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["MASK", "display_url", "scrub", "url_secrets"]

MASK = "***"
_MIN_SECRET = 4  # shorter "secrets" ("x", "no") would mask ordinary words
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_SHAPES = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|token|secret|password|passwd|authorization)"
               r"(\"?\s*[:=]\s*\"?)[^\s\",;&}]+"),
)


def display_url(url: str) -> str:
    """``url`` without its ``user:password@`` part (the form shown in names, reprs and errors)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub("", url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The user name and password a URL carries (raw and percent-decoded), to be masked wherever they appear."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    for value in (parts.password, parts.username):
        if value:
            found.extend({value, unquote(value)})
    return found


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL userinfo removed, each of ``secrets`` masked and credential-shaped strings masked."""
    out = _USERINFO.sub("", text)
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        out = out.replace(secret, MASK)
    out = _SHAPES[0].sub(lambda m: f"{m.group(1)} {MASK}", out)
    out = _SHAPES[1].sub(MASK, out)
    return _SHAPES[2].sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
