"""``hindsight bench timeline`` end to end on a small bank: it builds the bank (with corrections, opinions and
forgets), serves the explorer, loads the timeline in headless chromium and reports what it drew and how long it took.
The 10,000-memory figure itself is the benchmark's (docs/EXPLORER.md), not a test's: timing belongs in benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

from hindsight_bench.cli import main


def test_bench_timeline_draws_every_mark_and_reports_its_times(tmp_path: Path) -> None:
    out = tmp_path / "results"
    code = main(["timeline", "--units", "200", "--repeats", "1", "--workdir", str(tmp_path / "memory"),
                 "--out", str(out)])
    assert code == 0
    result = json.loads((out / "timeline.json").read_text())
    # 200 messages, 20 corrections and 20 opinions added, 10 forgotten.
    assert result["bank"]["memories"] == 230
    run = result["browser"]["runs"][0]
    assert run["drawn"] == {"memories": 230, "gaps": 10, "links": 20}
    assert 0 < run["draw_ms"] <= run["ready_ms"] and result["browser"]["ready_ms_median"] == run["ready_ms"]
    assert result["api"]["memories"] == 230 and result["api"]["superseded"] == 20
    report = (out / "timeline.md").read_text()
    assert "| **median** |" in report and "Target: under 2000 ms" in report
    assert (out / "timeline-bench.png").stat().st_size > 10_000
