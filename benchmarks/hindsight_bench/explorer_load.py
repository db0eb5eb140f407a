"""Explorer load times on a large bank: how long the memory explorer's first pages take at 100k memories.

``python -m hindsight_bench.explorer_load --path DIR [--units 100000]`` builds the bank once (raw retain of the
scale benchmark's deterministic synthetic units, ``--document-size`` messages per document, each message with
an id so provenance can be followed), then starts ``python -m hindsight_core.explorer`` on it and measures:

- the time of the JSON endpoints the views call (bank summary, first and last memories page, counts, the entity
  graph, entities, documents, jobs, the most mentioned entity's memories and neighbourhood): the first call on the
  fresh server, then the median of a few more;
- with ``--browser``, the browser's load time of the memories view and of the graph view (Debian's chromium
  through selenium), from navigation start until the view says it is ready.

Results are printed as JSON and written to ``--out`` (default ``build/test-output/explorer/load.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .scale import synthetic_units

BANK = "scale-explorer"


def build_bank(path: Path, units: int, document_size: int = 100, log: Any = None) -> dict[str, Any]:
    """Retain ``units`` synthetic messages into bank ``scale-explorer`` under ``path`` (skipped when the bank
    already holds that many); returns the time it took and the resulting counts."""
    from hindsight_core.hindsight import Hindsight

    log = log or (lambda line: print(line, flush=True))
    with Hindsight.open(path) as hs:
        bank = hs.bank(BANK)
        have = bank.stats()["units"]
        if have >= units:
            log(f"bank {BANK} already holds {have} memories")
            return {"built": False, "units": have}
        rows = list(synthetic_units(units))
        t = time.perf_counter()
        start = (have // document_size) * document_size  # resume at the first incomplete document
        for i in range(start, units, document_size):
            chunk = rows[i : i + document_size]
            bank.retain([{"text": text, "timestamp": when, "id": f"msg-{i + j}"} for j, (text, when) in
                         enumerate(chunk)], document_id=f"doc-{i // document_size:05d}", extract=False,
                        background=False)
            if (i // document_size) % 50 == 0:
                log(f"{i + len(chunk)} / {units} retained ({time.perf_counter() - t:.0f} s)")
        seconds = time.perf_counter() - t
        return {"built": True, "units": bank.stats()["units"], "seconds": seconds}


def _get(url: str) -> tuple[float, Any]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return (time.perf_counter() - t) * 1000, json.loads(body)


def _wait_up(base: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _get(f"{base}/api/health")
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the explorer did not answer at {base} within {timeout:.0f} s")


def measure_api(base: str, repeats: int = 5) -> dict[str, Any]:
    """Time per endpoint (ms, seen by an HTTP client on the same machine): the first call on a fresh server
    (``first_ms``: cold caches, and for the graph the computation its cache then saves) and the median and worst of
    ``repeats`` more."""
    bank = f"{base}/api/bank?bank={BANK}"
    q = f"bank={BANK}"
    cold_summary, summary = _get(bank)
    total = int(summary["memories"])
    cold_graph, graph = _get(f"{base}/api/graph?{q}&limit=60")
    top = graph["nodes"][0]["id"] if graph["nodes"] else None
    endpoints = {
        "memories page 1 (50)": f"{base}/api/memories?{q}&limit=50&offset=0",
        "memories last page (50)": f"{base}/api/memories?{q}&limit=50&offset={max(0, total - 50)}",
        "memories, world network, page 1": f"{base}/api/memories?{q}&network=world&limit=50",
        "memory counts per network": f"{base}/api/counts?{q}",
        "entities page 1 (50)": f"{base}/api/entities?{q}&limit=50",
        "documents page 1 (50)": f"{base}/api/documents?{q}&limit=50",
        "jobs page 1 (50)": f"{base}/api/jobs?{q}&limit=50",
        "bank stats (overview)": f"{base}/api/stats?{q}",
    }
    if top:
        endpoints["top entity: memories page 1"] = f"{base}/api/memories?{q}&entity={top}&limit=50"
        endpoints["top entity: detail"] = f"{base}/api/entity?{q}&id={top}"
        endpoints["top entity: expand 15"] = f"{base}/api/graph/expand?{q}&entity={top}&limit=15"
    out: dict[str, Any] = {"units": total,
                           "bank summary": {"first_ms": round(cold_summary, 1)},
                           "entity graph (top 60)": {"first_ms": round(cold_graph, 1)}}
    for name, url in endpoints.items():
        first = _get(url)[0]
        times = [_get(url)[0] for _ in range(repeats)]
        out[name] = {"first_ms": round(first, 1), "median_ms": round(statistics.median(times), 1),
                     "max_ms": round(max(times), 1)}
    for name, url in (("bank summary", bank), ("entity graph (top 60)", f"{base}/api/graph?{q}&limit=60")):
        times = [_get(url)[0] for _ in range(repeats)]
        out[name].update(median_ms=round(statistics.median(times), 1), max_ms=round(max(times), 1))
    return out


def measure_browser(base: str, shots: Path, repeats: int = 3) -> dict[str, Any]:
    """Load time of each view in headless chromium: a fresh page load (from ``about:blank``) until the view marks
    itself ready (``<body data-ready="1">``, with ``data-ready-at``: ms since navigation start, so it counts the
    HTML, the modules, every API call and the rendering); median of ``repeats``. Also the wall time seen by the
    driver, and a screenshot of each view."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("HINDSIGHT_CHROMIUM", "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("HINDSIGHT_CHROMEDRIVER",
                                                                               "/usr/bin/chromedriver")))
    out: dict[str, Any] = {}
    try:
        for view in ("memories", "graph", "documents", "opinions", "jobs"):
            runs = []
            for _ in range(repeats):
                driver.get("about:blank")
                t = time.perf_counter()
                driver.get(f"{base}/#/bank/{BANK}/{view}")
                WebDriverWait(driver, 300, poll_frequency=0.02).until(
                    lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
                wall = (time.perf_counter() - t) * 1000
                ready = float(driver.execute_script("return Number(document.body.dataset.readyAt)"))
                runs.append({"ready_ms": round(ready, 1), "wall_ms": round(wall, 1)})
            shots.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(shots / f"load-{view}.png"))
            out[view] = {"ready_ms_median": statistics.median(r["ready_ms"] for r in runs),
                         "wall_ms_median": round(statistics.median(r["wall_ms"] for r in runs), 1), "runs": runs}
    finally:
        driver.quit()
    return out


def main(argv: list[str] | None = None) -> int:
    """Build the bank if needed, then measure the explorer on it."""
    parser = argparse.ArgumentParser(prog="python -m hindsight_bench.explorer_load", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", required=True, help="memory store folder (the bank is built there once)")
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--document-size", type=int, default=100)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--browser", action="store_true", help="also measure page loads in headless chromium")
    parser.add_argument("--port", type=int, default=0, help="explorer port (default: a free one)")
    parser.add_argument("--out", default="build/test-output/explorer/load.json")
    args = parser.parse_args(argv)
    root = Path(args.path)
    result: dict[str, Any] = {"build": build_bank(root, args.units, args.document_size)}
    if args.build_only:
        print(json.dumps(result, indent=2))
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Each measurement gets a fresh server, so that both see cold caches on their first call.
    with serving(root, args.port, out.with_suffix(".server.log")) as (base, started):
        result["server_start_s"] = started
        result["api"] = measure_api(base)
    if args.browser:
        with serving(root, args.port, out.with_suffix(".server.log")) as (base, _):
            result["browser"] = measure_browser(base, out.parent)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


@contextlib.contextmanager
def serving(root: Path, port: int, log: Path) -> Iterator[tuple[str, float]]:
    """``python -m hindsight_core.explorer`` on ``root``; yields its address and how long it took to answer."""
    port = port or _free_port()
    base = f"http://127.0.0.1:{port}"
    t = time.perf_counter()
    with log.open("a") as sink:
        server = subprocess.Popen([sys.executable, "-m", "hindsight_core.explorer", "--path", str(root), "--port",
                                   str(port)], stdout=sink, stderr=subprocess.STDOUT)
        try:
            _wait_up(base)
            yield base, round(time.perf_counter() - t, 2)
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    raise SystemExit(main())
