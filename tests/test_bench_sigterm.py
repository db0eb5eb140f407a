"""A benchmark stopped with SIGTERM unwinds like an exception: its stores close (and with ``--backend server`` its
servers stop) instead of the process dying with them open. Checked on the embedded backend: a clean close removes
the process's owner row from the graph store; a killed process leaves it behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN = "import sys; from hindsight_bench.cli import main; sys.exit(main())"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_a_scale_ingest_closes_the_store(tmp_path: Path) -> None:
    env = {**os.environ, "HINDSIGHT_EMBEDDER": "minilm"}
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "scale", "--units", "200000", "--workdir", str(tmp_path), "--ingest-only",
         "--embedder", "minilm", "--batch", "50", "--no-progress"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    graph = tmp_path / "embedded" / "size-200000" / "graph.sqlite"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if graph.exists() and _count(graph, "SELECT count(*) FROM units") >= 100:
                break  # ingesting: the store is open and has an owner row
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[0]
        assert _count(graph, "SELECT count(*) FROM owners") == 1
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "Traceback" not in out, out
    assert _count(graph, "SELECT count(*) FROM owners") == 0  # closed: the owner row went with it
    assert _count(graph, "SELECT count(*) FROM units") >= 100  # and what was retained stays


def _count(path: Path, sql: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(con.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the schema is not there yet
    finally:
        con.close()
