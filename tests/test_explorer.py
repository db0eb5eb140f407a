"""The memory explorer (``hindsight ui``): its JSON API through Starlette's TestClient, then the real page in
headless chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium) against the server started
the way a user starts it.

The browser part fails, never skips, when chromium is missing: the test command installs it
(``apt-get install -y chromium chromium-driver``). Screenshots go to ``$HINDSIGHT_TEST_OUTPUT/explorer/`` (default
``build/test-output/explorer/``).
"""

from __future__ import annotations

import argparse
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_bank import (
    BANK,
    FORGET_ME,
    OBSERVATION,
    OPINION,
    OTHER_BANK,
    RECALL_QUERY,
    SISTER,
    ExplorerBank,
    build,
)
from support.explorer_pages import REPO, STATIC, chromium, output_dir

from hindsight_core import Hindsight
from hindsight_core.cli.net import is_loopback
from hindsight_core.explorer.app import CSP, create_app
from hindsight_core.explorer.auth import TOKEN_HEADER, Guard
from hindsight_core.explorer.cli import add_commands
from hindsight_core.explorer.queries import Explorer, strongest
from hindsight_core.models import Job, JobStatus

TOKEN = "test-token-0123456789"


# the JSON API ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api_bank(tmp_path_factory: pytest.TempPathFactory) -> ExplorerBank:
    """The explorer's test bank, for the API tests (they forget things: the browser tests get their own)."""
    return build(tmp_path_factory.mktemp("explorer-api") / "memory")


@pytest.fixture(scope="module")
def opened(api_bank: ExplorerBank) -> Iterator[Hindsight]:
    """The API tests' store, open once."""
    with Hindsight.open(api_bank.path, start_worker=False) as hs:
        yield hs


@pytest.fixture()
def client(opened: Hindsight) -> Iterator[TestClient]:
    """The app as served on 127.0.0.1, with a known token."""
    app = create_app(opened, Guard.for_host("127.0.0.1", TOKEN))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        yield c


def test_memories_are_paged_on_the_server_with_totals(client: TestClient, api_bank: ExplorerBank) -> None:
    everything = client.get("/api/memories", params={"bank": BANK, "limit": 100}).json()
    assert everything["total"] == len(everything["items"]) == 11 and not everything["has_more"]
    ids = [m["id"] for m in everything["items"]]
    pages = [client.get("/api/memories", params={"bank": BANK, "limit": 4, "offset": o}).json() for o in (0, 4, 8)]
    assert [m["id"] for p in pages for m in p["items"]] == ids  # the pages tile the list, newest first
    assert [p["has_more"] for p in pages] == [True, True, False] and all(p["total"] == 11 for p in pages)
    assert client.get("/api/memories", params={"bank": BANK, "offset": 50}).json()["items"] == []
    world = client.get("/api/memories", params={"bank": BANK, "network": "world", "limit": 3}).json()
    assert world["total"] == 7 and {m["network"] for m in world["items"]} == {"world"} and world["has_more"]
    emma = client.get("/api/memories", params={"bank": BANK, "entity": api_bank.emma_id, "limit": 100}).json()
    assert emma["total"] == 9 and all("Emma" in m["entities"] for m in emma["items"])
    chat = client.get("/api/memories", params={"bank": BANK, "document": "chat-1"}).json()
    assert [m["sources"] for m in chat["items"]] == [["s1:1"], ["s1:2"], ["s1:3"], ["s1:4"], ["s1:5"]]  # in order
    summary = client.get("/api/bank", params={"bank": BANK}).json()
    assert summary["memories"] == 11 and summary["profile"]["name"] == "Support bot"
    counts = client.get("/api/counts", params={"bank": BANK}).json()
    assert counts["networks"] == {"world": 7, "experience": 2, "opinion": 1, "observation": 1}
    for bad in ({"limit": 0}, {"limit": 501}, {"offset": -1}, {"limit": "ten"}, {"network": "dreams"}):
        r = client.get("/api/memories", params={"bank": BANK, **bad})
        assert r.status_code == 400 and r.json()["kind"] == "InvalidInputError", bad


def test_unknown_bank_or_record_is_a_clear_404(client: TestClient) -> None:
    for path in ("memories", "bank", "counts", "graph", "entities", "documents", "jobs", "opinions", "stats"):
        r = client.get(f"/api/{path}", params={"bank": "no-such-bank"})
        assert r.status_code == 404, path
        assert r.json() == {"error": "no bank 'no-such-bank'", "kind": "BankNotFoundError"}
        assert BANK not in r.text and OTHER_BANK not in r.text  # other banks' ids are not given away
    r = client.post("/api/recall", json={"bank": "no-such-bank", "query": "anything"})
    assert r.status_code == 404 and r.json()["kind"] == "BankNotFoundError"
    assert client.get("/api/memories").status_code == 400  # no bank at all: a usage error
    for path, kind in (("memory", "NotFoundError"), ("opinion", "NotFoundError"), ("entity", "NotFoundError"),
                       ("document", "DocumentNotFoundError")):
        r = client.get(f"/api/{path}", params={"bank": BANK, "id": "missing"})
        assert r.status_code == 404 and r.json()["kind"] == kind and "missing" in r.json()["error"], path
    r = client.get("/api/nothing-here")
    assert r.status_code == 404 and r.json()["kind"] == "NotFound"


def test_requests_are_bounded_before_any_work(client: TestClient, api_bank: ExplorerBank) -> None:
    """Paging numbers past what a store can hold, and bodies over the limit (declared or not), are a 400 with a short
    message, never a 500, and the body is not read past the limit."""
    for params in ({"offset": str(2**63)}, {"limit": "9" * 40}, {"offset": "-1"}, {"limit": "1e3"}):
        r = client.get("/api/memories", params={"bank": BANK, **params})
        assert r.status_code == 400 and len(r.json()["error"]) < 200, params

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must stop reading at the limit itself
        for _ in range(4096):
            yield b" " * 1024
    r = client.post("/api/recall", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "request body over" in r.json()["error"]
    r = client.post("/api/recall", content=b"{}", headers={"Content-Type": "application/json",
                                                           "Content-Length": str(10**9)})
    assert r.status_code == 400


def test_a_bank_id_with_a_slash_is_its_own_bank(client: TestClient) -> None:
    page = client.get("/api/memories", params={"bank": OTHER_BANK}).json()
    assert [m["text"] for m in page["items"]] == ["Bob: I keep bees in Oslo."]
    banks = client.get("/api/banks").json()["banks"]
    assert {b["id"]: b["memories"] for b in banks} == {BANK: 11, OTHER_BANK: 1}


def test_memory_detail_carries_its_provenance(client: TestClient, api_bank: ExplorerBank) -> None:
    data = client.get("/api/memory", params={"bank": BANK, "id": api_bank.memory_ids[SISTER]}).json()
    assert data["memory"]["text"] == SISTER and data["memory"]["document_id"] == "chat-1"
    assert data["sources"] == [{"id": "s1:1", "speaker": "Emma", "text": "My sister moved to Lisbon last spring.",
                                "timestamp": "2025-03-02T10:00:00Z"}]
    assert data["document"]["id"] == "chat-1" and data["document"]["message_count"] == 5
    assert data["document"]["metadata"] == {"channel": "web"}
    assert {e["name"] for e in data["entities"]} == {"Emma", "Lisbon"} and all(e["id"] for e in data["entities"])
    assert data["links"] and all(link["memory"]["id"] != data["memory"]["id"] for link in data["links"])
    doc = client.get("/api/document", params={"bank": BANK, "id": "chat-1"}).json()
    assert [m["id"] for m in doc["document"]["messages"]] == ["s1:1", "s1:2", "s1:3", "s1:4", "s1:5"]
    assert doc["memories"] == 5


def test_entity_graph_is_the_top_n_and_grows_on_demand(client: TestClient, api_bank: ExplorerBank) -> None:
    graph = client.get("/api/graph", params={"bank": BANK, "limit": 2}).json()
    assert graph["nodes"][0]["name"] == "Emma" and len(graph["nodes"]) == 2
    assert graph["nodes"][0]["observation"] is True
    ids = {n["id"] for n in graph["nodes"]}
    assert graph["edges"] and all({e["source"], e["target"]} <= ids for e in graph["edges"])
    assert graph["edges_total"] == len(graph["edges"])  # few enough to draw them all
    more = client.get("/api/graph/expand", params=[("bank", BANK), ("entity", api_bank.emma_id), ("limit", 20),
                                                    *(("visible", i) for i in ids)]).json()
    names = {n["name"] for n in more["nodes"]}
    assert {"Lisbon", "Daniel", "Pixel"} <= names and "Emma" not in names  # her neighbours, not herself
    drawn = ids | {n["id"] for n in more["nodes"]}
    assert more["edges"] and all({e["source"], e["target"]} <= drawn for e in more["edges"])
    emma = client.get("/api/entity", params={"bank": BANK, "name": "emma"}).json()
    assert emma["entity"]["id"] == api_bank.emma_id and emma["observation"]["text"] == OBSERVATION
    assert {r["entity"]["name"] for r in emma["related"]} >= {"Lisbon", "Daniel", "Pixel"}
    found = client.get("/api/entities", params={"bank": BANK, "q": "lisb"}).json()
    assert [e["name"] for e in found["items"]] == ["Lisbon"]
    assert client.get("/api/graph", params={"bank": BANK, "limit": 301}).status_code == 400


def test_the_jobs_throughput_counts_by_when_each_finished() -> None:
    """Done or failed jobs per bucket by ``finished_at``; one that finished before stores recorded it, by when it
    was queued (and counted as such)."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2025, 3, 1, 10, tzinfo=UTC)
    hour = timedelta(hours=1)
    jobs = [Job(id="new", bank_id="b", kind="k", status=JobStatus.DONE, created_at=t0, finished_at=t0 + 2 * hour),
            Job(id="bad", bank_id="b", kind="k", status=JobStatus.FAILED, created_at=t0, finished_at=t0 + 2 * hour),
            Job(id="old", bank_id="b", kind="k", status=JobStatus.DONE, created_at=t0),
            Job(id="waiting", bank_id="b", kind="k", status=JobStatus.QUEUED, created_at=t0 + hour)]
    flow = Explorer._job_flow(jobs, truncated=False)
    ms = int(t0.timestamp() * 1000)
    assert flow["bucket"] == "hour" and flow["finished_undated"] == 1
    assert flow["finished_per_bucket"] == {"x": [ms, ms + 7_200_000], "counts": {"done": [1, 1], "failed": [0, 1]}}
    assert flow["queued_per_bucket"]["x"] == [ms, ms + 3_600_000]


def test_the_graph_draws_the_strongest_edges_and_links_every_node() -> None:
    edges = [{"source": "a", "target": t, "weight": w} for t, w in (("b", 9), ("c", 8), ("d", 7))]
    edges.append({"source": "x", "target": "y", "weight": 1})
    # Each node's strongest link first, even past the cap (x-y is the weakest, yet the only link of x and y).
    assert [(e["target"], e["weight"]) for e in strongest(edges, cap=2, per_node=1)] == [
        ("b", 9), ("c", 8), ("d", 7), ("y", 1)]
    kept = strongest([*edges, {"source": "b", "target": "c", "weight": 5}], cap=5, per_node=1)
    assert len(kept) == 5 and [e["weight"] for e in kept] == [9, 8, 7, 5, 1]
    assert strongest([], cap=10) == []


def test_opinions_documents_jobs_and_recall_trace(client: TestClient, api_bank: ExplorerBank) -> None:
    opinions = client.get("/api/opinions", params={"bank": BANK}).json()
    assert [o["text"] for o in opinions["items"]] == [OPINION] and opinions["total"] == 1
    history = client.get("/api/opinion", params={"bank": BANK, "id": api_bank.opinion_id}).json()["history"]
    assert [(e["label"], e["new_confidence"]) for e in history] == [
        ("formed", 0.55), ("reinforce", pytest.approx(0.75)), ("weaken", pytest.approx(0.6))]
    assert history[1]["evidence_memories"][0]["text"] == "Emma: Daniel booked the flights to Lisbon yesterday."
    failed = client.get("/api/documents", params={"bank": BANK, "status": "failed"}).json()["items"]
    assert [(d["id"], d["error"]) for d in failed] == [("import-3", "ExtractionError: the model returned no facts")]
    jobs = client.get("/api/jobs", params={"bank": BANK, "status": "failed"}).json()["items"]
    assert [(j["id"], j["error"], j["attempts"]) for j in jobs] == [
        ("job-failed-1", "LLMError: the local model did not answer", 1)]
    done = client.get("/api/jobs", params={"bank": BANK, "status": "done"}).json()["items"]
    facts = next(j for j in done if j["id"] == api_bank.facts_job)
    assert facts["result"]["rejected_by_reason"] == {"speaker": 1}
    assert facts["result"]["rejections"][0]["text"] == "Daniel moved to Lisbon last spring."
    rec = client.post("/api/recall", json={"bank": BANK, "query": RECALL_QUERY, "budget": 200,
                                           "reference_time": "2025-05-01"}).json()
    assert rec["memories"][0]["text"] == SISTER and rec["tokens"] <= 200
    trace = rec["trace"]
    assert trace["reference_time"].startswith("2025-05-01") and set(trace["channels"]) >= {"semantic", "keyword"}
    assert {"embed_ms", "fusion_ms", "pack_ms", "total_ms"} <= set(trace["timings_ms"])
    top = rec["candidates"][0]
    assert top["fused_rank"] == 1 and top["selected"] and top["memory"]["text"] == SISTER
    assert top["channels"]["semantic"]["rank"] >= 1 and "score" in top["channels"]["keyword"]
    only = client.post("/api/recall", json={"bank": BANK, "query": RECALL_QUERY, "networks": ["opinion"]}).json()
    assert {m["network"] for m in only["memories"]} == {"opinion"}
    assert client.post("/api/recall", json={"bank": BANK, "query": " "}).status_code == 400
    assert client.post("/api/recall", json={"bank": BANK, "query": "x", "budget": -5}).status_code == 400


def test_forget_needs_the_token_and_json(client: TestClient, api_bank: ExplorerBank) -> None:
    target = api_bank.memory_ids["Emma: Two weeks. Pixel will stay with my neighbour Rosa."]
    body = {"bank": BANK, "memory_id": target}

    def mentions_of_emma() -> int:
        nodes = client.get("/api/graph", params={"bank": BANK, "limit": 60}).json()["nodes"]
        return int(next(n["mentions"] for n in nodes if n["name"] == "Emma"))

    before = mentions_of_emma()
    assert mentions_of_emma() == before  # (served from the graph cache the second time)
    assert client.post("/api/forget", json=body).status_code == 403
    assert client.post("/api/forget", json=body, headers={TOKEN_HEADER: "wrong"}).status_code == 403
    # A form post (what another site could make the browser send) is refused even with the token.
    r = client.post("/api/forget", content=f"bank={BANK}&memory_id={target}",
                    headers={TOKEN_HEADER: TOKEN, "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    r = client.post("/api/forget", json={"bank": BANK, "memory_id": target, "entity": "Emma"},
                    headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 400  # exactly one target
    assert client.get("/api/memory", params={"bank": BANK, "id": target}).status_code == 200
    r = client.post("/api/forget", json=body, headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 200 and r.json() == {"deleted": 1}
    assert client.get("/api/memory", params={"bank": BANK, "id": target}).status_code == 404
    assert mentions_of_emma() == before - 1  # the cached graph follows the bank
    r = client.post("/api/forget", json={"bank": BANK, "document_id": "import-3"}, headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 200
    assert client.get("/api/document", params={"bank": BANK, "id": "import-3"}).status_code == 404
    assert client.get("/api/forget").status_code in (404, 405)  # never a GET


def test_headers_host_check_and_no_cors(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<title>Hindsight explorer</title>" in page.text
    assert page.headers["content-security-policy"] == CSP and page.headers["x-frame-options"] == "DENY"
    api = client.get("/api/banks", headers={"Origin": "https://evil.example"})
    assert api.headers["cache-control"] == "no-store" and "access-control-allow-origin" not in api.headers
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own name as Host.
    assert client.get("/api/banks", headers={"Host": "evil.example:8765"}).status_code == 400
    assert client.get("/api/banks", headers={"Host": "localhost:8765"}).status_code == 200
    vendor = client.get("/vendor/cytoscape.esm.min.js")
    assert vendor.status_code == 200 and "javascript" in vendor.headers["content-type"]
    assert client.options("/api/forget", headers={"Origin": "https://evil.example",
                                                  "Access-Control-Request-Method": "POST"}).status_code == 405


def test_reads_need_the_token_off_loopback(opened: Hindsight) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("LOCALHOST") and is_loopback("[::1]") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20")
    app = create_app(opened, Guard.for_host("0.0.0.0", TOKEN))
    with TestClient(app, base_url="http://192.168.1.20:8765") as c:
        assert c.get("/api/health").json()["reads_need_token"] is True
        assert c.get("/api/banks").status_code == 403
        assert c.get("/api/banks", headers={TOKEN_HEADER: TOKEN}).status_code == 200
        assert c.get("/").status_code == 200  # the page itself holds no data


def test_ui_command_line() -> None:
    parser = argparse.ArgumentParser(prog="hindsight")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--path")
    add_commands(parser.add_subparsers(), common)
    args = parser.parse_args(["ui", "--path", "x", "--port", "0", "--host", "::1"])
    assert (args.path, args.port, args.host, args.open_browser) == ("x", 0, "::1", False)
    with pytest.raises(SystemExit):
        parser.parse_args(["ui", "--port", "70000"])
    missing = subprocess.run([sys.executable, "-m", "hindsight_core.explorer", "--path", str(REPO / "no-store")],
                             capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "there is no memory store at" in missing.stderr


def test_vendored_files_are_recorded() -> None:
    vendor = STATIC / "vendor"
    recorded = (vendor / "VENDORED.md").read_text()
    for f in vendor.iterdir():
        if f.suffix == ".js":
            assert f"`{f.name}`" in recorded and f.with_name(f.name.split(".")[0] + ".LICENSE").exists()
    # No page or script reaches another host.
    for f in STATIC.rglob("*"):
        if f.is_file() and (f.suffix in (".html", ".css") or f.parent.name in ("js", "views")):
            assert not re.search(r"(src|href)=\"(https?:)?//", f.read_text()), f


# the page in a real browser ---------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """The explorer running as ``python -m hindsight_core.explorer``, and what its banner said."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hindsight_core.explorer", "--path", str(path), "--port", str(_free_port())],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout or []], daemon=True).start()
        banner = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            banner.append(line)
            found = re.search(r"open:\s+(http://\S+)/#token=(\S+)", line)
            if found:
                self.url, self.token = found.group(1), found.group(2)
                return
        self.stop()
        raise AssertionError("the explorer did not start:\n" + "".join(banner))

    def stop(self) -> None:
        """Stop the server (Ctrl-C, as a user would)."""
        if self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def browser_bank(tmp_path_factory: pytest.TempPathFactory) -> ExplorerBank:
    """The explorer's test bank, for the browser tests."""
    return build(tmp_path_factory.mktemp("explorer-browser") / "memory")


@pytest.fixture(scope="module")
def served(browser_bank: ExplorerBank) -> Iterator[Served]:
    """The explorer serving the browser tests' bank on a free port."""
    server = Served(browser_bank.path)
    try:
        yield server
    finally:
        server.stop()
        assert server.proc.returncode is not None


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless chromium through chromedriver, keeping the page's console log."""
    yield from chromium(height=1000)


def _open(driver: Any, url: str, *, timeout: float = 60) -> None:
    """Load ``url`` and wait until the view says it has rendered."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _wait(driver: Any, script: str, timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def _errors(driver: Any) -> list[str]:
    """Console messages at error level since the last call (the log is drained by reading it)."""
    return [f"{e['level']} {e['message']}" for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _hash(bank: str, view: str, query: str = "") -> str:
    from urllib.parse import quote

    return f"#/bank/{quote(bank, safe='')}/{view}{'?' + query if query else ''}"


def test_every_page_loads_without_console_errors(served: Served, driver: Any, browser_bank: ExplorerBank) -> None:
    from urllib.parse import quote

    shots = output_dir()
    ids = browser_bank.memory_ids
    pages = {
        "banks": "#/",
        "overview": _hash(BANK, "overview"),
        "memories": _hash(BANK, "memories"),
        "memories-world": _hash(BANK, "memories", "network=world&limit=25"),
        "memory": _hash(BANK, "memory", f"id={ids[SISTER]}"),
        "graph": _hash(BANK, "graph"),
        "entity": _hash(BANK, "entity", f"id={browser_bank.emma_id}"),
        "opinions": _hash(BANK, "opinions"),
        "documents": _hash(BANK, "documents"),
        "document": _hash(BANK, "document", "id=chat-1&highlight=s1%3A1"),
        "jobs": _hash(BANK, "jobs"),
        "recall": _hash(BANK, "recall"),
        "other-bank": _hash(OTHER_BANK, "memories"),
    }
    seen: dict[str, list[str]] = {}
    for name, fragment in pages.items():
        driver.get("about:blank")  # a fresh document per page: each load starts from nothing
        _open(driver, served.url + "/" + fragment)
        problem = driver.execute_script("return document.querySelector('.error-box')?.textContent || ''")
        assert not problem, f"{name}: {problem}"
        driver.save_screenshot(str(shots / f"{name}.png"))
        seen[name] = _errors(driver)
    assert seen == {name: [] for name in pages}
    # What a few of them show.
    _open(driver, served.url + "/" + pages["opinions"])
    assert driver.execute_script("return document.querySelectorAll('svg.chart circle.point').length") == 3
    _open(driver, served.url + "/" + pages["entity"])
    assert OBSERVATION in driver.find_element("css selector", ".observation").text
    _open(driver, served.url + "/" + pages["document"])
    highlighted = driver.find_element("css selector", ".message.highlight").text
    assert highlighted.endswith("My sister moved to Lisbon last spring.")
    _open(driver, served.url + "/" + pages["other-bank"])
    assert "Bob: I keep bees in Oslo." in driver.find_element("css selector", "table.memories").text
    assert quote(OTHER_BANK, safe="") in driver.current_url
    assert _errors(driver) == []


def test_documents_and_jobs_pages_list_and_filter_by_status(served: Served, driver: Any,
                                                            browser_bank: ExplorerBank) -> None:
    """The two status-filtered lists: every row, the filter narrowing them, and the message when nothing matches."""

    def rows(table: str) -> list[str]:
        return driver.execute_script(
            f"return [...document.querySelectorAll('table.{table} tbody tr')].map((r) => r.dataset.id)")

    _open(driver, served.url + "/" + _hash(BANK, "documents"))
    assert driver.find_element("css selector", "h1").text == "Documents"
    assert {"chat-1", browser_bank.failed_document} <= set(rows("documents"))
    assert len(driver.find_elements("css selector", ".pager")) == 2
    _open(driver, served.url + "/" + _hash(BANK, "documents", "status=failed"))
    assert rows("documents") == [browser_bank.failed_document]
    assert driver.find_element("css selector", ".segmented .seg.active").text == "failed"
    _open(driver, served.url + "/" + _hash(BANK, "documents", "status=extracting"))
    assert driver.find_element("css selector", "p.empty").text == "No extracting documents."

    _open(driver, served.url + "/" + _hash(BANK, "jobs"))
    assert driver.find_element("css selector", "h1").text == "Background jobs"
    assert browser_bank.failed_job in rows("jobs")
    _open(driver, served.url + "/" + _hash(BANK, "jobs", "status=failed"))
    assert rows("jobs") == [browser_bank.failed_job]
    assert "did not answer" in driver.find_element("css selector", "table.jobs .error-text").text
    _open(driver, served.url + "/" + _hash(BANK, "jobs", "status=done"))
    assert browser_bank.facts_job in rows("jobs")
    report = driver.find_element("css selector", f"tr[data-id='{browser_bank.facts_job}'] .job-result summary")
    assert report.text == "2 facts stored, 1 rejected (speaker 1)"
    report.click()  # each rejected fact is listed with its reason: never silently lost
    assert "Daniel moved to Lisbon last spring." in driver.find_element("css selector", "ul.rejections li").text
    _open(driver, served.url + "/" + _hash(BANK, "jobs", "status=running"))
    assert driver.find_element("css selector", "p.empty").text == "No running jobs."
    assert _errors(driver) == []


def test_graph_renders_and_shows_an_observation(served: Served, driver: Any, browser_bank: ExplorerBank) -> None:
    _open(driver, served.url + "/" + _hash(BANK, "graph"))
    nodes = int(driver.find_element("id", "graph").get_attribute("data-nodes"))
    edges = int(driver.find_element("id", "graph").get_attribute("data-edges"))
    assert nodes >= 5 and edges >= 3
    assert driver.find_elements("css selector", "#graph canvas")  # cytoscape drew on its canvases
    # Pick Emma from the entity table: the graph selects her and the panel shows her observation.
    row = driver.find_element("css selector", f"table.entities tr[data-id='{browser_bank.emma_id}'] button")
    row.click()
    _wait(driver, "return document.querySelector('.entity-panel .observation') !== null")
    assert OBSERVATION in driver.find_element("css selector", ".entity-panel .observation").text
    driver.find_element("id", "expand-entity").click()
    _wait(driver, "return /added around|nothing new around/.test(document.querySelector('.toolbar').textContent)")
    driver.save_screenshot(str(output_dir() / "graph-selected.png"))
    assert _errors(driver) == []


def test_recall_playground_returns_the_expected_memory(served: Served, driver: Any,
                                                        browser_bank: ExplorerBank) -> None:
    _open(driver, served.url + "/" + _hash(BANK, "recall"))
    driver.find_element("id", "recall-query").send_keys(RECALL_QUERY)
    budget = driver.find_element("id", "recall-budget")
    budget.clear()
    budget.send_keys("300")
    driver.find_element("id", "recall-reference").send_keys("2025-05-01")
    driver.find_element("id", "recall-run").click()
    _wait(driver, "return document.querySelector('#recall-summary') !== null && document.body.dataset.ready === '1'")
    first = driver.find_element("css selector", "table.recall-memories tbody tr")
    assert first.get_attribute("data-id") == browser_bank.memory_ids[SISTER] and SISTER in first.text
    assert "/ 300 tokens" in driver.find_element("id", "recall-summary").text
    header = driver.find_element("css selector", "#recall-trace thead").text
    assert "semantic" in header and "keyword" in header
    top = driver.find_element("css selector", "#recall-trace tbody tr")
    assert top.get_attribute("data-id") == browser_bank.memory_ids[SISTER] and "✓" in top.text
    assert "total" in driver.find_element("css selector", "table.timings").text
    driver.save_screenshot(str(output_dir() / "recall.png"))
    assert _errors(driver) == []


def test_forget_asks_for_confirmation_and_the_token(served: Served, driver: Any,
                                                    browser_bank: ExplorerBank) -> None:
    target = browser_bank.memory_ids[FORGET_ME]
    page = served.url + "/" + _hash(BANK, "memory", f"id={target}")
    _open(driver, page)
    driver.execute_script("sessionStorage.clear()")  # no token yet: the dialog must ask for it
    driver.find_element("id", "forget-memory").click()
    _wait(driver, "return document.getElementById('confirm').open")
    assert FORGET_ME in driver.find_element("id", "confirm-message").text
    driver.find_element("id", "confirm-cancel").click()  # cancelled: nothing happens
    _wait(driver, "return !document.getElementById('confirm').open")
    assert _api(served, "memory", id=target)[0] == 200
    driver.find_element("id", "forget-memory").click()
    _wait(driver, "return document.getElementById('confirm').open")
    driver.find_element("id", "confirm-ok").click()  # no token typed: refused in the dialog
    assert driver.execute_script("return document.getElementById('confirm').open")
    assert "invalid" in driver.find_element("id", "confirm-token").get_attribute("class")
    driver.find_element("id", "confirm-token").send_keys(served.token)
    driver.save_screenshot(str(output_dir() / "forget-confirm.png"))
    driver.find_element("id", "confirm-ok").click()
    _wait(driver, "return location.hash.includes('/memories') && document.body.dataset.ready === '1'")
    # The memory and the observation written from it (Emma's) go together: forgetting takes what rests on it.
    assert "Forgot 2 memories." in driver.find_element("id", "toast").get_attribute("textContent")
    assert _api(served, "memory", id=target)[0] == 404
    assert FORGET_ME not in driver.find_element("css selector", "table.memories").text
    # The token from the printed address is taken into the tab (and out of the address bar).
    _open(driver, f"{served.url}/#token={served.token}")
    assert "#token" not in driver.current_url
    assert driver.execute_script("return sessionStorage.getItem('hindsight-explorer-token')") == served.token
    assert _errors(driver) == []


def _api(served: Served, path: str, **params: str) -> tuple[int, Any]:
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    url = f"{served.url}/api/{path}?" + urllib.parse.urlencode({"bank": BANK, **params})
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
