"""Every notebook in ``notebooks/`` runs top to bottom, offline, with the real local model.

Each notebook is executed by nbclient in a subprocess inside a fresh network namespace (``unshare -rn``)
that has only a loopback interface: the local llama.cpp server works, and any attempt to reach the
internet fails the run, so "runs with no network" is checked, not assumed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

RUNNER = """
import sys, nbformat
from nbclient import NotebookClient
src, out, cwd = sys.argv[1:4]
nb = nbformat.read(src, as_version=4)
NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
nbformat.write(nb, out)
"""

pytestmark = pytest.mark.llm


def test_one_notebook_per_framework() -> None:
    names = " ".join(p.stem for p in NOTEBOOKS)
    for framework in ("langgraph", "langchain", "llamaindex"):
        assert framework in names, f"no notebook for {framework} in notebooks/"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline(notebook: Path, tmp_path: Path) -> None:
    out = tmp_path / notebook.name
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    # Bring loopback up in the new namespace, then exec the runner there; nothing else is reachable.
    cmd = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
           sys.executable, "-c", RUNNER, str(notebook), str(out), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, f"{notebook.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    executed = nbformat.read(out, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code" and c.source.strip()]
    assert code and all(c.execution_count for c in code), "some cells did not run"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
