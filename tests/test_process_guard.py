"""The embedded vector index shared between processes: a holder that does not let go is named after a bounded
wait; another process's writes are seen (the client reloads); an index damaged by a writer that died mid-write
is rebuilt from the graph store on open."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.errors import StoreLockedError
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.chroma import ChromaVectorIndex

EMBEDDER = SentenceTransformerEmbedder()
MESSAGES = [{"speaker": "Maya", "text": "I planted tomatoes in the garden in Porto.", "id": "m1"},
            {"speaker": "Ana", "text": "Green tea for me, thanks.", "id": "m2"}]


def test_a_holder_that_does_not_let_go_is_named(tmp_path: Path) -> None:
    vectors = tmp_path / "vectors"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, json, os, socket, time
        fd = os.open({str(vectors) + '.lock'!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        open({str(vectors) + '.holder'!r}, 'w').write(json.dumps({{"pid": os.getpid(), "host": socket.gethostname(),
                                                               "what": "writing", "since": "now"}}))
        print("held", flush=True)
        time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        index = ChromaVectorIndex.persistent(vectors, lock_timeout=0.5)
        t = time.monotonic()
        with pytest.raises(StoreLockedError, match=f"process {holder.pid}") as caught:
            index.ensure_collection("b", "e", 3)
        assert 0.4 < time.monotonic() - t < 10
        assert isinstance(caught.value, TimeoutError) and "server backend" in str(caught.value)
        index.close()
    finally:
        holder.kill()
        holder.wait()


def test_another_processes_write_is_seen(tmp_path: Path) -> None:
    """Without the reload this process's in-memory index would never see the other process's vectors."""
    with Hindsight.open(tmp_path / "memory", embedder=EMBEDDER, start_worker=False) as hs:
        bank = hs.bank("shared")
        bank.retain(MESSAGES[:1], extract=False, background=False)
        assert bank.recall("Where are the tomatoes?", budget=200).memories
        child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            from hindsight_core import Hindsight
            with Hindsight.open({str(tmp_path / 'memory')!r}, start_worker=False) as hs:
                hs.bank("shared").retain([{{"speaker": "Ana", "text": "Green tea for me, thanks.", "id": "m2"}}],
                                         extract=False, background=False)
        """)], capture_output=True, text=True, timeout=300)
        assert child.returncode == 0, child.stderr[-2000:]
        hits = hs.index.query("shared", EMBEDDER.embed(["green tea"])[0], 5)
        assert len(hits) == 2 and hs.store.get_units("shared", [hits[0][0]])[0].sources == ["m2"]
        assert check(hs).ok


def test_a_damaged_index_is_rebuilt_from_the_graph_store(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    with Hindsight.open(root, embedder=EMBEDDER, start_worker=False) as hs:
        hs.bank("b").retain(MESSAGES, extract=False, background=False)
        units = hs.store.unit_ids("b")
    # A writer died mid-write (the generation is left dirty) and took the index files with it.
    gen = root / "vectors.gen"
    gen.write_text(f"{gen.read_text().split()[0]} dirty")
    (root / "vectors" / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with Hindsight.open(root, embedder=EMBEDDER, start_worker=False) as hs:
        assert hs.reconciled["b"]["reindexed"] == len(units)
        assert hs.index.ids("b") == units
        top = hs.bank("b").recall("What did Maya plant?", budget=200).memories
        assert top and top[0].sources == ["m1"]
        assert check(hs).ok


def test_processes_opening_the_index_at_once_take_turns_to_load_it(tmp_path: Path) -> None:
    """Opening a Chroma client writes to its SQLite file (and the first one creates its tables): six readers
    and two writers opening a new index at the same moment, the writers writing on (so the readers reload
    again and again), all finish, and every write is there at the end. Before reloads took the exclusive lock
    this failed about one run in two with "table collections already exists" or, in CI, "database is
    locked"."""
    vectors = tmp_path / "vectors"  # a new index: the first client to open it also creates Chroma's tables
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, sys, time
        import numpy as np
        from hindsight_core.stores.base import VectorMeta
        from hindsight_core.stores.chroma import ChromaVectorIndex
        role = sys.argv[1]
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        index = ChromaVectorIndex.persistent({str(vectors)!r})
        index.ensure_collection("b", "e", 3)
        for i in range(30):
            if role == "writer":
                index.upsert("b", [f"u{{i}}"], np.array([[1.0, float(i), 0.0]]), [VectorMeta()])
            else:
                index.ensure_collection("b", "e", 3)
                index.query("b", np.array([1.0, 0.0, 0.0]), 3)
        index.close()
        print("done", flush=True)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, role], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for role in ("writer", "writer", *["reader"] * 6)]
    go.write_text("go")
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "done", err[-3000:]
    index = ChromaVectorIndex.persistent(vectors)
    index.ensure_collection("b", "e", 3)
    assert index.ids("b") == {f"u{i}" for i in range(30)}
    index.close()
