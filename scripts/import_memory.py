"""Peak memory of ``Hindsight.import_bank``: generate a bank file of N documents (one memory each, with vectors of a
tiny hashing embedder, so nothing is embedded and no model loads) and import it in a fresh child process, which
reports its peak RSS (``ru_maxrss``).

    .venv/bin/python scripts/import_memory.py 1000 10000          # records = 2 x N (a document and a memory each)
    .venv/bin/python scripts/import_memory.py 1000 10000 --whole   # the same, holding the whole file (before streaming)

Prints one JSON line per size: records, file bytes, peak RSS in MB, seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

DIM = 8
NAME = "hash-8"
TEXT = ("The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly. " * 11)[:1000]

CHILD = """
import json, resource, sys, time
import numpy as np
from hindsight_core import Hindsight
from hindsight_core.portability import importer, jsonl

class HashEmbedder:
    name, dimension = %(name)r, %(dim)d
    def embed(self, texts):
        return np.ones((len(texts), self.dimension), dtype=np.float32) / self.dimension ** 0.5
    def embed_query(self, texts):
        return self.embed(texts)

if %(whole)r:  # the import as it was before streaming: the whole file parsed into memory first
    importer.read_archive = lambda path, stream=False: jsonl.read_archive(path)
started = time.perf_counter()
with Hindsight.open(sys.argv[1], embedder=HashEmbedder(), start_worker=False, reconcile=False) as hs:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = hs.import_bank(sys.argv[2])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"memories": report.counts["unit"], "peak_rss_mb": round(peak / 1024, 1),
                  "rss_before_import_mb": round(base / 1024, 1), "seconds": round(time.perf_counter() - started, 2)}))
"""


def write_file(path: Path, n: int) -> int:
    """A valid bank file of ``n`` documents with one memory each; returns its size in bytes."""
    now = datetime(2026, 1, 1, tzinfo=UTC).isoformat().replace("+00:00", "Z")
    vector = __import__("base64").b64encode((np.ones(DIM, dtype="<f4") / DIM**0.5).tobytes()).decode()
    header = {"record": "header", "format": "hindsight-bank", "version": 2, "created_at": now, "generator": "bench",
              "bank_id": "big", "embedder": {"name": NAME, "dimension": DIM}, "vectors": True,
              "counts": {"bank": 1, "document": n, "entity": 0, "unit": n, "link": 0, "opinion_history": 0,
                         "audit": 0}, "networks": {"world": n}}
    bank = {"record": "bank", "id": "big", "name": "big", "background": "", "created_at": now,
            "disposition": {"skepticism": 3, "literalism": 3, "empathy": 3, "bias": 0.5}}
    digest = hashlib.sha256()
    lines = 0
    with open(path, "wb") as out:
        def put(record: dict) -> None:
            nonlocal lines
            line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
            out.write(line)
            digest.update(line)
            lines += 1
        put(header)
        put(bank)
        for i in range(n):
            put({"record": "document", "id": f"d{i}", "content": f"{i} {TEXT}", "context": None, "timestamp": now,
                 "status": "done", "error": None, "metadata": {}, "created_at": now, "updated_at": now,
                 "kind": "text", "options": {}, "revision": None})
        for i in range(n):
            put({"record": "unit", "id": f"u{i}", "text": f"{i} {TEXT}", "network": "world", "occurred_start": None,
                 "occurred_end": None, "mentioned_at": now, "confidence": None, "sources": [], "document_id": f"d{i}",
                 "metadata": {}, "created_at": now, "entities": [], "vector": vector})
        out.write((json.dumps({"record": "end", "lines": lines, "sha256": digest.hexdigest()}) + "\n").encode())
    return path.stat().st_size


def measure(n: int, *, whole: bool = False) -> dict[str, float]:
    """Import a generated file of ``n`` documents and ``n`` memories in a child process; its numbers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        size = write_file(path, n)
        code = CHILD % {"name": NAME, "dim": DIM, "whole": whole}
        done = subprocess.run([sys.executable, "-c", code, str(Path(tmp) / "m"), str(path)], capture_output=True,
                              text=True, timeout=1800, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        return {"records": 2 * n, "file_mb": round(size / 2**20, 1), **json.loads(done.stdout.splitlines()[-1])}


def main() -> None:
    """Measure each size given on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="+", type=int, help="documents (each with one memory)")
    parser.add_argument("--whole", action="store_true", help="hold the whole file in memory (the old import)")
    args = parser.parse_args()
    for n in args.sizes:
        print(json.dumps({"whole_file": args.whole, **measure(n, whole=args.whole)}), flush=True)


if __name__ == "__main__":
    main()
