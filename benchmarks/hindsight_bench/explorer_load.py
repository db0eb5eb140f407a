"""Explorer load times on a large bank: how long the memory explorer's first pages take at 100k memories.

``python -m hindsight_bench.explorer_load --path DIR [--units 100000]`` builds the bank once (raw retain of the
scale benchmark's deterministic synthetic units, ``--document-size`` messages per document, each message with
an id so provenance can be followed), then starts ``python -m hindsight_core.explorer`` on it and measures:

- server time of the JSON endpoints the first page load calls (bank summary, first memories page, a deep
  memories page, the entity graph, documents, jobs, one entity's memories), median of a few calls each;
- with ``--browser``, the browser's load time of the memories view and of the graph view (Debian's chromium
  through selenium), from navigation start until the view says it is ready.

Results are printed as JSON and written to ``--out`` (default ``build/test-output/explorer/load.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .scale import synthetic_units

BANK = "scale-explorer"


def build_bank(path: Path, units: int, document_size: int = 100, log: Any = print) -> dict[str, Any]:
    """Retain ``units`` synthetic messages into bank ``scale-explorer`` under ``path`` (skipped when the bank
    already holds that many); returns the time it took and the resulting counts."""
    from hindsight_core.hindsight import Hindsight

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
    """Median and worst server time (ms, seen by an HTTP client on the same machine) per endpoint."""
    bank = f"{base}/api/banks/{BANK}"
    _, summary = _get(bank)
    total = int(summary["stats"]["units"])
    _, graph = _get(f"{bank}/graph?limit=60")
    top = graph["nodes"][0]["id"] if graph["nodes"] else None
    endpoints = {
        "bank summary": bank,
        "memories page 1 (50)": f"{bank}/memories?limit=50&offset=0",
        "memories last page (50)": f"{bank}/memories?limit=50&offset={max(0, total - 50)}",
        "memories, one network (50)": f"{bank}/memories?network=world&limit=50",
        "entity graph (top 60)": f"{bank}/graph?limit=60",
        "entities page 1 (50)": f"{bank}/entities?limit=50",
        "documents page 1 (50)": f"{bank}/documents?limit=50",
        "jobs page 1 (50)": f"{bank}/jobs?limit=50",
    }
    if top:
        endpoints["most mentioned entity: memories page 1"] = f"{bank}/memories?entity={top}&limit=50"
        endpoints["most mentioned entity: expand"] = f"{bank}/graph/expand?entity={top}&limit=20"
    out: dict[str, Any] = {"units": total}
    for name, url in endpoints.items():
        times = [_get(url)[0] for _ in range(repeats)]
        out[name] = {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1),
                     "first_ms": round(times[0], 1)}
    return out


def measure_browser(base: str, shots: Path, repeats: int = 3) -> dict[str, Any]:
    """Load time of the memories and graph views in headless chromium: navigation start until the view marks
    itself ready (``document.body.dataset.ready``), median of ``repeats`` cold page loads."""
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
        for view in ("memories", "graph", "documents"):
            times = []
            for _ in range(repeats):
                driver.get("about:blank")
                t = time.perf_counter()
                driver.get(f"{base}/#/bank/{BANK}/{view}")
                WebDriverWait(driver, 120).until(
                    lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
                wall = (time.perf_counter() - t) * 1000
                nav = driver.execute_script(
                    "return performance.now() - 0")  # ms since navigation start, at the moment the view is ready
                ready = driver.execute_script("return Number(document.body.dataset.readyAt || 0)")
                times.append({"wall_ms": round(wall, 1), "ready_ms": round(ready or nav, 1)})
            shots.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(shots / f"load-{view}.png"))
            out[view] = {"ready_ms_median": statistics.median(t["ready_ms"] for t in times),
                         "wall_ms_median": statistics.median(t["wall_ms"] for t in times), "runs": times}
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
    port = args.port or _free_port()
    base = f"http://127.0.0.1:{port}"
    t = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "hindsight_core.explorer", "--path", str(root), "--port",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_up(base)
        result["server_start_s"] = round(time.perf_counter() - t, 2)
        result["api"] = measure_api(base)
        if args.browser:
            result["browser"] = measure_browser(base, Path(args.out).parent)
    finally:
        server.terminate()
        server.wait(30)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    raise SystemExit(main())
