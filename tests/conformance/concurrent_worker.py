"""Child process of the concurrency tests: retains into, or claims jobs from, the server backend.

Usage: ``python concurrent_worker.py retain BANK NAME COUNT GO_FILE [GRAPH VECTORS]`` or ``... claim GO_FILE``;
prints JSON. ``GRAPH``/``VECTORS`` (default ``env``: the server backend) may name an embedded SQLite file and
Chroma directory. Both wait for ``GO_FILE`` to appear so that the processes really write at the same time.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path


def _wait(go: Path) -> None:
    deadline = time.monotonic() + 300
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("go file never appeared")
        time.sleep(0.005)


def retain(bank_id: str, name: str, count: int, go: Path, graph: str = "env", vectors: str = "env") -> None:
    """Retain ``count`` small documents (shared entity names on purpose, in several spellings) and print the
    memory ids."""
    from hindsight_core import Hindsight

    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    # The int8 MiniLM on onnxruntime: the default's vector space (one recorded name) without importing torch in
    # each of the three writers, which the test does not need.
    with Hindsight.open(None, graph=graph, vectors=vectors, start_worker=False, embedder="minilm-int8") as hs:
        bank = hs.bank(bank_id)
        hs.embedder.embed(["warm up"])
        Path(str(go) + f".{name}.ready").write_text("ok")
        _wait(go)
        ids: list[str] = []
        for i in range(count):
            oscar = ("Oscar", "OSCAR", "oscar")[i % 3]  # one entity, whichever spelling arrives first
            msgs = [
                {"speaker": "Caroline", "text": f"{name} note {i}: Caroline met {oscar} in Boston.",
                 "id": f"{name}:{i}:1"},
                {"speaker": "Melanie", "text": f"{name} reply {i}: Melanie painted the lake.", "id": f"{name}:{i}:2"},
            ]
            res = bank.retain(msgs, timestamp=t0 + timedelta(hours=i), document_id=f"{name}-{i}", extract=False,
                              background=False)
            ids += [m.id for m in res.memories]
    print(json.dumps({"ids": ids}))


def claim(go: Path) -> None:
    """Claim jobs until none is left; print the claimed ids."""
    from hindsight_core.stores.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore()
    Path(str(go) + f".claim{id(store)}.ready").write_text("ok")
    _wait(go)
    claimed: list[str] = []
    now = datetime.now(UTC) + timedelta(days=1)
    while (job := store.claim_job(now)) is not None:
        claimed.append(job.id)
        store.finish_job(job.id)
    store.close()
    print(json.dumps({"ids": claimed}))


if __name__ == "__main__":
    if sys.argv[1] == "retain":
        retain(sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5]), *sys.argv[6:8])
    else:
        claim(Path(sys.argv[2]))
