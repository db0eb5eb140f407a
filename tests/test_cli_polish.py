"""A quiet, ordered command line (issue 41, the command line): progress bars only on a terminal and only for long
work; recall in the order it packs, saying why a memory stands out of score order; numeric options bounded with
one-line errors.

The commands run as the user runs them, in a child process, on real stores built here (the embedder is the real
one; the facts of the ordered-recall bank are written by a scripted model, so that the bank is the same every run).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.cli.commands import build_parser, main
from hindsight_core.cli.display import format_recall, placement_notes
from hindsight_core.cli.options import MAX_BATCH, MAX_BUDGET, MAX_MEMORIES
from hindsight_core.cli.run import LONG_WORK_S, progress_settings, quiet_progress
from hindsight_core.config import RecallSettings, Settings
from hindsight_core.recall.deadline import MAX_DEADLINE_MS

MESSAGES = [
    {"speaker": "Ana", "text": "I started running every morning in January.", "id": "m1"},
    {"speaker": "Bo", "text": "Nice! How is it going?", "id": "m2"},
    {"speaker": "Ana", "text": "I finished my first 10k race last Sunday in Porto.", "id": "m3"},
    {"speaker": "Bo", "text": "Porto is lovely. Did you run along the river?", "id": "m4"},
    {"speaker": "Ana", "text": "Yes, the race followed the Douro river to the sea.", "id": "m5"},
    {"speaker": "Bo", "text": "I have never run more than five kilometres myself.", "id": "m6"},
]
PROGRESS_TEXT = ("Loading weights", "it/s", "%|", "\r")
"""What a progress bar leaves on stderr: tqdm's bar and rate, its carriage returns, transformers' loading bar."""


def _cli_env(**extra: str) -> dict[str, str]:
    """This environment without any progress-bar switch of its own (the command must set them), offline."""
    switches = set(progress_settings(True)) | set(progress_settings(False))
    env = {k: v for k, v in os.environ.items() if k not in switches and not k.startswith("HINDSIGHT_")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def hindsight(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hindsight ARGS...`` in a child process; stdin, stdout and stderr are pipes (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "hindsight_core.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env or _cli_env(), stdin=subprocess.DEVNULL, check=False)


def on_terminal(*args: str, env: dict[str, str]) -> str:
    """``hindsight ARGS...`` with stdout and stderr on a pseudo-terminal 100 columns wide; what it printed."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "hindsight_core.cli", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=300) == 0, b"".join(chunks)[-3000:]
    return b"".join(chunks).decode(errors="replace")


def conversation_file(folder: Path) -> Path:
    """Two sessions in the LoCoMo shape: a retain of several documents (the retain's own bar drew for those)."""
    def session(n: int) -> list[dict[str, str]]:
        return [{"speaker": m["speaker"], "dia_id": f"D{n}:{i}", "text": m["text"]}
                for i, m in enumerate(MESSAGES[3 * (n - 1):3 * n], start=1)]

    path = folder / "conversation.json"
    path.write_text(json.dumps({"sample_id": "runs", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Bo",
        "session_1_date_time": "9:00 am on 4 February, 2024", "session_1": session(1),
        "session_2_date_time": "6:30 pm on 20 March, 2024", "session_2": session(2)}}), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# progress bars
# ------------------------------------------------------------------------------------------------
def test_commands_off_a_terminal_print_no_progress_bar(tmp_path: Path) -> None:
    store = str(tmp_path / "memory")
    source = conversation_file(tmp_path)
    runs = [
        hindsight("--path", store, "retain", "runs", str(source), "--no-extract"),  # loads the document embedder
        hindsight("--path", store, "recall", "runs", "Where did Ana race?"),  # the query embedder
        hindsight("--path", store, "--json", "recall", "runs", "Where did Ana race?", "--trace"),
        hindsight("--path", store, "stats", "runs"),
        hindsight("--path", store, "check"),
    ]
    for proc in runs:
        assert proc.returncode == 0, [*proc.args[3:], proc.stderr[-2000:]]
        for text in PROGRESS_TEXT:
            assert text not in proc.stderr, (proc.args[3:], proc.stderr[-2000:])
    assert "runs:session_1" in runs[0].stdout and "Douro" in runs[1].stdout  # the commands did their work


def test_a_quick_command_on_a_terminal_draws_no_bar_and_long_work_would(tmp_path: Path) -> None:
    store = str(tmp_path / "memory")
    source = str(conversation_file(tmp_path))
    note = tmp_path / "note.txt"
    note.write_text("Ana finished her first 10k race in Porto.", encoding="utf-8")
    # One document (no retain bar) and the model's weights loaded from disk in well under LONG_WORK_S.
    # On MiniLM: its PyTorch weights load with transformers' bar (the default mpnet-int8's ONNX graph loads silently).
    minilm = {"HINDSIGHT_EMBEDDER": "minilm"}
    quick = on_terminal("--path", store, "retain", "note", str(note), "--no-extract", env=_cli_env(**minilm))
    assert "1 memory" in quick
    assert "Loading weights" not in quick and "it/s" not in quick
    # The same command whose work counts as long from its first second (the delay a user may set): the bars are
    # there on a terminal, model loading's and the retain's own.
    shown = on_terminal("--path", store, "retain", "runs2", source, "--no-extract",
                        env=_cli_env(TQDM_DELAY="0", **minilm))
    assert "Loading weights" in shown and "retain: 100%" in shown


def test_the_switches_are_the_commands_own_and_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("TQDM_DISABLE", "TQDM_DELAY", "HF_HUB_DISABLE_PROGRESS_BARS"):
        monkeypatch.delenv(key, raising=False)
    with quiet_progress(terminal=False):
        assert os.environ["TQDM_DISABLE"] == "1" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    with quiet_progress(terminal=True):
        assert os.environ["TQDM_DELAY"] == str(LONG_WORK_S) and "TQDM_DISABLE" not in os.environ
    assert not {"TQDM_DISABLE", "TQDM_DELAY", "HF_HUB_DISABLE_PROGRESS_BARS"} & set(os.environ)
    monkeypatch.setenv("TQDM_DISABLE", "0")  # the user's own choice wins
    with quiet_progress(terminal=False):
        assert os.environ["TQDM_DISABLE"] == "0"
    assert os.environ["TQDM_DISABLE"] == "0"


def test_importing_the_command_line_sets_no_switch() -> None:
    code = ("import os, hindsight_core, hindsight_core.cli, hindsight_core.cli.commands as c; c.build_parser(); "
            "print(sorted(k for k in os.environ if k.startswith(('TQDM_', 'HF_HUB_DISABLE'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_cli_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------------
# recall in packed order, with the reason
# ------------------------------------------------------------------------------------------------
def facts_answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    """A fact per message that tells something (no question), in the third person, citing that message."""
    if "summary" in schema.model_fields:
        return {"summary": "Ana runs."}
    body = messages[-1]["content"].split("Messages:\n", 1)[1]
    facts = []
    for label, text in re.findall(r"^\[([^\]]+)\] (?:\([^)]*\) )?\w+: (.*)$", body, flags=re.MULTILINE):
        if "?" not in text:
            fact = re.sub(r"\bmy\b", "her", re.sub(r"\bI\b", "Ana", text.rstrip(".")))
            facts.append({"text": f"{fact}.", "src": [label], "start": "", "end": ""})
    return {"facts": facts}


@pytest.fixture(scope="module")
def fact_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose bank ``runs`` holds six messages and the LLM facts citing them (default recall settings)."""
    folder = tmp_path_factory.mktemp("ordered") / "memory"
    with Hindsight.open(folder, llm=ScriptedLLM([facts_answer] * 20), start_worker=False) as hs:
        bank = hs.bank("runs")
        bank.retain(MESSAGES, timestamp=datetime(2024, 3, 1, 12, tzinfo=UTC), document_id="d1")
        while hs.worker.run_once():
            pass
        assert sum(1 for m in bank.memories(hs.store.units_of_document("runs", "d1")) if m.cites) >= 2
    return folder


def parse_listing(out: str) -> list[dict[str, Any]]:
    """The printed recall: per memory its rank, text, score and the reason line, if any."""
    rows: list[dict[str, Any]] = []
    for line in out.splitlines():
        if m := re.match(r"^\s*(\d+)\. (.*)$", line):
            rows.append({"rank": int(m.group(1)), "text": m.group(2), "why": None})
        elif m := re.match(r"^    score (\d\.\d+) ·", line):
            rows[-1]["score"] = float(m.group(1))
        elif line.startswith("    placed here: "):
            rows[-1]["why"] = line.removeprefix("    placed here: ")
    return rows


def test_recall_lists_memories_as_packed_and_says_why_one_is_out_of_score_order(fact_bank: Path) -> None:
    query = "Where did Ana race?"
    plain = hindsight("--path", str(fact_bank), "recall", "runs", query)
    assert plain.returncode == 0, plain.stderr
    rows = parse_listing(plain.stdout)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1)) and len(rows) >= 6
    # The order printed is the order packed (the JSON's memories, which a prompt would receive in that order).
    packed = json.loads(hindsight("--path", str(fact_bank), "--json", "recall", "runs", query, "--trace").stdout)
    assert [r["text"] for r in rows] == [m["text"] for m in packed["memories"]]
    # Not score order here: an LLM fact scored above messages packed before it, since its message came first.
    scores = [r["score"] for r in rows]
    assert scores != sorted(scores, reverse=True)
    explained = [r for r in rows if r["why"]]
    assert explained, plain.stdout
    for i, row in enumerate(rows):
        out_of_order = any(s > row["score"] for s in scores[i + 1:]) or any(s < row["score"] for s in scores[:i])
        if row["why"]:
            assert out_of_order, row  # a reason only where the order needs one
    # Every pair out of score order is explained by one of its two memories.
    for i, above in enumerate(rows):
        for below in rows[i + 1:]:
            if below["score"] > above["score"]:
                assert above["why"] or below["why"], (above, below)
    # The reason names the rule and the memory that decided the place, by its number in this listing.
    items = {item["memory_id"]: item for item in packed["trace"]["items"]}
    position = {m["id"]: n for n, m in enumerate(packed["memories"], start=1)}
    for row, memory in zip(rows, packed["memories"], strict=True):
        if row["why"] and (covered := items[memory["id"]]["covered_by"]):
            assert row["why"].startswith(f"its evidence was already shown by #{position[covered]},")
            cites, theirs = items[memory["id"]]["cites"] or [], items[covered]["cites"] or []
            # the same message: one cites the other, or both cite the same one
            assert covered in cites or memory["id"] in theirs or set(cites) & set(theirs), (memory, items[covered])
    assert "out of score order" in plain.stdout.splitlines()[-1]


def test_recall_in_score_order_prints_no_reason(fact_bank: Path) -> None:
    proc = hindsight("--path", str(fact_bank), "recall", "runs", "Where did Ana race?", "--max", "1")
    assert proc.returncode == 0, proc.stderr
    assert "placed here" not in proc.stdout and "out of score order" not in proc.stdout
    assert len(parse_listing(proc.stdout)) == 1


def test_context_beside_a_hit_names_the_hit(tmp_path: Path) -> None:
    # Neighbouring context is a setting of the library (off by default): packed after the first hit, the
    # messages around it come before better-scored ones, and the listing says whose neighbours they are.
    settings = Settings(recall=RecallSettings(context_after=1, context_hits=1))
    with Hindsight.open(tmp_path / "memory", settings=settings, start_worker=False) as hs:
        bank = hs.bank("runs")
        bank.retain(MESSAGES, timestamp=datetime(2024, 3, 1, 12, tzinfo=UTC), document_id="d1", extract=False)
        rec = bank.recall("Did Ana run a race along the Douro river in Porto?", trace=True)
    notes = placement_notes(rec)
    context = {i: n for i, n in notes.items() if n.startswith("context:")}
    assert context, format_recall(rec, 2000)
    assert all(n == "context: the memory just before or after #1 in its document" for n in context.values())
    assert set(context) <= {item.memory_id for item in rec.trace.items if item.context_of == rec.memories[0].id}
    printed = format_recall(rec, 2000)
    assert printed.count("placed here: context:") == len(context)


# ------------------------------------------------------------------------------------------------
# numeric options
# ------------------------------------------------------------------------------------------------
BOUNDS: dict[tuple[str, str], tuple[str, str, list[str]]] = {
    # (command, option): (lowest accepted, highest accepted, values refused)
    ("recall", "--budget"): ("1", str(MAX_BUDGET), ["0", "-5", "99999999999999999999999", "1e3", "abc", "1.5"]),
    ("recall", "--max"): ("1", str(MAX_MEMORIES), ["0", str(MAX_MEMORIES + 1), "9" * 40, "two"]),
    ("recall", "--as-of"): ("2024-03-05", "2024-03-05T18:00:00+02:00", ["not a date", "2024-13-45", "", "9" * 300]),
    ("recall", "--deadline-ms"): ("1", str(MAX_DEADLINE_MS), ["0", "-5", str(MAX_DEADLINE_MS + 1), "1e3", "1.5", "x"]),
    ("reflect", "--budget"): ("1", str(MAX_BUDGET), ["0", str(MAX_BUDGET + 1), "99999999999999999999999"]),
    ("reflect", "--skepticism"): ("1", "5", ["0", "6", "3.5", "99999999999999999999999"]),
    ("reflect", "--literalism"): ("1", "5", ["0", "6", "-1"]),
    ("reflect", "--empathy"): ("1", "5", ["0", "6", "x"]),
    ("reflect", "--bias"): ("0", "1", ["1e308", "-0.1", "1.01", "nan", "inf", "-inf", "half"]),
    ("reembed", "--batch-size"): ("1", str(MAX_BATCH), ["0", "-1", str(MAX_BATCH + 1), "1e9"]),
    ("audit", "--limit"): ("0", "999999999", ["-1", "9999999999", "1e3"]),
    ("audit", "--offset"): ("0", "999999999", ["-1", "99999999999999999999999"]),
    ("ui", "--port"): ("0", "65535", ["-1", "65536", "99999999999999999999999", "http"]),
    ("mcp", "--http"): ("127.0.0.1:0", "127.0.0.1:65535", ["127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:1e308"]),
}
REQUIRED = {"reembed": ["--embedder", "minilm", "b"], "recall": ["b", "q"], "reflect": ["b", "q"]}


def typed_options() -> Iterator[tuple[str, argparse.Action]]:
    """Every option of every ``hindsight`` command that converts its value (``type=``), with its command."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.option_strings and action.type is not None:
                yield name, action


def test_every_typed_option_of_every_command_has_a_bound() -> None:
    found = {(name, action.option_strings[-1]) for name, action in typed_options()}
    # A new numeric option without a bound in this table fails here (and one that went away, too).
    assert found == set(BOUNDS)


@pytest.mark.parametrize(("command", "option"), sorted(BOUNDS))
def test_a_numeric_option_takes_its_range_and_refuses_the_rest_on_one_line(
    command: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    low, high, refused = BOUNDS[(command, option)]
    parser = build_parser()
    for value in (low, high):
        parser.parse_args([command, *REQUIRED.get(command, []), option, value])  # accepted: no SystemExit
    for value in refused:
        capsys.readouterr()
        assert main([command, *REQUIRED.get(command, []), f"{option}={value}"]) == 2, value
        err = capsys.readouterr().err
        # argparse's usage, then the error on one line
        assert err.startswith(f"usage: hindsight {command}"), err
        errors = [line for line in err.splitlines() if "error" in line]
        assert len(errors) == 1 and errors[0] == err.strip().splitlines()[-1], err
        assert errors[0].startswith(f"hindsight {command}: error: argument {option}: "), err
        for leak in ("pydantic", "http://", "https://", "Traceback", "validation error"):
            assert leak not in err, (value, err)


def test_huge_budget_and_bias_are_refused_by_the_real_command(tmp_path: Path) -> None:
    store = str(tmp_path / "memory")
    budget = hindsight("--path", store, "recall", "b", "q", "--budget", "99999999999999999999999")
    assert budget.returncode == 2 and budget.stdout == ""
    assert budget.stderr.strip().splitlines()[-1] == ("hindsight recall: error: argument --budget: expected a whole "
                                                      "number from 1 to 100000, not '99999999999999999999999'")
    bias = hindsight("--path", store, "reflect", "b", "q", "--bias", "1e308")
    assert bias.returncode == 2
    assert bias.stderr.strip().splitlines()[-1] == ("hindsight reflect: error: argument --bias: expected a number "
                                                    "from 0 to 1, not '1e308'")
    assert not Path(store).exists()  # refused before anything opened


def test_the_bias_bound_is_the_dispositions() -> None:
    from hindsight_core.models import Disposition

    bias = Disposition.model_fields["bias"].metadata
    assert {type(m).__name__: getattr(m, "ge", getattr(m, "le", None)) for m in bias} == {"Ge": 0.0, "Le": 1.0}


def test_a_question_packed_after_its_answer_says_so(tmp_path: Path) -> None:
    # Raw messages (no model): the question shares the query's words and fuses first; the question rule packs it
    # after the answer, and the listing says why it is out of score order.
    folder = tmp_path / "memory"
    with Hindsight.open(folder, start_worker=False) as hs:
        hs.bank("q").retain([
            {"speaker": "Ana", "text": "Where should I run my first marathon next year?", "id": "q1"},
            {"speaker": "Bo", "text": "Lisbon in October: flat course, cool mornings, and the bridge at the start.",
             "id": "a1"}], timestamp=datetime(2024, 3, 1, 12, tzinfo=UTC), document_id="d1", extract=False)
    query = "Where should Ana run her first marathon?"
    packed = json.loads(hindsight("--path", str(folder), "--json", "recall", "q", query, "--trace").stdout)
    demoted = [i for i in packed["trace"]["items"] if i.get("demoted_as") == "question"]
    assert demoted, packed["trace"]["items"]
    out = hindsight("--path", str(folder), "recall", "q", query)
    assert out.returncode == 0, out.stderr
    rows = parse_listing(out.stdout)
    question = next(r for r in rows if r["text"].startswith("Ana: Where should I run"))
    assert question["why"] == "it only asks: packed after the next memory that says something", out.stdout
