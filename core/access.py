"""Who may read and write which banks: the one access model of every network surface (MCP over HTTP, the explorer).

A caller presents a token; the server turns it into a ``Grant``: the token's id (what the audit trail records,
never the token), its scope (``read`` or ``read-write``) and its banks (a list, or every bank). Tokens come from

- a token file (``TokenFile``, managed with ``hindsight token add|list|remove``): JSON, mode 0600, holding for each
  token its id, scope, banks, a random salt and ``sha256(salt + token)``, never the token itself. Tokens are 256
  random bits, so a fast salted hash is as safe as a slow one would be for a password, and checking a request
  costs microseconds. The file is re-read when it changes, so a removed token stops working at once. A change
  (add, remove) holds an exclusive lock on the file's folder across processes (``fcntl.flock``), reads the file
  afresh under it and replaces it atomically, so two changes made at once both land. The file is trusted only
  when this user (or root) owns it and its folder, and no other user can write either;
- or one token from the environment (``$HINDSIGHT_MCP_TOKEN``, ``$HINDSIGHT_UI_TOKEN``), which grants read-write
  on every bank, as it always has.

``Access`` holds both and answers ``authenticate(presented)``. Verification compares against every entry in
constant time (``hmac.compare_digest``, no early exit). Nothing here knows the surfaces: they ask a ``Grant``
``can_read``/``can_write``/``visible`` and report refusals their own way (an out-of-scope bank exactly as an
unknown one, so a scoped caller never learns that another bank exists).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .errors import HindsightError

READ = "read"
READ_WRITE = "read-write"
SCOPES = (READ, READ_WRITE)
"""What a token may do: ``read`` (list, recall, read profiles and pages) or ``read-write`` (also retain, reflect,
forget)."""
ALL_BANKS = "*"
"""The bank list that means every bank, present and future."""
TOKENS_FILE_ENV = "HINDSIGHT_TOKENS_FILE"
"""Environment variable naming the token file (the servers' ``--tokens`` and ``hindsight token --file``)."""
ENV_TOKEN_ID = "env"
"""The id recorded for the single token taken from the environment."""
TOKEN_PREFIX = "hst_"
"""Every generated token starts with this (easy to spot in a leaked log, and by secret scanners)."""
FORMAT_VERSION = 1
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_MAX_PRESENTED = 512  # longer than any token: refused before hashing
LOCK_WAIT_S = 30.0
"""How long a change waits for another process's change to the same token file before giving up."""
T = TypeVar("T")
log = logging.getLogger(__name__)


class TokenFileError(HindsightError):
    """The token file cannot be read, is malformed, is writable by others, or names no such token."""


def check_token_id(token_id: str) -> str:
    """``token_id`` if it is a valid id (1-64 letters, digits, ``.``, ``_``, ``-``; starts with a letter or digit)."""
    if not isinstance(token_id, str) or not _ID.fullmatch(token_id):
        raise TokenFileError(f"a token id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                             f"digit, not {str(token_id)[:70]!r}")
    return token_id


@dataclass(frozen=True)
class Grant:
    """What one authenticated caller may do: ``scope`` on ``banks`` (None: every bank)."""

    token_id: str | None
    """The token's id (None: no token, a server open on loopback)."""
    scope: str = READ_WRITE
    banks: frozenset[str] | None = None

    @classmethod
    def everything(cls, token_id: str | None = None) -> Grant:
        """Read-write on every bank (the environment's token; no token on an open loopback server)."""
        return cls(token_id, READ_WRITE, None)

    def covers(self, bank_id: str) -> bool:
        """Whether ``bank_id`` is one of this grant's banks (whatever the scope)."""
        return self.banks is None or bank_id in self.banks

    def can_read(self, bank_id: str) -> bool:
        """Whether this caller may read ``bank_id``."""
        return self.covers(bank_id)

    def can_write(self, bank_id: str) -> bool:
        """Whether this caller may retain into, reflect on (opinions are stored) or forget in ``bank_id``."""
        return self.scope == READ_WRITE and self.covers(bank_id)

    def visible(self, items: Iterable[T], bank_of: Callable[[T], str] = str) -> list[T]:
        """The ``items`` (banks, or anything ``bank_of`` maps to a bank id) this caller may see."""
        return [item for item in items if self.covers(bank_of(item))]

    def describe(self) -> str:
        """The grant in words, e.g. ``read on a, b``."""
        banks = "every bank" if self.banks is None else ", ".join(sorted(self.banks)) or "no bank"
        return f"{self.scope} on {banks}"


@dataclass(frozen=True)
class TokenEntry:
    """One token as the file keeps it: never the token, only its salted hash."""

    id: str
    scope: str
    banks: tuple[str, ...] | None
    salt: str
    hash: str
    created: str

    def grant(self) -> Grant:
        """The grant this entry gives."""
        return Grant(self.id, self.scope, None if self.banks is None else frozenset(self.banks))

    def to_json(self) -> dict[str, Any]:
        """The entry as stored."""
        return {"id": self.id, "scope": self.scope, "banks": ALL_BANKS if self.banks is None else list(self.banks),
                "salt": self.salt, "hash": self.hash, "created": self.created}

    @classmethod
    def from_json(cls, data: Any, where: str) -> TokenEntry:
        """An entry read from the file (``TokenFileError`` naming ``where`` when malformed)."""
        if not isinstance(data, dict):
            raise TokenFileError(f"{where}: each token is a JSON object")
        try:
            token_id, scope, banks = check_token_id(data["id"]), data["scope"], data["banks"]
            salt, digest, created = str(data["salt"]), str(data["hash"]), str(data.get("created", ""))
        except KeyError as exc:
            raise TokenFileError(f"{where}: a token lacks {exc.args[0]!r}") from None
        if scope not in SCOPES:
            raise TokenFileError(f"{where}: token {token_id!r} has scope {str(scope)[:20]!r}; use one of {SCOPES}")
        if banks != ALL_BANKS and not (isinstance(banks, list) and all(isinstance(b, str) and b for b in banks)):
            raise TokenFileError(f"{where}: token {token_id!r} must list its banks, or give \"*\" for every bank")
        if not re.fullmatch(r"[0-9a-f]{32,128}", salt) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise TokenFileError(f"{where}: token {token_id!r} has a malformed salt or hash")
        return cls(token_id, scope, None if banks == ALL_BANKS else tuple(banks), salt, digest, created)


def new_token() -> str:
    """A fresh random token: the prefix and 32 random bytes, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(salt: str, token: str) -> str:
    """``sha256(salt + token)`` in hex: what the file keeps of a token."""
    return hashlib.sha256(bytes.fromhex(salt) + token.encode("utf-8")).hexdigest()


def make_entry(token_id: str, token: str, *, scope: str = READ_WRITE,
               banks: Sequence[str] | None = None) -> TokenEntry:
    """The file entry for ``token`` (salted and hashed here)."""
    if scope not in SCOPES:
        raise TokenFileError(f"unknown scope {scope!r}; use one of {SCOPES}")
    if banks is not None and (not banks or not all(isinstance(b, str) and b for b in banks)):
        raise TokenFileError("give at least one bank (or every bank)")
    salt = secrets.token_hex(16)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return TokenEntry(check_token_id(token_id), scope, None if banks is None else tuple(dict.fromkeys(banks)),
                      salt, token_hash(salt, token), created)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _match(entries: Sequence[TokenEntry], presented: str) -> TokenEntry | None:
    """The entry ``presented`` belongs to; every entry is compared, so the time taken says nothing of which."""
    found: TokenEntry | None = None
    for entry in entries:
        if hmac.compare_digest(token_hash(entry.salt, presented), entry.hash) and found is None:
            found = entry
    return found


class TokenFile:
    """A token file on disk: read (and re-read when it changes), added to and removed from atomically."""

    def __init__(self, path: str | Path) -> None:
        """The file at ``path`` (read on first use; a missing file holds no token)."""
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._entries: tuple[TokenEntry, ...] = ()

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"

    def entries(self) -> tuple[TokenEntry, ...]:
        """The tokens now in the file (re-read when its size, time or inode changed)."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise TokenFileError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from None
        seen = (info.st_mtime_ns, info.st_size, info.st_ino)
        with self._lock:
            if seen != self._seen:
                self._entries = self._read(info)
                self._seen = seen
            return self._entries

    def _read(self, info: os.stat_result) -> tuple[TokenEntry, ...]:
        self._check_trusted(info)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise TokenFileError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise TokenFileError(f"the token file {self.path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise TokenFileError(f"the token file {self.path} must be an object with a \"tokens\" list")
        entries = tuple(TokenEntry.from_json(item, str(self.path)) for item in data["tokens"])
        if len({e.id for e in entries}) != len(entries):
            raise TokenFileError(f"the token file {self.path} names a token id twice")
        return entries

    def _check_trusted(self, info: os.stat_result) -> None:
        """Refuse a file another user could have written: its mode, its owner, and its folder's."""
        trusted = {os.geteuid(), 0}  # this user, or root (who can write anything anyway)
        folder = self.path.parent
        try:
            where = folder.stat()
        except OSError as exc:
            raise TokenFileError(f"cannot read the token file's folder {folder}: {exc.strerror or exc}") from None
        if where.st_uid not in trusted:
            raise TokenFileError(f"the token file's folder {folder} belongs to another user (uid {where.st_uid}), "
                                 "who could replace the file; keep it in a folder of your own")
        if where.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not where.st_mode & stat.S_ISVTX:
            # In a folder others can write (and that is not sticky), anyone can rename another file over it.
            raise TokenFileError(f"the token file's folder {folder} is writable by other users, who could replace "
                                 "the file; chmod 700 it or keep the file elsewhere")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            # Whoever can write the file can add a token of their own.
            raise TokenFileError(f"the token file {self.path} is writable by other users; chmod 600 it")
        if info.st_uid not in trusted:
            raise TokenFileError(f"the token file {self.path} belongs to another user (uid {info.st_uid}); only "
                                 "a file of this user (or root) is trusted")

    def match(self, presented: str) -> Grant | None:
        """The grant of ``presented``, or None when it is no token of this file."""
        entry = _match(self.entries(), presented)
        return None if entry is None else entry.grant()

    def add(self, token_id: str, *, scope: str = READ_WRITE, banks: Sequence[str] | None = None) -> str:
        """Add a new token; returns it (the only time it is ever seen: the file keeps its hash)."""
        entry_token = new_token()
        entry = make_entry(token_id, entry_token, scope=scope, banks=banks)
        with self._changing() as folder_fd:
            entries = list(self._read_now())
            if any(e.id == token_id for e in entries):
                raise TokenFileError(f"token {token_id!r} exists already in {self.path}; remove it first")
            self._write([*entries, entry], folder_fd)
        return entry_token

    def remove(self, token_id: str) -> None:
        """Remove a token; it stops working at the next request of a running server."""
        with self._changing() as folder_fd:
            entries = list(self._read_now())
            kept = [e for e in entries if e.id != token_id]
            if len(kept) == len(entries):
                raise TokenFileError(f"no token {token_id!r} in {self.path}")
            self._write(kept, folder_fd)

    def _read_now(self) -> tuple[TokenEntry, ...]:
        """The entries as the file holds them this moment (under the change lock: never a cached copy)."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise TokenFileError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from None
        return self._read(info)

    @contextlib.contextmanager
    def _changing(self) -> Iterator[int]:
        """Hold the exclusive change lock of this file across processes; yields the folder's descriptor.

        The lock is ``flock`` on the folder itself: the file is replaced by a rename, so a lock on the file would be
        on an inode that the next change retires, and the folder leaves no lock file behind.
        """
        folder = self.path.parent
        _make_private_folders(folder)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                        raise TokenFileError(f"another process has been changing {self.path} for over "
                                             f"{LOCK_WAIT_S:.0f} s; try again") from None
                    time.sleep(0.01)
            with self._lock:  # and one change at a time within this process (flock is per open file)
                yield fd
        finally:
            os.close(fd)  # releases the flock

    def _write(self, entries: Sequence[TokenEntry], folder_fd: int) -> None:
        """Replace the file: a 0600 temporary file beside it, then an atomic rename, made durable."""
        text = json.dumps({"version": FORMAT_VERSION, "tokens": [e.to_json() for e in entries]}, indent=2)
        fd, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)  # O_EXCL, mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with contextlib.suppress(OSError):
            os.fsync(folder_fd)  # the rename itself survives a crash
        self._seen = None  # read back on next use (the caller holds self._lock)


def _make_private_folders(folder: Path) -> None:
    """Create ``folder`` and any missing folder above it, each 0700 (``mkdir(parents=True)`` would give the parents
    the umask's mode, 0755 by default)."""
    missing: list[Path] = []
    here = folder
    while not here.exists():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by a process beside this one
            path.mkdir(mode=0o700)


class Access:
    """The tokens one server accepts: a token file, one token from the environment, both, or none (open)."""

    def __init__(self, file: TokenFile | None = None, single_token: str | None = None,
                 single_token_id: str = ENV_TOKEN_ID) -> None:
        """``file``'s tokens with their scopes; ``single_token`` grants read-write on every bank."""
        self.file = file
        self._single = single_token or None
        self._single_id = single_token_id

    def __repr__(self) -> str:  # never shows the token
        return f"Access(file={self.file!r}, single_token={'set' if self._single else None})"

    @property
    def required(self) -> bool:
        """Whether any token is configured (else the server is open, and must stay on loopback)."""
        return self.file is not None or self._single is not None

    def authenticate(self, presented: str | None) -> Grant | None:
        """The grant of ``presented``, or None for a missing or unknown token. A token file that became unreadable
        or malformed refuses all its tokens (and says why in the log) rather than letting anyone in; the
        environment's token does not depend on it."""
        if not presented or len(presented) > _MAX_PRESENTED:
            return None
        grant: Grant | None = None
        # Digests of equal length, so that not even the token's length shows in the time taken.
        if self._single is not None and hmac.compare_digest(_digest(presented), _digest(self._single)):
            grant = Grant.everything(self._single_id)
        if self.file is not None:
            try:
                from_file = self.file.match(presented)
            except TokenFileError as exc:
                log.error("refusing every token of the file: %s", exc)
                return grant
            grant = grant or from_file
        return grant


def access_from(tokens_file: str | Path | None, single_token: str | None, *,
                environ: dict[str, str] | None = None) -> Access:
    """The access of a server: ``tokens_file`` (else ``$HINDSIGHT_TOKENS_FILE``) and ``single_token``. A named
    token file must exist and be valid now, so a typo fails at start rather than locking everyone out."""
    env = os.environ if environ is None else environ
    named = tokens_file or env.get(TOKENS_FILE_ENV, "").strip() or None
    file = None
    if named is not None:
        file = TokenFile(named)
        if not file.path.is_file():
            raise TokenFileError(f"no token file {file.path} (create one with: hindsight token add NAME "
                                 f"--file {file.path})")
        file.entries()  # raises now if it is malformed or writable by others
    return Access(file, single_token)


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header value (None for anything else)."""
    if not authorization:
        return None
    kind, _, value = authorization.strip().partition(" ")
    if kind.lower() != "bearer":
        return None
    return value.strip() or None


__all__ = ["ALL_BANKS", "ENV_TOKEN_ID", "READ", "READ_WRITE", "SCOPES", "TOKENS_FILE_ENV", "Access", "Grant",
           "TokenEntry", "TokenFile", "TokenFileError", "access_from", "bearer", "check_token_id", "make_entry",
           "new_token", "token_hash"]
