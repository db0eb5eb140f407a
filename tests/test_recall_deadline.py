"""recall(deadline_ms=...): what finished in time, the cut channels named; MCP and the adapters pass it through.

A real bank (SQLite + persistent Chroma, the real embedder, raw ingest). A channel is made slow by replacing its
function in ``hindsight_core.recall.channels`` with one that blocks until the test ends (released at teardown, so
no worker thread outlives the test by long). Margins are generous: the deadline is 1.5 s and recall must return
in under 5 s while the slow channel would take 30 s.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Bank, Hindsight, InvalidInputError
from hindsight_core.mcp_server.errors import HindsightToolError
from hindsight_core.mcp_server.scope import BankScope
from hindsight_core.mcp_server.tools import MemoryTools
from hindsight_core.recall import channels as ch
from hindsight_core.recall.deadline import MAX_DEADLINE_MS

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
MESSAGES = [
    {"speaker": "Ana", "text": "I adopted a grey cat called Miso.", "id": "D1:1"},
    {"speaker": "Ana", "text": "Miso likes to sleep on my keyboard.", "id": "D1:2"},
    {"speaker": "Ana", "text": "I feed my cat twice a day.", "id": "D1:3"},
    {"speaker": "Ben", "text": "My dog Rex chases every cat in the street.", "id": "D1:4"},
    {"speaker": "Ben", "text": "I moved to Berlin for a job in robotics.", "id": "D1:5"},
] + [  # enough other messages that the keyword channel's IDFs are not floored
    {"speaker": "Ben", "text": f"On trip {i} I visited {place} and tried the local {food}.", "id": f"D2:{i}"}
    for i, (place, food) in enumerate([("Porto", "pastries"), ("Lyon", "cheese"), ("Kyoto", "noodles"),
                                       ("Oslo", "salmon"), ("Lima", "ceviche"), ("Seoul", "kimchi"),
                                       ("Rome", "pasta"), ("Quito", "soup"), ("Hanoi", "pho"), ("Cairo", "falafel"),
                                       ("Dublin", "stew"), ("Austin", "brisket")])
]
QUERY = "Where does Miso like to sleep?"
ANSWER = "Miso likes to sleep on my keyboard."
DEADLINE_MS = 1500
SLOW_S = 30.0
RETURNED_WITHIN_S = 5.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hindsight, Bank]]:
    with Hindsight.open(tmp_path_factory.mktemp("deadline") / "m") as hs:
        bank = hs.bank("pets")
        bank.retain(MESSAGES, timestamp=T0, extract=False, background=False)
        bank.recall(QUERY)  # the embedder is loaded and warm before any deadline counts
        yield hs, bank


@pytest.fixture()
def bank(world: tuple[Hindsight, Bank]) -> Bank:
    return world[1]


@pytest.fixture()
def slow(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """``slow("keyword")`` makes that channel's function block for ``SLOW_S`` (until the test ends)."""
    release = threading.Event()

    def make(name: str) -> None:
        real = getattr(ch, name)

        def blocked(*args: Any, **kwargs: Any) -> Any:
            release.wait(SLOW_S)
            return real(*args, **kwargs)

        monkeypatch.setattr(ch, name, blocked)

    yield make
    release.set()


def _timed_recall(bank: Bank, **kwargs: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    rec = bank.recall(QUERY, **kwargs)
    return rec, time.perf_counter() - t


def test_no_deadline_is_unchanged(bank: Bank) -> None:
    plain = bank.recall(QUERY, trace=True)
    with_none = bank.recall(QUERY, trace=True, deadline_ms=None)
    generous = bank.recall(QUERY, trace=True, deadline_ms=MAX_DEADLINE_MS)
    ids = [m.id for m in plain.memories]
    assert ids and [m.id for m in with_none.memories] == ids == [m.id for m in generous.memories]
    for rec in (plain, with_none, generous):
        assert rec.cut == [] and not rec.partial
        assert rec.trace is not None and rec.trace.cut == []
        assert {"semantic", "keyword"} <= set(rec.trace.channel_sizes)
    assert plain.trace is not None and plain.trace.deadline_ms is None
    assert generous.trace is not None and generous.trace.deadline_ms == MAX_DEADLINE_MS
    assert ANSWER in plain.memories[0].text


def test_slow_keyword_is_cut_and_the_rest_returned_in_time(bank: Bank, slow: Callable[[str], None]) -> None:
    slow("keyword")
    rec, took = _timed_recall(bank, deadline_ms=DEADLINE_MS, trace=True)
    assert took < RETURNED_WITHIN_S
    assert "keyword" in rec.cut and rec.partial
    # graph waits for keyword's ranking (it spreads from both channels' best hits), so it is cut with it
    assert set(rec.cut) <= {"keyword", "graph"}
    assert rec.trace is not None and rec.trace.cut == rec.cut and rec.trace.deadline_ms == DEADLINE_MS
    assert "keyword" not in rec.trace.channel_sizes and rec.trace.channel_sizes["semantic"] > 0
    assert "keyword_ms" not in rec.trace.timings_ms and "pack_ms" in rec.trace.timings_ms
    assert all(not item.channels.get("keyword") for item in rec.trace.items)
    assert rec.memories and any(ANSWER in m.text for m in rec.memories)  # semantic's results, packed


def test_slow_semantic_is_cut_and_keyword_results_returned(bank: Bank, slow: Callable[[str], None]) -> None:
    slow("semantic")  # the channel that runs on the calling thread without a deadline
    rec, took = _timed_recall(bank, deadline_ms=DEADLINE_MS)
    assert took < RETURNED_WITHIN_S
    assert "semantic" in rec.cut and "keyword" not in rec.cut
    assert rec.memories and ANSWER in rec.memories[0].text  # keyword's results, packed


def test_trace_off_still_says_it_was_cut(bank: Bank, slow: Callable[[str], None]) -> None:
    slow("keyword")
    rec, took = _timed_recall(bank, deadline_ms=DEADLINE_MS)
    assert took < RETURNED_WITHIN_S
    assert rec.trace is None and "keyword" in rec.cut and rec.partial


def test_without_deadline_a_slow_channel_is_waited_for(bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    real = ch.keyword

    def late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(ch, "keyword", late)
    rec, took = _timed_recall(bank, trace=True)
    assert took >= 1.0
    assert rec.cut == [] and rec.trace is not None and "keyword" in rec.trace.channel_sizes


def test_slow_reranker_is_skipped(bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    class SlowReranker:
        def score(self, query: str, texts: list[str]) -> list[float]:
            release.wait(SLOW_S)
            return [0.0] * len(texts)

    plain = bank.recall(QUERY)
    monkeypatch.setattr(bank._engine.recaller, "reranker", SlowReranker())
    try:
        rec, took = _timed_recall(bank, deadline_ms=DEADLINE_MS, trace=True)
    finally:
        release.set()
    assert took < RETURNED_WITHIN_S
    assert rec.cut == ["rerank"]
    assert [m.id for m in rec.memories] == [m.id for m in plain.memories]  # the fused order stands, packed


async def test_arecall_passes_the_deadline(bank: Bank, slow: Callable[[str], None]) -> None:
    slow("keyword")
    t = time.perf_counter()
    rec = await bank.arecall(QUERY, deadline_ms=DEADLINE_MS)
    assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert "keyword" in rec.cut and rec.memories


@pytest.mark.parametrize("bad", [0, -5, MAX_DEADLINE_MS + 1, 1.5, "300", True, [300]])
def test_bad_deadline_is_a_typed_error(bank: Bank, bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="deadline_ms"):
        bank.recall(QUERY, deadline_ms=bad)


async def test_bad_deadline_is_a_typed_error_async(bank: Bank) -> None:
    with pytest.raises(InvalidInputError, match="deadline_ms"):
        await bank.arecall(QUERY, deadline_ms=0)


# MCP ------------------------------------------------------------------------------------------------------------
async def test_mcp_recall_passes_the_deadline(world: tuple[Hindsight, Bank], slow: Callable[[str], None]) -> None:
    hs, bank = world
    tools = MemoryTools(hs, BankScope())
    full = await tools.recall(bank=bank.id, query=QUERY)
    assert full.cut == [] and full.memories
    slow("keyword")
    t = time.perf_counter()
    out = await tools.recall(bank=bank.id, query=QUERY, deadline_ms=DEADLINE_MS)
    assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert "keyword" in out.cut and "semantic" not in out.cut and out.memories
    assert out.model_dump()["cut"] == out.cut  # in the structured result a client receives
    with pytest.raises(HindsightToolError, match="deadline_ms"):
        await tools.recall(bank=bank.id, query=QUERY, deadline_ms=0)


async def test_mcp_client_sends_the_deadline(world: tuple[Hindsight, Bank], slow: Callable[[str], None]) -> None:
    """Through the SDK's own client (in process): the schema bounds it, the tool passes it, the result names the cut."""
    from mcp import Client

    from hindsight_core.mcp_server.server import build_server

    hs, bank = world
    async with Client(build_server(hs)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        prop = tools["recall"].input_schema["properties"]["deadline_ms"]
        assert "600000" in str(prop) and "deadline" not in tools["recall"].input_schema.get("required", [])
        refused = await client.call_tool("recall", {"bank": bank.id, "query": QUERY, "deadline_ms": 0})
        assert refused.is_error
        slow("keyword")
        t = time.perf_counter()
        result = await client.call_tool("recall", {"bank": bank.id, "query": QUERY, "deadline_ms": DEADLINE_MS})
        assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert not result.is_error and result.structured_content is not None
    assert "keyword" in result.structured_content["cut"] and result.structured_content["memories"]


# adapters -------------------------------------------------------------------------------------------------------
def test_langchain_retriever_passes_the_deadline(bank: Bank, slow: Callable[[str], None]) -> None:
    from langchain_hindsight import HindsightRetriever

    slow("keyword")
    retriever = HindsightRetriever(bank=bank, k=3, deadline_ms=DEADLINE_MS)
    t = time.perf_counter()
    docs = retriever.invoke(QUERY)
    assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert docs and any(ANSWER in d.page_content for d in docs)
    # per call too (no deadline on the retriever itself)
    t = time.perf_counter()
    docs = HindsightRetriever(bank=bank, k=3).invoke(QUERY, deadline_ms=DEADLINE_MS)
    assert time.perf_counter() - t < RETURNED_WITHIN_S and docs
    with pytest.raises(InvalidInputError, match="deadline_ms"):
        HindsightRetriever(bank=bank).invoke(QUERY, deadline_ms=0)


async def test_langchain_retriever_async_passes_the_deadline(bank: Bank, slow: Callable[[str], None]) -> None:
    from langchain_hindsight import HindsightRetriever

    slow("keyword")
    t = time.perf_counter()
    docs = await HindsightRetriever(bank=bank, k=3, deadline_ms=DEADLINE_MS).ainvoke(QUERY)
    assert time.perf_counter() - t < RETURNED_WITHIN_S and docs


def test_llama_index_retriever_passes_the_deadline(bank: Bank, slow: Callable[[str], None]) -> None:
    from llama_index_hindsight import HindsightRetriever

    slow("keyword")
    retriever = HindsightRetriever(bank, k=3, deadline_ms=DEADLINE_MS)
    t = time.perf_counter()
    nodes = retriever.retrieve(QUERY)
    assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert nodes and any(ANSWER in n.node.get_content() for n in nodes)
    for bad in (0, 1.5, "300"):
        with pytest.raises(InvalidInputError, match="deadline_ms"):
            HindsightRetriever(bank, deadline_ms=bad)  # type: ignore[arg-type]


# CLI ------------------------------------------------------------------------------------------------------------
def test_cli_recall_deadline(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             slow: Callable[[str], None]) -> None:
    from hindsight_core.cli.commands import main

    store = tmp_path / "m"
    with Hindsight.open(store) as hs:
        hs.bank("pets").retain(MESSAGES, timestamp=T0, extract=False, background=False)
    slow("keyword")
    capsys.readouterr()
    t = time.perf_counter()
    code = main(["--path", str(store), "recall", "pets", QUERY, "--deadline-ms", str(DEADLINE_MS)])
    took = time.perf_counter() - t
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"cut by the {DEADLINE_MS} ms deadline" in out and "keyword" in out.splitlines()[0]
    assert ANSWER in out
    assert took < 60  # opening the store and loading the model are not under the deadline; the blocked channel is
    code = main(["--path", str(store), "--json", "recall", "pets", QUERY, "--deadline-ms", str(DEADLINE_MS)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "keyword" in json.loads(out)["cut"]
    for bad in ("0", "abc", "1.5", str(MAX_DEADLINE_MS + 1)):
        code = main(["--path", str(store), "recall", "pets", QUERY, "--deadline-ms", bad])
        out, err = capsys.readouterr()
        assert code == 2 and f"expected a whole number from 1 to {MAX_DEADLINE_MS}" in err
        assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("hindsight recall: error: ")


def test_langgraph_recall_node_and_middleware_pass_the_deadline(bank: Bank, slow: Callable[[str], None]) -> None:
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    from langchain_hindsight import HindsightMiddleware, create_recall_node

    class MemoryState(MessagesState):
        memories: list[dict[str, Any]]

    builder = StateGraph(MemoryState)
    builder.add_node("recall", create_recall_node(bank, state_key="memories", deadline_ms=DEADLINE_MS))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", END)
    app = builder.compile()
    slow("keyword")
    t = time.perf_counter()
    out = app.invoke({"messages": [HumanMessage(QUERY)]})
    assert time.perf_counter() - t < RETURNED_WITHIN_S
    assert any(ANSWER in m["text"] for m in out["memories"])
    assert HindsightMiddleware(bank, deadline_ms=DEADLINE_MS).recall_options["deadline_ms"] == DEADLINE_MS
    for make in (lambda: create_recall_node(bank, deadline_ms=0),
                 lambda: HindsightMiddleware(bank, deadline_ms="300")):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="deadline_ms"):
            make()
