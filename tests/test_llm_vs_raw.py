"""``hindsight bench llm-vs-raw`` on a tiny LoCoMo-shaped sample with a scripted model: exact accounting.

The scripted model answers from the window it is shown: most messages become one fact citing them, one is
dropped, one is merged into a fact that cites only its neighbour, one fact cites nothing, and one gets an
invented date. The benchmark must score both banks, explain each miss, count tokens and resume from its
workdir without calling the model again. Real stores and the real embedder.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_bench.llm_vs_raw import (
    CountingLLM,
    best_source,
    classify_miss,
    date_check,
    model_source_stats,
    run_llm_vs_raw,
    write_llm_vs_raw,
)
from hindsight_core.cli.commands import main
from hindsight_core.extract.fact_schema import output_model


def tiny_sample(sample_id: str = "tiny-a") -> dict[str, Any]:
    """Three short sessions in the LoCoMo shape (written for these tests), questions on each."""
    sessions = [
        [("Ines", "I finally adopted a grey rescue cat yesterday, her name is Pixel."),
         ("Marek", "Lovely! I spent the weekend repairing my sailboat in Gdynia."),
         ("Ines", "Pixel already knocked my coffee mug off the desk twice."),
         ("Marek", "My sister is moving to Toronto for a nursing job in spring.")],
        [("Marek", "How is Pixel settling in?"),
         ("Ines", "Very well, she sleeps on my keyboard while I work on my thesis about glaciers."),
         ("Marek", "I sold the sailboat and signed up for a pottery course, it beats writing a thesis."),
         ("Ines", "Pottery sounds relaxing, send me photos of your first bowl.")],
        [("Marek", "My first bowl cracked in the kiln, so I am starting over."),
         ("Ines", "Keep going, the second one will be better.")],
    ]
    dates = ["10:00 am on 2 March, 2024", "7:15 pm on 9 April, 2024", "8:00 am on 1 May, 2024"]
    conv: dict[str, Any] = {"speaker_a": "Ines", "speaker_b": "Marek"}
    for n, (turns, when) in enumerate(zip(sessions, dates, strict=True), start=1):
        conv[f"session_{n}_date_time"] = when
        conv[f"session_{n}"] = [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t}
                                for i, (s, t) in enumerate(turns, start=1)]
    return {
        "sample_id": sample_id,
        "conversation": conv,
        "qa": [
            {"question": "What is the name of Ines's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "What did Pixel knock off the desk?", "answer": "a coffee mug", "evidence": ["D1:3"],
             "category": 4},
            {"question": "What is Ines's thesis about?", "answer": "glaciers", "evidence": ["D2:2"], "category": 4},
            {"question": "Where is Marek's sister moving?", "answer": "Toronto", "evidence": ["D1:4"], "category": 1},
            {"question": "What happened to Marek's first bowl?", "answer": "it cracked", "evidence": ["D3:1"],
             "category": 4},
        ],
    }


def _window(messages: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    body = messages[-1]["content"].split("Messages:\n", 1)[1]
    return re.findall(r"^\[([^\]]+)\] (?:\([^)]*\) )?(\w+): (.*)$", body, flags=re.MULTILINE)


def _fact(text: str, src: list[str], start: str = "") -> dict[str, Any]:
    return {"text": text, "src": src, "net": "world", "start": start, "end": start, "conf": 0, "who": [],
            "ents": [], "rel": []}


def scripted_answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    """One fact per message, except: D1:3 dropped, D2:2 merged into D2:3's fact, D1:4's fact without src,
    D1:1's fact dated 2020 (the message says "yesterday"), D2:1 (a question) skipped."""
    facts = []
    for msg_id, speaker, text in _window(messages):
        if msg_id in ("D1:3", "D2:1", "D2:2"):
            continue
        if msg_id == "D1:1":
            facts.append(_fact("Ines adopted a grey rescue cat named Pixel.", [msg_id], start="2020-01-01"))
        elif msg_id == "D1:4":
            facts.append(_fact("Marek's sister is moving to Toronto for a nursing job.", []))
        elif msg_id == "D2:3":
            facts.append(_fact("Marek sold the sailboat for a pottery course and mentioned the keyboard thesis about "
                               "glaciers.", [msg_id]))
        else:  # the message in the third person, as facts are written (the checks reject a first-person fact)
            third = re.sub(r"\b(?:my|me|your|you)\b", "their", re.sub(r"\bI\b", speaker, text), flags=re.IGNORECASE)
            facts.append(_fact(f"{speaker} said that {third}", [msg_id]))
    return {"facts": facts}


def _llm(answers: int) -> ScriptedLLM:
    return ScriptedLLM([scripted_answer] * answers)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("llm-vs-raw") / "tiny.json"
    path.write_text(json.dumps([tiny_sample()]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, ScriptedLLM]:
    workdir = tmp_path_factory.mktemp("llm-vs-raw-work")
    llm = _llm(2)
    result = run_llm_vs_raw(data, conversations=["tiny-a"], sessions=2, llm=llm, workdir=workdir, log=lambda _: None)
    return result, workdir, llm


def test_scores_only_questions_within_the_retained_sessions(run: tuple[dict[str, Any], Path, ScriptedLLM]) -> None:
    result, _, llm = run
    summary = result["summary"]
    assert summary["questions"] == 4  # the D3 question is out: only two sessions were retained
    assert summary["messages"] == 8
    assert len(llm.calls) == 2  # one window per four-message session
    assert summary["recall"]["raw"]["R@10"]["all"] == 100.0  # eight units: everything is in the top 10
    # The facts bank lost D1:3 (dropped) and D2:2 (merged): two of four questions.
    assert summary["recall"]["facts"]["R@10"]["all"] == 50.0
    assert summary["recall"]["facts"]["R@10 1-src"]["all"] == 50.0  # every scripted fact has one source
    assert summary["misses_at_10"] == {"dropped": 1, "merged": 1}
    assert summary["evidence_cited_anywhere"] == 50.0
    assert set(summary["recall"]["facts"]["R@10"]) == {"single-hop", "multi-hop", "all"}
    # Raw first, facts later keeps every raw unit: nothing the raw bank finds is lost.
    for bank in ("raw+facts", "raw+facts as ranked", "raw+facts as keys"):
        assert summary["recall"][bank]["R@10"]["all"] == 100.0
        assert summary["recall"][bank]["R@1000tok"]["all"] == 100.0


def test_explains_each_miss(run: tuple[dict[str, Any], Path, ScriptedLLM]) -> None:
    result, _, _ = run
    questions = {q["question"]: q for q in result["per_conversation"]["tiny-a"]["questions"]}
    (dropped,) = questions["What did Pixel knock off the desk?"]["facts"]["misses"]
    assert dropped["kind"] == "dropped" and dropped["id"] == "D1:3"
    (merged,) = questions["What is Ines's thesis about?"]["facts"]["misses"]
    assert merged["kind"] == "merged" and merged["fact_sources"] == ["D2:3"]
    assert questions["Where is Marek's sister moving?"]["facts"]["misses"] == []  # attributed by word overlap


def test_counts_cost_sources_and_dates(run: tuple[dict[str, Any], Path, ScriptedLLM]) -> None:
    result, _, _ = run
    summary = result["summary"]
    ex, facts = summary["extraction"], summary["facts"]
    assert ex["calls"] == 2 and ex["windows"] == 2 and ex["malformed_answers"] == 0
    assert ex["prompt_tokens"] > 150 * 2  # the system prompt alone is over a hundred tokens per call
    assert 0 < ex["completion_tokens"] < ex["prompt_tokens"]
    assert ex["tokens_per_message"] == pytest.approx((ex["prompt_tokens"] + ex["completion_tokens"]) / 8)
    assert ex["seconds_per_message"] > 0 and ex["raw_seconds_per_message"] > 0
    assert 0 < ex["retain_returned_seconds_per_message"] < 5  # the retain call returned after the raw units
    assert ex["load_average"] is not None and facts["messages_cited_share"] == 5 / 8
    assert ex["server_tokens"]["prompt_tokens"] is None  # a scripted model reports no usage
    assert facts["count"] == 5 and facts["without_sources"] == 0
    assert facts["model_answers"]["facts"] == 5 and facts["model_answers"]["no_src"] == 1
    assert facts["messages_cited"] == 5  # D1:1, D1:2, D1:4 (attributed), D2:3, D2:4
    # The lean schema takes no date from the model: the invented 2020 date of D1:1's fact is never read, and the
    # facts' dates come from their words and their messages' times (date_check itself: the last test).
    assert facts["dates_shifted"] == 0 and facts["dates_missed"] == 0 and facts["date_examples"] == []


def test_resumes_from_the_workdir_without_calling_the_model(
    run: tuple[dict[str, Any], Path, ScriptedLLM], data: Path
) -> None:
    result, workdir, _ = run
    silent = ScriptedLLM([])  # any call fails the test
    again = run_llm_vs_raw(data, conversations=["tiny-a"], sessions=2, llm=silent, workdir=workdir,
                           log=lambda _: None)
    assert silent.calls == []
    assert again["summary"]["recall"] == result["summary"]["recall"]
    assert again["summary"]["extraction"]["calls"] == 2  # the recorded cost, not a new one


def test_replays_recorded_answers_without_a_model(
    run: tuple[dict[str, Any], Path, ScriptedLLM], data: Path, tmp_path: Path
) -> None:
    result, workdir, _ = run
    again = run_llm_vs_raw(data, conversations=["tiny-a"], sessions=2, replay_from=workdir, workdir=tmp_path / "w",
                           log=lambda _: None)
    assert again["replayed_from"] == str(workdir)
    assert again["summary"]["recall"] == result["summary"]["recall"]
    assert again["summary"]["extraction"]["model"] == "scripted (replayed)"
    assert again["summary"]["extraction"]["seconds"] == result["summary"]["extraction"]["seconds"]
    with pytest.raises(ValueError, match="another workdir"):
        run_llm_vs_raw(data, conversations=["tiny-a"], sessions=2, replay_from=workdir, workdir=workdir)


def test_writes_json_and_markdown(run: tuple[dict[str, Any], Path, ScriptedLLM], tmp_path: Path) -> None:
    result, _, _ = run
    paths = write_llm_vs_raw(tmp_path, result)
    assert [p.name for p in paths] == ["llm-vs-raw.json", "llm-vs-raw.md"]
    assert json.loads(paths[0].read_text())["summary"]["questions"] == 4
    text = paths[1].read_text()
    assert "| category | n | raw | facts | raw+facts | raw+facts as ranked | raw+facts as keys |" in text
    assert "D1:3 dropped" in text and "D2:2 merged" in text


def test_cli_rejects_unknown_conversations(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "llm-vs-raw", "--data", str(data), "--conversations", "conv-99", "--out", str(tmp_path)])
    assert code == 2
    assert "unknown conversation" in capsys.readouterr().err


def test_counting_llm_records_tokens_and_malformed_answers() -> None:
    inner = ScriptedLLM([{"facts": []}, "not json"])
    counting = CountingLLM(inner, counter=lambda text: len(text.split()))
    msgs: list[Any] = [{"role": "system", "content": "a b c"}, {"role": "user", "content": "Messages:\n[X:1] (t) d"}]
    counting.generate(msgs, output_model(6))
    with pytest.raises(Exception, match="scripted output"):
        counting.generate(msgs, output_model(6))
    first, second = counting.calls
    assert first.prompt_tokens == 3 + 4 and first.answer == {"facts": []} and first.window_ids() == ["X:1"]
    assert second.malformed and second.answer is None and second.completion_tokens == 2
    assert model_source_stats([{"answer": None, "window": []}])["malformed_answers"] == 1


def test_model_source_stats_reads_each_windows_last_answer() -> None:
    def call(window: list[str], *srcs: list[str], previous: str | None = None) -> dict[str, Any]:
        return {"window": window, "previous": previous, "answer": {"facts": [{"src": s} for s in srcs]}}

    calls = [
        call(["D1:1", "D1:2"], ["D1:1"], ["D1:1"]),  # rejected (a loop), retried:
        call(["D1:1", "D1:2"], ["D1:1"], []),
        call(["D1:3", "D1:4", "D1:5"], ["D1:2", "D1:3"], ["D1:3", "D1:4", "D1:5"], ["D9:9"], previous="D1:2"),
    ]
    stats = model_source_stats(calls)
    assert stats == {"facts": 5, "no_src": 1, "only_invalid_src": 1, "some_invalid_src": 1, "cites_context_line": 1,
                     "three_or_more_src": 1, "retried_windows": 1, "malformed_answers": 0}
    old_records = [{k: v for k, v in c.items() if k != "previous"} for c in calls]  # inferred from the order
    assert model_source_stats(old_records)["cites_context_line"] == 1


def test_best_source_keeps_the_message_a_fact_repeats() -> None:
    messages = {"D1:1": {"text": "Thanks, Mel!"}, "D1:2": {"text": "I painted that lake sunrise last year."},
                "D1:3": {"text": "The colors blend nicely."}}
    assert best_source("Melanie painted a lake sunrise.", ["D1:1", "D1:2", "D1:3"], messages) == ["D1:2"]
    assert best_source("Anything.", ["D1:3"], messages) == ["D1:3"]


def test_classify_miss_ranked_low_and_date_check() -> None:
    messages = {"D1:1": {"text": "I adopted a cat named Pixel.", "session": "s1",
                         "time": datetime(2024, 3, 2, 10, tzinfo=UTC)}}
    facts = [{"text": "Ines adopted a cat named Pixel.", "sources": ["D1:1"],
              "occurred": ["2024-03-02T10:00:00+00:00", "2024-03-02T10:00:00+00:00"]}]
    ranked = [SimpleNamespace(sources=[f"D9:{i}"]) for i in range(12)] + [SimpleNamespace(sources=["D1:1"])]
    miss = classify_miss("D1:1", ranked, facts, messages)
    assert miss["kind"] == "ranked low" and miss["rank"] == 13
    assert date_check(facts[0], messages) is None  # the day it was said, and nothing says otherwise
    moved = {**facts[0], "occurred": ["2024-02-20T00:00:00+00:00", "2024-02-20T23:59:59+00:00"]}
    shifted = date_check(moved, messages)
    assert shifted is not None and (shifted["kind"], shifted["gap_days"]) == ("shifted", 11)
    messages["D1:2"] = {"text": "I painted that lake last year!", "session": "s1",
                        "time": datetime(2024, 3, 2, 10, tzinfo=UTC)}
    painted = {"text": "Melanie painted a lake.", "sources": ["D1:2"], "occurred": facts[0]["occurred"]}
    assert date_check(painted, messages)["kind"] == "missed"  # type: ignore[index]
    in_2023 = {**painted, "occurred": ["2023-01-01T00:00:00+00:00", "2023-12-31T23:59:59+00:00"]}
    assert date_check(in_2023, messages) is None
    annotated = {**painted, "text": "Melanie painted a lake last year (2023)."}  # dated 2 March 2024 above
    assert date_check({**annotated, "occurred": facts[0]["occurred"]}, messages)["kind"] == "contradicts text"  # type: ignore[index]


def test_a_file_of_other_chats_is_dev_data_as_a_whole() -> None:
    """realtalk_dev.json and the like: ``--split dev`` is every conversation, ``--split test`` an error."""
    from hindsight_bench.llm_vs_raw import sessions_for
    from hindsight_bench.locomo import split_samples

    other = [tiny_sample("chat-a"), tiny_sample("chat-b")]
    assert [s["sample_id"] for s in split_samples(other, "dev")] == ["chat-a", "chat-b"]
    with pytest.raises(ValueError, match="dev data only"):
        split_samples(other, "test")
    locomo = [tiny_sample("conv-26"), tiny_sample("conv-44")]
    assert [s["sample_id"] for s in split_samples(locomo, "test")] == ["conv-44"]
    # Sessions: the first N giving the questions wanted, or the messages cap, whichever comes first.
    assert sessions_for(other, 100) == 3
    assert sessions_for(other, 100, max_messages=8) == 1
    assert sessions_for(other, 7, max_messages=100) == 2
