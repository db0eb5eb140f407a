"""The explorer's timeline at 10,000 memories: how long headless Chromium takes to show it.

``hindsight bench timeline [--workdir DIR] [--units 10000] [--repeats 5]`` (or ``python -m
hindsight_bench.timeline``) builds a bank once in ``DIR`` (raw retain of the scale benchmark's deterministic synthetic
messages, 100 per document; then 20 corrections, so 20 superseded memories linked to what superseded them, 20
opinions and 10 forgotten memories, so the timeline draws every kind of mark), starts ``python -m
hindsight_core.explorer`` on it and opens the timeline view in Debian's chromium (selenium) ``--repeats`` times, each
from a blank page. Per load it reads what the page measured itself:

- ``ready_ms``: from navigation start until the view has drawn (``<body data-ready-at>``): the HTML, the modules and
  uPlot, the API answer with every memory, the layout and the first draw of the canvas: what a user waits for;
- ``fetch_ms``: the view's API call and uPlot's import, together (``data-fetch-ms`` on the chart);
- ``draw_ms``: from the answer to the first draw done (layout, uPlot's set-up, the draw; ``data-render-ms``);
- ``redraw_ms``: a zoom to one year and back, each redrawn (median of both), timed in the page;

and, outside the browser, the API answer's time and size. Prints a table and the median ``ready_ms`` against the
target (2 s); writes ``timeline.json`` and ``timeline.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from .explorer_load import BANK, build_bank, serving

TARGET_MS = 2000.0
CORRECTIONS = 20
OPINIONS = 20
FORGETS = 10


def prepare_bank(root: Path, units: int, log: Any = print) -> dict[str, Any]:
    """``units`` synthetic memories (built once), then the corrections, opinions and forgets (added once)."""
    from hindsight_core.hindsight import Hindsight

    built = build_bank(root, units, log=log)
    with Hindsight.open(root, start_worker=False) as hs:
        bank = hs.bank(BANK, create=False)
        done = {e.operation for e in bank.audit(limit=1000)}
        if "correct" not in done:
            ids = hs.store.page_units(BANK, limit=CORRECTIONS + OPINIONS + FORGETS, offset=units // 3)
            originals = bank.memories(ids)
            for m in originals[:CORRECTIONS]:
                bank.correct(m.id, "Correction: " + m.text.replace(" in ", " near ", 1), by="timeline-bench")
            for i, m in enumerate(originals[CORRECTIONS : CORRECTIONS + OPINIONS]):
                bank.add_opinion(f"It seems this mattered: {m.text[:80]}", 0.3 + 0.03 * i, entities=m.entities[:2],
                                 based_on=[m.id], rationale="a benchmark opinion")
            for m in originals[CORRECTIONS + OPINIONS :]:
                bank.forget(memory_id=m.id)
        built["memories"] = hs.store.count_units(BANK)
    return built


def _api(base: str) -> dict[str, Any]:
    t = time.perf_counter()
    with urllib.request.urlopen(f"{base}/api/timeline?bank={BANK}", timeout=300) as response:
        body = response.read()
    ms = (time.perf_counter() - t) * 1000
    data = json.loads(body)
    return {"ms": round(ms, 1), "bytes": len(body), "memories": len(data["items"]), "forgets": len(data["forgotten"]),
            "superseded": sum(1 for m in data["items"] if m["superseded_by"])}


REDRAW = """
const done = arguments[arguments.length - 1];
const chart = document.querySelector('.timeline-chart');
const plot = chart.timeline.plot;
const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
(async () => {
  const { min, max } = plot.scales.x;
  const times = [];
  for (const [a, b] of [[(min + max) / 2 - 182 * 86400, (min + max) / 2 + 182 * 86400], [min, max]]) {
    const t = performance.now();
    plot.setScale('x', { min: a, max: b });
    await frame();
    times.push(performance.now() - t);
  }
  done(times);
})();
"""


def measure(base: str, repeats: int, shots: Path | None) -> dict[str, Any]:
    """``repeats`` loads of the timeline view in headless chromium, each from a blank page."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("HINDSIGHT_CHROMIUM", "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("HINDSIGHT_CHROMEDRIVER",
                                                                               "/usr/bin/chromedriver")))
    driver.set_script_timeout(120)
    runs = []
    try:
        for _ in range(repeats):
            driver.get("about:blank")
            t = time.perf_counter()
            driver.get(f"{base}/#/bank/{BANK}/timeline")
            WebDriverWait(driver, 300, poll_frequency=0.02).until(
                lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            wall = (time.perf_counter() - t) * 1000
            page = driver.execute_script(
                "const c = document.querySelector('.timeline-chart'); if (!c) return null;"
                "return {ready: Number(document.body.dataset.readyAt), fetch: Number(c.dataset.fetchMs),"
                " draw: Number(c.dataset.renderMs), memories: Number(c.dataset.drawnMemories),"
                " gaps: Number(c.dataset.drawnGaps), links: Number(c.dataset.drawnLinks)}")
            if page is None:
                raise RuntimeError("the timeline did not draw: " + driver.find_element("tag name", "main").text[:300])
            redraw = driver.execute_async_script(REDRAW)
            runs.append({"ready_ms": page["ready"], "wall_ms": round(wall, 1), "fetch_ms": page["fetch"],
                         "draw_ms": page["draw"], "redraw_ms": round(statistics.median(redraw), 1),
                         "drawn": {"memories": page["memories"], "gaps": page["gaps"], "links": page["links"]}})
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(shots / "timeline-bench.png"))
    finally:
        driver.quit()
    return {"runs": runs, **{f"{k}_median": statistics.median(r[k] for r in runs)
                             for k in ("ready_ms", "wall_ms", "fetch_ms", "draw_ms", "redraw_ms")}}


def run_timeline(workdir: Path, units: int, repeats: int, out: Path | None, log: Any = print) -> dict[str, Any]:
    """Build (once) and measure; the result document."""
    result: dict[str, Any] = {"units": units, "bank": prepare_bank(workdir, units, log=log)}
    log_file = (out or workdir) / "timeline.server.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with serving(workdir, 0, log_file) as (base, started):
        result["server_start_s"] = started
        result["api_first"] = _api(base)
        result["api"] = _api(base)
        result["browser"] = measure(base, repeats, out)
    ready = result["browser"]["ready_ms_median"]
    result["target_ms"] = TARGET_MS
    result["target_met"] = ready < TARGET_MS
    return result


def format_timeline(result: dict[str, Any]) -> str:
    """The result as a short markdown report."""
    b = result["browser"]
    drawn = b["runs"][-1]["drawn"]
    lines = [
        f"# Explorer timeline at {result['bank']['memories']:,} memories (headless chromium)",
        "",
        f"Drawn: {drawn['memories']:,} memories, {drawn['links']} supersession links, {drawn['gaps']} forgotten gaps.",
        f"API answer: {result['api']['ms']:.0f} ms ({result['api']['bytes'] / 1e6:.1f} MB; first call "
        f"{result['api_first']['ms']:.0f} ms).",
        "",
        "| load | ready (nav start to drawn) | fetch + uPlot import | layout + first draw | zoom redraw | wall |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(b["runs"], 1):
        lines.append(f"| {i} | {r['ready_ms']:.0f} ms | {r['fetch_ms']:.0f} ms | {r['draw_ms']:.0f} ms | "
                     f"{r['redraw_ms']:.0f} ms | {r['wall_ms']:.0f} ms |")
    lines.append(f"| **median** | **{b['ready_ms_median']:.0f} ms** | {b['fetch_ms_median']:.0f} ms | "
                 f"{b['draw_ms_median']:.0f} ms | {b['redraw_ms_median']:.0f} ms | {b['wall_ms_median']:.0f} ms |")
    lines += ["", f"Target: under {result['target_ms']:.0f} ms: {'met' if result['target_met'] else 'NOT met'}."]
    return "\n".join(lines) + "\n"


def cmd_timeline(args: Any) -> dict[str, Any] | None:
    """``timeline``: the explorer's timeline view at 10,000 memories in headless chromium."""
    from .commands import stderr_print
    from .report import write_json, write_text

    log = stderr_print if getattr(args, "json", False) else print
    out = Path(args.out) if args.out else None
    if args.workdir:
        result = run_timeline(Path(args.workdir), args.units, args.repeats, out, log=log)
    else:
        with tempfile.TemporaryDirectory(prefix="hindsight-timeline-") as tmp:
            result = run_timeline(Path(tmp) / "memory", args.units, args.repeats, out, log=log)
    report = format_timeline(result)
    if not getattr(args, "json", False):
        print(report)
    if out is not None:
        written = [write_json(out / "timeline.json", result), write_text(out / "timeline.md", report)]
        log("wrote " + ", ".join(str(p) for p in written))
    return result if getattr(args, "json", False) else None


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text[:20]!r}") from None
    if not 1 <= number <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 1,000,000, not {number}")
    return number


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``hindsight bench timeline``."""
    p.add_argument("--units", type=_positive, default=10_000, help="synthetic memories in the bank (default 10000)")
    p.add_argument("--repeats", type=_positive, default=5, help="page loads measured (default 5)")
    p.add_argument("--workdir", help="build the bank here once and reuse it (default: a temporary directory)")
    p.add_argument("--out", default="results", help="folder for timeline.json, timeline.md and a screenshot "
                                                    "(default ./results)")


def main(argv: list[str] | None = None) -> int:
    """``python -m hindsight_bench.timeline``."""
    parser = argparse.ArgumentParser(prog="python -m hindsight_bench.timeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    cmd_timeline(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
