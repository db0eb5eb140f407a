"""The explorer's timeline (issue 41.1): a bank's memories on a time axis, when each happened (its occurrence range as
a bar) and when it was said (a dot), a lane per network; superseded memories linked to what superseded them; forgets
as gaps that open their audit entry; filters by network, entity and text; zoom; a click opens the memory.

Over one real store (raw retains: the real embedder, NER, time expressions and supersession rule) holding a
superseded memory, two forgets (a memory, a document) and an opinion: the JSON API through Starlette's TestClient,
then the page in headless chromium (the explorer served from a thread of this process), with no console error, an
accessibility check by axe-core (vendored from npm) with no serious or critical violation, and a screenshot kept as
``docs/timeline.png`` (replaced with ``HINDSIGHT_UPDATE_SCREENSHOTS=1``; every run writes
``$HINDSIGHT_TEST_OUTPUT/explorer/timeline.png``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_pages import app_client, chromium, held_open, served_explorer
from support.explorer_pages import axe_violations as _axe_violations
from support.threaded_servers import ExplorerThread
from test_explorer import REPO, _errors, _hash, _open, _wait, output_dir

from hindsight_core import Hindsight

BANK = "family"
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
LISBON = "I live in Lisbon, in a small flat near the river."
PORTO = "We moved to Porto last month, the new flat is much bigger."
TRIP = "We went hiking in the Alps from 3 June 2024 to 14 June 2024 with my sister Clara."
CELLO = "Clara plays the cello in a small orchestra."
SECRET = "My bank PIN is 4321, please remember it."
DRAFT = "Clara said the orchestra might tour Japan next spring."
OPINION = "Ana seems happier since the move to Porto."
SHOT = REPO / "docs" / "timeline.png"


def say(text: str, mid: str, days: float) -> dict[str, Any]:
    """One message of Ana's, ``days`` after T0."""
    return {"speaker": "Ana", "text": text, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


@dataclass
class Timeline:
    """The bank's path and its memories' ids by text (the forgotten ones included, as they were)."""

    path: Path
    ids: dict[str, str] = field(default_factory=dict)
    opinion_id: str = ""


def build(path: Path) -> Timeline:
    """Ana says where she lives, a trip, her sister's cello; a PIN she asks to forget and a document forgotten whole;
    months later she says she moved (which supersedes where she lived); an opinion on it."""
    out = Timeline(path=path)
    with Hindsight.open(path, start_worker=False) as hs:
        bank = hs.bank(BANK, name="Family")
        sessions = [
            [say(LISBON, "a1", 0), say(CELLO, "a2", 0.01), say(SECRET, "a3", 0.02)],
            [say(TRIP, "b1", 170)],
            [say(DRAFT, "c1", 200)],
            [say(PORTO, "d1", 300)],
        ]
        for i, session in enumerate(sessions, start=1):
            result = bank.retain(session, document_id=f"s{i}", extract=False, background=False)
            for m in result.memories:
                out.ids[m.text.removeprefix("Ana: ")] = m.id
        opinion = bank.add_opinion(OPINION, 0.7, entities=["Ana", "Porto"], based_on=[out.ids[PORTO]],
                                   rationale="she says the new flat is much bigger")
        out.opinion_id = opinion.id
        bank.forget(memory_id=out.ids[SECRET])
        bank.forget(document_id="s3")
        assert bank.get(out.ids[LISBON]).superseded_by == out.ids[PORTO]  # type: ignore[union-attr]
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Timeline:
    """The timeline's bank, built once."""
    return build(tmp_path_factory.mktemp("explorer-timeline") / "memory")


@pytest.fixture(scope="module")
def opened(world: Timeline) -> Iterator[Hindsight]:
    """The store held open for the module."""
    yield from held_open(world.path)


@pytest.fixture(scope="module")
def client(opened: Hindsight) -> Iterator[TestClient]:
    """The app as ``hindsight ui`` serves it on 127.0.0.1."""
    yield from app_client(opened)


def _timeline(client: TestClient, **params: Any) -> Any:
    r = client.get("/api/timeline", params={"bank": BANK, **params})
    assert r.status_code == 200, r.text
    return r.json()


# the JSON API -----------------------------------------------------------------------------------------------------
def test_the_timeline_has_each_memory_s_occurrence_mention_and_supersession(client: TestClient,
                                                                             world: Timeline) -> None:
    data = _timeline(client)
    items = {m["id"]: m for m in data["items"]}
    assert data["total"] == 5 and not data["truncated"] and len(items) == 5
    assert world.ids[SECRET] not in items and world.ids[DRAFT] not in items  # forgotten: gone from the axis
    trip = items[world.ids[TRIP]]
    day = 24 * 3600 * 1000
    assert trip["start"] == datetime(2024, 6, 3, tzinfo=UTC).timestamp() * 1000
    assert trip["end"] - trip["start"] >= 10 * day and trip["said"] > trip["end"]  # happened, then said
    lisbon, porto = items[world.ids[LISBON]], items[world.ids[PORTO]]
    assert lisbon["superseded_by"] == world.ids[PORTO] and lisbon["valid_until"] == porto["said"]
    assert porto["superseded_by"] is None
    opinion = items[world.opinion_id]
    assert opinion["network"] == "opinion" and opinion["confidence"] == pytest.approx(0.7)


def test_forgets_are_gaps_placed_where_they_were_and_open_their_audit_entry(client: TestClient,
                                                                            world: Timeline) -> None:
    forgotten = _timeline(client)["forgotten"]
    assert len(forgotten) == 2 and {f["operation"] for f in forgotten} == {"forget"}
    memory, document = sorted(forgotten, key=lambda f: f["document_id"] or "")
    # The PIN's message is still in its stored document: the gap is at that message's time.
    assert memory["memory_ids"] == [world.ids[SECRET]] and memory["placed_by"] == "its message"
    assert memory["place"] == (T0 + timedelta(days=0.02)).timestamp() * 1000 and memory["place_end"] is None
    # The forgotten document's times went with it: the gap spans what was stored just before and after it.
    assert document["document_id"] == "s3" and document["placed_by"] == "stored between"
    assert document["place"] == (T0 + timedelta(days=170)).timestamp() * 1000
    assert document["place_end"] == (T0 + timedelta(days=300)).timestamp() * 1000
    assert "PIN" not in str(forgotten) and "Japan" not in str(forgotten)  # the trail never keeps the text
    for f in forgotten:
        entry = client.get("/api/audit", params={"bank": BANK, "id": f["id"]}).json()["entry"]
        assert entry["id"] == f["id"] and entry["operation"] == "forget"
    trail = client.get("/api/audit", params={"bank": BANK, "limit": 3}).json()
    assert trail["total"] >= 7 and len(trail["items"]) == 3 and trail["has_more"]
    assert client.get("/api/audit", params={"bank": BANK, "id": "nope"}).status_code == 404


def test_the_timeline_filters_by_network_entity_and_text(client: TestClient, world: Timeline) -> None:
    def texts(**params: Any) -> set[str]:
        return {m["text"].removeprefix("Ana: ") for m in _timeline(client, **params)["items"]}

    assert texts(network="opinion") == {OPINION}
    assert texts(entity="Clara") == {CELLO, TRIP}
    assert texts(q="PORTO") == {PORTO, OPINION}
    assert texts(q="porto", network="world") == {PORTO}
    assert texts(q="no such words") == set()
    some = _timeline(client, limit=2)
    assert len(some["items"]) == 2 and some["total"] == 5 and some["truncated"]
    assert client.get("/api/timeline", params={"bank": BANK, "entity": "Nobody"}).status_code == 404
    for bad in ({"limit": "0"}, {"limit": "50001"}, {"network": "dreams"}):
        r = client.get("/api/timeline", params={"bank": BANK, **bad})
        assert r.status_code == 400 and r.json()["kind"] == "InvalidInputError"
    assert client.get("/api/timeline", params={"bank": "nobody"}).status_code == 404


# the page in a real browser ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(opened: Hindsight) -> Iterator[ExplorerThread]:
    """The explorer over the bank, on a free loopback port."""
    yield from served_explorer(opened)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless chromium through chromedriver, keeping the page's console log (``support.explorer_pages``)."""
    yield from chromium()


CHART = "document.querySelector('.timeline-chart')"


def _fresh(driver: Any, url: str) -> None:
    """Open ``url`` from a blank page (a new document: its ready mark is not the last view's)."""
    driver.get("about:blank")
    _open(driver, url)


def _drawn(driver: Any) -> dict[str, str]:
    """What the chart's last draw put on the canvas (memories, gaps, supersession links), once it has drawn."""
    _wait(driver, f"return {CHART} && {CHART}.dataset.drawnMemories !== undefined")
    return dict(driver.execute_script(f"return Object.assign({{}}, {CHART}.dataset)"))


def _click_on_chart(driver: Any, item_id: str) -> None:
    """Click where the chart drew ``item_id`` (a memory or a forget)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    at = driver.execute_script(f"return {CHART}.timeline.positionOf(arguments[0])", item_id)
    assert at is not None, f"{item_id} is not drawn"
    over = driver.find_element(By.CSS_SELECTOR, ".timeline-chart .u-over")
    size = over.size
    ActionChains(driver).move_to_element_with_offset(
        over, int(at["x"] - size["width"] / 2), int(at["y"] - size["height"] / 2)).click().perform()


def test_the_timeline_page_draws_links_gaps_and_opens_memories(served: ExplorerThread, driver: Any,
                                                               world: Timeline) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    driver.set_script_timeout(60)
    _fresh(driver, f"{served.url}/{_hash(BANK, 'timeline')}")
    drawn = _drawn(driver)
    assert (drawn["drawnMemories"], drawn["drawnGaps"], drawn["drawnLinks"]) == ("5", "2", "1"), drawn
    assert driver.find_elements(By.CSS_SELECTOR, ".timeline-chart canvas")
    assert driver.find_element(By.CSS_SELECTOR, "#tabs a[data-view='timeline']").get_attribute("class") == "active"
    _wait(driver, "return document.querySelectorAll('.timeline-in-view tbody tr').length === 5")
    rows = driver.find_elements(By.CSS_SELECTOR, ".timeline-in-view tbody tr")
    assert len(rows) == 5 and "superseded" in (rows[0].get_attribute("class") or "")
    assert len(driver.find_elements(By.CSS_SELECTOR, ".timeline-in-view a.forget-link")) == 2
    assert _errors(driver) == []
    violations = _axe_violations(driver)
    assert violations == [], violations
    # Hovering a memory shows it; the screenshot (for the README) shows the tooltip too.
    at = driver.execute_script(f"return {CHART}.timeline.positionOf(arguments[0])", world.ids[TRIP])
    over = driver.find_element(By.CSS_SELECTOR, ".timeline-chart .u-over")
    ActionChains(driver).move_to_element_with_offset(
        over, int(at["x"] - over.size["width"] / 2), int(at["y"] - over.size["height"] / 2)).perform()
    _wait(driver, "return !document.querySelector('.timeline-tip').hidden")
    assert "hiking in the Alps" in driver.find_element(By.CSS_SELECTOR, ".timeline-tip").text
    driver.save_screenshot(str(output_dir() / "timeline.png"))
    # The README's screenshot is kept in docs/; it is replaced when asked (a run does not dirty the checkout).
    if SHOT.parent.is_dir() and (os.environ.get("HINDSIGHT_UPDATE_SCREENSHOTS") or not SHOT.exists()):
        driver.save_screenshot(str(SHOT))
    # A click on a memory opens its page.
    _click_on_chart(driver, world.ids[TRIP])
    _wait(driver, "return document.querySelector('.view-memory') !== null && document.body.dataset.ready === '1'")
    assert world.ids[TRIP] in driver.execute_script("return decodeURIComponent(location.hash)")
    assert "hiking in the Alps" in driver.find_element(By.TAG_NAME, "main").text
    # A click on a gap opens its audit entry.
    _fresh(driver, f"{served.url}/{_hash(BANK, 'timeline')}")
    _drawn(driver)
    gap = next(f for f in _timeline_via_page(driver) if f["document_id"] == "s3")
    _click_on_chart(driver, gap["id"])
    _wait(driver, "return document.querySelector('.view-audit') !== null && document.body.dataset.ready === '1'")
    selected = driver.find_element(By.ID, "audit-selected").text
    assert gap["id"] in selected and "forget" in selected and "s3" in selected
    assert _errors(driver) == []
    assert _axe_violations(driver) == []


def _timeline_via_page(driver: Any) -> list[dict[str, Any]]:
    """The forgets as the page got them (the same API, fetched from the page)."""
    return list(driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"fetch('api/timeline?bank={BANK}').then((r) => r.json()).then((d) => done(d.forgotten));"))


def test_the_timeline_zooms_from_years_to_hours_and_filters(served: ExplorerThread, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    _fresh(driver, f"{served.url}/{_hash(BANK, 'timeline')}")
    _drawn(driver)
    span = f"const s = {CHART}.timeline.plot.scales.x; return s.max - s.min;"
    assert driver.execute_script(span) > 2 * 365 * 24 * 3600  # all of it: the opinion is formed today
    for label, seconds in (("year", 365 * 24 * 3600), ("day", 24 * 3600), ("hour", 3600)):
        driver.find_element(By.XPATH, f"//div[contains(@class,'timeline-zoom')]/button[text()='{label}']").click()
        assert driver.execute_script(span) == pytest.approx(seconds, rel=1e-6), label
    driver.find_element(By.CSS_SELECTOR, ".timeline-zoom button[data-zoom='in']").click()
    assert driver.execute_script(span) == pytest.approx(30 * 60, rel=1e-6)
    driver.find_element(By.CSS_SELECTOR, ".timeline-zoom button[data-zoom='in']").click()
    assert driver.execute_script(span) == pytest.approx(15 * 60, rel=1e-6)  # the closest zoom
    driver.find_element(By.CSS_SELECTOR, ".timeline-zoom button[data-zoom='all']").click()
    assert driver.execute_script(span) > 2 * 365 * 24 * 3600
    # Filters go to the server and into the address.
    driver.execute_script(f"window.shownBefore = {CHART}")
    driver.find_element(By.ID, "tl-entity").send_keys("Clara")
    driver.find_element(By.CSS_SELECTOR, ".timeline-filters button[type='submit']").click()
    _wait(driver, f"return location.hash.includes('entity=Clara') && {CHART} !== window.shownBefore")
    assert _drawn(driver)["drawnMemories"] == "2"
    _fresh(driver, f"{served.url}/{_hash(BANK, 'timeline', 'network=opinion')}")
    assert _drawn(driver)["drawnMemories"] == "1"
    _fresh(driver, f"{served.url}/{_hash(BANK, 'timeline', 'q=nothing+like+this')}")
    assert "No memory matches" in driver.find_element(By.TAG_NAME, "main").text
    assert _errors(driver) == []
