"""HindsightStore: the LangGraph BaseStore contract over banks, and langmem's memory tools on it unchanged."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchItem
from langmem import create_manage_memory_tool, create_search_memory_tool

from hindsight_core import Hindsight
from langchain_hindsight import HindsightStore, bank_id_to_namespace, namespace_to_bank_id

labels = st.text(min_size=1, max_size=12).filter(
    lambda s: "." not in s and "\x00" not in s and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
)


@given(st.lists(labels, min_size=1, max_size=4), st.lists(labels, min_size=1, max_size=4))
def test_namespace_encoding_is_reversible_and_collision_free(a: list[str], b: list[str]) -> None:
    ea, eb = namespace_to_bank_id(tuple(a)), namespace_to_bank_id(tuple(b))
    assert bank_id_to_namespace(ea) == tuple(a)
    assert (ea == eb) == (a == b)
    assert not any(ord(c) < 0x20 for c in ea)
    assert bank_id_to_namespace(namespace_to_bank_id(tuple(a), "lg/"), "lg/") == tuple(a)


def test_readable_bank_ids_and_foreign_banks() -> None:
    assert namespace_to_bank_id(("memories", "alice")) == "memories.alice"
    assert namespace_to_bank_id(("50%", "a\nb")) == "50%25.a%0Ab"
    assert bank_id_to_namespace("a..b") is None and bank_id_to_namespace("x%2") is None
    assert bank_id_to_namespace("%61") is None  # not canonical ("a" encodes as "a")
    with pytest.raises(InvalidNamespaceError):
        namespace_to_bank_id(())


def test_put_get_update_delete(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    ns = ("memories", "alice")
    value = {"content": "Alice prefers dark mode.", "tags": ["ui"], "n": 1, "nested": {"x": [1, 2]}}
    store.put(ns, "k1", value)
    item = store.get(ns, "k1")
    assert item is not None and item.value == value and item.key == "k1" and item.namespace == ns
    assert hs.bank("memories.alice").document("k1").metadata["langgraph_value"] == value
    assert [m.document_id for m in hs.bank("memories.alice").recall("dark mode").memories] == ["k1"]
    time.sleep(0.01)
    store.put(ns, "k1", {"content": "Alice prefers light mode now."})
    again = store.get(ns, "k1")
    assert again is not None and again.value == {"content": "Alice prefers light mode now."}
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    texts = [m.text for m in hs.bank("memories.alice").recall("mode").memories]
    assert texts == ["Alice prefers light mode now."]  # the old version's memory is gone
    store.delete(ns, "k1")
    assert store.get(ns, "k1") is None and hs.bank("memories.alice").recall("mode").memories == []
    assert store.get(("nobody",), "k1") is None
    assert "nobody" not in {b.id for b in hs.banks()}  # reading never creates banks


def test_search_semantic_filter_limit_offset_and_listing(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    store.put(("m", "alice"), "cat", {"content": "Alice's cat is named Miso.", "kind": "pet", "n": 3})
    store.put(("m", "alice"), "ui", {"content": "Alice prefers dark mode.", "kind": "pref", "n": 1})
    store.put(("m", "bob"), "tea", {"content": "Bob drinks green tea.", "kind": "pref", "n": 2})
    found = store.search(("m",), query="What is the cat called?", limit=2)
    assert len(found) == 2 and found[0].key == "cat"
    assert all(isinstance(i, SearchItem) and i.score is not None for i in found)
    assert found[0].score >= found[1].score
    assert [i.key for i in store.search(("m", "bob"), query="cat")] == ["tea"]  # prefix scopes banks
    prefs = store.search(("m",), query="preferences", filter={"kind": "pref"})
    assert {i.key for i in prefs} == {"ui", "tea"}
    assert [i.key for i in store.search(("m",), filter={"n": {"$gte": 2}, "kind": {"$ne": "pet"}})] == ["tea"]
    listed = store.search(("m",))
    assert [i.key for i in listed] == ["tea", "ui", "cat"] and all(i.score is None for i in listed)
    assert [i.key for i in store.search(("m",), limit=1, offset=1)] == ["ui"]
    all_hits = store.search(("m",), query="Alice", limit=10)
    assert [i.key for i in store.search(("m",), query="Alice", limit=1, offset=1)] == [all_hits[1].key]


def test_list_namespaces_and_other_banks(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    for ns in [("a", "x"), ("a", "y", "z"), ("b", "x")]:
        store.put(ns, "k", {"content": f"item in {ns}"})
    hs.bank("plain").retain("not a store item", extract=False)
    assert store.list_namespaces() == [("a", "x"), ("a", "y", "z"), ("b", "x")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x"), ("a", "y", "z")]
    assert store.list_namespaces(suffix=("x",)) == [("a", "x"), ("b", "x")]
    assert store.list_namespaces(prefix=("*", "y")) == [("a", "y", "z")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "y", "z")]
    store.delete(("b", "x"), "k")
    assert ("b", "x") not in store.list_namespaces()
    isolated = HindsightStore(hs, bank_prefix="lg/")
    isolated.put(("a", "x"), "k", {"content": "separate"})
    assert isolated.list_namespaces() == [("a", "x")] and "lg/a.x" in {b.id for b in hs.banks()}


def test_index_options_and_batch(hs: Hindsight) -> None:
    store = HindsightStore(hs, index_fields=["title"])
    store.put(("n",), "1", {"title": "Trip to Kyoto", "body": "secret body text"})
    assert [m.text for m in hs.bank("n").recall("Kyoto").memories] == ["Trip to Kyoto"]
    store.put(("n",), "2", {"title": "Hidden", "body": "x"}, index=False)
    assert store.get(("n",), "2").value == {"title": "Hidden", "body": "x"}  # type: ignore[union-attr]
    assert all(m.document_id != "2" for m in hs.bank("n").recall("Hidden").memories)
    store.put(("n",), "3", {"title": "Notes", "tags": ["a", "b"]}, index=["tags[*]"])
    assert [m.text for m in hs.bank("n").recall("a b").memories if m.document_id == "3"] == ["a b"]
    results = store.batch([PutOp(("n",), "4", {"title": "Four"}), GetOp(("n",), "4"), GetOp(("n",), "none")])
    assert results[0] is None and results[1].value == {"title": "Four"} and results[2] is None  # type: ignore
    with pytest.raises(InvalidNamespaceError):
        store.put(("bad.label",), "k", {"x": 1})


def test_extract_option_uses_the_llm(tmp_path: Path) -> None:
    from scripted_llm import ScriptedLLM

    # A fact its message bears out (the facts job stores only those: extract/grounding).
    llm = ScriptedLLM([{"facts": [{"text": "Alice stopped eating meat.", "net": "world", "ents": ["Alice"]}]}])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:  # no observation job racing
        store = HindsightStore(hs, extract=True)
        store.put(("p",), "diet", {"content": "Alice: I stopped eating meat."})
        # Raw first: the put returns with the content kept; the model's fact comes from the queued job.
        assert llm.calls == [] and [j.kind for j in hs.bank("p").jobs()] == ["facts"]
        assert hs.worker.run_once() and len(llm.calls) == 1  # extraction went to the model
        texts = {m.text: m for m in hs.bank("p").recall("vegetarian meat", budget=10_000).memories}
        assert "Alice stopped eating meat." in texts and texts["Alice stopped eating meat."].cites
        assert store.get(("p",), "diet").value == {"content": "Alice: I stopped eating meat."}  # type: ignore[union-attr]
        assert [i.key for i in store.search(("p",), query="Does Alice eat meat?")] == ["diet"]


async def test_async_store(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    await store.aput(("m",), "k", {"content": "Carol is allergic to peanuts."})
    item = await store.aget(("m",), "k")
    assert item is not None and item.value["content"] == "Carol is allergic to peanuts."
    assert [i.key for i in await store.asearch(("m",), query="allergies")] == ["k"]
    assert await store.alist_namespaces() == [("m",)]
    await store.adelete(("m",), "k")
    assert await store.aget(("m",), "k") is None


def test_langmem_tools_unchanged_directly(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store,
                                       response_format="content_and_artifact")
    config: Any = {"configurable": {"langgraph_user_id": "carol"}}
    created = manage.invoke({"content": "Carol is allergic to peanuts.", "action": "create"}, config)
    key = created.split()[-1]
    uuid.UUID(key)
    call = {"name": search.name, "args": {"query": "food allergies"}, "id": "1", "type": "tool_call"}
    artifact = search.invoke(call, config).artifact
    assert [(i.key, i.value) for i in artifact] == [(key, {"content": "Carol is allergic to peanuts."})]
    manage.invoke({"content": "Carol is allergic to peanuts and shellfish.", "action": "update", "id": key}, config)
    assert store.get(("memories", "carol"), key).value == {"content": "Carol is allergic to peanuts and shellfish."}  # type: ignore[union-attr]
    assert len(store.search(("memories", "carol"))) == 1
    manage.invoke({"action": "delete", "id": key}, config)
    assert store.search(("memories", "carol")) == []


async def test_langmem_tools_through_a_graph_with_store(hs: Hindsight) -> None:
    store = HindsightStore(hs)
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    async def remember_then_search(state: MessagesState) -> dict[str, Any]:
        await manage.ainvoke({"content": state["messages"][-1].text, "action": "create"})
        found = await search.ainvoke({"query": "Where does Dan work?"})
        return {"messages": [("ai", found)]}

    builder = StateGraph(MessagesState)
    builder.add_node("memory", remember_then_search)
    builder.add_edge(START, "memory")
    builder.add_edge("memory", END)
    graph = builder.compile(store=store)  # the tools find the store through the graph
    out = await graph.ainvoke({"messages": [HumanMessage("Dan works at a bakery in Oslo.")]},
                              {"configurable": {"langgraph_user_id": "dan"}})
    assert "bakery in Oslo" in out["messages"][-1].text
    assert [i.value for i in store.search(("memories", "dan"))] == [{"content": "Dan works at a bakery in Oslo."}]


def test_delete_leaves_other_documents_of_a_shared_bank_alone(hs: Hindsight) -> None:
    bank = hs.bank("shared")
    bank.retain("A chat transcript, not a store item.", document_id="doc-1", extract=False)
    store = HindsightStore(hs)
    assert store.get(("shared",), "doc-1") is None  # not a store item
    store.delete(("shared",), "doc-1")
    assert bank.document("doc-1") and bank.recall("transcript").memories
