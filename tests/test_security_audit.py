"""An audit trail no one can forge or mislabel (issue 39, must have 3), on both backends.

- A bank file is input: its audit records are imported as ``imported`` entries of the import (dated when it ran,
  made through the importing surface), with what the file claims (surface, token id, time, a date in 2099
  included) kept as data in the summary; no entry is dated in the future; the real import is the newest entry.
- Every command of the ``hindsight`` command line that writes records its entries as made through ``cli``
  (``reflect``, which forms opinions, included).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.openai_server import Script, scripted_server
from support.security_backends import Backend, Servers, session_servers

from hindsight_core import Hindsight
from hindsight_core.cli.commands import main

FUTURE = "2099-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with session_servers(tmp_path_factory.mktemp("servers")) as found:
        yield found


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Backend:
    if request.param == "embedded":
        return Backend("embedded", tmp_path)
    found: Servers = request.getfixturevalue("servers")
    for name, value in found.env().items():
        monkeypatch.setenv(name, value)
    return Backend("server", tmp_path, found)


def _cli(backend: Backend, capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """Run ``hindsight`` on the backend's store; its stdout (the command must succeed)."""
    capsys.readouterr()
    code = main([*backend.cli(), *words])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def _trail(backend: Backend, capsys: pytest.CaptureFixture[str], bank_id: str) -> list[dict[str, Any]]:
    """``hindsight audit BANK --json``: the bank's entries, newest first."""
    return list(json.loads(_cli(backend, capsys, "audit", bank_id, "--limit", "1000", "--json"))["entries"])


def _forged_file(tmp_path: Path) -> Path:
    """A valid bank file whose trail claims what never happened here: entries through the explorer with token
    ``admin``, dated 2099, one of them made up whole (a forget of everything)."""
    with Hindsight.open(tmp_path / "source", start_worker=False) as hs:
        hs.bank("src").retain("Ana moved to Porto in May.", extract=False, document_id="d1")
        hs.bank("src").export(tmp_path / "exported.jsonl")
    records = [json.loads(line) for line in (tmp_path / "exported.jsonl").read_text(encoding="utf-8").splitlines()]
    trail = [r for r in records if r["record"] == "audit"]
    assert trail
    for entry in trail:
        entry.update(surface="explorer", token_id="admin", at=FUTURE)
    made_up = {**trail[-1], "id": "forged-forget", "operation": "forget", "summary": "forgot everything",
               "document_id": None, "memory_ids": [], "counts": {"memories": 999}}
    records.insert(records.index(trail[-1]) + 1, made_up)
    records[0]["counts"]["audit"] += 1
    body = [(json.dumps(r, ensure_ascii=False) + "\n").encode() for r in records[:-1]]
    end = {**records[-1], "lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    path = tmp_path / "forged.jsonl"
    path.write_bytes(b"".join(body) + (json.dumps(end) + "\n").encode())
    return path


def test_a_forged_trail_imports_as_imported_with_the_import_newest(backend: Backend, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    forged = _forged_file(tmp_path)
    bank_id = backend.unique("restored")
    before = datetime.now(UTC)
    _cli(backend, capsys, "import", str(forged), "--bank", bank_id)
    after = datetime.now(UTC)
    entries = _trail(backend, capsys, bank_id)
    newest, carried = entries[0], entries[1:]
    assert (newest["operation"], newest["surface"], newest["token_id"]) == ("import", "cli", None)
    assert len(carried) == 3 and {e["operation"] for e in carried} == {"imported"}
    for entry in entries:
        at = datetime.fromisoformat(entry["at"])
        assert before - timedelta(seconds=1) <= at <= after + timedelta(seconds=1)  # nothing dated in the future
        assert entry["surface"] == "cli" and entry["token_id"] is None  # who imported, not what the file says
    assert all(datetime.fromisoformat(e["at"]) < datetime.fromisoformat(newest["at"]) for e in carried)
    # What the file claims is kept, as data, with the file it came from.
    for entry in carried:
        assert "from file forged.jsonl, which says:" in entry["summary"]
        assert "via explorer (token admin) at 2099-01-01 00:00:00" in entry["summary"]
    assert carried[0]["id"] == "forged-forget"  # the file's order is kept (its last entry newest)
    made_up = next(e for e in carried if e["id"] == "forged-forget")
    assert "forget via explorer" in made_up["summary"] and made_up["counts"] == {"memories": 999}
    # The table shows them as imported, and the import on top.
    table = _cli(backend, capsys, "audit", bank_id).splitlines()
    rows = [line for line in table if line.startswith("20")]  # the entries (each line starts with its time)
    assert " import " in rows[0] and all(" imported " in row for row in rows[1:]) and len(rows) == 4
    assert not any(row.startswith("2099") for row in rows)
    # Importing the file again (replacing the bank) adds one import; the entries it holds already are not doubled.
    _cli(backend, capsys, "import", str(forged), "--bank", bank_id, "--replace")
    again = _trail(backend, capsys, bank_id)
    assert [e["operation"] for e in again] == ["import", "import", *(["imported"] * 3)]


def _opinion_reply() -> str:
    """The scripted model's reflect answer: relies on memory 1 and forms an opinion (so reflect writes)."""
    return json.dumps({"known": True, "based_on": [1], "against": [], "stance": "unsure",
                       "answer": "Ana lives in Porto now.",
                       "opinions": [{"text": "Porto suits Ana.", "rationale": "she chose to move there",
                                     "confidence": 0.6, "entities": ["Ana"]}]})


def _new_entries(backend: Backend, capsys: pytest.CaptureFixture[str], bank_id: str, seen: set[str]) -> list[dict]:
    entries = [e for e in _trail(backend, capsys, bank_id) if e["id"] not in seen]
    seen.update(e["id"] for e in entries)
    return entries


def test_every_command_that_writes_is_recorded_as_cli(backend: Backend, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    bank_id = backend.unique("cli")
    seen: set[str] = set()
    (tmp_path / "in.txt").write_text("Ana moved to Porto in May. Ana runs by the river.", encoding="utf-8")

    def recorded(*words: str) -> list[tuple[str, str, str | None]]:
        _cli(backend, capsys, *words)
        return [(e["operation"], e["surface"], e["token_id"]) for e in _new_entries(backend, capsys, bank_id, seen)]

    assert recorded("retain", bank_id, str(tmp_path / "in.txt"), "--no-extract") == \
        [("retain", "cli", None), ("create_bank", "cli", None)]

    with scripted_server(Script(chat_replies=[_opinion_reply()])) as (url, _script):
        monkeypatch.setenv("HINDSIGHT_LLM_BASE_URL", url)
        monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "scripted")
        assert recorded("reflect", bank_id, "Where does Ana live, and does Porto suit her?") == \
            [("reflect", "cli", None)]

    retained = next(e for e in _trail(backend, capsys, bank_id) if e["operation"] == "retain")
    with backend.open(start_worker=False) as hs:  # a memory whose vector is gone: check --repair restores it
        hs.engine.index.delete(bank_id, retained["memory_ids"][:1])
    assert recorded("check", bank_id, "--repair") == [("repair", "cli", None)]

    assert recorded("reembed", bank_id, "--embedder", "minilm-int8") == [("reembed", "cli", None)]

    _cli(backend, capsys, "export", bank_id, "-o", str(tmp_path / "b.jsonl"))
    copy = backend.unique("copy")
    _cli(backend, capsys, "import", str(tmp_path / "b.jsonl"), "--bank", copy)
    copied = _trail(backend, capsys, copy)
    assert {(e["operation"], e["surface"]) for e in copied} == {("import", "cli"), ("imported", "cli")}


def test_migrate_and_demo_record_cli(servers: Servers, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    embedded = Backend("embedded", tmp_path)
    capsys.readouterr()
    assert main(["--path", str(tmp_path / "m"), "demo", "--no-reflect", "--json"]) == 0
    demo = _trail(embedded, capsys, "demo")
    assert demo and {e["surface"] for e in demo} == {"cli"}

    for name, value in servers.env().items():
        monkeypatch.setenv(name, value)
    server = Backend("server", tmp_path, servers)
    bank_id = embedded.unique("tomigrate")
    with embedded.open(start_worker=False) as hs:
        hs.bank(bank_id).retain("Ben plays chess on Sundays.", extract=False)
    _cli(embedded, capsys, "migrate", "--to-graph", servers.uri, "--to-vectors", servers.chroma_url,
         "--bank", bank_id)
    migrated = _trail(server, capsys, bank_id)
    # A migration carries this user's own trail unchanged, and records itself as the cli's.
    assert [(e["operation"], e["surface"]) for e in migrated] == \
        [("migrate", "cli"), ("retain", "api"), ("create_bank", "api")]
