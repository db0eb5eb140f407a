"""Kill torture: a writer that retains (raw and deferred), re-retains, forgets and runs its background jobs is
SIGKILLed at random points, again and again. After every kill the store is reopened and must hold every
acknowledged write and no acknowledged forget undone; ``check`` finds nothing; recall works.

``HINDSIGHT_TORTURE_KILLS`` sets the number of kills (default 30, the test command's size: about a minute on
2 cores; the long runs in docs/INTEGRITY.md used 50 and 300). Writers are forked from a server process that
imported the heavy modules once, so that a kill cycle costs about a second rather than an interpreter start.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from kill_workload import BANK, Journal, document_messages, run_writer, sources_version

from hindsight_core import Hindsight
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.runtime.integrity import check

KILLS = int(os.environ.get("HINDSIGHT_TORTURE_KILLS", "30"))


def state_of(hs: Hindsight, doc: str) -> tuple[str, int | None, int | None]:
    """(status or "absent", version of the stored raw content, version of the stored memories)."""
    store = hs.store
    stored = store.get_document(BANK, doc)
    units = store.get_units(BANK, store.units_of_document(BANK, doc))
    unit_version = sources_version([s for u in units for s in u.sources]) if units else None
    if units:
        assert unit_version is not None and len(units) == 2, f"{doc}: memories of mixed versions {units}"
    if stored is None:
        return "absent", None, unit_version
    content_version = sources_version([m["id"] for m in json.loads(stored.content)])
    return stored.status.value, content_version, unit_version


def settled(op: dict[str, Any] | None) -> tuple[set[tuple[str, int | None, int | None]], set[int | None]]:
    """The states a document may be in once ``op`` was acknowledged (None: never), and the memory versions
    those states hold."""
    if op is None or op["op"] == "forget":
        return {("absent", None, None)}, {None}
    v = op["version"]
    if op["op"] == "defer":  # stored and queued; its job may have extracted it already (new documents only)
        return {("done", v, v), ("pending", v, None), ("extracting", v, None)}, {None, v}
    return {("done", v, v)}, {v}


def verify(hs: Hindsight, journal: Journal) -> None:
    """Every acknowledged operation holds; the one in flight at a kill either happened or did not, and a
    retain that stored its document before the kill is resumed (pending on a job, earlier memories intact)."""
    for doc in set(journal.acked) | set(journal.in_flight):
        acked = journal.acked.get(doc)
        ok, units = settled(acked)
        flight = journal.in_flight.get(doc, [])
        if any(op["op"] == "forget" for op in flight):
            ok |= {("absent", None, None)}
        put = [op["version"] for op in flight if op["op"] != "forget"]
        units = units | set(put)  # an interrupted retain may have been resumed and extracted since
        forgot = [i for i, op in enumerate(flight) if op["op"] == "forget"]
        if forgot and any(op["op"] != "forget" for op in flight[forgot[0] + 1:]):
            # An interrupted forget may have happened before a later interrupted retain stored the document
            # again, so that retain started with no memories to keep.
            units = units | {None}
        ok |= {("done", w, w) for w in put}
        ok |= {(status, w, u) for status in ("pending", "extracting") for w in put for u in units}
        got = state_of(hs, doc)
        assert got in ok, f"{doc}: state {got}, allowed {sorted(ok, key=str)} (acked {acked}, in flight {flight})"
    report = check(hs)
    assert report.ok, report.model_dump()


def _writer(path: str, journal: str, ready: str, seed: int) -> None:
    run_writer(path, journal, ready, seed)


def test_sigkilled_writer_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path, journal, ready = tmp_path / "memory", tmp_path / "journal.jsonl", tmp_path / "ready"
    ctx = multiprocessing.get_context("forkserver")
    # Imported once in the fork server: each writer starts in about a second instead of five.
    ctx.set_forkserver_preload(["kill_workload", "hindsight_core.hindsight", "sentence_transformers", "chromadb"])
    embedder = SentenceTransformerEmbedder()
    rnd = random.Random(20261201)
    rebuilt = 0
    t0 = time.monotonic()
    for kill in range(KILLS):
        ready.unlink(missing_ok=True)
        proc = ctx.Process(target=_writer, args=(str(path), str(journal), str(ready), kill), daemon=True)
        proc.start()
        if rnd.random() < 0.2:
            time.sleep(rnd.uniform(0.0, 1.0))  # killed while opening: recovery itself must survive a kill
        else:
            deadline = time.monotonic() + 120
            while not ready.exists():
                assert proc.is_alive(), f"writer {kill} died before it was ready (exit {proc.exitcode})"
                assert time.monotonic() < deadline, "writer never got ready"
                time.sleep(0.02)
            time.sleep(rnd.uniform(0.05, 1.5))
        assert proc.is_alive(), f"writer {kill} died on its own (exit {proc.exitcode})"
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode == -signal.SIGKILL
        proc.close()
        state = Journal.read(journal)
        with Hindsight.open(path, embedder=embedder, start_worker=False) as hs:
            verify(hs, state)
            rebuilt += int(any(v["reindexed"] for v in hs.reconciled.values()))
    # Finally a process with a worker finishes every queued and resumed extraction.
    state = Journal.read(journal)
    with Hindsight.open(path, embedder=embedder) as hs:
        assert hs.bank(BANK).wait_idle(300)
        for doc, op in state.acked.items():
            if doc not in state.in_flight and op["op"] != "forget":
                assert state_of(hs, doc) == ("done", op["version"], op["version"]), doc  # all extracted now
        verify(hs, state)
        live = [d for d, op in state.acked.items() if op["op"] != "forget" and d not in state.in_flight]
        assert live, "the writers acknowledged nothing"
        probe = live[-1]
        version = state.acked[probe]["version"]
        text = document_messages(probe, version)[0]["text"]
        found = hs.bank(BANK).recall(text, budget=200).memories
        assert found and found[0].document_id == probe
    elapsed = time.monotonic() - t0
    print(f"\nkill torture: {KILLS} kills, {state.acks} acknowledged operations, {len(state.acked)} documents, "
          f"{len(state.in_flight)} operations in flight at a kill, {rebuilt} reopenings re-indexed vectors, lost 0, "
          f"{elapsed:.0f} s")


@pytest.fixture(autouse=True)
def _quiet_tokenizers() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
