"""LangGraph nodes for ``MessagesState``-style graphs: recall before the model, retain after it, reflect.

Every node works in ``invoke`` and ``ainvoke`` graphs (a sync and an async function behind one runnable),
and picks its bank per call: ``Runtime.context`` (``bank_id`` attribute or key), else
``config["configurable"]["bank_id"]``, else the static bank it was built with; none is an error.

```python
graph = StateGraph(MessagesState)
graph.add_node("recall", create_recall_node(hs))
graph.add_node("model", call_model)
graph.add_node("retain", create_retain_node(hs, extract=False))
graph.add_edge(START, "recall"); graph.add_edge("recall", "model")
graph.add_edge("model", "retain"); graph.add_edge("retain", END)
app = graph.compile(checkpointer=InMemorySaver())
app.invoke({"messages": [("user", "...")]}, {"configurable": {"thread_id": "1", "bank_id": "alice"}})
```
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable  # sync + async node with runtime injection
from langgraph.runtime import Runtime

from hindsight_core import Bank, Hindsight, Recall, Reflection, RetainResult
from hindsight_core.recall.deadline import check_deadline_ms

from ._bank import BankSource
from ._convert import (
    MEMORY_PROMPT_HEADER,
    RecallOptions,
    RetainArgs,
    latest_exchange,
    latest_human_message,
    memories_system_message,
    memory_to_dict,
    messages_to_core,
)

RECALL_MESSAGE_PREFIX = "hindsight-recall-"
RETAIN_DOCUMENT_PREFIX = "lg:"


def state_messages(state: Any) -> list[BaseMessage]:
    """The ``messages`` of a dict-like or object state."""
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    return list(messages or [])


# recall --------------------------------------------------------------------------------------------
def _recall_update(
    recall: Recall | None, messages: Sequence[BaseMessage], state_key: str | None, system_message: bool, header: str
) -> dict[str, Any]:
    memories = recall.memories if recall is not None else []
    update: dict[str, Any] = {}
    if state_key:
        update[state_key] = [memory_to_dict(m) for m in memories]
    if system_message:
        # One recall message per thread: drop the previous turn's before adding this turn's.
        stale = [RemoveMessage(id=m.id) for m in messages
                 if isinstance(m, SystemMessage) and m.id and m.id.startswith(RECALL_MESSAGE_PREFIX)]
        fresh = memories_system_message(memories, header=header, id=RECALL_MESSAGE_PREFIX + uuid.uuid4().hex)
        if stale or fresh:
            update["messages"] = [*stale, *([fresh] if fresh else [])]
    return update


def create_recall_node(
    memory: Hindsight | Bank,
    *,
    bank_id: str | None = None,
    budget: int = 1500,
    max_memories: int | None = None,
    networks: Sequence[str] | None = None,
    deadline_ms: int | None = None,
    state_key: str | None = None,
    system_message: bool | None = None,
    header: str = MEMORY_PROMPT_HEADER,
    name: str = "hindsight_recall",
) -> RunnableCallable:
    """A node that recalls memories for the latest human message.

    By default it appends one system message with the memories (replacing the previous turn's). With
    ``state_key`` it writes the memories (dicts with ``text``, ``id``, ``sources``, ``document_id``, times,
    ``score``...) to that state key instead; ``system_message=True`` does both. ``deadline_ms``: recall returns what
    finished within that many milliseconds (see ``Bank.recall``).
    """
    source = BankSource(memory, bank_id)
    add_message = state_key is None if system_message is None else system_message
    options = RecallOptions(budget=budget, max_memories=max_memories, networks=networks,
                            deadline_ms=check_deadline_ms(deadline_ms))

    def recall_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        messages = state_messages(state)
        human = latest_human_message(messages)
        recall = bank.recall(human.text, **options) if human is not None and human.text.strip() else None
        return _recall_update(recall, messages, state_key, add_message, header)

    async def arecall_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        messages = state_messages(state)
        human = latest_human_message(messages)
        recall = await bank.arecall(human.text, **options) if human is not None and human.text.strip() else None
        return _recall_update(recall, messages, state_key, add_message, header)

    return RunnableCallable(recall_node, arecall_node, name=name)


# retain --------------------------------------------------------------------------------------------
def _retain_args(messages: Sequence[BaseMessage], extract: bool, background: bool) -> RetainArgs | None:
    exchange = latest_exchange(messages)
    if not exchange:
        return None
    # Keyed by the turn's first message: running the node again for the same turn replaces, not duplicates.
    document_id = RETAIN_DOCUMENT_PREFIX + (exchange[0].id or uuid.uuid4().hex)
    core = messages_to_core(exchange, document_id)
    if not core:
        return None
    return RetainArgs(content=core, document_id=document_id, extract=extract, defer=background)


def _retain_update(result: RetainResult | None, state_key: str | None) -> dict[str, Any]:
    if not state_key or result is None:
        return {}
    return {state_key: {"document_id": result.document_id, "memory_ids": result.memory_ids,
                        "job_id": getattr(result, "job_id", None)}}


def create_retain_node(
    memory: Hindsight | Bank,
    *,
    bank_id: str | None = None,
    extract: bool = True,
    background: bool = False,
    state_key: str | None = None,
    name: str = "hindsight_retain",
) -> RunnableCallable:
    """A node that retains the latest exchange: the last human message and every message after it
    (system messages, such as injected memories, are left out).

    The exchange becomes memories at once and the graph goes on; with ``extract`` (default) a job adds the LLM's
    facts beside them (``extract=False``: no model at all); ``background=True`` defers even the raw memories to
    a job. ``state_key`` (optional) receives the document id, memory ids and job id.
    """
    source = BankSource(memory, bank_id)

    def retain_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        args = _retain_args(state_messages(state), extract, background)
        return _retain_update(bank.retain(**args) if args else None, state_key)

    async def aretain_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        args = _retain_args(state_messages(state), extract, background)
        return _retain_update(await bank.aretain(**args) if args else None, state_key)

    return RunnableCallable(retain_node, aretain_node, name=name)


# reflect -------------------------------------------------------------------------------------------
def reflection_message(reflection: Reflection) -> AIMessage:
    """The reflect answer as an AI message; citations for and against (memory ids), the stance, ``known`` and
    opinions in its metadata."""
    return AIMessage(
        content=reflection.answer,
        response_metadata={
            "hindsight": {
                "based_on": list(reflection.based_on),
                "against": list(reflection.against),
                "stance": reflection.stance,
                "known": reflection.known,
                "opinions": [memory_to_dict(o) for o in reflection.opinions],
            }
        },
    )


def create_reflect_node(
    memory: Hindsight | Bank,
    *,
    bank_id: str | None = None,
    budget: int = 2000,
    background: bool = False,
    state_key: str | None = None,
    name: str = "hindsight_reflect",
) -> RunnableCallable:
    """A node that reflects on the latest human message (CARA: recall, disposition, opinions).

    Inline (default) it appends the answer as an ``AIMessage`` (cited memory ids, ``known`` and formed
    opinions in ``response_metadata["hindsight"]``; the answer also goes to ``state_key`` when given). With
    ``background=True`` it queues the reflect as a durable core job (its opinions are stored when it runs)
    and the graph moves on; the job id goes to ``state_key`` when given.
    """
    source = BankSource(memory, bank_id)

    def _query(state: Any) -> str | None:
        human = latest_human_message(state_messages(state))
        return human.text if human is not None and human.text.strip() else None

    def reflect_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        query = _query(state)
        if query is None:
            return {}
        if background:
            job = bank.schedule_reflect(query, budget=budget)
            return {state_key: job.id} if state_key else {}
        reflection = bank.reflect(query, budget=budget)
        return {"messages": [reflection_message(reflection)], **({state_key: reflection.answer} if state_key else {})}

    async def areflect_node(state: Any, config: RunnableConfig, runtime: Runtime) -> dict[str, Any]:
        bank = source.resolve(runtime, config)
        query = _query(state)
        if query is None:
            return {}
        if background:
            job = await bank.aschedule_reflect(query, budget=budget)
            return {state_key: job.id} if state_key else {}
        reflection = await bank.areflect(query, budget=budget)
        return {"messages": [reflection_message(reflection)], **({state_key: reflection.answer} if state_key else {})}

    return RunnableCallable(reflect_node, areflect_node, name=name)
