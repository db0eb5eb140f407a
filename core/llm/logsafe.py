"""Logs that carry no secret and no terminal control: what every ``hindsight`` command and server writes to stderr.

Errors are scrubbed where they are made (``redact``), but a log can hold more than an error's message: a traceback
prints every exception of the chain, the original ``openai`` error that echoes an ``Authorization`` header
included, and an HTTP client logs each request's URL with its ``user:password@``. So the log itself is scrubbed:

- ``remember_secrets``/``remember_url`` register the secrets of this process (an API key, a URL's user name and
  password, and the ``Basic`` header they make); ``secrets_from_environment`` finds those the usual variables
  hold;
- ``ScrubbingFormatter`` formats a record (its traceback included), masks those secrets and anything
  credential-shaped (``redact.scrub``), escapes control and bidirectional characters (``text.printable``) and
  indents every line after the first, so that no value can forge a log line of its own;
- ``configure_logging`` installs it on the root logger for a command (``-v``: INFO) and keeps the HTTP clients'
  request lines out of ``-v`` (WARNING and above only);
- ``describe_exception`` is a traceback of an exception and its causes, scrubbed, for code that logs one in a
  process whose logging it does not own (the background worker).
"""

from __future__ import annotations

import base64
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from ..text.printable import escape_controls
from .redact import scrub, url_secrets

__all__ = ["HTTP_CLIENT_LOGGERS", "ScrubbingFormatter", "configure_logging", "describe_exception", "known_secrets",
           "remember_secrets", "remember_url", "safe_text", "secrets_from_environment"]

HTTP_CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3", "requests", "hpack")
"""Loggers that write a line per request, with its URL (``-v`` leaves them at WARNING)."""
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"
_SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_URL_NAMES = ("URL", "URI", "HOST", "EMBEDDER", "GRAPH", "VECTORS")
_NOT_SECRET = ("_FILE", "_PATH", "_DIR")  # $HINDSIGHT_TOKENS_FILE names a file, it holds no token
_MIN_SECRET = 6  # a shorter value in a variable named *KEY* ("none", "1") would mask ordinary words
_lock = threading.Lock()
_secrets: set[str] = set()


def remember_secrets(*values: str | None) -> None:
    """Mask each of ``values`` in every log line from now on (and in ``describe_exception``)."""
    with _lock:
        _secrets.update(v for v in values if v and len(v) >= 4)


def remember_url(url: str | None) -> None:
    """Mask the user name and password ``url`` carries, and the ``Basic`` credentials they make, from now on."""
    if not url:
        return
    found = url_secrets(url)
    remember_secrets(*found)
    if len(found) >= 2 and "://" in url:
        userinfo = url.split("://", 1)[1].split("@", 1)[0]
        if ":" in userinfo:
            # The HTTP client sends them as a Basic header, which an upstream may echo back.
            remember_secrets(base64.b64encode(userinfo.encode()).decode())


def known_secrets() -> list[str]:
    """The secrets registered so far."""
    with _lock:
        return list(_secrets)


def secrets_from_environment(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of variables that hold secrets (names with KEY, TOKEN, SECRET, PASSWORD...) and the credentials of
    URLs in variables naming endpoints, registered as they are found."""
    env = os.environ if environ is None else environ
    found: list[str] = []
    for name, value in env.items():
        upper = name.upper()
        if upper.endswith(_NOT_SECRET):
            continue
        if any(part in upper for part in _SECRET_NAMES) and len(value.strip()) >= _MIN_SECRET:
            found.append(value.strip())
        elif any(part in upper for part in _URL_NAMES) and "@" in value:
            remember_url(value.strip())
    remember_secrets(*found)
    return found


def safe_text(text: str) -> str:
    """``text`` with secrets and credential shapes masked and control characters escaped (line breaks kept)."""
    return escape_controls(scrub(text, known_secrets()))


def describe_exception(exc: BaseException, limit: int | None = 3) -> str:
    """The traceback of ``exc`` and of every exception it was raised from, scrubbed like a log line."""
    return safe_text("".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=limit))).rstrip()


class ScrubbingFormatter(logging.Formatter):
    """A formatter whose output masks secrets, escapes control characters and indents continuation lines."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one scrubbed entry (a traceback, when it has one, indented below it)."""
        text = safe_text(super().format(record))
        # A value holding a line break must not start a line that reads like a record of its own.
        return text.replace("\n", "\n  ")


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (a test or a caller may have replaced it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always sys.stderr


def configure_logging(verbose: bool = False, *, secrets: Iterable[str] = ()) -> logging.Handler:
    """Log to stderr through ``ScrubbingFormatter``: WARNING and above, INFO and above with ``verbose``; the HTTP
    clients' loggers stay at WARNING either way. Registers ``secrets`` and those of the environment. Calling it
    again replaces the handler it installed (a process that runs several commands keeps one)."""
    remember_secrets(*secrets)
    secrets_from_environment()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _StderrHandler):
            root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(ScrubbingFormatter(LOG_FORMAT))
    handler.setLevel(logging.INFO if verbose else logging.WARNING)
    root.addHandler(handler)
    if verbose and root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    for name in HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler
