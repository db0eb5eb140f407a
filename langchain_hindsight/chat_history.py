"""``HindsightChatMessageHistory``: an exact, durable chat transcript that also feeds long-term memory.

Each ``add_messages`` batch is retained as one core document with id
``chat:<session>:<time-sortable unique suffix>``. The document keeps the exact LangChain messages
(``document_metadata["lc_messages"]``, serialised with ``messages_to_dict``) and its content is the
conversation as core messages, so the bank extracts memories from it. ``messages`` reads the session's
documents oldest first and concatenates them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from urllib.parse import quote

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from hindsight_core import Bank, ExtractionError, RetainResult

from ._convert import RetainArgs, messages_to_core

log = logging.getLogger(__name__)

DOCUMENT_PREFIX = "chat"
LC_MESSAGES_KEY = "lc_messages"
SESSION_KEY = "session_id"

_clock_lock = threading.Lock()
_last_ns = 0
_sequence = itertools.count()


def _sortable_suffix() -> str:
    """A strictly increasing (per process), fixed-width, time-based suffix: ``<ns since epoch>-<counter>``."""
    global _last_ns
    with _clock_lock:
        now = max(time.time_ns(), _last_ns + 1)  # never repeat or go back, even if the wall clock does
        _last_ns = now
        return f"{now:020d}-{next(_sequence) % 1_000_000:06d}"


def session_prefix(session_id: str) -> str:
    """The document-id prefix of a session. ``:`` and ``%`` are escaped so that no session's prefix is a
    prefix of another session's documents (``a`` vs ``a:b``)."""
    return f"{DOCUMENT_PREFIX}:{quote(session_id, safe='')}:"


class HindsightChatMessageHistory(BaseChatMessageHistory):
    """Chat message history kept durably in a Hindsight bank, with every batch also retained as memory.

    ``messages`` returns exactly what was added (types, ids, ``additional_kwargs``, metadata), across
    process restarts. Adding never waits for a model: the messages become memories at once, and with ``extract``
    (default) the LLM's facts are added beside them by a durable job (``bank.wait_idle()`` waits for it;
    ``extract=False``: no model at all). ``background=True`` defers even the raw memories to a job.
    ``clear()`` deletes the session's transcript; memories made from it stay in the bank unless
    ``forget_memories=True``.

    Example:
        ```python
        from langchain_core.runnables.history import RunnableWithMessageHistory

        chain = RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: HindsightChatMessageHistory(bank, session_id, background=True),
            input_messages_key="question",
            history_messages_key="history",
        )
        ```
    """

    def __init__(
        self,
        bank: Bank,
        session_id: str,
        *,
        extract: bool = True,
        background: bool = False,
        forget_memories: bool = False,
        context: str | None = None,
    ) -> None:
        """Bind to ``session_id`` in ``bank``; ``context`` (optional) is passed to retain with every batch."""
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.bank = bank
        self.session_id = session_id
        self.extract = extract
        self.background = background
        self.forget_memories = forget_memories
        self.context = context
        self.last_result: RetainResult | None = None
        """What the latest ``add_messages`` retained (``queued=True`` with ``job_id`` when in background)."""

    @property
    def prefix(self) -> str:
        """Document-id prefix of this session's transcript documents."""
        return session_prefix(self.session_id)

    # reading -------------------------------------------------------------------------------------
    @property
    # LangChain declares ``messages`` as a plain attribute; ours is read from the bank on every access.
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the session, oldest first, exactly as added."""
        out: list[BaseMessage] = []
        for doc in self.bank.documents(prefix=self.prefix):
            out.extend(messages_from_dict(doc.metadata.get(LC_MESSAGES_KEY, [])))
        return out

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of ``messages`` (the store read runs in a worker thread)."""
        return await asyncio.to_thread(lambda: self.messages)

    # writing -------------------------------------------------------------------------------------
    def _retain_args(self, messages: Sequence[BaseMessage]) -> RetainArgs:
        document_id = self.prefix + _sortable_suffix()
        core = messages_to_core(messages, document_id)
        if not core:
            # Nothing with text (e.g. an empty AI message): the transcript must still be stored exactly.
            core = [{"speaker": "system", "text": "(message without text)", "id": f"{document_id}:0"}]
        return RetainArgs(
            content=core,
            document_id=document_id,
            document_metadata={LC_MESSAGES_KEY: messages_to_dict(messages), SESSION_KEY: self.session_id},
            extract=self.extract,
            defer=self.background,
            context=self.context,
        )

    def _kept(self, exc: ExtractionError) -> None:
        # The raw document (with the exact messages) is stored before extraction, so the transcript is
        # complete; only the memories are missing. Re-run them with bank.reprocess(document_id).
        log.warning("chat session %r: memory extraction failed, transcript kept (document %s): %s",
                    self.session_id, exc.document_id, exc)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` as one transcript document and retain them into the bank."""
        if not messages:
            return
        try:
            self.last_result = self.bank.retain(**self._retain_args(messages))
        except ExtractionError as exc:
            self._kept(exc)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of ``add_messages`` (model calls are natively async)."""
        if not messages:
            return
        try:
            self.last_result = await self.bank.aretain(**self._retain_args(messages))
        except ExtractionError as exc:
            self._kept(exc)

    # clearing ------------------------------------------------------------------------------------
    def clear(self, forget_memories: bool | None = None) -> None:
        """Delete the session's transcript. Memories extracted from it stay (long-term memory) unless
        ``forget_memories`` (default: the constructor's) is true."""
        forget = self.forget_memories if forget_memories is None else forget_memories
        for doc in self.bank.documents(prefix=self.prefix):
            if forget:
                self.bank.forget(document_id=doc.id)
            else:
                self.bank.delete_document(doc.id)

    async def aclear(self, forget_memories: bool | None = None) -> None:
        """Async twin of ``clear``."""
        await asyncio.to_thread(self.clear, forget_memories)

    def __repr__(self) -> str:
        return f"HindsightChatMessageHistory(bank={self.bank.id!r}, session_id={self.session_id!r})"

