"""Import holds a file to retain's limits, and to vectors that an embedder could have made (issue 39, must have 4),
on both backends.

- Texts: a plain-text document, a message list's texts together and any one memory's text at most retain's
  ``max_document_chars`` (2,000,000), a message list at most ``max_messages_per_retain`` (2,000) messages. The
  issue's files (a 5 MB document, a 7.9M-character document in a small ``.gz``) are refused before anything is
  written, without holding more than a bounded amount of memory.
- Vectors: finite values (else the file is refused), and a length between 1e-4 and 1e4: a file with a 3e38 vector
  or a zero vector (which would leave a bank that answers nothing) has its vectors recomputed, and the bank answers
  by meaning and by keyword.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.security_backends import Backend, Servers, session_servers

from hindsight_core import Hindsight
from hindsight_core.errors import HindsightError
from hindsight_core.portability.format import MAX_MESSAGES, MAX_TEXT_CHARS
from hindsight_core.portability.jsonl import read_archive


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with session_servers(tmp_path_factory.mktemp("servers")) as found:
        yield found


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Backend:
    if request.param == "embedded":
        return Backend("embedded", tmp_path)
    found: Servers = request.getfixturevalue("servers")
    for name, value in found.env().items():
        monkeypatch.setenv(name, value)
    return Backend("server", tmp_path, found)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The records of a small bank, exported with its vectors: a text document and a message list."""
    root = tmp_path_factory.mktemp("limits")
    with Hindsight.open(root / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        bank.retain("Ana moved to Porto in May.", extract=False, document_id="text")
        bank.retain([{"speaker": "Ben", "text": "I play chess on Sundays.", "id": "m1"}], extract=False,
                    document_id="chat")
        bank.export(root / "b.jsonl", with_vectors=True)
    return [json.loads(line) for line in (root / "b.jsonl").read_text(encoding="utf-8").splitlines()]


def _write(records: list[dict[str, Any]], path: Path) -> Path:
    """``records`` as a bank file with a matching checksum (gzip when the name ends in .gz)."""
    body = [(json.dumps(r, ensure_ascii=False) + "\n").encode() for r in records[:-1]]
    end = {**records[-1], "lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    data = b"".join(body) + (json.dumps(end) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def _document(records: list[dict[str, Any]], doc_id: str) -> dict[str, Any]:
    return next(r for r in records if r["record"] == "document" and r["id"] == doc_id)


def _refused(backend: Backend, path: Path, bank_id: str, expected: str) -> None:
    """Importing ``path`` fails naming ``expected``, and leaves no bank behind."""
    with backend.open(start_worker=False) as hs:
        with pytest.raises(HindsightError, match=expected) as raised:
            hs.import_bank(path, bank_id=bank_id)
        assert "\n" not in str(raised.value) and len(str(raised.value)) < 1000
        assert bank_id not in {p.id for p in hs.banks()}


def test_texts_over_retains_limits_are_refused(backend: Backend, exported: list[dict[str, Any]],
                                               tmp_path: Path) -> None:
    records = [dict(r) for r in exported]
    _document(records, "text")["content"] = "a" * (MAX_TEXT_CHARS + 1)  # the file had 5 MB: 4x passed
    _refused(backend, _write(records, tmp_path / "text.jsonl"), backend.unique(), "line .*2,000,000")

    records = [dict(r) for r in exported]
    chat = _document(records, "chat")
    chat["content"] = json.dumps([{"speaker": "Ben", "text": "b" * 1_000_001, "id": "m1"},
                                  {"speaker": "Ana", "text": "c" * 1_000_000, "id": "m2"}])
    _refused(backend, _write(records, tmp_path / "texts.jsonl"), backend.unique(), "characters of text")

    chat["content"] = json.dumps([{"speaker": "Ben", "text": "hi", "id": f"m{i}"} for i in range(MAX_MESSAGES + 1)])
    _refused(backend, _write(records, tmp_path / "many.jsonl"), backend.unique(), "2,000 messages")

    records = [dict(r) for r in exported]
    unit = next(r for r in records if r["record"] == "unit")
    unit["text"] = "u" * (MAX_TEXT_CHARS + 1)
    _refused(backend, _write(records, tmp_path / "unit.jsonl"), backend.unique(), "text")

    # At the limit, the file still reads (a text document of exactly max_document_chars).
    records = [dict(r) for r in exported]
    _document(records, "text")["content"] = "a" * MAX_TEXT_CHARS
    assert read_archive(_write(records, tmp_path / "edge.jsonl")).bank.id == "b"


def test_a_huge_document_in_a_small_gz_is_refused_with_bounded_memory(exported: list[dict[str, Any]],
                                                                      tmp_path: Path) -> None:
    records = [dict(r) for r in exported]
    _document(records, "text")["content"] = "a" * 7_900_000  # the issue's: it peaked at 605 MB
    path = _write(records, tmp_path / "bomb.jsonl.gz")
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(HindsightError, match=r"2,000,000|characters"):
            read_archive(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 150 * 1024 * 1024, f"peak {peak / 2**20:.0f} MB"


def _with_vector(records: list[dict[str, Any]], value: np.ndarray) -> list[dict[str, Any]]:
    out = [dict(r) for r in records]
    unit = next(r for r in out if r["record"] == "unit")
    unit["vector"] = base64.b64encode(value.astype("<f4").tobytes()).decode("ascii")
    return out


@pytest.mark.parametrize(("kind", "scale"), [("huge", 3e38), ("large", 1e5), ("zero", 0.0)])
def test_vectors_no_embedder_makes_are_recomputed(backend: Backend, exported: list[dict[str, Any]], tmp_path: Path,
                                                  kind: str, scale: float) -> None:
    dim = next(r for r in exported if r["record"] == "header")["embedder"]["dimension"]
    vector = np.full(dim, scale if kind == "huge" else scale / np.sqrt(dim), dtype=np.float64).astype(np.float32)
    assert np.all(np.isfinite(vector))  # finite: what the check before this one let through
    path = _write(_with_vector(exported, vector), tmp_path / f"{kind}.jsonl")
    bank_id = backend.unique()
    with backend.open(start_worker=False) as hs:
        report = hs.import_bank(path, bank_id=bank_id)
        assert report.vectors == "recomputed" and "outside [0.0001, 10000]" in report.vectors_reason
        # The memories were embedded again: the bank answers, by meaning and by keyword.
        bank = hs.bank(bank_id, create=False)
        found = bank.recall("Where did Ana move?", budget=300).memories
        assert found and "Porto" in found[0].text
        assert any("chess" in m.text for m in bank.recall("chess Sundays", budget=300).memories)
        stored = hs.engine.index.get_embeddings(bank_id, [m.id for m in bank.recall("Porto", budget=300).memories])
        assert all(0.5 < float(np.linalg.norm(v)) < 2.0 for v in stored.values())


def test_a_valid_vector_file_still_copies_its_vectors(backend: Backend, exported: list[dict[str, Any]],
                                                      tmp_path: Path) -> None:
    path = _write([dict(r) for r in exported], tmp_path / "ok.jsonl")
    bank_id = backend.unique()
    with backend.open(start_worker=False) as hs:
        assert hs.import_bank(path, bank_id=bank_id).vectors == "copied"
        assert "Porto" in hs.bank(bank_id, create=False).recall("Where did Ana move?", budget=300).memories[0].text
