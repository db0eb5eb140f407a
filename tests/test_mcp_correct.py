"""The MCP ``correct`` tool and what recall shows of beliefs that changed (issue 37, must have 5; must have 2 over
MCP): ``recall(as_of=...)`` and ``superseded_by`` / ``valid_until`` on superseded memories.

The MCP HTTP server runs with a token file in a thread of this process (real sockets, real uvicorn, the real default
embedder) over a store the test holds open, so the store and its audit trail can be checked after each call; the
SDK's own client calls it. Tokens: ``writer`` read-write on banks ``ana`` and ``notes``, ``reader`` read-only on the
same banks, ``outsider`` read-write on bank ``other`` only.

Bank ``ana`` holds two raw messages of Ana a year apart, the later superseding the earlier (raw path, no model);
bank ``notes`` holds raw notes that the correction tests correct, one note per test, so no test sees another's
change.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from support.threaded_servers import MCPThread

from hindsight_core import Hindsight
from hindsight_core.access import READ, Access, TokenFile
from hindsight_core.errors import MAX_SHOWN_CHARS

LISBON = "I live in Lisbon, near the river."
PORTO = "We moved to Porto last month, the new flat is great."
HOME = "Where does Ana live?"
NOTES = {
    "n-written": "The team offsite is in Sintra on 12 May.",
    "n-audited": "Rui's dentist appointment is on Thursday at 9.",
    "n-readonly": "The boat club meets on the first Sunday of the month.",
    "n-outsider": "Marta's flight lands at 18:40 on Friday.",
    "n-spoofed": "The library closes at 20:00 on weekdays.",
}
BIG = 100_000
MARK = "Q"
TOO_MUCH = MARK * (MAX_SHOWN_CHARS + 1)
CALL_TIMEOUT_S = 120


@dataclass
class Served:
    """The open store, the server over it, its tokens and the memory ids the seeds got."""

    hs: Hindsight
    server: MCPThread
    tokens: dict[str, str]
    lisbon: str
    porto: str
    notes: dict[str, str]

    def note(self, memory_id: str) -> dict[str, Any]:
        """A note memory as the store holds it now (its computed fields included)."""
        found = self.hs.bank("notes", create=False).get(memory_id)
        assert found is not None, memory_id
        return found.model_dump()

    def corrections(self) -> list[Any]:
        """The ``correct`` entries of bank notes' audit trail."""
        return [e for e in self.hs.audit("notes", limit=10_000) if e.operation == "correct"]

    def correction_documents(self) -> set[str]:
        """The ids of the documents corrections were written under in bank notes."""
        return {d.id for d in self.hs.bank("notes", create=False).documents(prefix="correction:")}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("mcp-correct")
    file = TokenFile(root / "tokens.json")
    tokens = {"writer": file.add("writer", banks=["ana", "notes"]),
              "reader": file.add("reader", scope=READ, banks=["ana", "notes"]),
              "outsider": file.add("outsider", banks=["other"])}
    with Hindsight.open(root / "m", start_worker=False) as hs:
        ana = hs.bank("ana")
        said = [ana.retain([{"speaker": "Ana", "text": text, "id": msg}], timestamp=when, document_id=msg,
                           extract=False).memories[0].id
                for text, when, msg in ((LISBON, "2023-01-05", "a-2023"), (PORTO, "2024-02-05", "a-2024"))]
        notes = hs.bank("notes")
        kept = {key: notes.retain(text, timestamp="2025-03-01", document_id=key, extract=False).memories[0].id
                for key, text in NOTES.items()}
        hs.bank("other").retain("The other bank's note.", document_id="o-seed", extract=False)
        server = MCPThread(hs, "127.0.0.1", Access(TokenFile(file.path)))
        try:
            yield Served(hs, server, tokens, said[0], said[1], kept)
        finally:
            server.stop()


@asynccontextmanager
async def client_of(served: Served, token: str) -> AsyncIterator[Client]:
    """The SDK's client on the server, sending the token named ``token``."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.tokens[token]}"}, timeout=CALL_TIMEOUT_S)
    async with http, Client(streamable_http_client(served.server.url, http_client=http),
                            read_timeout_seconds=CALL_TIMEOUT_S) as client:
        yield client


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, _text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """A tool call that must fail as one clear line: its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    message = _text(result)
    assert "Traceback" not in message and "Error executing tool" not in message, message
    assert "\n" not in message, message
    return message


# correct --------------------------------------------------------------------------------------------------------
async def test_the_tool_is_listed_as_a_write_that_deletes_nothing(served: Served) -> None:
    async with client_of(served, "writer") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["correct"]
    assert set(tool.input_schema["properties"]) == {"bank", "memory_id", "text"}  # no way to name the corrector
    assert set(tool.input_schema["required"]) == {"bank", "memory_id", "text"}
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is False
    assert tool.description is not None and "supersedes" in tool.description and "history" in tool.description
    assert "as_of" in tools["recall"].input_schema["properties"]
    assert tool.output_schema is not None and {"memory", "supersedes"} <= set(tool.output_schema["properties"])


async def test_a_write_token_corrects_and_the_wrong_memory_is_kept_as_history(served: Served) -> None:
    wrong = served.notes["n-written"]
    text = "The team offsite is in Cascais on 19 May, not Sintra."
    async with client_of(served, "writer") as client:
        out = await _call(client, "correct", {"bank": "notes", "memory_id": wrong, "text": text})
        assert out["bank"] == "notes" and out["supersedes"] == wrong and out["by"] == "writer"
        new = out["memory"]
        assert new["text"] == text and new["id"] != wrong and new["superseded_by"] is None
        # The store holds both: the wrong one with its text, superseded by the correction as of now.
        old = served.note(wrong)
        assert old["text"] == NOTES["n-written"] and old["superseded_by"] == new["id"]
        assert old["valid_until"] is not None
        stored = served.note(new["id"])
        assert stored["text"] == text and stored["metadata"]["correction"]["by"] == "writer"
        # Recall over MCP shows the correction first and the wrong note marked as superseded by it.
        found = await _call(client, "recall", {"bank": "notes", "query": "Where is the team offsite?"})
    ids = [m["id"] for m in found["memories"]]
    assert new["id"] in ids and wrong in ids and ids.index(new["id"]) < ids.index(wrong)
    shown_old = found["memories"][ids.index(wrong)]
    assert shown_old["superseded_by"] == new["id"] and shown_old["valid_until"] is not None


async def test_a_correction_is_audited_with_surface_mcp_and_the_token_id(served: Served) -> None:
    wrong = served.notes["n-audited"]
    async with client_of(served, "writer") as client:
        out = await _call(client, "correct", {"bank": "notes", "memory_id": wrong,
                                              "text": "Rui's dentist appointment is on Friday at 10."})
    [entry] = [e for e in served.corrections() if wrong in e.memory_ids]
    assert (entry.surface, entry.token_id, entry.operation) == ("mcp", "writer", "correct")
    assert out["memory"]["id"] in entry.memory_ids


@pytest.mark.parametrize(("token", "expected"), [
    ("reader", "permission denied: this token (reader) may read bank 'notes' but not change it: its scope is read"),
    ("outsider", "unknown bank: no bank 'notes' (hindsight stats lists the banks)"),
], ids=["read-only", "other-bank"])
async def test_a_token_without_write_on_the_bank_is_refused_and_nothing_is_written(
        served: Served, token: str, expected: str) -> None:
    wrong = served.notes["n-readonly" if token == "reader" else "n-outsider"]
    before = (served.correction_documents(), len(served.corrections()))
    async with client_of(served, token) as client:
        message = await _error(client, "correct", {"bank": "notes", "memory_id": wrong, "text": "It is Saturday."})
    assert message == expected
    assert served.note(wrong)["superseded_by"] is None
    assert (served.correction_documents(), len(served.corrections())) == before
    assert f"correction:{wrong}" not in served.correction_documents()


async def test_the_corrector_cannot_be_named_by_the_caller(served: Served) -> None:
    wrong = served.notes["n-spoofed"]
    async with client_of(served, "writer") as client:
        message = await _error(client, "correct", {"bank": "notes", "memory_id": wrong, "text": "It closes at 21:00.",
                                                   "by": "someone-else"})
    assert message.startswith("invalid input: correct takes no argument 'by'")
    assert served.note(wrong)["superseded_by"] is None


async def test_an_unknown_memory_or_bank_is_a_clean_error(served: Served) -> None:
    before = len(served.corrections())
    async with client_of(served, "writer") as client:
        missing = await _error(client, "correct", {"bank": "notes", "memory_id": "no-such-memory", "text": "x y"})
        assert missing == "not found: bank 'notes' has no memory 'no-such-memory' to correct"
        # A memory of another bank is not found in this one either.
        theirs = await _error(client, "correct", {"bank": "notes", "memory_id": served.lisbon, "text": "Faro."})
        assert theirs.startswith("not found: bank 'notes' has no memory")
        empty = await _error(client, "correct", {"bank": "notes", "memory_id": served.notes["n-spoofed"],
                                                 "text": "   "})
        assert empty.startswith("invalid input:") and "correction" in empty
    assert len(served.corrections()) == before
    assert served.note(served.notes["n-spoofed"])["superseded_by"] is None


@pytest.mark.parametrize("field", ["text", "memory_id", "bank"])
async def test_100_kb_in_any_argument_is_a_bounded_error(served: Served, field: str) -> None:
    arguments = {"bank": "notes", "memory_id": served.notes["n-spoofed"], "text": "It closes at 21:00."}
    async with client_of(served, "writer") as client:
        message = await _error(client, "correct", {**arguments, field: MARK * BIG})
    assert message.startswith("invalid input:"), message[:300]
    assert TOO_MUCH not in message and len(message) < 4 * MAX_SHOWN_CHARS, message[:300]
    assert served.note(served.notes["n-spoofed"])["superseded_by"] is None


# recall: as_of, superseded_by, valid_until -------------------------------------------------------------------------
async def test_recall_as_of_before_the_change_answers_with_what_was_held_then(served: Served) -> None:
    async with client_of(served, "reader") as client:
        then = await _call(client, "recall", {"bank": "ana", "query": HOME, "as_of": "2023-06-01"})
    ids = [m["id"] for m in then["memories"]]
    assert served.porto not in ids  # said later
    [lisbon] = [m for m in then["memories"] if m["id"] == served.lisbon]
    assert "Lisbon" in lisbon["text"]
    assert lisbon["superseded_by"] is None and lisbon["valid_until"] is None  # current as of then


async def test_recall_now_shows_the_earlier_memory_as_superseded(served: Served) -> None:
    async with client_of(served, "reader") as client:
        now = await _call(client, "recall", {"bank": "ana", "query": HOME})
    by_id = {m["id"]: m for m in now["memories"]}
    ids = [m["id"] for m in now["memories"]]
    assert ids.index(served.porto) < ids.index(served.lisbon)  # what is current comes first
    assert by_id[served.lisbon]["superseded_by"] == served.porto
    assert by_id[served.lisbon]["valid_until"].startswith("2024-02-05")
    assert by_id[served.porto]["superseded_by"] is None and by_id[served.porto]["valid_until"] is None


@pytest.mark.parametrize("value", ["not a time at all", MARK * BIG], ids=["words", "100kB"])
async def test_recall_with_a_bad_as_of_is_one_line_error(served: Served, value: str) -> None:
    async with client_of(served, "reader") as client:
        message = await _error(client, "recall", {"bank": "ana", "query": HOME, "as_of": value})
    assert message.startswith("invalid input: invalid as_of:"), message[:300]
    assert TOO_MUCH not in message and len(message) < 4 * MAX_SHOWN_CHARS
