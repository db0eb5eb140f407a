"""Beliefs that change on the command line (issue 37.5): ``hindsight correct``, ``hindsight recall --as-of``, and a
recall listing that marks superseded memories and says why supersession put one where it is.

A real bank, filled through ``hindsight retain --no-extract`` (the real embedder, NER and supersession rule): Ana says
she lives in Lisbon, talks of other things for months, then says she moved to Porto; Rui says he is a nurse. Every
command runs through the real entry point: ``main`` in this process, and the installed module in a child process
where what a user's terminal receives matters (stdout and stderr apart, the exit status).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.cli.commands import main
from hindsight_core.cli.correct import MAX_BY_CHARS

BANK = "people"
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
LISBON = "Ana: I live in Lisbon, in a small flat near the river."
TREES = "Ana: The jacaranda trees are blooming everywhere this week."
PORTO = "Ana: We moved to Porto last month, the new flat is much bigger."
NURSE = "Rui: I work as a nurse at the Santa Maria hospital."
PARAMEDIC = "Rui works as a paramedic, not a nurse."
MOVED_ON = "2024-11-05"
"""When the move was said (300 days after T0): the day Lisbon stopped being current."""


def message(text: str, mid: str, days: int) -> dict[str, Any]:
    """``text`` ("Speaker: words") as one message ``days`` after T0."""
    speaker, words = text.split(": ", 1)
    return {"speaker": speaker, "text": words, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


def hindsight(*args: str) -> subprocess.CompletedProcess[str]:
    """``hindsight ARGS...`` in a child process, as a user runs it (not on a terminal)."""
    return subprocess.run([sys.executable, "-m", "hindsight_core.cli", *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, check=False)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``main(args)`` in this process: exit status, stdout, stderr."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, retained through the command line: three sessions months apart, one document each."""
    folder = tmp_path_factory.mktemp("beliefs")
    sessions = [[message(LISBON, "a1", 0), message(NURSE, "r1", 0)], [message(TREES, "a2", 60)],
                [message(PORTO, "a3", 300)]]
    for i, session in enumerate(sessions, start=1):
        source = folder / f"s{i}.json"
        source.write_text(json.dumps(session), encoding="utf-8")
        assert main(["--path", str(folder / "memory"), "retain", BANK, str(source), "--no-extract",
                     "--document-id", f"s{i}"]) == 0
    return folder / "memory"


def ids(store: Path) -> dict[str, str]:
    """Each memory's id by its text, as the store holds them now."""
    with Hindsight.open(store, start_worker=False) as hs:
        return {m.text: m.id for m in hs.bank(BANK, create=False).memories(list(hs.store.unit_ids(BANK)))}


def listing(out: str) -> list[dict[str, Any]]:
    """The printed recall: per memory its rank, text, mark (``[...]`` after the text) and reason line, if any."""
    rows: list[dict[str, Any]] = []
    for line in out.splitlines():
        if m := re.match(r"^\s*(\d+)\. (.*?)(?:  (\[.*\]))?$", line):
            rows.append({"rank": int(m.group(1)), "text": m.group(2), "mark": m.group(3), "why": None})
        elif line.startswith("    placed here: "):
            rows[-1]["why"] = line.removeprefix("    placed here: ")
    return rows


def row(rows: list[dict[str, Any]], text: str) -> dict[str, Any]:
    """The listed memory with ``text``."""
    return next(r for r in rows if r["text"] == text)


# recall: what is current first, and why ---------------------------------------------------------------------------
def test_recall_puts_the_move_first_and_says_why_each_was_placed(store: Path, capsys: pytest.CaptureFixture[str]
                                                                  ) -> None:
    proc = hindsight("--path", str(store), "recall", BANK, "Where does Ana live?")
    assert proc.returncode == 0, proc.stderr
    rows = listing(proc.stdout)
    porto, lisbon = row(rows, PORTO), row(rows, LISBON)
    assert porto["rank"] < lisbon["rank"]
    assert lisbon["mark"] == f"[superseded {MOVED_ON} by #{porto['rank']}]" and porto["mark"] is None
    # The trace says the ranking reached Lisbon first: Porto was brought in at its place, and Lisbon packed after it.
    code, out, _ = run(capsys, "--path", str(store), "--json", "recall", BANK, "Where does Ana live?", "--trace")
    assert code == 0
    items = {i["memory_id"]: i for i in json.loads(out)["trace"]["items"]}
    known = ids(store)
    assert items[known[PORTO]]["brought_by"] == known[LISBON] and items[known[LISBON]]["demoted"]
    assert porto["why"] == f"brought in by #{lisbon['rank']}, which it superseded"
    assert lisbon["why"] == f"superseded by #{porto['rank']}, which is current: packed after it"
    # Memories supersession did not touch keep no mark and no reason; the summary counts the moved ones.
    assert all(r["mark"] is None and r["why"] is None for r in rows if r["text"] not in (PORTO, LISBON))
    assert proc.stdout.splitlines()[-1].endswith("in the order packed (2 placed by supersession, each with the "
                                                 "reason)")


def test_a_question_about_the_past_brings_the_old_memory_first(store: Path) -> None:
    proc = hindsight("--path", str(store), "recall", BANK, "Where did Ana live before she moved?")
    assert proc.returncode == 0, proc.stderr
    rows = listing(proc.stdout)
    lisbon, porto = row(rows, LISBON), row(rows, PORTO)
    assert lisbon["rank"] + 1 == porto["rank"]  # what was true before, right before what replaced it
    assert lisbon["why"] == (f"brought in before #{porto['rank']}, which superseded it, for a question about the "
                             "past")
    assert lisbon["mark"] == f"[superseded {MOVED_ON} by #{porto['rank']}]" and porto["why"] is None


def test_recall_as_of_answers_with_what_the_bank_held_then(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--path", str(store), "recall", BANK, "Where does Ana live?", "--as-of", "2024-06-01")
    assert code == 0, err
    assert out.splitlines()[0] == "as of 2024-06-01 00:00 UTC: what the bank held then"
    rows = listing(out)
    texts = [r["text"] for r in rows]
    assert LISBON in texts and PORTO not in texts  # the move was not said yet
    assert all(r["mark"] is None and r["why"] is None for r in rows)  # and Lisbon was current
    # A date in words, and a time with its zone, are read too; after the move Porto is current again.
    code, out, err = run(capsys, "--path", str(store), "--json", "recall", BANK, "Where does Ana live?",
                         "--as-of", "5 December 2024")
    assert code == 0, err
    memories = json.loads(out)["memories"]
    order = [m["text"] for m in memories]
    assert order.index(PORTO) < order.index(LISBON)
    assert next(m for m in memories if m["text"] == LISBON)["superseded_by"] == ids(store)[PORTO]
    code, out, err = run(capsys, "--path", str(store), "--json", "recall", BANK, "Where does Ana live?",
                         "--as-of", "2024-11-05T08:00:00+00:00")
    assert code == 0 and PORTO not in [m["text"] for m in json.loads(out)["memories"]]  # an hour before it was said


@pytest.mark.parametrize("value", ["not a date", "2024-13-45", "", "x" * 5000, "31/31/2024"])
def test_a_bad_as_of_is_one_line_and_opens_nothing(tmp_path: Path, value: str) -> None:
    proc = hindsight("--path", str(tmp_path / "memory"), "recall", BANK, "q", "--as-of", value)
    assert proc.returncode == 2 and proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("hindsight recall: error: argument --as-of: expected a date or time such as 2024-03-05 ")
    assert len(last) < 160 and "Traceback" not in proc.stderr and "pydantic" not in proc.stderr
    assert not (tmp_path / "memory").exists()  # refused before anything opened


# correct --------------------------------------------------------------------------------------------------------
def test_correct_stores_what_is_true_and_keeps_the_old_as_history(store: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    nurse = ids(store)[NURSE]
    proc = hindsight("--path", str(store), "correct", BANK, nurse, PARAMEDIC, "--by", "rui")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    fixed = ids(store)[PARAMEDIC]
    assert lines == [f"corrected {nurse}: it is kept as history, superseded by {fixed}",
                     f"  was: {NURSE}", f"  now: {PARAMEDIC}  (by rui)"]
    with Hindsight.open(store, start_worker=False) as hs:
        bank = hs.bank(BANK, create=False)
        old, new = bank.get(nurse), bank.get(fixed)
        assert old is not None and new is not None
        assert old.superseded_by == fixed and old.text == NURSE  # kept, with its words
        assert new.metadata["correction"]["of"] == nurse and new.metadata["correction"]["by"] == "rui"
        entry = bank.audit(limit=1)[0]
        assert (entry.operation, entry.surface, entry.token_id) == ("correct", "cli", None)
        assert set(entry.memory_ids) == {nurse, fixed}
    # Recall marks both: the correction names what it corrects, the corrected memory what superseded it, today.
    code, out, err = run(capsys, "--path", str(store), "recall", BANK, "What is Rui's job?")
    assert code == 0, err
    rows = listing(out)
    paramedic, old_row = row(rows, PARAMEDIC), row(rows, NURSE)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert paramedic["rank"] < old_row["rank"]
    assert paramedic["mark"] == f"[corrects #{old_row['rank']}, by rui]"
    assert old_row["mark"] == f"[superseded {today} by #{paramedic['rank']}]"


def test_correct_json_gives_both_memories(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trees = ids(store)[TREES]
    code, out, err = run(capsys, "--path", str(store), "--json", "correct", BANK, trees,
                         "Ana said the jacaranda trees bloomed in March.")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["bank"] == BANK and answer["corrected"]["id"] == trees
    assert answer["corrected"]["superseded_by"] == answer["memory"]["id"]
    assert answer["memory"]["text"] == "Ana said the jacaranda trees bloomed in March."
    assert answer["memory"]["metadata"]["correction"]["by"] is None  # no --by: nobody named


def test_correct_errors_are_one_line_and_store_nothing(store: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    lisbon = ids(store)[LISBON]

    def audit_size() -> int:
        with Hindsight.open(store, start_worker=False) as hs:
            return len(hs.bank(BANK, create=False).audit(limit=1000))

    before = audit_size()
    cases = [
        (["--path", str(store), "correct", BANK, "no-such-memory", "Ana lives in Braga."],
         "error: bank 'people' has no memory 'no-such-memory' to correct"),
        (["--path", str(store), "correct", "nobody", lisbon, "Ana lives in Braga."], "error: no bank 'nobody'"),
        (["--path", str(store), "correct", BANK, lisbon, "   "],
         "error: a correction needs the text that is true instead"),
        (["--path", str(store), "correct", BANK, lisbon, "Ana lives in Braga.", "--by", "b" * (MAX_BY_CHARS + 1)],
         f"error: --by names who corrects it in at most {MAX_BY_CHARS} characters, not {MAX_BY_CHARS + 1}"),
        (["--path", str(store), "correct", BANK, lisbon, "x" * 5000],
         "error: a correction is one statement of at most"),
        (["--path", str(tmp_path / "none"), "correct", BANK, lisbon, "Ana lives in Braga."],
         "error: no bank 'people': there is no memory store at"),
    ]
    for args, words in cases:
        code, out, err = run(capsys, *args)
        assert code == 2 and out == "", (args[2:4], out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(words), (args[2:4], err)
        assert "Traceback" not in err and "pydantic" not in err.lower() and len(lines[0]) < 300
    assert not (tmp_path / "none").exists()
    assert audit_size() == before
    with Hindsight.open(store, start_worker=False) as hs:
        assert hs.bank(BANK, create=False).get(lisbon).superseded_by == ids(store)[PORTO]  # type: ignore[union-attr]
    # A missing argument is argparse's usage error, on one line too.
    code, _, err = run(capsys, "--path", str(store), "correct", BANK, lisbon)
    assert code == 2 and err.strip().splitlines()[-1] == ("hindsight correct: error: the following arguments are "
                                                          "required: text")
