"""``HindsightMiddleware``: long-term memory for ``langchain.agents.create_agent``.

Before the model answers a new human message it recalls memories for that message (once per turn, not
on every tool-loop step) and keeps them in the ``memories`` state key; every model call of the turn
then sees them as a system message (added to the request, not to the conversation). After the agent
run, the messages not yet retained are retained into the bank.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from hindsight_core import Bank, Hindsight
from hindsight_core.recall.deadline import check_deadline_ms

from ._bank import BankSource
from ._convert import (
    MEMORY_PROMPT_HEADER,
    RecallOptions,
    RetainArgs,
    format_memories,
    latest_human_message,
    memory_to_dict,
    messages_to_core,
)

AGENT_DOCUMENT_PREFIX = "agent:"


class HindsightAgentState(AgentState[Any]):
    """Agent state with the memories recalled for the current turn."""

    memories: NotRequired[list[dict[str, Any]]]
    hindsight_recalled_for: NotRequired[Annotated[str | None, PrivateStateAttr]]
    hindsight_retained_through: NotRequired[Annotated[str | None, PrivateStateAttr]]


def _current_config() -> dict[str, Any] | None:
    try:
        return dict(get_config())
    except RuntimeError:  # called outside a graph run (direct unit use)
        return None


def unretained_messages(messages: Sequence[BaseMessage], retained_through: str | None) -> list[BaseMessage]:
    """Messages after the last retained one (all of them when none was retained), without system messages."""
    start = 0
    if retained_through:
        for i, message in enumerate(messages):
            if message.id == retained_through:
                start = i + 1
                break
    return [m for m in messages[start:] if not isinstance(m, SystemMessage)]


class HindsightMiddleware(AgentMiddleware[HindsightAgentState, Any]):
    """Recall before the model and retain after the agent, for ``create_agent(..., middleware=[...])``.

    The bank is chosen per run like the LangGraph nodes: ``context={"bank_id": ...}`` (or an attribute of a
    context object), else ``config["configurable"]["bank_id"]``, else ``bank_id=`` / the ``Bank`` given
    here. ``budget`` bounds the injected memories in tokens (``deadline_ms``, if given, the time recall may take).
    ``extract`` / ``background`` configure retain (the LLM's facts added by a job after the messages are stored, or
    no model at all; ``background`` defers even the raw memories to a job). Retain never waits for a model.

    Example:
        ```python
        agent = create_agent(model, tools=[], middleware=[HindsightMiddleware(hs, background=True)])
        agent.invoke({"messages": [("user", "Hi")]}, context={"bank_id": "alice"})
        ```
    """

    state_schema = HindsightAgentState

    def __init__(
        self,
        memory: Hindsight | Bank,
        *,
        bank_id: str | None = None,
        budget: int = 1000,
        max_memories: int | None = None,
        networks: Sequence[str] | None = None,
        deadline_ms: int | None = None,
        recall: bool = True,
        retain: bool = True,
        extract: bool = True,
        background: bool = False,
        header: str = MEMORY_PROMPT_HEADER,
    ) -> None:
        """Configure recall and retain (see the class docstring)."""
        super().__init__()
        self.source = BankSource(memory, bank_id)
        self.recall_options = RecallOptions(budget=budget, max_memories=max_memories, networks=networks,
                                            deadline_ms=check_deadline_ms(deadline_ms))
        self.recall_enabled = recall
        self.retain_enabled = retain
        self.extract = extract
        self.background = background
        self.header = header
        self.tools = []

    # recall --------------------------------------------------------------------------------------
    def _pending_query(self, state: HindsightAgentState) -> tuple[str, str] | None:
        if not self.recall_enabled:
            return None
        human = latest_human_message(state["messages"])
        if human is None or not human.text.strip() or state.get("hindsight_recalled_for") == human.id:
            return None  # no question, or already recalled for it (a tool-loop step of the same turn)
        return human.text, human.id or ""

    def before_model(self, state: HindsightAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Recall for a new human message and keep the memories in state."""
        bank = self.source.resolve(runtime, _current_config())  # a missing bank is an error on every turn
        pending = self._pending_query(state)
        if pending is None:
            return None
        recall = bank.recall(pending[0], **self.recall_options)
        return {"memories": [memory_to_dict(m) for m in recall.memories], "hindsight_recalled_for": pending[1]}

    async def abefore_model(self, state: HindsightAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of ``before_model``."""
        bank = self.source.resolve(runtime, _current_config())  # a missing bank is an error on every turn
        pending = self._pending_query(state)
        if pending is None:
            return None
        recall = await bank.arecall(pending[0], **self.recall_options)
        return {"memories": [memory_to_dict(m) for m in recall.memories], "hindsight_recalled_for": pending[1]}

    def _with_memories(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        # The state's "memories" key is ours (written by before_model): a list of memory dicts.
        memories = cast("list[dict[str, Any]]", request.state.get("memories") or [])
        block = format_memories(memories, self.header) if self.recall_enabled else ""
        if not block:
            return request
        base = request.system_message.text if request.system_message is not None else ""
        return request.override(system_message=SystemMessage(content=f"{base}\n\n{block}" if base else block))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        """Show the turn's memories to the model as (part of) the system message."""
        return handler(self._with_memories(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of ``wrap_model_call``."""
        return await handler(self._with_memories(request))

    # retain --------------------------------------------------------------------------------------
    def _retain_args(self, state: HindsightAgentState) -> RetainArgs | None:
        if not self.retain_enabled:
            return None
        new = unretained_messages(state["messages"], state.get("hindsight_retained_through"))
        if not new:
            return None
        document_id = AGENT_DOCUMENT_PREFIX + (new[0].id or "")
        core = messages_to_core(new, document_id)
        if not core or not new[0].id:
            return None
        return RetainArgs(content=core, document_id=document_id, extract=self.extract, defer=self.background)

    def after_agent(self, state: HindsightAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Retain the run's new messages (keyed by their first message id, so a re-run replaces)."""
        args = self._retain_args(state)
        if args is None:
            return None
        self.source.resolve(runtime, _current_config()).retain(**args)
        return {"hindsight_retained_through": state["messages"][-1].id}

    async def aafter_agent(self, state: HindsightAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of ``after_agent``."""
        args = self._retain_args(state)
        if args is None:
            return None
        await self.source.resolve(runtime, _current_config()).aretain(**args)
        return {"hindsight_retained_through": state["messages"][-1].id}
