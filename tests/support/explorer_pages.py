"""What the explorer's page tests share: headless chromium through chromedriver keeping the page's console log, opening
a view and waiting for it to say it has rendered, the console's errors, axe-core's serious and critical violations
(the vendored copy, injected into the page), and the screenshots (every run writes one under the test output folder;
the README's copy under ``docs/`` is written when missing or when ``HINDSIGHT_UPDATE_SCREENSHOTS`` is set, so a run
does not dirty the checkout)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "core" / "explorer" / "static"
DOCS = REPO / "docs"
CHROMIUM = os.environ.get("HINDSIGHT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("HINDSIGHT_CHROMEDRIVER", "/usr/bin/chromedriver")
APT = "apt-get update && apt-get install -y chromium chromium-driver"


def chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """Headless chromium (a generator for a fixture to yield from), quit at the end; fails with the install line when
    the browser or its driver is missing."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not (Path(binary).exists() or shutil.which(binary)):
            pytest.fail(f"{binary} is missing: the browser tests need Debian's chromium ({APT})", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}",
                 "--disable-gpu", "--no-first-run", "--disable-extensions", "--disable-background-networking"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield d
    finally:
        d.quit()


def view(bank: str, name: str, query: str = "") -> str:
    """The address fragment of a bank's view: ``#/bank/<bank>/<name>?<query>``."""
    return f"#/bank/{quote(bank, safe='')}/{name}{'?' + query if query else ''}"


def wait(driver: Any, script: str, timeout: float = 60) -> Any:
    """Run ``script`` until it returns something true; that value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def fresh(driver: Any, url: str, timeout: float = 60) -> None:
    """Open ``url`` from a blank page (a new document: its ready mark is not the last view's) and wait until the view
    says it has rendered; fail on the page's error box."""
    driver.get("about:blank")
    driver.get(url)
    wait(driver, "return document.body.dataset.ready === '1'", timeout)
    problem = driver.execute_script("return document.querySelector('.error-box')?.textContent || ''")
    assert not problem, problem


def follow(driver: Any, element: Any, view_class: str, timeout: float = 60) -> None:
    """Click ``element`` (a link to another view) and wait for that view (``view_class``, e.g. ``view-memory``) to
    have rendered: the address changes before the new render resets the ready mark, so the view itself is waited
    for too."""
    driver.execute_script("arguments[0].click()", element)
    wait(driver, f"return document.querySelector('.{view_class}') !== null && document.body.dataset.ready === '1'",
         timeout)


def console_errors(driver: Any) -> list[str]:
    """Console messages at error level since the last call (the log is drained by reading it)."""
    return [f"{e['level']} {e['message']}" for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def axe_violations(driver: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it stands (the vendored copy, injected)."""
    driver.execute_script((STATIC / "vendor" / "axe-core.min.js").read_text())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then((r) => done(r.violations.map((v) => "
        "({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5)}))))"
        ".catch((e) => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));")
    return [v for v in result if v["impact"] in ("serious", "critical")]


def output_dir() -> Path:
    """Where every run's screenshots go: ``$HINDSIGHT_TEST_OUTPUT/explorer`` or ``build/test-output/explorer``."""
    root = os.environ.get("HINDSIGHT_TEST_OUTPUT")
    folder = Path(root) / "explorer" if root else REPO / "build" / "test-output" / "explorer"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def keep_screenshot(driver: Any, name: str, *, max_height: int = 3000) -> Path:
    """The page as it stands, whole (the window made as tall as the page, up to ``max_height``, then back), under
    the test output folder as ``name`` and, when missing or asked for, as ``docs/<name>``; the output copy's path."""
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(max_height, max(size["height"], height + 120)))
    try:
        out = output_dir() / name
        driver.save_screenshot(str(out))
        shot = DOCS / name
        if DOCS.is_dir() and (os.environ.get("HINDSIGHT_UPDATE_SCREENSHOTS") or not shot.exists()):
            shutil.copyfile(out, shot)
    finally:
        driver.set_window_size(size["width"], size["height"])
    return out


def held_open(path: Path) -> Iterator[Any]:
    """A page test's store held open for its module, with no worker (a generator for a fixture to yield from)."""
    from hindsight_core import Hindsight

    with Hindsight.open(path, start_worker=False) as hs:
        yield hs


def app_client(hs: Any) -> Iterator[Any]:
    """The app as ``hindsight ui`` serves it on 127.0.0.1, through starlette's test client."""
    from starlette.testclient import TestClient

    from hindsight_core.explorer.app import create_app
    from hindsight_core.explorer.auth import Guard

    with TestClient(create_app(hs, Guard.for_host("127.0.0.1", token="t" * 24)),
                    base_url="http://127.0.0.1:8765") as c:
        yield c


def served_explorer(hs: Any) -> Iterator[Any]:
    """The explorer over ``hs`` on a free loopback port, for a real browser."""
    from hindsight_core.explorer.auth import Guard
    from support.threaded_servers import ExplorerThread

    server = ExplorerThread(hs, "127.0.0.1", Guard.for_host("127.0.0.1", token="t" * 24))
    try:
        yield server
    finally:
        server.stop()
