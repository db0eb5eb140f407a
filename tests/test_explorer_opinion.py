"""The explorer's opinion page (issue 41.4): an opinion's text, current confidence and stance, its confidence per step
as a chart, and every step of its trajectory with each evidence memory and its verdict (for / against / neutral, in
words), an evidence memory forgotten since shown as such; reachable from the opinions list and from the opinion's
memory page.

Over one real store: the timeline test's bank (raw retains with the real embedder, NER and supersession rule: a
superseded memory, a forgotten memory and a forgotten document, an opinion formed with ``add_opinion``) to which this
file adds what people said about Rafael as a house-sitter, a judged opinion formed by reflect on a yes/no question (a
scripted model sorts the memories into ``points_yes`` / ``points_no``; the stance and every verdict are computed and
recorded by the engine), then two later messages that weaken it (``Bank.update_opinions``, the scripted model
answering the assessment), one of which is then forgotten. The JSON API through Starlette's TestClient, then the
pages in headless chromium with no console error and no serious or critical axe-core violation; a screenshot kept as
``docs/opinion.png`` (replaced with ``HINDSIGHT_UPDATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_pages import (
    app_client,
    axe_violations,
    chromium,
    console_errors,
    follow,
    fresh,
    held_open,
    keep_screenshot,
    served_explorer,
    view,
    wait,
)
from support.threaded_servers import ExplorerThread
from test_explorer_timeline import BANK, LISBON, OPINION, PORTO, T0, build, say

from hindsight_core import Disposition, Hindsight

QUESTION = "Can I rely on Rafael to house-sit while we're away?"
PLANTS = "Tomas: Rafael watered all our plants and sent a photo of the cat every evening."
GATE = "Linnea: Rafael left the back gate open and one of our rabbits got out."
DOOR = "Bea: Rafael left our front door unlocked overnight."
PARTY = "Linnea: Rafael threw a party in our flat while house-sitting, wine stains all over the sofa."
BIKE = "Bea: Rafael bought a new bicycle last week."
DOG = "Tomas: Rafael looked after our dog for a whole month and everything went perfectly."
KEYS = "Bea: Rafael brought our keys back on time and left the fridge full."
OPEN = Disposition(skepticism=1, literalism=1, empathy=5)


@dataclass
class Opinions:
    """The bank's path, its memories' ids by text (the forgotten ones included, as they were), the two opinions."""

    path: Path
    ids: dict[str, str] = field(default_factory=dict)
    judged: str = ""
    plain: str = ""


def _model(messages: list[dict[str, str]], schema: type) -> dict[str, object]:
    """The model, call by call: reflect judges each memory on its own (the watering is good news, the gate, the door
    and the party bad news, anything else unrelated), and the opinion job finds the news about the dog and the keys
    weakening the opinion on Rafael."""
    said = messages[-1]["content"]
    if schema.__name__ == "_NewsOut":
        said = said.split("Message:", 1)[-1]
        if "watered" in said:
            return {"about": "he looked after the plants", "news": "good"}
        if any(key in said for key in ("gate", "unlocked", "party")):
            return {"about": "he was careless with the house", "news": "bad"}
        return {"about": "nothing", "news": "unrelated"}
    if "dog" in said or "keys" in said:
        return {"shows": "two hosts say he looked after their home well", "answer": "no", "how_bad": 1}
    return {"shows": "nothing", "answer": "cannot tell", "how_bad": 0}


def build_opinions(path: Path) -> Opinions:
    """The timeline's bank; then what Rafael's hosts said, the judged opinion reflect forms on whether to rely on
    him, two later messages that weaken it (one forgotten since)."""
    from scripted_llm import ScriptedLLM

    timeline = build(path)
    out = Opinions(path=path, ids=dict(timeline.ids), plain=timeline.opinion_id)
    llm = ScriptedLLM([_model] * 20)
    with Hindsight.open(path, llm=llm, start_worker=False) as hs:
        bank = hs.bank(BANK)
        said = [{"speaker": t.split(":")[0], "text": t.split(": ", 1)[1], "id": f"r{i}",
                 "timestamp": (T0 + timedelta(days=320, minutes=i)).isoformat()}
                for i, t in enumerate([PLANTS, GATE, DOOR, PARTY, BIKE], start=1)]
        for m in bank.retain(said, document_id="rafael", extract=False, background=False).memories:
            out.ids[m.text] = m.id
        r = bank.reflect(QUESTION, disposition=OPEN, reference_time=T0 + timedelta(days=321))
        assert r.stance == "no" and len(r.opinions) == 1, (r.stance, r.answer)
        out.judged = r.opinions[0].id
        news = bank.retain([say(DOG.split(": ", 1)[1], "n1", 330) | {"speaker": "Tomas"},
                            say(KEYS.split(": ", 1)[1], "n2", 331) | {"speaker": "Bea"}],
                           document_id="rafael-later", extract=False, background=False)
        for m in news.memories:
            out.ids[m.text] = m.id
        moved = [e for e in bank.update_opinions(news.memory_ids) if e.opinion_id == out.judged]
        assert [e.label for e in moved] == ["weaken"] and sorted(moved[0].evidence) == sorted(news.memory_ids)
        bank.forget(memory_id=out.ids[KEYS])
        assert bank.get(out.judged) is not None  # the opinion does not rest on what moved it later
        assert bank.get(out.ids[LISBON]).superseded_by == out.ids[PORTO]  # type: ignore[union-attr]
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Opinions:
    """The bank, built once."""
    return build_opinions(tmp_path_factory.mktemp("explorer-opinion") / "memory")


@pytest.fixture(scope="module")
def opened(world: Opinions) -> Iterator[Hindsight]:
    """The store held open for the module."""
    yield from held_open(world.path)


@pytest.fixture(scope="module")
def client(opened: Hindsight) -> Iterator[TestClient]:
    """The app as ``hindsight ui`` serves it on 127.0.0.1."""
    yield from app_client(opened)


EXPECTED = {PLANTS: "against", GATE: "for", DOOR: "for", PARTY: "for", BIKE: "neutral"}
"""The formation's verdicts, relative to the opinion (which says no: the watering goes against it). Reflect judges
the first six memories it recalls: the sixth, from the timeline's bank, is about something else (neutral)."""


def _as_expected(verdicts: dict[str, str], world: Opinions) -> int:
    """Asserts the formation's verdicts are ``EXPECTED``'s, any other judged memory neutral; returns the neutral
    count."""
    expected = {world.ids[t]: v for t, v in EXPECTED.items()}
    assert {i: v for i, v in verdicts.items() if i in expected} == expected
    assert all(v == "neutral" for i, v in verdicts.items() if i not in expected), verdicts
    assert len(verdicts) <= 6
    return sum(1 for v in verdicts.values() if v == "neutral")


# the JSON API -----------------------------------------------------------------------------------------------------
def test_each_step_carries_its_evidence_with_its_verdict(client: TestClient, world: Opinions) -> None:
    r = client.get("/api/opinion", params={"bank": BANK, "id": world.judged})
    assert r.status_code == 200, r.text
    data = r.json()
    meta = data["opinion"]["metadata"]
    assert meta["stance"] == "no" and meta["query"] == QUESTION
    formed, weakened = data["history"]
    assert (formed["label"], weakened["label"]) == ("formed", "weaken")
    assert weakened["new_confidence"] < formed["new_confidence"] == pytest.approx(weakened["old_confidence"])
    assert data["opinion"]["confidence"] == pytest.approx(weakened["new_confidence"])
    _as_expected({m["id"]: m["verdict"] for m in formed["evidence_memories"]}, world)
    later = {m["id"]: m for m in weakened["evidence_memories"]}
    assert {i: m["verdict"] for i, m in later.items()} == {world.ids[DOG]: "against", world.ids[KEYS]: "against"}
    assert later[world.ids[KEYS]].get("missing") and later[world.ids[DOG]]["text"] == DOG
    plain = client.get("/api/opinion", params={"bank": BANK, "id": world.plain}).json()
    assert [[(m["id"], m["verdict"]) for m in s["evidence_memories"]] for s in plain["history"]] == [
        [(world.ids[PORTO], "for")]]
    assert client.get("/api/opinion", params={"bank": BANK, "id": world.ids[PORTO]}).status_code == 404


# the page in a real browser ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(opened: Hindsight) -> Iterator[ExplorerThread]:
    """The explorer over the bank, on a free loopback port."""
    yield from served_explorer(opened)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless chromium, keeping the page's console log."""
    yield from chromium()


def _evidence(driver: Any, step: int) -> dict[str, tuple[str, str]]:
    """Step ``step``'s evidence as the page lists it: memory id -> (its verdict badge's words, the item's text)."""
    return dict(driver.execute_script(
        "return [...document.querySelectorAll(`#step-${arguments[0]} ul.evidence > li`)].map((li) => "
        "[li.dataset.id, [li.querySelector('.badge.verdict').textContent, li.textContent]])", step))


def test_the_opinion_page_shows_stance_chart_steps_and_verdicts(served: ExplorerThread, driver: Any,
                                                               world: Opinions) -> None:
    from selenium.webdriver.common.by import By

    driver.set_script_timeout(60)
    fresh(driver, f"{served.url}/{view(BANK, 'opinion', 'id=' + world.judged)}")
    assert driver.find_element(By.ID, "opinion-text").text.startswith("No to")
    assert driver.find_element(By.CSS_SELECTOR, "#opinion-stance .badge.stance").text == "no"
    assert driver.find_element(By.ID, "opinion-question").text == QUESTION
    assert driver.find_element(By.CSS_SELECTOR, "#tabs a[data-view='opinions']").get_attribute("class") == "active"
    confidence = float(driver.find_element(By.CSS_SELECTOR, "#opinion-confidence .bar-label").text)
    # The chart: one point per step, the line ending at the current confidence.
    points = driver.find_elements(By.CSS_SELECTOR, "#opinion-chart svg.chart circle.point")
    assert [p.get_attribute("class") for p in points] == ["point label-formed", "point label-weaken"]
    assert float(points[1].get_attribute("cy")) > float(points[0].get_attribute("cy"))  # lower: less sure
    steps = driver.find_elements(By.CSS_SELECTOR, "#opinion-steps > li.step")
    assert [s.get_attribute("data-label") for s in steps] == ["formed", "weaken"]
    assert f"→ {confidence:.2f}" in steps[1].find_element(By.CSS_SELECTOR, ".step-confidence").text
    # Every memory with the verdict in words; the forgotten one listed as such, with its verdict.
    formed = _evidence(driver, 0)
    neutral = _as_expected({i: v for i, (v, _) in formed.items()}, world)
    assert "Rafael left the back gate open" in formed[world.ids[GATE]][1]
    assert f"Evidence ({4 + neutral}): 3 for · 1 against · {neutral} neutral" in steps[0].text
    later = _evidence(driver, 1)
    assert {i: v for i, (v, _) in later.items()} == {world.ids[DOG]: "against", world.ids[KEYS]: "against"}
    assert "forgotten" in later[world.ids[KEYS]][1] and "looked after our dog" in later[world.ids[DOG]][1]
    assert not driver.find_elements(By.CSS_SELECTOR, f"#step-1 li[data-id='{world.ids[KEYS]}'] a.memory-link")
    tally = f"3 for · 3 against · {neutral} neutral over 2 steps"
    assert driver.find_element(By.ID, "opinion-tally").text == tally
    assert console_errors(driver) == []
    violations = axe_violations(driver)
    assert violations == [], violations
    keep_screenshot(driver, "opinion.png")
    # A point of the chart picks its step; an evidence memory opens its page.
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", points[1])
    assert "picked" in (steps[1].get_attribute("class") or "")
    link = driver.find_element(By.CSS_SELECTOR, f"#step-0 li[data-id='{world.ids[PARTY]}'] a.memory-link")
    follow(driver, link, "view-memory")
    assert "threw a party" in driver.find_element(By.TAG_NAME, "h1").text
    assert console_errors(driver) == []


def test_the_opinion_page_is_reached_from_the_list_and_the_memory_page(served: ExplorerThread, driver: Any,
                                                                      world: Opinions) -> None:
    from selenium.webdriver.common.by import By

    driver.set_script_timeout(60)
    fresh(driver, f"{served.url}/{view(BANK, 'opinions')}")
    row = driver.find_element(By.CSS_SELECTOR, f"table.opinions tr[data-id='{world.plain}']")
    follow(driver, row.find_element(By.CSS_SELECTOR, "a.open-opinion"), "view-opinion")
    assert driver.find_element(By.ID, "opinion-text").text == OPINION
    assert "not judged" in driver.find_element(By.TAG_NAME, "main").text  # formed without a yes/no question
    assert {i: v for i, (v, _) in _evidence(driver, 0).items()} == {world.ids[PORTO]: "for"}
    # The opinion's memory page links to it, and back.
    follow(driver, driver.find_element(By.ID, "opinion-memory-link"), "view-memory")
    follow(driver, driver.find_element(By.ID, "opinion-page-link"), "view-opinion")
    assert world.plain in driver.execute_script("return decodeURIComponent(location.hash)")
    # The list's preview of the judged opinion shows each verdict too, and opens its page.
    fresh(driver, f"{served.url}/{view(BANK, 'opinions', 'id=' + world.judged)}")
    badges = driver.execute_script(
        "return [...document.querySelectorAll('table.history .badge.verdict')].map((b) => b.textContent)")
    others = [b for b in badges if b != "neutral"]
    assert sorted(others) == sorted([*(v for v in EXPECTED.values() if v != "neutral"), "against", "against"])
    assert 1 <= badges.count("neutral") <= 2  # the bicycle, and the sixth judged memory when it is about else
    follow(driver, driver.find_element(By.ID, "open-opinion"), "view-opinion")
    assert driver.find_element(By.ID, "opinion-text").text.startswith("No to")
    assert console_errors(driver) == []
    assert axe_violations(driver) == []
    # A memory that is no opinion has no opinion page: the page says so.
    driver.get("about:blank")
    driver.get(f"{served.url}/{view(BANK, 'opinion', 'id=' + world.ids[PORTO])}")
    wait(driver, "return document.body.dataset.ready === '1'")
    assert "no opinion" in driver.find_element(By.CSS_SELECTOR, ".error-box").text
