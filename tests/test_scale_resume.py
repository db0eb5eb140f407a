"""``hindsight bench scale`` with a kept workdir: an interrupted ingest continues where it stopped, a finished
bank is reused without retaining again (real stores: the embedded backend)."""

from __future__ import annotations

import json
from pathlib import Path

from hindsight_bench.backends import open_embedded
from hindsight_bench.scale import ingest, run_scale, synthetic_units


def _texts(root: Path, size: int) -> list[str]:
    with open_embedded(root / f"size-{size}") as hs:
        ids = hs.store.page_units(f"scale-{size}", limit=10 * size)
        return sorted(m.text for m in hs.bank(f"scale-{size}", create=False).memories(ids))


def test_an_interrupted_ingest_resumes_and_a_finished_bank_is_reused(tmp_path: Path) -> None:
    size, batch = 40, 10
    folder = tmp_path / f"size-{size}"
    folder.mkdir()
    # An ingest stopped after 25 of 40 units: the first 25 units of the same deterministic sequence, with the
    # third batch half written (its document holds 5 of its 10 units).
    with open_embedded(folder) as hs:
        hs.bank(f"scale-{size}")
        first = ingest(hs, f"scale-{size}", 25, batch=batch, folder=folder, progress=False)
    assert first["resumed_from"] == 0 and first["retain_units_per_s"] > 0

    logs: list[str] = []
    result = run_scale((size,), queries=3, batch=batch, workdir=tmp_path, progress=False, log=logs.append)
    entry = result["sizes"][str(size)]
    assert entry["resumed_from"] == 25
    assert any("25 units already in the bank; continuing from unit 10" in line for line in logs)
    # Every unit once: the half-written batch was replaced, not duplicated.
    assert _texts(tmp_path, size) == sorted(text for text, _ in synthetic_units(size))
    build = json.loads((folder / "build.json").read_text())
    assert build["units_done"] == size and len(build["runs"]) == 2
    assert entry["retain_units_per_s"] > 0 and entry["build_units_per_s"] > 0

    # Run again: the bank is complete, nothing is retained, recall is measured on it.
    again = run_scale((size,), queries=3, batch=batch, workdir=tmp_path, progress=False, log=logs.append)
    entry = again["sizes"][str(size)]
    assert entry["resumed_from"] == size and "retain_units_per_s" not in entry
    assert entry["recall_ms"]["n"] == 3 and entry["build_units_per_s"] > 0
    assert _texts(tmp_path, size) == sorted(text for text, _ in synthetic_units(size))


def test_without_resume_a_kept_bank_is_built_afresh(tmp_path: Path) -> None:
    run_scale((30,), queries=2, batch=10, workdir=tmp_path, progress=False, log=lambda _: None)
    result = run_scale((30,), queries=2, batch=10, workdir=tmp_path, resume=False, progress=False,
                       log=lambda _: None)
    assert result["sizes"]["30"]["resumed_from"] == 0
    assert len(_texts(tmp_path, 30)) == 30
