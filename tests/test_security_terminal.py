"""Control, bidirectional and zero-width characters never reach a terminal raw from the command line (issue 39,
must have 4); log lines are covered in ``test_security_logs.py``.

A bank id may hold a right-to-left override or a zero-width space (they are printable, so ``check_bank_id``
accepts them), and a memory's text a C1 control (``\\x9b`` starts a terminal sequence as ``\\x1b[`` does). The
command line prints each as a visible ``\\uXXXX`` escape, in tables, recall output and errors; ``--json`` output
stays valid JSON whose values are the original strings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_core.cli.commands import main
from hindsight_core.text.printable import UNSAFE, escape_controls

BANK = "evil\u202egnp.exe\u200b"  # shows as "evilexe.png" on a terminal that honours the override
TEXT = "Ana moved to Porto.\x9b2J\u2066 hidden\u2069 \u200dend"
RAW = ("\u202e", "\u200b", "\u200d", "\u2066", "\u2069", "\x9b", "\x1b")


def _run(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


def test_bank_ids_and_texts_are_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--path", str(tmp_path / "m")]
    source = tmp_path / "in.txt"
    source.write_text(TEXT, encoding="utf-8")
    code, out, err = _run(capsys, *store, "retain", BANK, str(source), "--no-extract")
    assert code == 0, err
    for words in (("stats",), ("recall", BANK, "Where did Ana move?"), ("audit",), ("audit", BANK)):
        code, out, err = _run(capsys, *store, *words)
        assert code == 0, err
        printed = out + err
        assert not any(c in printed for c in RAW), (words, printed)
        if words[0] == "recall":
            assert "Porto.\\u009b2J\\u2066 hidden\\u2069 \\u200dend" in out  # the memory's text
        else:
            assert "evil\\u202egnp.exe\\u200b" in printed, (words, printed)  # the bank id
    # An error naming the bank is escaped too.
    code, out, err = _run(capsys, *store, "recall", BANK + "x", "q")
    assert code == 2 and "\\u202e" in err and not any(c in err for c in RAW)


def test_json_output_stays_valid_and_means_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ["--path", str(tmp_path / "m")]
    source = tmp_path / "in.txt"
    source.write_text(TEXT, encoding="utf-8")
    assert _run(capsys, *store, "retain", BANK, str(source), "--no-extract")[0] == 0
    code, out, _ = _run(capsys, *store, "--json", "recall", BANK, "Where did Ana move?")
    assert code == 0 and not any(c in out for c in RAW)
    answer = json.loads(out)  # escapes inside JSON strings are the same characters
    assert answer["memories"][0]["text"].startswith("Ana moved to Porto.")
    assert "\u202e" in json.dumps(answer, ensure_ascii=False) or "\u2066" in answer["memories"][0]["text"]


def test_a_real_process_writes_no_raw_control_to_its_streams(tmp_path: Path) -> None:
    """The same through a real ``hindsight`` process, reading its bytes (nothing in between to clean them)."""
    source = tmp_path / "in.txt"
    source.write_text(TEXT, encoding="utf-8")
    command = [sys.executable, "-m", "hindsight_core.cli", "--path", str(tmp_path / "m")]
    done = subprocess.run([*command, "retain", BANK, str(source), "--no-extract"], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*command, "recall", BANK, "Porto"], capture_output=True, timeout=300)
    printed = (done.stdout + done.stderr).decode("utf-8")
    assert done.returncode == 0 and "Porto" in printed
    assert not UNSAFE.search(printed.replace("\n", "")), [c for c in printed if UNSAFE.match(c)]


def test_escape_controls_is_what_the_streams_apply() -> None:
    assert escape_controls("a\u202eb\x1b[2Jc\r\n") == "a\\u202eb\\u001b[2Jc\\u000d\n"
    assert escape_controls("tab\tstays") == "tab\tstays"
    assert escape_controls("bar\r", keep_carriage_returns=True) == "bar\r"
    assert escape_controls("x\ny", keep_newlines=False) == "x\\u000ay"
