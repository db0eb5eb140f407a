"""The explorer's overview as pictures (issue 41.2): how the bank grew (memories per day and network), the jobs'
backlog and throughput, the facts the checks rejected and why, and how fresh the observations are; the counts table
stays below.

Over one real store (raw retains with the real embedder, NER and supersession rule; the timeline test's bank: a
superseded memory, a forgotten memory and a forgotten document, an opinion) to which this file adds two observations
written by the real observation job (a scripted model writes the text, the job's checks keep it), a later message
about one of their entities (so that one is no longer fresh), and jobs as the worker leaves them (a facts job that
rejected a fact, a failed one, a queued one): the JSON API through Starlette's TestClient, then the page in headless
chromium with no console error and no serious or critical axe-core violation, and a screenshot kept as
``docs/overview.png`` (replaced with ``HINDSIGHT_UPDATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_pages import app_client, held_open, served_explorer
from support.threaded_servers import ExplorerThread
from test_explorer import REPO, _errors, _hash, _wait, output_dir
from test_explorer_timeline import BANK, CELLO, LISBON, PORTO, TRIP, _axe_violations, _fresh, build, say
from test_explorer_timeline import driver as driver  # the chromium fixture, shared

from hindsight_core import Hindsight
from hindsight_core.models import Job, utcnow

SHOT = REPO / "docs" / "overview.png"
CLARA_OBSERVATION = ("Clara plays the cello in a small orchestra. "
                     "Clara went hiking in the Alps with her sister Ana in June 2024.")
ANA_OBSERVATION = ("Ana moved to Porto, where the new flat is much bigger. "
                   "Ana went hiking in the Alps with her sister Clara in June 2024.")
VISIT = "Clara came to Porto for the weekend and we cooked together."
REJECTED = "Clara moved to Porto last month."


@dataclass
class Pictures:
    """The bank's path, its memories' ids by text, and the entities' ids by name."""

    path: Path
    ids: dict[str, str] = field(default_factory=dict)
    entities: dict[str, str] = field(default_factory=dict)
    observations: dict[str, str] = field(default_factory=dict)


def build_pictures(path: Path) -> Pictures:
    """The timeline's bank; then Clara's and Ana's observations (scripted text, the job's own checks), a later
    message about Clara, and jobs: a facts job that rejected one fact, one that failed, one still queued."""
    from scripted_llm import ScriptedLLM

    from hindsight_core.config import CaraSettings, Settings

    timeline = build(path)
    out = Pictures(path=path, ids=dict(timeline.ids))
    llm = ScriptedLLM([{"summary": CLARA_OBSERVATION}, {"summary": ANA_OBSERVATION}])
    with Hindsight.open(path, llm=llm, start_worker=False,
                        settings=Settings(cara=CaraSettings(observation_mode="model"))) as hs:
        for name in ("Clara", "Ana", "Lisbon", "Porto"):
            found = hs.store.find_entity(BANK, name)
            assert found is not None, name
            out.entities[name] = found.id
        for name in ("Clara", "Ana"):
            written = hs.engine.observations.regenerate(BANK, out.entities[name])
            assert written is not None and written.metadata["support"] == [[0], [1]], name
            out.observations[name] = written.id
        visit = hs.bank(BANK).retain([say(VISIT, "e1", 310)], document_id="s5", extract=False, background=False)
        out.ids[VISIT] = visit.memories[0].id
        store = hs.store
        store.enqueue_job(Job(id="job-facts", bank_id=BANK, kind="facts", payload={"document_id": "s2"},
                              created_at=utcnow(), run_after=utcnow()))
        claimed = store.claim_job(utcnow(), owner=hs.lease.id)
        assert claimed is not None and claimed.id == "job-facts"
        store.finish_job("job-facts", result={
            "facts": 3, "rejected": 1, "rejected_by_reason": {"speaker": 1}, "repointed": 0,
            "rejections": [{"text": REJECTED, "sources": ["d1"], "reason": "speaker",
                            "detail": "about Clara, said by Ana"}]})
        store.enqueue_job(Job(id="job-failed", bank_id=BANK, kind="observations", payload={"entity_ids": ["x"]},
                              created_at=utcnow(), run_after=utcnow()))
        claimed = store.claim_job(utcnow(), owner=hs.lease.id)
        assert claimed is not None and claimed.id == "job-failed"
        store.finish_job("job-failed", error="LLMError: the local model did not answer")
        store.enqueue_job(Job(id="job-queued", bank_id=BANK, kind="observations",
                              payload={"entity_ids": [out.entities["Clara"]]}, created_at=utcnow(),
                              run_after=utcnow()))
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Pictures:
    """The bank, built once."""
    return build_pictures(tmp_path_factory.mktemp("explorer-overview") / "memory")


@pytest.fixture(scope="module")
def opened(world: Pictures) -> Iterator[Hindsight]:
    """The store held open for the module."""
    yield from held_open(world.path)


@pytest.fixture(scope="module")
def client(opened: Hindsight) -> Iterator[TestClient]:
    """The app as ``hindsight ui`` serves it on 127.0.0.1."""
    yield from app_client(opened)


@pytest.fixture(scope="module")
def served(opened: Hindsight) -> Iterator[ExplorerThread]:
    """The explorer over the bank, on a free loopback port."""
    yield from served_explorer(opened)


# the JSON API -----------------------------------------------------------------------------------------------------
def test_the_overview_counts_growth_jobs_rejections_and_freshness(client: TestClient, opened: Hindsight,
                                                                  world: Pictures) -> None:
    r = client.get("/api/overview", params={"bank": BANK})
    assert r.status_code == 200, r.text
    data = r.json()
    growth = data["growth"]
    held = opened.store.count_units(BANK)
    assert growth["total"] == held == growth["scanned"] and not growth["truncated"]
    for mode in ("stored", "said"):
        assert sum(sum(v) for v in growth[mode]["counts"].values()) == held, mode
        assert growth[mode]["x"] == sorted(growth[mode]["x"]) and all(x % 86_400_000 == 0 for x in growth[mode]["x"])
    # Said: the world memories fall on the days they were said (Lisbon and the cello on day 0, ...), not today.
    assert len(growth["said"]["x"]) >= 4 and len(growth["stored"]["x"]) <= 2
    assert sum(growth["said"]["counts"]["observation"]) == 2 and sum(growth["said"]["counts"]["opinion"]) == 1

    jobs = data["jobs"]
    assert jobs["by_status"] == {"queued": 1, "running": 0, "done": 1, "failed": 1}
    assert jobs["backlog"]["queued"] == 1 and jobs["backlog"]["due"] == 1 and jobs["backlog"]["oldest_queued"]
    assert jobs["bucket"] == "hour" and sum(jobs["queued_per_bucket"]["counts"]["done"]) == 1
    # Throughput: by when they finished (the store records it).
    finished = jobs["finished_per_bucket"]
    assert (sum(finished["counts"]["done"]), sum(finished["counts"]["failed"]), jobs["finished_undated"]) == (1, 1, 0)
    assert jobs["by_kind"] == {"facts": {"done": 1}, "observations": {"failed": 1, "queued": 1}}

    rejected = data["rejected"]
    assert (rejected["jobs"], rejected["facts"], rejected["rejected"]) == (1, 3, 1)
    assert rejected["by_reason"] == {"speaker": 1}
    sample = rejected["samples"][0]
    assert sample["text"] == REJECTED and sample["job_id"] == "job-facts" and sample["document_id"] == "s2"

    fresh = data["freshness"]
    rows = {o["entity"]: o for o in fresh["observations"]}
    assert fresh["total"] == 2 and set(rows) == {"Clara", "Ana"}
    # Clara's was written from her two messages; one more mentions her since. Ana's still rests on everything.
    assert (rows["Clara"]["evidence_then"], rows["Clara"]["evidence_now"], rows["Clara"]["new_since"]) == (2, 3, 1)
    assert rows["Ana"]["new_since"] == 1  # the visit is Ana's message too
    assert fresh["observations"][0]["new_since"] >= fresh["observations"][-1]["new_since"]
    assert client.get("/api/overview", params={"bank": "nobody"}).status_code == 404


# the page in a real browser ---------------------------------------------------------------------------------------
def test_the_overview_page_draws_its_pictures_above_the_counts(served: ExplorerThread, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.set_script_timeout(60)
    _fresh(driver, f"{served.url}/{_hash(BANK, 'overview')}")
    for section in ("growth", "jobs", "rejected", "freshness"):
        assert driver.find_elements(By.CSS_SELECTOR, f"#overview-{section} figure.plot canvas"), section
    assert driver.find_elements(By.CSS_SELECTOR, "#overview-jobs-queued canvas")
    assert driver.find_element(By.CSS_SELECTOR, "#overview-jobs-finished").get_attribute("data-series") == "2"
    bars = {s: driver.find_element(By.CSS_SELECTOR, f"#overview-{s} figure.plot").get_attribute("data-bars")
            for s in ("growth", "jobs", "rejected", "freshness")}
    assert bars["rejected"] == "1" and bars["freshness"] == "5" and int(bars["growth"]) >= 1, bars
    text = driver.find_element(By.TAG_NAME, "main").text
    assert REJECTED in text and "1 queued" in text and "Store counts" in text
    # The pictures come first, the counts table stays below them.
    order = driver.execute_script(
        "const all = [...document.querySelectorAll('main section.card h2')].map((e) => e.textContent);"
        "return [all.indexOf('Observations: how fresh'), all.indexOf('Store counts')];")
    assert 0 <= order[0] < order[1], order
    rows = driver.find_elements(By.CSS_SELECTOR, "#overview-observations tbody tr")
    assert len(rows) == 2 and rows[0].find_element(By.TAG_NAME, "a").get_attribute("href").count("entity?id=") == 1
    assert _errors(driver) == []
    violations = _axe_violations(driver)
    assert violations == [], violations
    # Hovering a bar reads its numbers out in text.
    from selenium.webdriver.common.action_chains import ActionChains

    over = driver.find_element(By.CSS_SELECTOR, "#overview-rejected .u-over")
    ActionChains(driver).move_to_element(over).perform()
    readout = driver.find_element(By.CSS_SELECTOR, "#overview-rejected .plot-readout")
    assert "speaker" in readout.text and "rejected facts 1" in readout.text
    # "by day said" draws the days the memories were said on (more than the days they were stored on); the
    # screenshot shows it.
    stored = int(bars["growth"])
    said = driver.find_element(By.CSS_SELECTOR, "#overview-growth button[data-mode='said']")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", said)
    said.click()
    _wait(driver, "return document.querySelector('#overview-growth button[data-mode=said]').ariaPressed === 'true'")
    drawn = int(driver.find_element(By.CSS_SELECTOR, "#overview-growth figure.plot").get_attribute("data-bars"))
    assert drawn > stored
    driver.save_screenshot(str(output_dir() / "overview.png"))
    if SHOT.parent.is_dir() and (os.environ.get("HINDSIGHT_UPDATE_SCREENSHOTS") or not SHOT.exists()):
        _full_page_shot(driver, SHOT)
    assert _errors(driver) == []


def _full_page_shot(driver: Any, path: Path) -> None:
    """A screenshot of the whole page (the window made as tall as the page, then back)."""
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(size["width"], min(4000, height + 120))
    try:
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(size["width"], size["height"])


__all__ = ["CELLO", "LISBON", "PORTO", "TRIP", "Pictures", "build_pictures"]
