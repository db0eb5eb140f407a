"""The cache of built model files (``hindsight_core.assets.onnx_export.ensure_built_file``): built once under a
lock, recorded with its sha256, checked later, rebuilt when corrupt or built from other inputs, and left clean by
a build that fails or is killed half way. Small files from a fake builder; the real mpnet export is in
``test_embedders_onnx_mpnet.py``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from hindsight_core.assets.onnx_export import BuiltFile, ensure_built_file, read_build_record
from hindsight_core.embedders.onnx_mpnet import EXPORT_PIP_COMMAND, _BuildError
from hindsight_core.errors import EmbedderUnavailableError, HindsightError

SPEC = BuiltFile(file_name="model.int8.onnx", identity={"source_sha256": "abc", "recipe": "1", "variant": "int8"},
                 describe="a test graph")
PAYLOAD = b"graph bytes " * 1000


class Builder:
    """Writes ``PAYLOAD`` where it is told; counts its calls; can fail half way."""

    def __init__(self, fail: bool = False, delay: float = 0.0) -> None:
        self.calls = 0
        self.fail = fail
        self.delay = delay

    def __call__(self, out: Path) -> Mapping[str, Any]:
        self.calls += 1
        out.write_bytes(PAYLOAD[: len(PAYLOAD) // 2])
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("exporter crashed")
        out.write_bytes(PAYLOAD)
        return {"versions": {"torch": "test"}}


def _quiet(_: str) -> None:
    pass


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.name.startswith("."))


def test_built_once_recorded_and_reused(tmp_path: Path) -> None:
    lines: list[str] = []
    build = Builder()
    path = ensure_built_file(SPEC, build, tmp_path, announce=lines.append)
    assert path == tmp_path / "model.int8.onnx" and path.read_bytes() == PAYLOAD
    record = read_build_record(path)
    assert record is not None
    assert record["sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert record["identity"] == dict(SPEC.identity) and record["versions"] == {"torch": "test"}
    assert record["size"] == len(PAYLOAD) and "build_seconds" in record
    assert len(lines) == 2 and "building a test graph" in lines[0] and "built" in lines[1]  # a progress line
    assert ensure_built_file(SPEC, build, tmp_path, announce=lines.append) == path
    assert build.calls == 1 and len(lines) == 2  # reused silently
    assert _leftovers(tmp_path) == []


def test_a_corrupted_file_is_rebuilt(tmp_path: Path) -> None:
    build = Builder()
    path = ensure_built_file(SPEC, build, tmp_path, announce=_quiet)
    path.write_bytes(b"X" + PAYLOAD[1:])  # same size, other bytes, new mtime: the record no longer vouches
    assert ensure_built_file(SPEC, build, tmp_path, announce=_quiet).read_bytes() == PAYLOAD
    assert build.calls == 2
    path.write_bytes(b"truncated")
    assert ensure_built_file(SPEC, build, tmp_path, announce=_quiet).read_bytes() == PAYLOAD
    assert build.calls == 3


def test_a_touched_but_intact_file_is_kept(tmp_path: Path) -> None:
    build = Builder()
    path = ensure_built_file(SPEC, build, tmp_path, announce=_quiet)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    ensure_built_file(SPEC, build, tmp_path, announce=_quiet)
    record = read_build_record(path)
    assert build.calls == 1 and record is not None and record["mtime_ns"] == 1_000_000_000  # re-hashed, re-marked


def test_other_inputs_or_a_lost_record_mean_a_rebuild(tmp_path: Path) -> None:
    build = Builder()
    path = ensure_built_file(SPEC, build, tmp_path, announce=_quiet)
    newer = BuiltFile(file_name=SPEC.file_name, identity={**SPEC.identity, "recipe": "2"})
    ensure_built_file(newer, build, tmp_path, announce=_quiet)
    record = read_build_record(path)
    assert build.calls == 2 and record is not None and record["identity"]["recipe"] == "2"
    (tmp_path / "model.int8.onnx.built.json").write_text("{not json")
    ensure_built_file(newer, build, tmp_path, announce=_quiet)
    assert build.calls == 3


def test_a_failed_build_leaves_nothing_and_the_next_call_builds(tmp_path: Path) -> None:
    with pytest.raises(HindsightError, match=r"could not build a test graph .*RuntimeError: exporter crashed"):
        ensure_built_file(SPEC, Builder(fail=True), tmp_path, announce=_quiet)
    assert not (tmp_path / SPEC.file_name).exists() and read_build_record(tmp_path / SPEC.file_name) is None
    assert _leftovers(tmp_path) == []
    # A failure while replacing a good file: the old file may stay, but no record vouches for it.
    path = ensure_built_file(SPEC, Builder(), tmp_path, announce=_quiet)
    newer = BuiltFile(file_name=SPEC.file_name, identity={**SPEC.identity, "recipe": "2"})
    with pytest.raises(EmbedderUnavailableError):
        ensure_built_file(newer, Builder(fail=True), tmp_path, announce=_quiet, error=EmbedderUnavailableError)
    assert read_build_record(path) is None
    assert ensure_built_file(newer, Builder(), tmp_path, announce=_quiet).read_bytes() == PAYLOAD


def test_a_builder_that_writes_nothing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(HindsightError, match="produced no file"):
        ensure_built_file(SPEC, lambda out: {}, tmp_path, announce=_quiet)


def test_two_threads_build_once(tmp_path: Path) -> None:
    build = Builder(delay=0.3)
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(ensure_built_file(SPEC, build, tmp_path,
                                                                                announce=_quiet)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert build.calls == 1 and len(paths) == 2 and paths[0].read_bytes() == PAYLOAD


def test_a_build_killed_half_way_is_cleaned_up_and_redone(tmp_path: Path) -> None:
    # A second process starts a build, writes half the file and is killed (SIGKILL: no finally runs).
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from hindsight_core.assets.onnx_export import BuiltFile, ensure_built_file
        spec = BuiltFile(file_name={SPEC.file_name!r}, identity={dict(SPEC.identity)!r})
        def build(out: Path):
            out.write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGKILL)
        ensure_built_file(spec, build, {str(tmp_path)!r}, announce=lambda line: None)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    assert not (tmp_path / SPEC.file_name).exists() and any(n.endswith(".build") for n in _leftovers(tmp_path))
    build = Builder()
    assert ensure_built_file(SPEC, build, tmp_path, announce=_quiet).read_bytes() == PAYLOAD
    assert build.calls == 1 and _leftovers(tmp_path) == []  # the dead build's folder is gone


def test_a_missing_export_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.embedders.onnx_mpnet as onnx_mpnet

    assert "hindsight-memory[st]" in EXPORT_PIP_COMMAND and "onnx==" in EXPORT_PIP_COMMAND
    monkeypatch.setattr(onnx_mpnet, "_export_modules", lambda variant: ("surely_not_a_module_29",))
    error = _BuildError("int8")("could not build the graph")
    assert isinstance(error, EmbedderUnavailableError)
    assert "surely_not_a_module_29" in str(error) and EXPORT_PIP_COMMAND in str(error)
    monkeypatch.setattr(onnx_mpnet, "_export_modules", lambda variant: ("os",))
    assert str(_BuildError("int8")("boom")) == "boom"
