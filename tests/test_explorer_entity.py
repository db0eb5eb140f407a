"""The explorer's entity page (issue 41.3): the entity's memories over time, its values that changed (each superseded
memory linked to what superseded it), its observation sentence by sentence with the messages each rests on, and the
entity graph laid out without overlapping labels, also at 200 entities.

The overview test's bank (real raw retains: a move that supersedes where Ana lived, a forgotten memory and document,
an opinion, Clara's and Ana's observations written by the real observation job from scripted text), and a second bank
of 200 entities for the graph: the JSON API through Starlette's TestClient, then the pages in headless chromium with
no console error and no serious or critical axe-core violation; screenshots kept as ``docs/entity.png`` and
``docs/graph-200.png`` (replaced with ``HINDSIGHT_UPDATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_pages import app_client, held_open, served_explorer
from support.threaded_servers import ExplorerThread
from test_explorer import REPO, _errors, _hash, _wait, output_dir
from test_explorer_overview import ANA_OBSERVATION, CLARA_OBSERVATION, Pictures, build_pictures
from test_explorer_timeline import BANK, CELLO, LISBON, PORTO, TRIP, _axe_violations, _fresh
from test_explorer_timeline import driver as driver  # the chromium fixture, shared

from hindsight_core import Hindsight

CROWD = "crowd"
FIRST = ["Amelia", "Bartholomew", "Chen", "Dolores", "Esteban", "Fatima", "Giovanni", "Hannah", "Ibrahim", "Josephine",
         "Kwame", "Lucia", "Maximilian", "Nadia", "Oluwaseun", "Priya", "Quentin", "Rosalind", "Sebastian", "Tomoko"]
LAST = ["Abernathy", "Li", "Okonkwo-Smith", "Rossi", "Van der Berg", "Kim", "Fitzgerald", "Novak", "Castellanos", "Ng"]
SHOTS = {"entity": REPO / "docs" / "entity.png", "graph": REPO / "docs" / "graph-200.png"}


def crowd_names() -> list[str]:
    """200 people, names from 7 to 25 characters."""
    return [f"{first} {last}" for last in LAST for first in FIRST]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Pictures:
    """The bank, and a second bank of 200 entities (opinions naming four people each: 100 opinions), built once."""
    out = build_pictures(tmp_path_factory.mktemp("explorer-entity") / "memory")
    names = crowd_names()
    with Hindsight.open(out.path, start_worker=False) as hs:
        crowd = hs.bank(CROWD, name="Crowd")
        for i in range(100):
            group = [names[(2 * i + k) % len(names)] for k in (0, 1, 7, 53)]
            crowd.add_opinion(f"{group[0]} and {group[1]} get along well.", 0.6, entities=group)
        assert len(hs.store.list_entities(CROWD)) == 200
    return out


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
    """The explorer over the banks, on a free loopback port."""
    yield from served_explorer(opened)


def _history(client: TestClient, entity_id: str) -> Any:
    r = client.get("/api/entity/history", params={"bank": BANK, "id": entity_id})
    assert r.status_code == 200, r.text
    return r.json()


# the JSON API -----------------------------------------------------------------------------------------------------
def test_an_entity_s_values_that_changed_link_to_what_superseded_them(client: TestClient, world: Pictures) -> None:
    for name in ("Ana", "Lisbon"):
        changes = _history(client, world.entities[name])["changes"]
        assert len(changes) == 1, name
        assert changes[0]["memory"]["id"] == world.ids[LISBON] and changes[0]["by"]["id"] == world.ids[PORTO]
        assert changes[0]["memory"]["valid_until"] and changes[0]["by"]["superseded_by"] is None
    assert _history(client, world.entities["Clara"])["changes"] == []
    growth = _history(client, world.entities["Clara"])["growth"]
    # Clara: her cello and the trip (said on day 0 and 170), the visit (day 310) and her observation.
    assert growth["total"] == 4 and sum(sum(v) for v in growth["said"]["counts"].values()) == 4
    assert len(growth["said"]["x"]) == 3
    assert client.get("/api/entity/history", params={"bank": BANK, "id": "nobody"}).status_code == 404
    assert client.get("/api/entity/history", params={"bank": BANK}).status_code == 400


def test_an_observation_is_split_into_its_sentences_each_with_its_messages(client: TestClient,
                                                                          world: Pictures) -> None:
    sentences = _history(client, world.entities["Clara"])["sentences"]
    assert [s["text"] for s in sentences] == [
        "Clara plays the cello in a small orchestra.",
        "Clara went hiking in the Alps with her sister Ana in June 2024."]
    assert " ".join(s["text"] for s in sentences) == CLARA_OBSERVATION
    assert [[m["id"] for m in s["support"]] for s in sentences] == [[world.ids[CELLO]], [world.ids[TRIP]]]
    assert sentences[0]["support"][0]["sources"] == ["a2"] and sentences[1]["support"][0]["sources"] == ["b1"]
    ana = _history(client, world.entities["Ana"])["sentences"]
    assert " ".join(s["text"] for s in ana) == ANA_OBSERVATION
    assert [[m["id"] for m in s["support"]] for s in ana] == [[world.ids[PORTO]], [world.ids[TRIP]]]


# the pages in a real browser --------------------------------------------------------------------------------------
def _keep(driver: Any, which: str) -> None:
    driver.save_screenshot(str(output_dir() / SHOTS[which].name))
    shot = SHOTS[which]
    if shot.parent.is_dir() and (os.environ.get("HINDSIGHT_UPDATE_SCREENSHOTS") or not shot.exists()):
        size = driver.get_window_size()
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], min(3000, height + 120))
        try:
            driver.save_screenshot(str(shot))
        finally:
            driver.set_window_size(size["width"], size["height"])


def test_the_entity_page_shows_time_values_and_a_supported_observation(served: ExplorerThread, driver: Any,
                                                                      world: Pictures) -> None:
    from selenium.webdriver.common.by import By

    driver.set_script_timeout(60)
    _fresh(driver, f"{served.url}/{_hash(BANK, 'entity', 'id=' + world.entities['Ana'])}")
    assert driver.find_elements(By.CSS_SELECTOR, "#entity-time figure.plot canvas")
    assert int(driver.find_element(By.CSS_SELECTOR, "#entity-time figure.plot").get_attribute("data-bars")) >= 3
    rows = driver.find_elements(By.CSS_SELECTOR, "#entity-changes tbody tr")
    assert len(rows) == 1 and rows[0].get_attribute("data-id") == world.ids[LISBON]
    links = [a.get_attribute("href") for a in rows[0].find_elements(By.CSS_SELECTOR, "a.memory-link")]
    assert world.ids[LISBON] in links[0] and world.ids[PORTO] in links[1]
    assert "current" in rows[0].text
    sentences = driver.find_elements(By.CSS_SELECTOR, "#entity-observation-sentences > li")
    assert len(sentences) == 2 and "Ana moved to Porto" in sentences[0].text
    support = sentences[0].find_elements(By.CSS_SELECTOR, "ul.support a.memory-link")
    assert len(support) == 1 and world.ids[PORTO] in support[0].get_attribute("href")
    assert driver.find_element(By.CSS_SELECTOR, "#entity-observation-sentences ul.support a.mono").text == "d1"
    assert _errors(driver) == []
    violations = _axe_violations(driver)
    assert violations == [], violations
    _keep(driver, "entity")
    # A supporting message opens its memory; the superseded value opens what superseded it.
    driver.execute_script("arguments[0].click()", support[0])
    _wait(driver, "return document.querySelector('.view-memory') !== null && document.body.dataset.ready === '1'")
    assert "We moved to Porto" in driver.find_element(By.TAG_NAME, "main").text
    # Clara's page: each sentence with its own message; no value changed.
    _fresh(driver, f"{served.url}/{_hash(BANK, 'entity', 'id=' + world.entities['Clara'])}")
    sentences = driver.find_elements(By.CSS_SELECTOR, "#entity-observation-sentences > li")
    assert [s.find_element(By.CSS_SELECTOR, "p.sentence").text for s in sentences] == [
        "Clara plays the cello in a small orchestra.",
        "Clara went hiking in the Alps with her sister Ana in June 2024."]
    assert world.ids[TRIP] in sentences[1].find_element(By.CSS_SELECTOR, "a.memory-link").get_attribute("href")
    assert driver.find_elements(By.ID, "entity-no-changes")
    assert _errors(driver) == []
    assert _axe_violations(driver) == []


def test_the_graph_of_200_entities_has_no_overlapping_labels(served: ExplorerThread, driver: Any) -> None:
    from selenium.webdriver.common.by import By

    _fresh(driver, f"{served.url}/{_hash(CROWD, 'graph', 'top=200')}")
    _wait(driver, "const g = document.getElementById('graph'); return g && g.dataset.labelOverlaps !== undefined",
          timeout=90)
    nodes = driver.execute_script("return document.getElementById('graph').graph.cy.nodes().length")
    overlaps = driver.execute_script("return document.getElementById('graph').graph.overlaps()")
    zoom = driver.execute_script("return document.getElementById('graph').graph.cy.zoom()")
    fit = float(driver.execute_script("return document.getElementById('graph').dataset.fitZoom"))
    assert nodes == 200 and overlaps == 0, (nodes, overlaps)
    # It opens at a zoom where the labels' 13 px stay readable (whole when it fits so, else on the most mentioned).
    note = driver.find_element(By.TAG_NAME, "main").text
    assert zoom >= 0.85 - 1e-9 and (fit >= 0.85 or "Fit shows them all" in note)
    # Every label is drawn whole or cut with an ellipsis, none over another; the page passes axe.
    assert _errors(driver) == []
    assert _axe_violations(driver) == []
    _keep(driver, "graph")
    # The small bank's graph too (a handful of nodes, labels never over each other).
    _fresh(driver, f"{served.url}/{_hash(BANK, 'graph')}")
    _wait(driver, "const g = document.getElementById('graph'); return g && g.dataset.labelOverlaps !== undefined")
    assert driver.execute_script("return document.getElementById('graph').graph.overlaps()") == 0
