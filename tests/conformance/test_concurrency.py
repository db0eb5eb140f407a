"""Several processes writing to the server backend at once lose nothing and duplicate nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conformance_support import ServerEnv, server_store

from hindsight_core import Hindsight
from hindsight_core.models import Job
from hindsight_core.runtime.integrity import check
from hindsight_core.text.names import normalise_name

WORKER = Path(__file__).with_name("concurrent_worker.py")


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env})


def _run_together(procs: list[subprocess.Popen[str]], go: Path, ready: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 300
    while len(list(go.parent.glob(go.name + ".*.ready"))) < ready:
        for p in procs:
            assert p.poll() is None, p.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "workers never got ready"
        time.sleep(0.1)
    go.write_text("go")
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_three_processes_retain_overlapping_entities_into_one_bank(
    kind: str, servers: ServerEnv, embedder: Any, tmp_path: Path
) -> None:
    """Three writers at once, the same entities in several spellings: nothing lost, nothing duplicated, the
    entity counts exact, both stores in agreement. Embedded, the processes take turns on Chroma's files
    (``process_guard``); on the server backend the databases arbitrate."""
    if kind == "server":
        wipe = server_store(servers)
        wipe.clear_all()
        wipe.close()
        graph, vectors = "env", "env"
    else:
        graph, vectors = str(tmp_path / "graph.sqlite"), str(tmp_path / "vectors")
    bank_id = f"shared-{os.getpid()}-{time.time_ns()}"
    go = tmp_path / "go"
    count = 10
    names = ("alpha", "beta", "gamma")
    procs = [_spawn(["retain", bank_id, name, str(count), str(go), graph, vectors], servers.env()) for name in names]
    results = _run_together(procs, go, ready=3)
    ids = [i for r in results for i in r["ids"]]
    assert len(ids) == len(set(ids)) == 2 * 3 * count
    opened = (Hindsight.open(None, graph=server_store(servers), vectors=servers.chroma_url, embedder=embedder,
                             start_worker=False, reconcile=False, recover=False) if kind == "server"
              else Hindsight.open(None, graph=graph, vectors=vectors, embedder=embedder, start_worker=False,
                                  reconcile=False, recover=False))
    with opened as hs:
        store, index = hs.store, hs.index
        hs.bank(bank_id)
        assert store.unit_ids(bank_id) == set(ids)  # nothing lost, nothing extra
        assert index.ids(bank_id) == set(ids)  # both stores agree
        docs = [d.id for d in store.list_documents(bank_id)]
        assert sorted(docs) == sorted(f"{n}-{i}" for n in names for i in range(count))
        entities = store.list_entities(bank_id)
        assert len(entities) == len({normalise_name(e.name) for e in entities})  # none created twice by a race
        for entity in entities:
            assert entity.mention_count == len(store.units_of_entity(bank_id, entity.id))  # no lost count
        oscar = store.find_entity(bank_id, "OSCAR")
        assert oscar is not None and oscar.mention_count >= count  # NER finds some spellings, each writer some
        spelled = {n for m in store.get_units(bank_id, ids) for n in m.entities if normalise_name(n) == "oscar"}
        assert spelled == {oscar.name}  # every spelling any writer found is the one entity
        sources = [s for m in store.get_units(bank_id, ids) for s in m.sources]
        assert len(sources) == len(set(sources)) == 2 * 3 * count  # every message stored exactly once
        report = check(hs, [bank_id])
        assert report.ok, report.model_dump()
        recall = hs.bank(bank_id).recall("Who did Caroline meet in Boston?", budget=300).memories
        assert recall and "Boston" in recall[0].text


def test_workers_in_several_processes_claim_each_job_once(servers: ServerEnv, tmp_path: Path) -> None:
    store = server_store(servers)
    store.clear_all()
    jobs = [f"job-{i:03d}" for i in range(40)]
    for j in jobs:
        store.enqueue_job(Job(id=j, bank_id="jobs", kind="noop"))
    go = tmp_path / "go"
    procs = [_spawn(["claim", str(go)], servers.env()) for _ in range(3)]
    results = _run_together(procs, go, ready=3)
    claimed = [i for r in results for i in r["ids"]]
    assert sorted(claimed) == jobs  # every job once, none twice
    assert store.pending_jobs() == 0 and all(j.attempts == 1 for j in store.list_jobs())
    store.close()


def test_stale_entity_snapshot_reuses_the_stored_entity(servers: ServerEnv) -> None:
    """What a racing writer does, step by step: its resolver saw no "Oscar", another process created one
    meanwhile; the Bolt store folds the new entity into the stored one instead of duplicating it."""
    from datetime import UTC, datetime

    from hindsight_core.models import BankProfile, Entity, Memory, Network
    from hindsight_core.stores.base import Mention, UnitBatch

    store = server_store(servers)
    store.clear_all()
    store.create_bank(BankProfile(id="race", name="race"))
    when = [datetime(2024, 1, d, tzinfo=UTC) for d in (1, 2)]
    for n, (eid, uid) in enumerate([("oscar-a", "u-a"), ("oscar-b", "u-b")]):
        store.add_units("race", UnitBatch(
            units=[Memory(id=uid, bank_id="race", text=f"Oscar {uid}", network=Network.WORLD)],
            new_entities=[Entity(id=eid, bank_id="race", name="OSCAR" if n else "Oscar", aliases=[f"Oz{n}"],
                                 mention_count=1, first_seen=when[n], last_seen=when[n])],
            mentions=[Mention(uid, eid)],
        ))
    (oscar,) = store.list_entities("race")
    assert (oscar.id, oscar.name, oscar.mention_count) == ("oscar-a", "Oscar", 2)
    assert oscar.aliases == ["Oz0", "Oz1"] and (oscar.first_seen, oscar.last_seen) == (when[0], when[1])
    assert sorted(store.units_of_entity("race", "oscar-a")) == ["u-a", "u-b"]
    assert store.get_units("race", ["u-b"])[0].entities == ["Oscar"]
    store.close()
