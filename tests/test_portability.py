"""Export and import of a bank (``hindsight_core.portability``), on real SQLite, real Chroma and the real embedder.

One source bank is built once for the module with every kind of stored thing: two raw documents (a conversation
and a text) and a value document, memories with entities and links, opinions (one reinforced and rewritten
through ``apply_opinion_update``, one with an event appended as it is), an entity observation written by the
observation job (a scripted model), a custom profile. Each test imports into fresh stores of its own.

"Exact" is checked through the store protocols, independently of the exporter: every record of every kind,
mentions, document order, insertion order per network, opinion histories and applied evidence, keyword search
results and scores, counts, and the recall order of a few queries.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import io
import json
import logging
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scripted_llm import ScriptedLLM
from support.conversation import CONVERSATION

from hindsight_core import Hindsight
from hindsight_core.cli import portability as portability_cli
from hindsight_core.cli.run import run_parsed
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.errors import HindsightError, InvalidInputError, StoreError
from hindsight_core.models import LinkType, Network, OpinionEvent
from hindsight_core.portability import (
    ArchiveError,
    ArchiveIOError,
    BankExistsError,
    export_bank,
    import_bank,
)
from hindsight_core.portability import restore as restore_module
from hindsight_core.portability.collect import collect_bank
from hindsight_core.portability.format import decode_vector
from hindsight_core.portability.ids import remap
from hindsight_core.portability.jsonl import read_archive, write_archive
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.base import OpinionUpdate

SOURCE = "travel-notes"
REFERENCE = "2025-03-10T12:00:00"
QUERIES = ["Where does Caroline want to work?", "What did Melanie paint last week?", "Oscar the puppy",
           "running shoes", "Is Melanie a good parent?", "What happened yesterday?"]
EMBEDDER = SentenceTransformerEmbedder()


def open_store(path: Path, **kwargs: Any) -> Hindsight:
    return Hindsight.open(path, embedder=EMBEDDER, start_worker=False, **kwargs)


def build_source(hs: Hindsight, bank_id: str = SOURCE) -> None:
    """The source bank: every kind of thing a store keeps for a bank (the store's LLM must summarise once)."""
    bank = hs.bank(bank_id, name="Travel notes", background="I keep notes for Caroline and Melanie.",
                   disposition={"skepticism": 4, "literalism": 2, "empathy": 5, "bias": 0.3})
    chat = bank.retain(CONVERSATION, timestamp="2025-03-02T10:00:00", document_id="chat:1", extract=False,
                       background=False, document_metadata={"channel": "sms", "score": 0.25})
    bank.retain("Melanie ran the Lisbon half marathon in April and beat her record.", timestamp="2024-04-14",
                document_id="note:1", extract=False, background=False, context="from her blog",
                metadata={"source": "blog"})
    bank.put_document("value:prefs", '{"theme": "dark"}', metadata={"kind": "value"})
    ids = chat.memory_ids
    caring = bank.add_opinion("Melanie is a caring parent", 0.6, entities=["Melanie"], based_on=[ids[3]],
                              rationale="she talks about her kids")
    bold = bank.add_opinion("Caroline is brave", 0.7, entities=["Caroline"], based_on=[ids[0]])
    store = hs.store
    at = datetime(2025, 3, 5, 9, 30, 15, 123456, tzinfo=UTC)
    store.apply_opinion_update(bank_id, OpinionUpdate(caring.id, "reinforce", 0.6, 0.6, 0.7, (ids[5],),
                                                     "chewed shoes", at=at), owner=hs.engine.vectors.owner)
    store.apply_opinion_update(bank_id, OpinionUpdate(caring.id, "contradict", 0.7, 0.7, 0.5, (ids[1], ids[4]),
                                                     "busy", new_text="Melanie is a caring but busy parent", at=at),
                               owner=hs.engine.vectors.owner)
    hs.engine.vectors.reindex(bank_id, [caring.id])  # as the reinforcer does after a rewrite
    store.add_opinion_event(bank_id, OpinionEvent(opinion_id=bold.id, at=at, label="neutral", old_confidence=0.7,
                                                 new_confidence=0.7, evidence=[ids[2]], rationale="no change"))
    melanie = store.find_entity(bank_id, "Melanie")
    assert melanie is not None
    assert hs.engine.observations.regenerate(bank_id, melanie.id) is not None


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hindsight]:
    """The store holding the source bank (read only by the tests)."""
    llm = ScriptedLLM([{"summary": "Melanie has kids and a puppy named Oscar, paints and runs."}])
    # The scripted model writes the observation (observation_mode="model"): the source bank is retained raw, and an
    # extractive observation is made of facts.
    with open_store(tmp_path_factory.mktemp("source") / "memory", llm=llm,
                    settings=Settings(cara=CaraSettings(observation_mode="model"))) as hs:
        build_source(hs)
        assert check(hs).ok
        yield hs


@pytest.fixture()
def target(tmp_path: Path) -> Iterator[Hindsight]:
    """A fresh, empty store to import into."""
    with open_store(tmp_path / "target") as hs:
        yield hs


# what "exact" means ------------------------------------------------------------------------------------------
def snapshot(hs: Hindsight, bank_id: str) -> dict[str, Any]:
    """Everything the store protocols return for a bank, in a comparable form (process state left out)."""
    store = hs.store
    units = store.get_units(bank_id, sorted(store.unit_ids(bank_id)))
    entities = sorted(store.list_entities(bank_id), key=lambda e: e.id)
    opinions = [u.id for u in units if u.network == Network.OPINION]
    stats = store.stats(bank_id)
    stats.pop("jobs")
    profile = store.get_bank(bank_id)
    assert profile is not None
    return {
        "profile": profile.model_dump(exclude={"id"}),
        "documents": [d.model_dump(exclude={"owner", "job_id", "bank_id"}) for d in store.list_documents(bank_id)],
        "entities": [e.model_dump(exclude={"bank_id"}) for e in entities],
        "entity_order": [e.id for e in store.list_entities(bank_id)],
        "units": [u.model_dump(exclude={"score", "bank_id"}) for u in units],
        "mentions": {e.id: sorted(store.units_of_entity(bank_id, e.id)) for e in entities},
        "document_order": {d: store.units_of_document(bank_id, d)
                           for d in sorted({u.document_id or "" for u in units})},
        "network_order": {n.value: store.units_in_network(bank_id, n) for n in Network},
        "links": sorted((e.source_id, e.target_id, e.type, e.weight) for e in store.neighbors(
            bank_id, [u.id for u in units], link_types=list(LinkType), entity_fanout=0)),
        "histories": {o: [e.model_dump() for e in store.opinion_history(bank_id, o)] for o in opinions},
        "applied": {o: sorted(store.applied_evidence(bank_id, o)) for o in opinions},
        # Rounded: with several banks in a store, SQLite rescores keyword hits in Python (same formula, last digits
        # may differ from FTS5's own bm25 of a one-bank store).
        "keyword": {q: [(i, round(s, 9)) for i, s in store.keyword_search(bank_id, q, 20)] for q in QUERIES},
        "stats": stats,
        "vectors": hs.index.count(bank_id),
    }


def recall_order(hs: Hindsight, bank_id: str) -> dict[str, list[str]]:
    bank = hs.bank(bank_id, create=False)
    return {q: [m.id for m in bank.recall(q, budget=400, reference_time=REFERENCE).memories] for q in QUERIES}


def vectors(hs: Hindsight, bank_id: str) -> dict[str, np.ndarray]:
    return hs.index.get_embeddings(bank_id, sorted(hs.store.unit_ids(bank_id)))


def same_vectors(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """The same ids and vectors, up to the last bit a cosine collection's float32 normalisation can move on each
    write (a model recomputing them would move them about 1e-4)."""
    return a.keys() == b.keys() and all(float(np.max(np.abs(a[k] - b[k]))) <= 1e-7 for k in a)


def assert_no_bank(hs: Hindsight, bank_id: str) -> None:
    """Nothing of the bank in either store, and the store sound."""
    assert bank_id not in {b.id for b in hs.banks()}
    assert hs.store.unit_ids(bank_id) == set() and hs.store.list_jobs(bank_id) == []
    assert hs.store.list_documents(bank_id) == [] and hs.store.list_entities(bank_id) == []
    assert check(hs).ok


# round trips ---------------------------------------------------------------------------------------------
def test_round_trip_without_vectors_is_exact(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    exported = source.bank(SOURCE).export(tmp_path / "bank.jsonl")
    assert exported.counts == {"bank": 1, "document": 3, "entity": 6, "unit": 10, "link": exported.counts["link"],
                               "opinion_history": 2, "audit": exported.counts["audit"]}
    assert exported.networks == {"observation": 1, "opinion": 2, "world": 7} and not exported.with_vectors

    report = target.import_bank(tmp_path / "bank.jsonl")
    assert (report.bank_id, report.source_bank_id, report.vectors) == (SOURCE, SOURCE, "recomputed")
    assert not report.ids_remapped and report.counts == exported.counts
    assert snapshot(target, SOURCE) == snapshot(source, SOURCE)
    assert recall_order(target, SOURCE) == recall_order(source, SOURCE)
    assert check(target).ok
    # Recomputed vectors are the vectors the source's own rebuild would give (the same texts, the same model).
    before, after = vectors(source, SOURCE), vectors(target, SOURCE)
    assert before.keys() == after.keys()
    assert min(float(np.dot(before[k], after[k])) for k in before) > 0.9999
    # The marker that made the import all-or-nothing is finished: it stays as the record of where the bank came from.
    jobs = target.bank(SOURCE).jobs()
    assert [(j.kind, j.status.value, j.error) for j in jobs] == [("hindsight.import", "done", None)]
    assert jobs[0].payload["source"] == "file bank.jsonl"


def test_round_trip_with_vectors_gzip_copies_the_vectors(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl.gz"
    assert source.bank(SOURCE).export(path, with_vectors=True).with_vectors
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    header = json.loads(lines[0])
    assert (header["format"], header["version"], header["vectors"]) == ("hindsight-bank", 2, True)
    assert header["embedder"] == {"name": EMBEDDER.name, "dimension": EMBEDDER.dimension}
    assert json.loads(lines[-1])["record"] == "end"

    report = target.import_bank(path)
    assert report.vectors == "copied"
    assert snapshot(target, SOURCE) == snapshot(source, SOURCE)
    before, after = vectors(source, SOURCE), vectors(target, SOURCE)
    # The file holds the source's vectors bit for bit.
    in_file = {r["id"]: decode_vector(r["vector"], header["embedder"]["dimension"])
               for r in map(json.loads, lines) if r["record"] == "unit"}
    assert in_file.keys() == before.keys() and all(np.array_equal(in_file[k], before[k]) for k in before)
    # The importing index holds them up to its own float32 normalisation (a cosine collection normalises every
    # vector it stores, which can move the last bit), not recomputed by the model.
    assert same_vectors(before, after)
    assert recall_order(target, SOURCE) == recall_order(source, SOURCE)
    # The same bank exports to the same bytes (apart from the header's time): the format is deterministic.
    again = tmp_path / "again.jsonl.gz"
    target.bank(SOURCE).export(again, with_vectors=True)
    first, second = ([json.loads(line) for line in gzip.decompress(p.read_bytes()).splitlines()[1:-1]]
                     for p in (path, again))
    # ... and the trail carries over in its order, marked imported, with the import's own entry after it.
    assert [(r["id"], r["document_id"]) for r in second if r["record"] == "audit"][:-1] == \
        [(r["id"], r["document_id"]) for r in first if r["record"] == "audit"]
    assert [r["operation"] for r in second if r["record"] == "audit"][:-1] == ["imported"] * sum(
        r["record"] == "audit" for r in first)
    assert [r for r in second if r["record"] == "audit"][-1]["operation"] == "import"
    first, second = ([r for r in f if r["record"] != "audit"] for f in (first, second))
    assert [{k: v for k, v in r.items() if k != "vector"} for r in first] == \
        [{k: v for k, v in r.items() if k != "vector"} for r in second]
    dim = header["embedder"]["dimension"]
    assert same_vectors(*({r["id"]: decode_vector(r["vector"], dim) for r in f if r.get("vector")}
                          for f in (first, second)))


def test_a_clone_beside_its_original_gets_new_ids(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl"
    source.bank(SOURCE).export(path, with_vectors=True)
    target.import_bank(path)
    report = target.import_bank(path, bank_id="clone")  # unit and entity ids are unique per store
    assert report.ids_remapped and report.bank_id == "clone" and report.vectors == "copied"
    expected = remap(collect_bank(source.engine, SOURCE, with_vectors=True), "clone")
    got = collect_bank(target.engine, "clone", with_vectors=True)
    for kind in ("bank", "documents", "entities", "units"):
        assert getattr(got, kind) == getattr(expected, kind), kind
    # Links and applied evidence are listed sorted by id, and the ids are new.
    assert sorted(got.links, key=repr) == sorted(expected.links, key=repr)
    assert [o.model_copy(update={"applied_evidence": sorted(o.applied_evidence)}) for o in expected.opinions] \
        == got.opinions
    assert got.vectors is not None and expected.vectors is not None
    assert same_vectors(got.vectors, expected.vectors)
    assert snapshot(target, SOURCE) == snapshot(source, SOURCE)  # the original is untouched
    clone, original = recall_order(target, "clone"), recall_order(source, SOURCE)
    mapped = {q: [remap_id("clone", i) for i in ids] for q, ids in original.items()}
    assert clone == mapped
    assert check(target).ok


def remap_id(bank_id: str, old: str) -> str:
    from hindsight_core.portability.ids import new_id

    return new_id(bank_id, old)


async def test_async_twins(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    exported = await source.bank(SOURCE).aexport(tmp_path / "bank.jsonl")
    imported = await target.aimport_bank(tmp_path / "bank.jsonl", bank_id="async-copy")
    assert imported.counts == exported.counts and imported.bank_id == "async-copy"


# refused and damaged input -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(source: Hindsight, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source bank as a plain file (tests damage copies of it)."""
    path = tmp_path_factory.mktemp("export") / "bank.jsonl"
    source.bank(SOURCE).export(path)
    return path


def damaged(exported: Path, tmp_path: Path, change: Any) -> Path:
    lines = exported.read_bytes().splitlines(keepends=True)
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(change(lines))
    return path


def line_of(exported: Path, record: str) -> int:
    kinds = [json.loads(line)["record"] for line in exported.read_text().splitlines()]
    return kinds.index(record) + 1


@pytest.mark.parametrize("case", ["cut mid-line", "cut at a line end", "invalid JSON", "invalid field",
                                  "unknown field", "altered text", "dangling reference", "not a bank file"])
def test_a_damaged_file_is_refused_naming_the_line_and_leaves_nothing(
    exported: Path, target: Hindsight, tmp_path: Path, case: str
) -> None:
    unit = line_of(exported, "unit")

    def edit(lines: list[bytes], n: int, fn: Any) -> bytes:
        record = json.loads(lines[n - 1])
        fn(record)
        lines[n - 1] = json.dumps(record).encode() + b"\n"
        return b"".join(lines)

    changes = {
        "cut mid-line": (lambda ls: b"".join(ls[: unit - 1]) + ls[unit - 1][:40], unit, "truncated"),
        "cut at a line end": (lambda ls: b"".join(ls[:unit]), unit, "truncated"),
        "invalid JSON": (lambda ls: b"".join([*ls[: unit - 1], b'{"record": "unit", "id": \n', *ls[unit:]]), unit,
                         "not valid JSON"),
        "invalid field": (lambda ls: edit(ls, unit, lambda r: r.update(network="dreams")), unit, "network"),
        "unknown field": (lambda ls: edit(ls, unit, lambda r: r.update(colour="red")), unit, "colour"),
        "altered text": (lambda ls: edit(ls, unit, lambda r: r.update(text="something else")), len(
            exported.read_bytes().splitlines()), "checksum"),
        "dangling reference": None,
        "not a bank file": (lambda ls: b'{"hello": 1}\n' + b"".join(ls[1:]), 1, "not a bank file"),
    }
    if case == "dangling reference":
        # A consistent file (checksum recomputed) whose unit mentions an entity the file does not hold.
        archive = read_archive(exported)
        archive.units[0] = archive.units[0].model_copy(update={"entities": ["no-such-entity"]})
        path = tmp_path / "dangling.jsonl"
        write_archive(archive, path)
        line, words = unit, "no-such-entity"
    else:
        change, line, words = changes[case]
        path = damaged(exported, tmp_path, change)
    with pytest.raises(ArchiveError) as caught:
        target.import_bank(path)
    assert caught.value.line == line and f"line {line}" in str(caught.value) and words in str(caught.value)
    assert isinstance(caught.value, InvalidInputError)
    assert_no_bank(target, SOURCE)


def test_a_newer_format_version_is_refused(exported: Path, target: Hindsight, tmp_path: Path) -> None:
    def newer(lines: list[bytes]) -> bytes:
        header = json.loads(lines[0])
        header["version"] = 3
        return json.dumps(header).encode() + b"\n" + b"".join(lines[1:])

    with pytest.raises(ArchiveError, match=r"line 1: format version 3 is newer"):
        target.import_bank(damaged(exported, tmp_path, newer))


def test_a_truncated_gzip_file_is_refused(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl.gz"
    source.bank(SOURCE).export(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ArchiveError, match=r"line \d+: .*(truncated|cut short)"):
        target.import_bank(path)
    assert_no_bank(target, SOURCE)


def test_an_existing_bank_is_refused_unless_replaced(exported: Path, target: Hindsight) -> None:
    target.bank(SOURCE).retain("Someone else's note.", extract=False, background=False)
    with pytest.raises(BankExistsError, match="exists already"):
        target.import_bank(exported)
    assert [m.text for m in target.bank(SOURCE).recall("note").memories] == ["Someone else's note."]
    report = target.import_bank(exported, replace=True)
    assert report.cleared == "replaced" and report.counts["unit"] == 10
    assert "Someone else's note." not in {m.text for m in target.bank(SOURCE).recall("note").memories}
    assert check(target).ok


def test_bad_arguments_are_typed_errors(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"\.jsonl or \.jsonl\.gz"):
        source.bank(SOURCE).export(tmp_path / "bank.txt")
    with pytest.raises(InvalidInputError):
        source.bank(SOURCE).export(42)  # type: ignore[arg-type]  # a wrong type on purpose
    with pytest.raises(ArchiveIOError, match="no such bank file"):
        target.import_bank(tmp_path / "missing.jsonl")
    with pytest.raises(ArchiveIOError, match="cannot write"):
        source.bank(SOURCE).export(tmp_path / "no" / "such" / "dir" / "bank.jsonl")
    with pytest.raises(InvalidInputError):
        target.import_bank(tmp_path / "missing.jsonl", bank_id="\x00bad")
    assert not list(tmp_path.glob("**/.*partial*"))  # a failed export leaves no partial file


# all or nothing ------------------------------------------------------------------------------------------
def failing_after(store: Any, monkeypatch: pytest.MonkeyPatch, method: str, calls: int,
                  error: BaseException) -> list[int]:
    """Make ``store.<method>`` fail on its ``calls + 1``-th call; returns the call counter."""
    real = getattr(store, method)
    seen = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] > calls:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(store, method, wrapper)
    return seen


@pytest.mark.parametrize(("method", "calls", "error"), [
    ("add_units", 2, StoreError("disk full (simulated)")),
    ("apply_opinion_update", 1, StoreError("connection lost (simulated)")),
    ("add_units", 1, KeyboardInterrupt()),
])
def test_an_import_failing_half_way_leaves_no_bank(
    exported: Path, target: Hindsight, monkeypatch: pytest.MonkeyPatch, method: str, calls: int,
    error: BaseException,
) -> None:
    monkeypatch.setattr(restore_module, "BATCH_UNITS", 2)  # many small transactions: fail between them
    seen = failing_after(target.store, monkeypatch, method, calls, error)
    with pytest.raises(type(error)):
        target.import_bank(exported)
    assert seen[0] == calls + 1  # it did fail half way, after writing
    monkeypatch.undo()
    assert_no_bank(target, SOURCE)
    target.index.ensure_collection(SOURCE, EMBEDDER.name, EMBEDDER.dimension)
    assert target.index.ids(SOURCE) == set()  # the vectors written before the failure are gone too
    report = target.import_bank(exported)  # and the id is free for the next import
    assert report.cleared is None and report.counts["unit"] == 10


def test_a_killed_import_is_marked_and_cleared_by_the_next(
    exported: Path, target: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process killed outright runs no cleanup: stand in for it by making the cleanup do nothing.
    monkeypatch.setattr(restore_module, "BATCH_UNITS", 2)
    monkeypatch.setattr(restore_module, "discard_bank", lambda engine, bank_id: None)
    failing_after(target.store, monkeypatch, "add_units", 2, StoreError("killed (simulated)"))
    with pytest.raises(StoreError):
        target.import_bank(exported)
    monkeypatch.undo()
    left = target.bank(SOURCE, create=False)
    assert 0 < len(target.store.unit_ids(SOURCE)) < 10  # half filled...
    marker = left.jobs()[0]  # ...and says so to anyone who looks
    assert (marker.kind, marker.status.value) == ("hindsight.import", "failed") and "incomplete" in (marker.error or "")

    report = target.import_bank(exported)  # no replace needed: a dead import's leftover is not a bank to keep
    assert report.cleared == "leftover"
    assert snapshot(target, SOURCE)["stats"]["units"] == 10 and check(target).ok
    assert [j.status.value for j in target.bank(SOURCE).jobs()] == ["done"]


def test_an_import_running_in_another_live_process_is_not_taken_for_a_leftover(
    exported: Path, target: Hindsight, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = open_store(tmp_path / "target")  # a second process on the same store (its own lease)
    try:
        monkeypatch.setattr(restore_module, "discard_bank", lambda engine, bank_id: None)
        failing_after(other.store, monkeypatch, "add_units", 1, StoreError("still writing (simulated)"))
        with pytest.raises(StoreError):
            other.import_bank(exported)  # stands for an import that is still running in the other process
        monkeypatch.undo()
        with pytest.raises(BankExistsError, match="being written right now by another process"):
            target.import_bank(exported)
    finally:
        other.close()  # that process ends: what it left is a leftover now
    assert target.import_bank(exported).cleared == "leftover"
    assert check(target).ok


def test_vectors_of_another_embedder_are_recomputed(
    source: Hindsight, target: Hindsight, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = collect_bank(source.engine, SOURCE, with_vectors=True)
    archive.header = archive.header.model_copy(update={"embedder": archive.header.embedder.model_copy(
        update={"name": "another-model"})})
    path = tmp_path / "other.jsonl"
    write_archive(archive, path)
    with caplog.at_level(logging.WARNING):
        report = target.import_bank(path)
    assert report.vectors == "recomputed" and "another-model" in report.vectors_reason
    assert "recomputing" in caplog.text
    assert recall_order(target, SOURCE) == recall_order(source, SOURCE)


def test_functions_take_the_engine(source: Hindsight, target: Hindsight, tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl"
    assert export_bank(source.engine, SOURCE, path).counts["unit"] == 10
    assert import_bank(target.engine, path, bank_id="via-function").bank_id == "via-function"
    with pytest.raises(HindsightError):
        export_bank(source.engine, "no-such-bank", tmp_path / "x.jsonl")


# command line --------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """The ``hindsight`` parser's shape (global options before or after the command) with these commands."""
    from hindsight_core.cli.options import global_options

    top = argparse.ArgumentParser(prog="hindsight", parents=[global_options(argparse.SUPPRESS)])
    top.set_defaults(path=None, graph=None, vectors=None, json=False, verbose=False)
    portability_cli.add_commands(top.add_subparsers(), global_options(argparse.SUPPRESS))
    return top


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_parsed(parser().parse_args(argv), (HindsightError, OSError))
    return code, out.getvalue(), err.getvalue()


def test_cli_export_and_import(source: Hindsight, tmp_path: Path) -> None:
    store = tmp_path / "cli-store"
    src_path = Path(source.store.path).parent  # type: ignore[attr-defined]  # the SQLite store knows its file
    code, out, err = run(["--path", str(src_path), "export", SOURCE, "-o", str(tmp_path / "b.jsonl.gz"),
                          "--with-vectors", "--json"])
    assert code == 0, err
    exported = json.loads(out)
    assert exported["counts"]["unit"] == 10 and exported["with_vectors"] is True

    code, out, err = run(["import", str(tmp_path / "b.jsonl.gz"), "--bank", "from-cli", "--path", str(store)])
    assert code == 0, err
    assert "imported" in out and "as bank 'from-cli'" in out and "vectors copied" in out and "10 memories" in out

    code, out, err = run(["import", str(tmp_path / "b.jsonl.gz"), "--bank", "from-cli", "--path", str(store)])
    assert code == 2 and out == "" and err.startswith("error: ") and "exists already" in err

    (tmp_path / "cut.jsonl").write_bytes(gzip.decompress((tmp_path / "b.jsonl.gz").read_bytes())[:5000])
    code, out, err = run(["import", str(tmp_path / "cut.jsonl"), "--path", str(store), "--json"])
    assert code == 2 and out == "" and "line " in err.splitlines()[-1] and err.splitlines()[-1].startswith("error: ")

    code, out, err = run(["export", "nope", "-o", str(tmp_path / "n.jsonl"), "--path", str(tmp_path / "absent")])
    assert code == 2 and "no memory store" in err
    assert not (tmp_path / "absent").exists()


def test_cli_module_imports_nothing_heavy() -> None:
    import subprocess

    code = ("import sys, hindsight_core.cli.portability as c; "
            "heavy = [m for m in ('torch', 'chromadb', 'hindsight_core.hindsight') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_concurrent_async_exports(source: Hindsight, tmp_path: Path) -> None:
    # ``aexport`` must not block the event loop: it runs in a worker thread like the other async twins.
    async def both() -> list[Any]:
        return list(await asyncio.gather(source.bank(SOURCE).aexport(tmp_path / "a.jsonl"),
                                         source.bank(SOURCE).aexport(tmp_path / "b.jsonl")))

    reports = asyncio.run(both())
    assert [r.counts for r in reports] == [reports[0].counts] * 2


@pytest.mark.parametrize("snapshot", [True, False], ids=["snapshot", "without-snapshot"])
def test_an_export_is_the_bank_as_it_was_while_a_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snapshot: bool
) -> None:
    """A retain commits in another thread between the export's read of the entities and its read of the units.
    With the SQLite store's snapshot the archive is the bank as the export found it; without one (what a store
    lacking snapshots gets) the same interleaving is caught by the reference check, never written."""
    with open_store(tmp_path / "m") as hs:
        bank = hs.bank("live")
        bank.retain(CONVERSATION[:2], timestamp="2025-03-02T10:00:00", document_id="chat:1", extract=False,
                    background=False)
        store = hs.engine.store
        if not snapshot:
            monkeypatch.setattr(type(store), "snapshot", lambda self: contextlib.nullcontext())
        list_entities = store.list_entities
        wrote: list[int] = []

        exporter = threading.get_ident()

        def entities_then_a_write(bank_id: str) -> Any:
            found = list_entities(bank_id)
            if threading.get_ident() != exporter or wrote:
                return found  # the writer's own entity lookups, and later exports, pass through
            with ThreadPoolExecutor(1) as writer:  # another thread, so another connection to the file
                done = writer.submit(
                    bank.retain, [{"speaker": "Priya", "text": "Priya moved to Kyoto with Oscar.", "id": "D2:1"}],
                    timestamp="2025-03-09T10:00:00", document_id="chat:2", extract=False, background=False)
                wrote.append(len(done.result(60).memories))
            return found

        monkeypatch.setattr(store, "list_entities", entities_then_a_write)
        if snapshot:
            archive = collect_bank(hs.engine, "live")
            assert [d.id for d in archive.documents] == ["chat:1"]
            assert sorted(s for u in archive.units for s in u.sources) == ["D1:1", "D1:2"]
            assert "Priya" not in {e.name for e in archive.entities}
        else:
            with pytest.raises(StoreError, match="export it again"):
                collect_bank(hs.engine, "live")
        assert wrote == [1]  # the writer was not blocked: its retain committed during the export
        monkeypatch.undo()
        assert {d.id for d in hs.bank("live").documents()} == {"chat:1", "chat:2"}
        assert check(hs).ok
        # Later exports see the new document, and the store writes normally after the snapshot ended.
        assert [d.id for d in collect_bank(hs.engine, "live").documents] == ["chat:1", "chat:2"]
        hs.bank("live").retain("One more note.", document_id="note:9", extract=False, background=False)

