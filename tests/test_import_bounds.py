"""Import trusts nothing in the file: lines, decompressed size and nesting are bounded before parsing, and every
record passes retain's rules (ids, control characters, text size). Errors are one line naming the line number,
under ``--json`` too, with no traceback."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.errors import HindsightError
from hindsight_core.portability.format import MAX_TEXT_CHARS
from hindsight_core.portability.jsonl import MAX_LINE_BYTES, read_archive


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The records of a small exported bank, to alter and re-checksum."""
    root = tmp_path_factory.mktemp("bounds")
    with Hindsight.open(root / "m", start_worker=False) as hs:
        hs.bank("b").retain([{"speaker": "Ana", "text": "I moved to Porto in May.", "id": "m1"}], extract=False)
        hs.bank("b").export(root / "b.jsonl")
    return [json.loads(line) for line in (root / "b.jsonl").read_text(encoding="utf-8").splitlines()]


def _write(records: list[dict], path: Path) -> Path:
    """``records`` (the end record last) as a bank file whose checksum matches: damage that the checksum cannot
    catch, as a hostile writer would make it."""
    body = [(json.dumps(r, ensure_ascii=False) + "\n").encode() for r in records[:-1]]
    end = {**records[-1], "lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    path.write_bytes(b"".join(body) + (json.dumps(end) + "\n").encode())
    return path


def _error(path: Path) -> str:
    with pytest.raises(HindsightError) as caught:
        read_archive(path)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 600
    return message


def test_a_valid_file_still_reads(exported: list[dict], tmp_path: Path) -> None:
    assert read_archive(_write(exported, tmp_path / "ok.jsonl")).bank.id == "b"


@pytest.mark.parametrize("text", ["red \x1b[31malert", "nul\x00byte"])
def test_control_characters_are_replaced_as_retain_replaces_them(exported: list[dict], tmp_path: Path,
                                                                  text: str) -> None:
    records = [dict(r) for r in exported]
    next(r for r in records if r["record"] == "unit")["text"] = text
    archive = read_archive(_write(records, tmp_path / "ctl.jsonl"))
    assert all(not any(ord(c) < 32 and c not in "\t\n\r" for c in u.text) for u in archive.units)


@pytest.mark.parametrize(("field", "value"), [("id", ""), ("id", "x" * 1001), ("id", "a\x00b")])
def test_records_pass_retains_rules(exported: list[dict], tmp_path: Path, field: str, value: str) -> None:
    records = [dict(r) for r in exported]
    unit = next(r for r in records if r["record"] == "unit")
    unit[field] = value
    message = _error(_write(records, tmp_path / "bad.jsonl"))
    assert "line" in message and field in message


def test_a_document_over_retains_limit_is_refused(exported: list[dict], tmp_path: Path) -> None:
    records = [dict(r) for r in exported]
    document = next(r for r in records if r["record"] == "document")
    document["content"] = "a" * (4 * MAX_TEXT_CHARS + 1)
    assert "content" in _error(_write(records, tmp_path / "big.jsonl"))


def test_a_compressed_endless_line_stops_at_the_line_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb") as out:  # ~100 kB on disk, far over a line's limit once inflated
        for _ in range(MAX_LINE_BYTES // (1 << 20) + 2):
            out.write(b"a" * (1 << 20))
    assert path.stat().st_size < 1_000_000
    assert "is longer than" in _error(path)


def test_a_header_nested_a_million_deep_is_one_line_under_json(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"[" * 1_000_000 + b"]" * 1_000_000 + b"\n")
    assert "nested too deeply" in _error(path)
    done = subprocess.run([sys.executable, "-m", "hindsight_core.cli", "--json", "--path", str(tmp_path / "m"),
                           "import", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "nested too deeply" in done.stderr and "Traceback" not in done.stderr
