"""The one store locator (``stores/locate.py``) and the one bank-id rule (``validation.check_bank_id``), through
every command and entry point that uses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.cli.commands import build_parser, main
from hindsight_core.errors import InvalidInputError
from hindsight_core.mcp_server.schemas import BankId as McpBankId
from hindsight_core.stores.locate import StoreLocation, StoreLocationError
from hindsight_core.validation import MAX_BANK_ID_CHARS, check_bank_id

COMMANDS = ["retain B", "recall B q", "reflect B q", "stats", "check", "export B -o f.jsonl", "import f.jsonl",
            "ui", "mcp"]


def test_options_beat_environment_and_environment_beats_default(tmp_path: Path) -> None:
    env = {"HINDSIGHT_PATH": str(tmp_path / "env"), "HINDSIGHT_GRAPH": "bolt://db:7687",
           "HINDSIGHT_VECTORS": "http://chroma:8000"}
    assert StoreLocation.resolve(tmp_path / "p", environ=env) == StoreLocation(path=tmp_path / "p")
    assert StoreLocation.resolve(graph="g.sqlite", vectors="v", environ=env) == StoreLocation(graph="g.sqlite",
                                                                                              vectors="v")
    assert StoreLocation.resolve(environ=env) == StoreLocation(graph="bolt://db:7687", vectors="http://chroma:8000")
    assert StoreLocation.resolve(environ={"HINDSIGHT_PATH": "x"}) == StoreLocation(path=Path("x"))
    assert StoreLocation.resolve(environ={}) == StoreLocation(path=Path("memory"))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"graph": "bolt://h:1"}, "--graph needs --vectors"),
    ({"vectors": "http://h:1"}, "--vectors goes with --graph"),
    ({"path": "p", "graph": "g", "vectors": "v"}, "not both"),
])
def test_broken_combinations_are_one_error_type(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(StoreLocationError, match=message) as caught:
        StoreLocation.resolve(**kwargs, environ={})
    assert isinstance(caught.value, InvalidInputError)


def test_half_a_pair_in_the_environment_names_the_variable() -> None:
    with pytest.raises(StoreLocationError, match="HINDSIGHT_GRAPH needs HINDSIGHT_VECTORS"):
        StoreLocation.resolve(environ={"HINDSIGHT_GRAPH": "bolt://h:1"})


def test_require_refuses_a_missing_embedded_store(tmp_path: Path) -> None:
    with pytest.raises(StoreLocationError, match="there is no memory store at"):
        StoreLocation(path=tmp_path / "nothing").require()
    assert not (tmp_path / "nothing").exists()  # nothing was created by asking


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_path_or_graph_and_vectors(command: str) -> None:
    args = build_parser().parse_args([*command.split(), "--graph", "g.sqlite", "--vectors", "v"])
    assert (args.graph, args.vectors) == ("g.sqlite", "v")
    args = build_parser().parse_args(["--path", "here", *command.split()])
    assert args.path == "here"


def test_recall_reaches_a_store_named_by_graph_and_vectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph, vectors = str(tmp_path / "g.sqlite"), str(tmp_path / "v")
    with Hindsight.open(None, graph=graph, vectors=vectors, start_worker=False) as hs:
        hs.bank("b").retain("Ines keeps bees on the roof in Porto.", extract=False)
    assert main(["recall", "b", "who keeps bees?", "--graph", graph, "--vectors", vectors, "--json"]) == 0
    assert "bees" in capsys.readouterr().out
    assert main(["stats", "--graph", graph, "--vectors", vectors]) == 0
    assert "b " in capsys.readouterr().out


def test_a_command_given_half_a_pair_fails_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "b", "q", "--graph", "bolt://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: --graph needs --vectors (the vector index that goes with it)"


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "tab\there", "x" * (MAX_BANK_ID_CHARS + 1), "\ud800"])
def test_one_bank_id_rule_everywhere(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        check_bank_id(bad)
    from pydantic import TypeAdapter, ValidationError

    with pytest.raises(ValidationError):
        TypeAdapter(McpBankId).validate_python(bad)
    with Hindsight.open(None, start_worker=False) as hs:
        with pytest.raises(InvalidInputError):
            hs.bank(bad)
        with pytest.raises(InvalidInputError):
            hs.delete_bank(bad)
        with pytest.raises(InvalidInputError):
            hs.import_bank(tmp_path / "none.jsonl", bank_id=bad)
    assert check_bank_id("x" * MAX_BANK_ID_CHARS) == "x" * MAX_BANK_ID_CHARS


def test_stores_and_exports_are_private_and_links_are_not_followed(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)  # a loose umask: what is created must still be the owner's only
    try:
        with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
            hs.bank("b").retain("Ines keeps bees on the roof.", extract=False)
            victim = tmp_path / "victim.txt"
            victim.write_text("untouched")
            target = tmp_path / "b.jsonl"
            target.symlink_to(victim)  # planted where the export will go
            hs.bank("b").export(target)
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(tmp_path / "m") == 0o700 and mode(tmp_path / "m" / "vectors") == 0o700
    assert mode(tmp_path / "m" / "graph.sqlite") == 0o600
    assert victim.read_text() == "untouched"
    assert not target.is_symlink() and mode(target) == 0o600
