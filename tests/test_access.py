"""The access model shared by the MCP HTTP server and the explorer (``hindsight_core.access``): scoped grants, the
hashed token file (never the token at rest, 0600, re-read on change, fail closed), and ``hindsight token``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from hindsight_core.access import (
    ENV_TOKEN_ID,
    READ,
    READ_WRITE,
    TOKENS_FILE_ENV,
    Access,
    Grant,
    TokenFile,
    TokenFileError,
    access_from,
    bearer,
    token_hash,
)
from hindsight_core.cli.commands import main as cli_main


def test_grant_scopes_reads_and_writes_to_its_banks() -> None:
    scoped = Grant("alice", READ_WRITE, frozenset({"a"}))
    assert scoped.can_read("a") and scoped.can_write("a")
    assert not scoped.can_read("b") and not scoped.can_write("b")
    reader = Grant("bob", READ, frozenset({"b"}))
    assert reader.can_read("b") and not reader.can_write("b") and not reader.can_read("a")
    everything = Grant.everything("root")
    assert everything.can_read("anything") and everything.can_write("anything")
    assert scoped.visible(["a", "b", "c"]) == ["a"]
    assert reader.visible([{"id": "a"}, {"id": "b"}], lambda d: d["id"]) == [{"id": "b"}]
    assert reader.describe() == "read on b" and everything.describe() == "read-write on every bank"


def test_the_file_keeps_hashes_only_with_mode_0600(tmp_path: Path) -> None:
    file = TokenFile(tmp_path / "conf" / "tokens.json")
    alice = file.add("alice", banks=["a"])
    bob = file.add("bob", scope=READ, banks=["b", "b"])
    root = file.add("root")
    text = file.path.read_text()
    for token in (alice, bob, root):
        assert token.startswith("hst_") and len(token) > 40
        assert token not in text and token[4:] not in text  # the file never holds a token, whole or in part
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.path.parent.stat().st_mode) == 0o700
    stored = json.loads(text)["tokens"]
    assert [e["id"] for e in stored] == ["alice", "bob", "root"]
    assert stored[1]["banks"] == ["b"] and stored[2]["banks"] == "*"
    assert stored[0]["hash"] == token_hash(stored[0]["salt"], alice)
    assert stored[0]["salt"] != stored[1]["salt"]

    access = Access(TokenFile(file.path))  # a fresh reader, as a server has
    assert access.authenticate(alice) == Grant("alice", READ_WRITE, frozenset({"a"}))
    assert access.authenticate(bob) == Grant("bob", READ, frozenset({"b"}))
    assert access.authenticate(root) == Grant("root", READ_WRITE, None)
    for wrong in (None, "", alice + "x", alice[:-1], "hst_" + "A" * 43, "x" * 10_000):
        assert access.authenticate(wrong) is None


def test_a_removed_token_is_refused_at_once_and_a_broken_file_refuses_everyone(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    writer = TokenFile(path)
    alice, bob = writer.add("alice", banks=["a"]), writer.add("bob", banks=["b"])
    access = Access(TokenFile(path), "env-token-123456")
    assert access.authenticate(alice) is not None and access.authenticate(bob) is not None
    writer.remove("alice")
    assert access.authenticate(alice) is None and access.authenticate(bob) is not None  # re-read on change
    with pytest.raises(TokenFileError, match="no token 'alice'"):
        writer.remove("alice")
    with pytest.raises(TokenFileError, match="exists already"):
        writer.add("bob")

    path.write_text('{"tokens": [{"id": "bob"')  # truncated by hand: fail closed, not open
    os.chmod(path, 0o600)
    assert access.authenticate(bob) is None
    assert access.authenticate("env-token-123456") == Grant.everything(ENV_TOKEN_ID)  # the env token stands
    with pytest.raises(TokenFileError, match="not valid JSON"):
        access_from(path, None)


@pytest.mark.parametrize(("content", "expected"), [
    ({"tokens": [{"id": "a b", "scope": "read", "banks": "*", "salt": "00" * 16, "hash": "0" * 64}]}, "token id"),
    ({"tokens": [{"id": "a", "scope": "admin", "banks": "*", "salt": "00" * 16, "hash": "0" * 64}]}, "scope"),
    ({"tokens": [{"id": "a", "scope": "read", "banks": "a,b", "salt": "00" * 16, "hash": "0" * 64}]}, "banks"),
    ({"tokens": [{"id": "a", "scope": "read", "banks": "*", "salt": "zz", "hash": "0" * 64}]}, "malformed"),
    ({"tokens": [{"id": "a", "scope": "read", "banks": "*"}]}, "lacks 'salt'"),
    ({"tokens": {}}, "tokens"),
])
def test_malformed_files_are_refused_with_one_clear_line(tmp_path: Path, content: object, expected: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(content))
    os.chmod(path, 0o600)
    with pytest.raises(TokenFileError, match=expected) as raised:
        access_from(path, None)
    assert "\n" not in str(raised.value)


def test_a_file_others_can_write_is_refused(tmp_path: Path) -> None:
    file = TokenFile(tmp_path / "tokens.json")
    file.add("alice")
    os.chmod(file.path, 0o666)
    with pytest.raises(TokenFileError, match="writable by other users"):
        access_from(file.path, None)
    with pytest.raises(TokenFileError, match="no token file"):
        access_from(tmp_path / "missing.json", None)
    assert not access_from(None, None, environ={}).required
    assert access_from(None, "t0k3n-value", environ={}).required
    os.chmod(file.path, 0o600)
    assert access_from(None, None, environ={TOKENS_FILE_ENV: str(file.path)}).file is not None


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = TokenFile(tmp_path / "tokens.json")
    alice = file.add("alice", banks=["a"])
    before = file.path.read_bytes()

    def crash(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)  # the rename that would publish the new file fails
    with pytest.raises(OSError, match="No space"):
        file.add("bob")
    monkeypatch.undo()
    assert file.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json"]  # no temporary file left behind
    assert Access(TokenFile(file.path)).authenticate(alice) is not None
    assert [e.id for e in TokenFile(file.path).entries()] == ["alice"]
    file.add("bob")  # and the retry works
    assert [e.id for e in TokenFile(file.path).entries()] == ["alice", "bob"]


def test_bearer_header_parsing() -> None:
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    for value in (None, "", "Basic abc", "abc", "Bearer", "Bearer   "):
        assert bearer(value) is None


def test_token_command_adds_lists_and_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokens.json"
    monkeypatch.setenv(TOKENS_FILE_ENV, str(path))
    assert cli_main(["token", "add", "alice", "--banks", "a, b", "--read-only"]) == 0
    out = capsys.readouterr().out
    token = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("token: "))
    assert "read on a, b" in out and token not in path.read_text()
    assert Access(TokenFile(path)).authenticate(token) == Grant("alice", READ, frozenset({"a", "b"}))

    assert cli_main(["token", "add", "root", "--all-banks", "--json", "--file", str(path)]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["id"] == "root" and added["scope"] == READ_WRITE and added["banks"] == "*"
    assert Access(TokenFile(path)).authenticate(added["token"]) == Grant("root", READ_WRITE, None)

    assert cli_main(["token", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["tokens"]
    assert [(t["id"], t["scope"], t["banks"]) for t in listed] == [("alice", "read", ["a", "b"]), ("root",
                                                                    "read-write", "*")]
    assert token not in json.dumps(listed)
    assert cli_main(["token", "list"]) == 0
    assert "alice  read" in capsys.readouterr().out

    assert cli_main(["token", "remove", "alice"]) == 0
    assert Access(TokenFile(path)).authenticate(token) is None
    for argv, expected in [(["token", "remove", "alice"], "no token 'alice'"),
                           (["token", "add", "bad name", "--all-banks"], "a token id is"),
                           (["token", "add", "x", "--banks", " , "], "at least one bank"),
                           (["token", "add", "root", "--all-banks"], "exists already")]:
        assert cli_main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and expected in err and "Traceback" not in err, err
    monkeypatch.delenv(TOKENS_FILE_ENV)
    assert cli_main(["token", "list"]) == 2
    assert "--file FILE" in capsys.readouterr().err


def test_servers_refuse_a_missing_token_file_before_serving(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight_core.mcp_server.__main__ import main as mcp_main

    monkeypatch.delenv(TOKENS_FILE_ENV, raising=False)
    missing = str(tmp_path / "missing.json")
    Path(tmp_path / "m").mkdir()
    for run, argv, expected in [
        (mcp_main, ["--path", str(tmp_path / "m"), "--http", "127.0.0.1:0", "--tokens", missing], "no token file"),
        (mcp_main, ["--path", str(tmp_path / "m"), "--tokens", missing], "--tokens goes with --http"),
        (cli_main, ["ui", "--path", str(tmp_path / "m"), "--port", "0", "--tokens", missing], "no token file"),
    ]:
        assert run(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err, err
    assert not (tmp_path / "m" / "graph.sqlite").exists()  # nothing was opened
