"""The audit trail: every write and forget made through the API, the CLI, MCP or the explorer is recorded with its
time, surface and token id; ``hindsight audit`` lists it; deleting a bank keeps it; export carries it and import
brings it back; a trail that cannot be written never leaves a write half done."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import AuditEntry, Hindsight
from hindsight_core.actor import acting_as
from hindsight_core.cli.commands import main
from hindsight_core.errors import HindsightError, InvalidInputError, StoreError
from hindsight_core.portability.jsonl import FileRecords, read_archive
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.sqlite import SQLiteGraphStore


def _ops(entries: list[AuditEntry]) -> list[tuple[str, str, str | None]]:
    return [(e.operation, e.surface, e.token_id) for e in entries]


@pytest.fixture
def hs(tmp_path: Path) -> Iterator[Hindsight]:
    with Hindsight.open(tmp_path / "m", start_worker=False) as opened:
        yield opened


def test_each_write_and_forget_is_recorded_with_its_surface(hs: Hindsight) -> None:
    bank = hs.bank("b")
    kept = bank.retain("Ana moved to Porto in May.", extract=False, document_id="d1")
    with acting_as("mcp", "tok1"):  # what the MCP server does around a tool call
        bank.retain("Ben plays chess.", extract=False, document_id="d2")
        assert bank.forget(document_id="d2") == 1
    with acting_as("explorer", "tok2"):
        bank.forget(memory_id=kept.memory_ids[0])
    bank.set_background("I help with travel.")
    entries = bank.audit(oldest_first=True)
    assert _ops(entries) == [("create_bank", "api", None), ("retain", "api", None), ("retain", "mcp", "tok1"),
                             ("forget", "mcp", "tok1"), ("forget", "explorer", "tok2"),
                             ("set_background", "api", None)]
    retain = entries[1]
    assert retain.document_id == "d1" and retain.memory_ids == kept.memory_ids
    assert retain.counts["memories"] == 1 and retain.bank_id == "b"
    assert entries[3].document_id == "d2" and entries[3].counts == {"memories": 1}
    assert entries[4].memory_ids == kept.memory_ids
    # Newest first by default, and paged.
    assert [e.id for e in bank.audit(limit=2)] == [e.id for e in reversed(entries)][:2]
    assert [e.id for e in bank.audit(limit=2, offset=4)] == [entries[1].id, entries[0].id]
    assert hs.audit(limit=100) == list(reversed(entries))


async def test_async_writes_keep_their_actor(hs: Hindsight) -> None:
    bank = hs.bank("b")
    with acting_as("mcp", "tok9"):
        await bank.aretain("Cleo paints.", extract=False, document_id="d")
        await bank.aforget(document_id="d")
    assert _ops(await bank.aaudit(limit=2)) == [("forget", "mcp", "tok9"), ("retain", "mcp", "tok9")]
    assert len(await hs.aaudit("b")) == 3


def test_deleting_a_bank_keeps_its_trail(hs: Hindsight) -> None:
    hs.bank("b").retain("Dora sails.", extract=False)
    hs.delete_bank("b")
    entries = hs.audit("b")
    assert [e.operation for e in entries] == ["delete_bank", "retain", "create_bank"]
    assert entries[0].counts == {"memories": 1} and "b" not in {p.id for p in hs.banks()}


def test_paging_numbers_are_checked(hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        hs.audit(limit=-1)
    with pytest.raises(InvalidInputError):
        hs.bank("b").audit(offset=10**12)


def test_the_cli_records_its_writes_and_lists_the_trail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "m"
    (tmp_path / "in.txt").write_text("Eli flew to Oslo.", encoding="utf-8")
    assert main(["--path", str(store), "retain", "b", str(tmp_path / "in.txt"), "--no-extract"]) == 0
    capsys.readouterr()
    assert main(["--path", str(store), "audit", "b", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(e["operation"], e["surface"]) for e in out["entries"]] == [("retain", "cli"), ("create_bank", "cli")]
    assert out["bank"] == "b" and out["entries"][0]["counts"]["memories"] == 1
    assert main(["--path", str(store), "audit", "--limit", "1"]) == 0
    table = capsys.readouterr().out
    assert "retain" in table and "cli" in table and "create_bank" not in table
    assert main(["--path", str(store), "audit", "--limit", "-3"]) == 2  # refused by the parser, no traceback


def test_an_import_round_trip_keeps_the_trail(hs: Hindsight, tmp_path: Path) -> None:
    bank = hs.bank("src")
    with acting_as("mcp", "tok1"):
        kept = bank.retain("Fay grows tomatoes.", extract=False, document_id="d1")
    bank.export(tmp_path / "b.jsonl.gz")
    source_trail = bank.audit(oldest_first=True)
    report = hs.import_bank(tmp_path / "b.jsonl.gz", bank_id="copy")
    assert report.counts["audit"] == len(source_trail) == 2
    copied = hs.audit("copy", oldest_first=True)
    # Each carried entry is marked imported, by this (api) import; what the file says of it is kept in its summary.
    assert [(e.id, e.operation, e.surface, e.token_id, e.document_id) for e in copied[:-1]] == \
        [(e.id, "imported", "api", None, e.document_id) for e in source_trail]
    assert "retain via mcp (token tok1)" in copied[1].summary and "b.jsonl.gz" in copied[1].summary
    # Under another bank id the memory ids are renewed, and the trail follows them.
    assert copied[1].memory_ids != kept.memory_ids
    assert hs.bank("copy").memories(copied[1].memory_ids)[0].text == "Fay grows tomatoes."
    assert (copied[-1].operation, copied[-1].surface) == ("import", "api")
    assert copied[-1].counts["unit"] == 1 and "b.jsonl.gz" in copied[-1].summary
    # Importing the same file again (replacing) adds one import entry, not a second copy of the trail.
    hs.import_bank(tmp_path / "b.jsonl.gz", bank_id="copy", replace=True)
    assert [e.operation for e in hs.audit("copy", oldest_first=True)] == ["imported", "imported", "import", "import"]


def test_a_version_1_file_without_a_trail_still_imports(hs: Hindsight, tmp_path: Path) -> None:
    import hashlib

    hs.bank("old").retain("Gus fixes bikes.", extract=False)
    hs.bank("old").export(tmp_path / "b.jsonl")
    records = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["record"] != "audit"]
    records[0]["version"] = 1
    del records[0]["counts"]["audit"]
    body = [(json.dumps(r) + "\n").encode() for r in records[:-1]]
    end = {"record": "end", "lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    (tmp_path / "v1.jsonl").write_bytes(b"".join(body) + (json.dumps(end) + "\n").encode())
    report = hs.import_bank(tmp_path / "v1.jsonl", bank_id="v1")
    assert report.format_version == 1 and report.counts["audit"] == 0
    assert [e.operation for e in hs.audit("v1")] == ["import"]


class FailingAudit(SQLiteGraphStore):
    """A SQLite store whose audit trail cannot be written (a full disk, a lost server) once ``fail`` is set."""

    fail = False

    def append_audit(self, entries):  # type: ignore[no-untyped-def]
        if self.fail:
            raise StoreError("disk I/O error")
        return super().append_audit(entries)


def test_a_trail_that_cannot_be_written_leaves_the_write_whole(tmp_path: Path) -> None:
    store = FailingAudit(tmp_path / "graph.sqlite")
    with Hindsight.open(graph=store, vectors="memory", start_worker=False) as hs:
        bank = hs.bank("b")
        store.fail = True
        with pytest.raises(StoreError, match="retain on bank 'b' was made, but recording it in the audit trail"):
            bank.retain("Hana bakes bread.", extract=False, document_id="d1")
        # Raw first still holds: the document and its memory are stored, in both stores, and the store is sound.
        assert bank.document("d1").status.value == "done" and len(hs.store.unit_ids("b")) == 1
        assert hs.index.count("b") == 1 and check(hs).ok
        with pytest.raises(StoreError, match="forget on bank 'b' was made"):
            bank.forget(document_id="d1")
        assert hs.store.unit_ids("b") == set() and hs.index.count("b") == 0 and check(hs).ok
        # Once the trail can be written again, a retry is recorded like any write.
        store.fail = False
        bank.retain("Hana bakes bread.", extract=False, document_id="d1")
        assert [e.operation for e in bank.audit()] == ["retain", "create_bank"]


def test_an_import_whose_trail_fails_leaves_the_bank_whole(tmp_path: Path) -> None:
    store = FailingAudit(tmp_path / "graph.sqlite")
    with Hindsight.open(graph=store, vectors="memory", start_worker=False) as hs:
        hs.bank("src").retain("Ivo rows.", extract=False)
        hs.bank("src").export(tmp_path / "b.jsonl")
        store.fail = True
        with pytest.raises(StoreError, match="import of bank 'dst' was made, but recording it"):
            hs.import_bank(tmp_path / "b.jsonl", bank_id="dst")
        assert len(hs.store.unit_ids("dst")) == 1 and hs.index.count("dst") == 1 and check(hs).ok


# streaming import ----------------------------------------------------------------------------------------------
def test_an_import_reads_the_file_a_record_at_a_time(hs: Hindsight, tmp_path: Path) -> None:
    bank = hs.bank("src")
    for i in range(5):
        bank.retain(f"Note {i}: Jo met Kim.", extract=False, document_id=f"d{i}")
    bank.export(tmp_path / "b.jsonl.gz", with_vectors=True)
    archive = read_archive(tmp_path / "b.jsonl.gz", stream=True)
    for kind in ("documents", "units", "links", "audit"):
        assert isinstance(getattr(archive, kind), FileRecords), kind
    units = archive.units
    assert len(units) == 5
    it = iter(units)
    first = next(it)  # lazily: one record parsed, the rest not yet read
    assert first.vector is not None and archive.vector_of(first).shape == (hs.embedder.dimension,)
    assert [u.text for u in units] == [u.text for u in read_archive(tmp_path / "b.jsonl.gz").units]


def test_a_file_changed_during_an_import_leaves_nothing(hs: Hindsight, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_core.portability import importer

    bank = hs.bank("src")
    bank.retain("Lea swims.", extract=False, document_id="d1")
    bank.retain("Max runs.", extract=False, document_id="d2")
    path = tmp_path / "b.jsonl"
    bank.export(path)
    real = importer.read_archive

    def validate_then_alter(p: Path, *, stream: bool = False):  # type: ignore[no-untyped-def]
        archive = real(p, stream=stream)
        path.write_text(path.read_text(encoding="utf-8").replace("Max runs.", "Max flies"), encoding="utf-8")
        return archive

    monkeypatch.setattr(importer, "read_archive", validate_then_alter)
    with pytest.raises(HindsightError, match="changed while it was being imported") as caught:
        hs.import_bank(path, bank_id="dst")
    assert "\n" not in str(caught.value)
    assert "dst" not in {b.id for b in hs.banks()} and hs.store.unit_ids("dst") == set() and check(hs).ok


def _import_peak(tmp_path: Path, n: int, *, whole: bool = False) -> tuple[float, float]:
    """Python's peak allocation (MB, ``tracemalloc``) while importing a generated file of ``n`` documents with one
    1 kB memory each, and the file's size (MB)."""
    import sys
    import tracemalloc

    import numpy as np

    from hindsight_core.portability import importer, jsonl

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import import_memory

    class HashEmbedder:
        name, dimension = import_memory.NAME, import_memory.DIM

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), self.dimension), dtype=np.float32)

        def embed_query(self, texts: list[str]) -> np.ndarray:
            return self.embed(texts)

    path = tmp_path / f"b{n}-{whole}.jsonl"
    size = import_memory.write_file(path, n)
    with Hindsight.open(tmp_path / f"m{n}-{whole}", embedder=HashEmbedder(), start_worker=False) as hs:
        read = importer.read_archive
        if whole:  # the import as it was: the whole file parsed into memory first
            importer.read_archive = lambda p, stream=False: jsonl.read_archive(p)  # type: ignore[assignment]
        tracemalloc.start()
        try:
            assert hs.import_bank(path).counts["unit"] == n
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            importer.read_archive = read
    return peak / 2**20, size / 2**20


def test_import_memory_does_not_grow_with_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six times the records (1 kB texts) and the import's peak allocation stays put: it holds a write batch, not the
    file (``test_the_whole_file_import_grew_with_the_file`` shows the same measurement can fail)."""
    from hindsight_core.portability import restore

    monkeypatch.setattr(restore, "BATCH_UNITS", 50)  # small batches: the per-batch constant is small too
    small, small_file = _import_peak(tmp_path, 100)
    large, large_file = _import_peak(tmp_path, 600)
    assert large_file - small_file > 1.0
    assert large - small < 0.25 * (large_file - small_file), (small, large)


@pytest.mark.slow
def test_the_whole_file_import_grew_with_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound above is not vacuous: the import as it was before streaming fails it."""
    from hindsight_core.portability import restore

    monkeypatch.setattr(restore, "BATCH_UNITS", 50)
    small, small_file = _import_peak(tmp_path, 100, whole=True)
    large, large_file = _import_peak(tmp_path, 600, whole=True)
    assert large - small > large_file - small_file, (small, large)


def test_two_in_memory_indexes_in_one_process_are_apart(tmp_path: Path) -> None:
    """``vectors="memory"`` twice in one process: Chroma shares one in-memory system, each index has its own database
    (a bank "b" of one test was counted by another's)."""
    with Hindsight.open(graph=str(tmp_path / "one.sqlite"), vectors="memory", start_worker=False) as one, \
            Hindsight.open(graph=str(tmp_path / "two.sqlite"), vectors="memory", start_worker=False) as two:
        one.bank("b").retain("Hana bakes bread.", extract=False)
        two.bank("b")
        assert one.index.count("b") == 1 and two.index.count("b") == 0
