"""The explorer's "correct" action and how it shows beliefs that change (issue 37.5): a memory superseded by a later
one says since when and by which memory, a correction says what it corrects, lists mark superseded memories, and the
correct form stores the corrected text as a memory that supersedes the wrong one, only for a token that may write the
bank, recorded in the audit trail as the explorer's.

Over one real store (raw retains: the real embedder, NER and supersession rule) with a token file: ``writer``
read-write on bank ``people``, ``reader`` read-only on it, ``stranger`` read-write on bank ``other`` only. The JSON API
through Starlette's TestClient, then the page in headless chromium against the explorer served on loopback from a
thread of this process (``support.threaded_servers``), so the store and its audit trail can be checked afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.explorer_pages import chromium
from support.threaded_servers import ExplorerThread
from test_explorer import _errors, _hash, _open, _wait, output_dir

from hindsight_core import Hindsight
from hindsight_core.access import READ, TokenFile
from hindsight_core.explorer.app import create_app
from hindsight_core.explorer.auth import TOKEN_HEADER, Guard
from hindsight_core.models import Memory

BANK = "people"
OTHER = "other"
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
LISBON = "Ana: I live in Lisbon, in a small flat near the river."
PORTO = "Ana: We moved to Porto last month, the new flat is much bigger."
NURSE = "Rui: I work as a nurse at the Santa Maria hospital."
CELLO = "Mia: I play the cello in a small orchestra."
BEES = "Bob: I keep bees in Oslo."


def say(speaker: str, text: str, mid: str, days: int) -> dict[str, Any]:
    """One message ``days`` after T0."""
    return {"speaker": speaker, "text": text, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


@dataclass
class World:
    """The open store, its token file, the tokens by name and each memory of bank ``people`` by text."""

    hs: Hindsight
    tokens_file: Path
    tokens: dict[str, str]
    memories: dict[str, Memory] = field(default_factory=dict)

    def get(self, text: str) -> Memory:
        """The memory with ``text`` as the store holds it now."""
        found = self.hs.bank(BANK, create=False).get(self.memories[text].id)
        assert found is not None, text
        return found

    def corrections(self) -> list[Any]:
        """The audit trail's ``correct`` entries of bank ``people``, newest first."""
        return [e for e in self.hs.audit(BANK, limit=1000) if e.operation == "correct"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Ana says where she lives, talks of other things for months, then says she moved; Rui and Mia say what they do;
    Bob, in another bank, keeps bees."""
    root = tmp_path_factory.mktemp("explorer-correct")
    file = TokenFile(root / "tokens.json")
    tokens = {"writer": file.add("writer", banks=[BANK]), "reader": file.add("reader", scope=READ, banks=[BANK]),
              "stranger": file.add("stranger", banks=[OTHER])}
    with Hindsight.open(root / "memory", start_worker=False) as hs:
        bank = hs.bank(BANK)
        sessions = [
            [say("Ana", LISBON.removeprefix("Ana: "), "a1", 0), say("Rui", NURSE.removeprefix("Rui: "), "r1", 0),
             say("Mia", CELLO.removeprefix("Mia: "), "m1", 0)],
            [say("Ana", "The jacaranda trees are blooming everywhere this week.", "a2", 60)],
            [say("Ana", PORTO.removeprefix("Ana: "), "a3", 300)],
        ]
        for i, session in enumerate(sessions, start=1):
            bank.retain(session, document_id=f"s{i}", extract=False, background=False)
        hs.bank(OTHER).retain([say("Bob", BEES.removeprefix("Bob: "), "b1", 0)], document_id="b", extract=False,
                              background=False)
        world = World(hs, file.path, tokens)
        for m in bank.memories(list(hs.store.unit_ids(BANK))):
            world.memories[m.text] = m
        # The move said months later supersedes where Ana lived, and nothing else is superseded.
        assert world.get(LISBON).superseded_by == world.memories[PORTO].id
        assert [t for t, m in world.memories.items() if m.superseded_by] == [LISBON]
        yield world


@pytest.fixture(scope="module")
def client(world: World) -> Iterator[TestClient]:
    """The app as ``hindsight ui --tokens FILE`` serves it on 127.0.0.1."""
    guard = Guard.for_host("127.0.0.1", tokens=TokenFile(world.tokens_file))
    with TestClient(create_app(world.hs, guard), base_url="http://127.0.0.1:8765") as c:
        yield c


def _as(world: World, name: str) -> dict[str, str]:
    return {TOKEN_HEADER: world.tokens[name]}


# the JSON API -----------------------------------------------------------------------------------------------------
def test_a_superseded_memory_names_its_successor_and_lists_mark_it(world: World, client: TestClient) -> None:
    lisbon, porto = world.memories[LISBON], world.memories[PORTO]
    old = client.get("/api/memory", params={"bank": BANK, "id": lisbon.id}, headers=_as(world, "reader")).json()
    assert old["superseded_by"]["id"] == porto.id and old["superseded_by"]["text"] == PORTO
    assert old["memory"]["valid_until"].startswith("2024-11-05") and old["corrects"] is None
    new = client.get("/api/memory", params={"bank": BANK, "id": porto.id}, headers=_as(world, "reader")).json()
    assert new["superseded_by"] is None and [m["id"] for m in new["supersedes"]] == [lisbon.id]
    listed = client.get("/api/memories", params={"bank": BANK, "limit": 50}, headers=_as(world, "reader")).json()
    marked = {m["text"]: m["superseded_by"] for m in listed["items"]}
    assert marked[LISBON] == porto.id and marked[PORTO] is None and marked[NURSE] is None
    rec = client.post("/api/recall", json={"bank": BANK, "query": "Where does Ana live?"},
                      headers=_as(world, "reader")).json()
    texts = [m["text"] for m in rec["memories"]]
    assert texts.index(PORTO) < texts.index(LISBON)
    lisbon_row = next(c for c in rec["candidates"] if c["memory_id"] == lisbon.id)
    assert lisbon_row["superseded_by"] == porto.id and lisbon_row["memory"]["superseded_by"] == porto.id
    # As of a day before the move was said, Lisbon was current and the move unknown.
    then = client.post("/api/recall", json={"bank": BANK, "query": "Where does Ana live?", "as_of": "2024-06-01"},
                       headers=_as(world, "reader")).json()
    assert then["as_of"].startswith("2024-06-01") and PORTO not in [m["text"] for m in then["memories"]]
    assert next(m for m in then["memories"] if m["text"] == LISBON)["superseded_by"] is None
    bad = client.post("/api/recall", json={"bank": BANK, "query": "x", "as_of": "not a date"},
                      headers=_as(world, "reader"))
    assert bad.status_code == 400 and bad.json()["kind"] == "InvalidInputError"


def test_correct_with_a_write_token_supersedes_and_is_audited(world: World, client: TestClient) -> None:
    nurse = world.memories[NURSE]
    before = len(world.corrections())
    body = {"bank": BANK, "memory_id": nurse.id, "text": "Rui works as a paramedic, not a nurse."}
    r = client.post("/api/correct", json=body, headers=_as(world, "writer"))
    assert r.status_code == 200, r.text
    fixed = r.json()["memory"]
    assert r.json()["corrected"] == nurse.id and fixed["text"] == "Rui works as a paramedic, not a nurse."
    # Who corrected it is the token's id: a caller cannot name someone else.
    assert fixed["metadata"]["correction"]["of"] == nurse.id and fixed["metadata"]["correction"]["by"] == "writer"
    assert world.get(NURSE).superseded_by == fixed["id"]  # the wrong one stays, as history
    old = client.get("/api/memory", params={"bank": BANK, "id": nurse.id}, headers=_as(world, "writer")).json()
    assert old["superseded_by"] == {**old["superseded_by"], "id": fixed["id"], "text": fixed["text"]}
    new = client.get("/api/memory", params={"bank": BANK, "id": fixed["id"]}, headers=_as(world, "writer")).json()
    assert new["corrects"]["id"] == nurse.id and new["corrects"]["text"] == NURSE
    assert new["correction"]["by"] == "writer" and new["correction"]["at"]
    entries = world.corrections()
    assert len(entries) == before + 1
    assert (entries[0].surface, entries[0].token_id) == ("explorer", "writer")
    assert set(entries[0].memory_ids) == {nurse.id, fixed["id"]}


def test_correct_is_refused_for_read_only_other_bank_and_missing_tokens(world: World, client: TestClient) -> None:
    cello = world.memories[CELLO]
    body = {"bank": BANK, "memory_id": cello.id, "text": "Mia plays the viola, not the cello."}
    before = len(world.corrections())
    denied = client.post("/api/correct", json=body, headers=_as(world, "reader"))
    assert denied.status_code == 403 and denied.json()["kind"] == "ReadOnlyError"
    assert denied.json()["error"].startswith("this token (reader) may read bank 'people' but not change it")
    # Another bank's token: the bank reads as one that does not exist (its existence is not revealed).
    elsewhere = client.post("/api/correct", json=body, headers=_as(world, "stranger"))
    nowhere = client.post("/api/correct", json={**body, "bank": "no-such-bank"}, headers=_as(world, "writer"))
    assert elsewhere.status_code == nowhere.status_code == 404
    assert elsewhere.json() == {"error": "no bank 'people'", "kind": "BankNotFoundError"}
    for headers in ({}, {TOKEN_HEADER: "wrong"}, {"Authorization": "Bearer wrong"}):
        assert client.post("/api/correct", json=body, headers=headers).status_code == 403, headers
    # A form post (what another site could make a browser send) is refused even with the right token.
    form = client.post("/api/correct", content=f"bank={BANK}&memory_id={cello.id}&text=x",
                       headers={**_as(world, "writer"), "Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415
    assert client.get("/api/correct", headers=_as(world, "writer")).status_code in (404, 405)  # never a GET
    assert client.post("/api/correct", json=body, headers={**_as(world, "writer"), "Origin": "https://evil.example"}
                       ).status_code == 403
    assert world.get(CELLO).superseded_by is None and len(world.corrections()) == before  # nothing was stored


def test_correct_checks_its_input_with_one_short_message(world: World, client: TestClient) -> None:
    cello = world.memories[CELLO]
    writer = _as(world, "writer")
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"bank": BANK, "memory_id": cello.id}, 400, "correct needs the text that is true instead"),
        ({"bank": BANK, "memory_id": cello.id, "text": "   "}, 400, "correct needs the text that is true instead"),
        ({"bank": BANK, "text": "x"}, 400, "correct needs the memory_id"),
        ({"bank": BANK, "memory_id": cello.id, "text": 5}, 400, "text must be a string"),
        ({"bank": BANK, "memory_id": cello.id, "text": "x" * 5000}, 400, "at most 4000 characters"),
        ({"bank": BANK, "memory_id": cello.id, "text": "Mia plays the viola.", "by": "the boss"}, 400,
         "correct records the token's id as who corrected the memory: leave out 'by'"),
        ({"bank": BANK, "memory_id": "no-such-memory", "text": "Mia plays the viola."}, 404,
         "no memory 'no-such-memory' in bank 'people'"),
        ({"bank": BANK, "memory_id": "m" * 5000, "text": "Mia plays the viola."}, 400, "longer than 1000 characters"),
    ]
    for body, status, words in cases:
        r = client.post("/api/correct", json=body, headers=writer)
        answer = r.json()
        assert r.status_code == status and words in answer["error"], (body.keys(), r.text[:300])
        assert len(answer["error"]) < 400 and "Traceback" not in r.text and "pydantic" not in r.text.lower()
    assert world.get(CELLO).superseded_by is None


# the page in a real browser ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(world: World) -> Iterator[ExplorerThread]:
    """The explorer over the world's store, on a free loopback port, with the token file."""
    server = ExplorerThread(world.hs, "127.0.0.1", Guard.for_host("127.0.0.1", tokens=TokenFile(world.tokens_file)))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless chromium through chromedriver, keeping the page's console log (``support.explorer_pages``)."""
    yield from chromium(height=1000)


def visit(driver: Any, served: ExplorerThread, token: str, fragment: str) -> None:
    """Open the page with ``token`` (as the printed address hands it over: a ``#token=`` fragment the page keeps in
    this tab), then the view ``fragment``, each from a fresh document."""
    driver.get("about:blank")
    _open(driver, f"{served.url}/#token={token}")
    driver.get("about:blank")
    _open(driver, f"{served.url}/{fragment}")
    problem = driver.execute_script("return document.querySelector('.error-box')?.textContent || ''")
    assert not problem, problem


def refused_requests(errors: list[str], status: int) -> list[str]:
    """``errors`` less the console's own line for the refused ``/api/correct`` request (its HTTP ``status``)."""
    expected = re.compile(rf"/api/correct - Failed to load resource: the server responded with a status of {status}\b")
    return [e for e in errors if not expected.search(e)]


def test_the_pages_show_what_superseded_a_memory_and_mark_it_in_lists(
    world: World, served: ExplorerThread, driver: Any,
) -> None:
    lisbon, porto = world.memories[LISBON], world.memories[PORTO]
    visit(driver, served, world.tokens["reader"], _hash(BANK, "memory", f"id={lisbon.id}"))
    note = driver.find_element("id", "superseded-by")
    assert note.text.startswith("Superseded on 2024-11-05 by “" + PORTO + "”")
    assert "superseded" in driver.find_element("css selector", "h1.memory-title .badge").text
    driver.save_screenshot(str(output_dir() / "memory-superseded.png"))
    note.find_element("css selector", "a.memory-link").click()  # the link leads to the newer memory
    _wait(driver, f"return location.hash.includes('{porto.id}') && document.body.dataset.ready === '1' && "
                  "document.querySelector('.history.supersedes') !== null")
    assert driver.find_element("css selector", "h1.memory-title").text == PORTO
    assert LISBON in driver.find_element("css selector", ".history.supersedes").text
    assert not driver.find_elements("id", "superseded-by")
    # The list of memories marks the superseded one, and only it (among those not corrected by the other tests).
    _open(driver, f"{served.url}/{_hash(BANK, 'memories')}")
    rows = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('table.memories tbody tr')].map((r) => [r.dataset.id, "
        "[r.classList.contains('superseded'), r.querySelector('.badge.superseded')?.textContent || '']]))")
    assert rows[lisbon.id] == [True, "superseded"] and rows[porto.id] == [False, ""]
    assert rows[world.memories[CELLO].id] == [False, ""]
    # The recall playground marks it too, packed after what is current.
    _open(driver, f"{served.url}/{_hash(BANK, 'recall', 'query=Where+does+Ana+live%3F')}")
    _wait(driver, "return document.querySelector('#recall-summary') !== null")
    order = driver.execute_script(
        "return [...document.querySelectorAll('table.recall-memories tbody tr')].map((r) => r.dataset.id)")
    assert order.index(porto.id) < order.index(lisbon.id)
    mark = driver.find_element("css selector", f"table.recall-memories tr[data-id='{lisbon.id}'] .badge.superseded")
    assert mark.text == "superseded"
    assert _errors(driver) == []


def test_the_correct_form_stores_a_correction_with_a_write_token(
    world: World, served: ExplorerThread, driver: Any,
) -> None:
    cello = world.memories[CELLO]
    before = len(world.corrections())
    visit(driver, served, world.tokens["writer"], _hash(BANK, "memory", f"id={cello.id}"))
    driver.find_element("css selector", "#correct-memory > summary").click()
    assert driver.find_element("id", "correct-token").get_attribute("value") == world.tokens["writer"]
    driver.find_element("id", "correct-submit").click()  # no text yet: refused in the page, nothing sent
    assert "invalid" in driver.find_element("id", "correct-text").get_attribute("class")
    assert len(world.corrections()) == before
    driver.find_element("id", "correct-text").send_keys("Mia plays the viola, not the cello.")
    driver.save_screenshot(str(output_dir() / "correct-form.png"))
    driver.find_element("id", "correct-submit").click()
    _wait(driver, f"return !location.hash.includes('{cello.id}') && document.body.dataset.ready === '1'")
    assert driver.find_element("css selector", "h1.memory-title").text.startswith("Mia plays the viola, not the cello.")
    corrects = driver.find_element("id", "corrects")
    assert corrects.text.startswith(f"Corrects “{CELLO}” (corrected by writer on ")
    assert "Correction stored" in driver.find_element("id", "toast").get_attribute("textContent")
    driver.save_screenshot(str(output_dir() / "correct-stored.png"))
    # In the store: the new memory supersedes the old, which is kept; the audit trail names the explorer and token.
    new_id = driver.execute_script("return new URLSearchParams(location.hash.split('?')[1]).get('id')")
    assert world.get(CELLO).superseded_by == new_id
    [entry, *_] = world.corrections()
    assert len(world.corrections()) == before + 1
    assert (entry.surface, entry.token_id) == ("explorer", "writer") and set(entry.memory_ids) == {cello.id, new_id}
    # The corrected memory's page now says by what and since when it was superseded.
    corrects.find_element("css selector", "a.memory-link").click()
    # The hash changes before the hashchange render starts (ready is still the last view's '1' for a moment): wait
    # for the corrected memory's own page, not only the address.
    _wait(driver, f"return location.hash.includes('{cello.id}') && document.body.dataset.ready === '1' && "
                  "document.getElementById('superseded-by') !== null")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert driver.find_element("id", "superseded-by").text.startswith(
        f"Superseded on {today} by “Mia plays the viola, not the cello.”")
    assert _errors(driver) == []


@pytest.mark.parametrize(("who", "status", "words"), [
    ("reader", 403, "this token (reader) may read bank 'people' but not change it"),
    ("stranger", 404, "no bank 'people'"),
])
def test_the_correct_form_is_refused_for_a_token_that_may_not_write_the_bank(
    world: World, served: ExplorerThread, driver: Any, who: str, status: int, words: str,
) -> None:
    target = world.memories["Ana: The jacaranda trees are blooming everywhere this week."]
    before = len(world.corrections())
    visit(driver, served, world.tokens["reader"], _hash(BANK, "memory", f"id={target.id}"))
    driver.find_element("css selector", "#correct-memory > summary").click()
    token = driver.find_element("id", "correct-token")
    token.clear()
    token.send_keys(world.tokens[who])
    driver.find_element("id", "correct-text").send_keys("The jacaranda trees have finished blooming.")
    driver.find_element("id", "correct-submit").click()
    _wait(driver, "return document.getElementById('correct-status').textContent.startsWith('Not corrected')")
    shown = driver.find_element("id", "correct-status").text
    assert shown == f"Not corrected: {words}" or shown.startswith(f"Not corrected: {words}"), shown
    assert "error-text" in driver.find_element("id", "correct-status").get_attribute("class")
    assert driver.execute_script("return location.hash").endswith(f"id={target.id}")  # still on the memory
    # A token that may read the bank stays in the tab (reads still work); another bank's stays too (it is valid).
    assert driver.execute_script("return sessionStorage.getItem('hindsight-explorer-token')") == world.tokens[who]
    driver.save_screenshot(str(output_dir() / f"correct-refused-{who}.png"))
    assert world.get("Ana: The jacaranda trees are blooming everywhere this week.").superseded_by is None
    assert len(world.corrections()) == before
    assert refused_requests(_errors(driver), status) == []
