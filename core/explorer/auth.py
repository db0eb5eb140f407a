"""Who may do what: a random token printed at start guards every write (forget).

Reads are open on a loopback address and need the token on any other one. Why reads may stay open on
loopback: only processes of this machine reach the port, and any of them running as the same user could read
the store's files directly anyway; other web sites open in the user's browser cannot read the answers (no CORS
header is ever sent, so the same-origin policy holds), and DNS rebinding (a hostile name resolving to
127.0.0.1) is refused by the ``Host`` check in ``app``. Writes need more, because a forget cannot be undone: the
token travels in a custom header (``X-Hindsight-Token``), which a cross-site form or a plain link cannot send,
and writes must be JSON (``Content-Type: application/json``, which forces a CORS preflight that this server
never approves). The token is never put in a cookie, so the browser never sends it on its own.
"""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass

from ..cli.net import is_loopback

TOKEN_HEADER = "X-Hindsight-Token"
TOKEN_ENV = "HINDSIGHT_UI_TOKEN"
"""Environment variable that fixes the token (tests, a bookmarked URL); unset: a new random one per start."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def new_token() -> str:
    """A token for this run: ``$HINDSIGHT_UI_TOKEN`` when set, else 32 random bytes, URL-safe."""
    fixed = os.environ.get(TOKEN_ENV, "").strip()
    return fixed or secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Guard:
    """The token and the policy of one explorer run."""

    token: str
    reads_need_token: bool
    allowed_hosts: tuple[str, ...]
    """Host header values accepted (names without port); empty: any (bound to a non-loopback address, where
    the token guards reads too)."""

    @classmethod
    def for_host(cls, host: str, token: str | None = None) -> Guard:
        """The policy for a server bound to ``host``: open reads and a Host check on loopback, the token for
        everything on any other address."""
        loopback = is_loopback(host)
        return cls(token=token or new_token(), reads_need_token=not loopback,
                   allowed_hosts=(*LOOPBACK_NAMES, host.strip("[]").lower()) if loopback else ())

    def token_ok(self, presented: str | None) -> bool:
        """Whether ``presented`` is this run's token (compared in constant time)."""
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def host_ok(self, host_header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server (refuses DNS rebinding on loopback)."""
        if not self.allowed_hosts:
            return True
        if not host_header:
            return False
        host = host_header.strip().lower()
        if host.startswith("["):  # [::1]:8765
            name = host[1:].split("]", 1)[0]
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return name in self.allowed_hosts
