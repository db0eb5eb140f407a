"""Who may do what: tokens (``hindsight_core.access``) guard every write, and every read off loopback or with a
token file.

Without a token file, the token is ``$HINDSIGHT_UI_TOKEN`` or a random one printed at start; it grants read-write on
every bank. Reads are open on a loopback address and need the token on any other one. Why reads may stay open on
loopback: only processes of this machine reach the port, and any of them running as the same user could read
the store's files directly anyway; other web sites open in the user's browser cannot read the answers (no CORS
header is ever sent, so the same-origin policy holds), and DNS rebinding (a hostile name resolving to
127.0.0.1) is refused by the ``Host`` check in ``app``. With a token file (``--tokens``, ``$HINDSIGHT_TOKENS_FILE``)
every request needs one of its tokens, which reaches only its banks (read or read-write), wherever it listens.
Writes need more, because a forget cannot be undone: the token travels in a custom header
(``X-Hindsight-Token``, or ``Authorization: Bearer``), which a cross-site form or a plain link cannot send, and
writes must be JSON (``Content-Type: application/json``, which forces a CORS preflight that this server never
approves). The token is never put in a cookie, so the browser never sends it on its own.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..access import ENV_TOKEN_ID, READ, Access, Grant, TokenFile
from ..cli.net import is_loopback

TOKEN_HEADER = "X-Hindsight-Token"
TOKEN_ENV = "HINDSIGHT_UI_TOKEN"
"""Environment variable that fixes the token (tests, a bookmarked URL); unset: a new random one per start."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
STARTUP_TOKEN_ID = "startup"
"""The id recorded for the random token printed at start."""
OPEN_READS = Grant(None, READ, None)
"""What a request without a token may do on loopback without a token file: read every bank."""


def new_token() -> str:
    """A token for this run: ``$HINDSIGHT_UI_TOKEN`` when set, else 32 random bytes, URL-safe."""
    fixed = os.environ.get(TOKEN_ENV, "").strip()
    return fixed or secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Guard:
    """The tokens and the policy of one explorer run."""

    token: str | None
    """The single token (printed at start; read-write on every bank), or None: only the file's tokens."""
    reads_need_token: bool
    allowed_hosts: tuple[str, ...]
    """Host header values accepted (names without port); empty: any (bound to a non-loopback address, where
    the token guards reads too)."""
    access: Access

    @classmethod
    def for_host(cls, host: str, token: str | None = None, *, tokens: TokenFile | None = None) -> Guard:
        """The policy for a server bound to ``host``: open reads and a Host check on loopback, the token for
        everything on any other address. With ``tokens`` (a token file), every request needs a token of the file
        (or ``token``, when one is given or set in ``$HINDSIGHT_UI_TOKEN``) and reaches only its banks."""
        loopback = is_loopback(host)
        hosts = (*LOOPBACK_NAMES, host.strip("[]").lower()) if loopback else ()
        if tokens is not None:
            single = token or os.environ.get(TOKEN_ENV, "").strip() or None
            return cls(token=single, reads_need_token=True, allowed_hosts=hosts, access=Access(tokens, single))
        fixed = token or os.environ.get(TOKEN_ENV, "").strip()
        single = fixed or new_token()
        access = Access(None, single, single_token_id=ENV_TOKEN_ID if fixed else STARTUP_TOKEN_ID)
        return cls(token=single, reads_need_token=not loopback, allowed_hosts=hosts, access=access)

    def token_ok(self, presented: str | None) -> bool:
        """Whether ``presented`` is a token of this run (compared in constant time)."""
        return self.access.authenticate(presented) is not None

    def grant_for(self, presented: str | None, *, write: bool) -> Grant | None:
        """What a request presenting ``presented`` may do (None: refused, it needs a valid token). Without a
        token, reads are open on loopback when no token file is in use."""
        grant = self.access.authenticate(presented)
        if grant is None and not write and not self.reads_need_token:
            return OPEN_READS
        return grant

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

    def origin_ok(self, origin_header: str | None) -> bool:
        """Whether a request's ``Origin`` header (when sent) names this server: on loopback, a page of any other
        site (or an opaque ``null`` origin) is refused even before its token is looked at."""
        if not self.allowed_hosts or origin_header is None:
            return True
        parts = urlsplit(origin_header.strip())
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.allowed_hosts
