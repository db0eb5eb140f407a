"""The labelled update set (``benchmarks/hindsight_bench/data/updates.jsonl``) and ``hindsight bench updates``."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_bench.cli import main
from hindsight_bench.updates import DATA, MessageIndex, judge_supersessions, load, outranks, run_updates, summarise
from hindsight_core.models import FACT_CITES_KEY, Memory

UPDATE_KINDS = {"home", "job", "employer", "relationship", "pet", "vehicle", "diet", "team", "studies", "event_date",
                "travel_plan", "habit", "device", "hobby", "health", "name", "gym", "language", "sport", "commute"}
LOOKALIKE_TYPES = {"other_person", "addition", "visit", "hypothetical", "question", "past_story", "repetition",
                   "negation", "temporary", "intention"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    """Every row of the data file, in order."""
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_set_meets_its_targets_and_its_meta_row_counts_it(rows: list[dict[str, Any]]) -> None:
    assert "_meta" in rows[0]
    data = load()
    kinds = Counter(c["kind"] for c in data.cases)
    assert kinds["update"] >= 130 and kinds["lookalike"] >= 70
    assert len({c["attribute"] for c in data.cases if c["kind"] == "update"}) >= 16
    assert {c["lookalike"] for c in data.cases if c["kind"] == "lookalike"} >= {
        "other_person", "addition", "visit", "hypothetical", "question", "past_story", "repetition"}
    assert 0 < sum(c["third_person"] for c in data.cases if c["kind"] == "update") < kinds["update"] // 4
    assert sum(c["cue"] == "implicit" for c in data.cases) > 0
    counts = data.meta["counts"]
    assert (counts["updates"], counts["lookalikes"], counts["conversations"]) == (
        kinds["update"], kinds["lookalike"], len(data.conversations))
    assert counts["messages"] == sum(len(s["messages"]) for c in data.conversations.values() for s in c["sessions"])
    assert len(rows) == 1 + len(data.conversations) + len(data.cases)


def test_conversations_are_multi_speaker_multi_session_chats_with_filler(rows: list[dict[str, Any]]) -> None:
    data = load()
    for cid, conv in data.conversations.items():
        assert 2 <= len(conv["speakers"]) <= 4, cid
        dates = [datetime.fromisoformat(s["date"]) for s in conv["sessions"]]
        assert len(dates) >= 3 and dates == sorted(dates) and len(set(dates)) == len(dates), cid
        assert (dates[-1] - dates[0]).days >= 90, cid
        messages = [m for s in conv["sessions"] for m in s["messages"]]
        assert len(messages) >= 40, cid
        ids = [m["id"] for m in messages]
        assert len(ids) == len(set(ids)), cid
        for s in conv["sessions"]:
            assert all(m["id"].startswith(f"D{s['session']}:") for m in s["messages"]), cid
        assert all(m["speaker"] in conv["speakers"] and m["text"].strip() for m in messages), cid
        used = {c[k] for c in data.cases if c["conversation"] == cid for k in ("original", "later")}
        assert len(used) == 2 * sum(1 for c in data.cases if c["conversation"] == cid), cid  # one case per message
        assert len(messages) - len(used) >= 10, cid  # unlabelled filler between the cases


def test_every_case_names_real_messages_in_order_with_its_questions() -> None:
    data = load()
    for case in data.cases:
        conv = data.conversations[case["conversation"]]
        said = {m["id"]: (datetime.fromisoformat(s["date"]), m["speaker"])
                for s in conv["sessions"] for m in s["messages"]}
        assert case["original"] in said and case["later"] in said, case["case"]
        assert said[case["later"]][0] > said[case["original"]][0], case["case"]
        assert case["split"] == conv["split"] and case["said_by"] == said[case["later"]][1], case["case"]
        assert case["kind"] in ("update", "lookalike") and case["attribute"] in UPDATE_KINDS, case["case"]
        present, past = case["questions"]["present"], case["questions"]["past"]
        assert present["question"].endswith("?"), case["case"]
        if case["kind"] == "update":
            assert case["cue"] in ("explicit", "implicit") and case["new_value"], case["case"]
            assert present["expect"] == [case["later"]], case["case"]
            assert past["question"].endswith("?") and past["expect"] == [case["original"]], case["case"]
            if "time_range" in past:  # an explicit window holds the original and ends before the update was said
                start, end = (datetime.fromisoformat(t).date() for t in past["time_range"])
                assert start <= said[case["original"]][0].date() <= end < said[case["later"]][0].date(), case["case"]
        else:
            assert case["lookalike"] in LOOKALIKE_TYPES and past is None, case["case"]
            restates = case["lookalike"] in ("repetition", "negation")
            assert present["expect"] == ([case["original"], case["later"]] if restates else [case["original"]])


def test_the_split_is_by_conversation_and_about_half_each() -> None:
    data = load()
    by_split = Counter(c["split"] for c in data.cases)
    assert set(by_split) == {"dev", "test"}
    # Dev grows with conversations written to test whether the rules generalise; test stays fixed, so that its
    # figures compare across rounds, and large enough to report.
    assert by_split["dev"] >= by_split["test"] >= 0.25 * len(data.cases)
    for split in ("dev", "test"):
        part = data.select(split)
        assert part.cases and all(c["split"] == split for c in part.cases)
        assert {c["conversation"] for c in part.cases} == set(part.conversations)
    assert not set(data.select("dev").conversations) & set(data.select("test").conversations)


def _memory(mid: str, sources: list[str], cites: list[str] | None = None, superseded_by: str | None = None) -> Memory:
    """A real ``Memory`` as a bank returns it. ``superseded_by`` is kept in the memory's metadata (where the library
    records it, read back by ``Memory.superseded_by``); on a library without that property it is set as a field."""
    metadata: dict[str, Any] = {FACT_CITES_KEY: cites} if cites is not None else {}
    if superseded_by:
        metadata["superseded_by"] = superseded_by
    memory = Memory(id=mid, bank_id="b", text=mid, sources=sources, metadata=metadata)
    if superseded_by and getattr(memory, "superseded_by", None) != superseded_by:
        memory = memory.model_copy(update={"superseded_by": superseded_by})
    return memory


def test_message_ranks_take_the_best_memory_citing_a_message_and_supersessions_are_judged() -> None:
    old, new = _memory("m1", ["D1:2"], superseded_by="f1"), _memory("m2", ["D3:1"])
    fact = _memory("f1", [], cites=["m2"])  # a fact citing the message memory m2: it stands for D3:1
    look = _memory("m3", ["D1:5"], superseded_by="m4")
    index = MessageIndex([old, new, fact, look, _memory("m4", ["D4:2"])])
    ranks = index.ranks([fact, old, new])
    assert ranks == {"D3:1": 1, "D1:2": 2}
    assert outranks(ranks, "D3:1", "D1:2") and not outranks(ranks, "D1:2", "D3:1")
    assert outranks(ranks, "D1:2", "D9:9") and not outranks(ranks, "D8:8", "D9:9")
    cases = [{"case": "u", "kind": "update", "original": "D1:2", "later": "D3:1"},
             {"case": "l", "kind": "lookalike", "original": "D1:5", "later": "D4:2"}]
    judged = judge_supersessions(index, cases)
    assert judged["updates_found"] == ["u"] and judged["lookalikes_superseded"] == ["l"]
    metrics = summarise([{"cases": [{"kind": "update", "current_outranks": True, "past_found": False},
                                    {"kind": "lookalike", "current_outranks": True}], **judged}])
    assert metrics["supersession_precision"] == 0.5 and metrics["supersession_recall"] == 1.0
    assert metrics["lookalikes_wrongly_superseded"] == 1 and metrics["lookalikes_wrongly_superseded_share"] == 1.0


def test_the_bench_scores_a_slice_on_the_raw_path_with_real_stores(tmp_path: Path) -> None:
    data = load()
    dev = next(c for c, v in data.conversations.items() if v["split"] == "dev")
    test = next(c for c, v in data.conversations.items() if v["split"] == "test")
    result = run_updates("all", conversations=[dev, test], workdir=tmp_path, log=lambda _: None)
    assert set(result["paths"]) == {"raw"}
    run = result["paths"]["raw"]
    for split, cid in (("dev", dev), ("test", test)):
        metrics = run["splits"][split]
        cases = [c for c in data.cases if c["conversation"] == cid]
        assert metrics["updates"] == sum(c["kind"] == "update" for c in cases)
        assert metrics["lookalikes"] == sum(c["kind"] == "lookalike" for c in cases)
        assert metrics["past_questions"] == metrics["updates"]
        for key in ("current_outranks", "lookalike_original_outranks", "past_found", "supersession_precision",
                    "supersession_recall", "lookalikes_wrongly_superseded_share"):
            assert 0.0 <= metrics[key] <= 1.0, key
        assert metrics["past_found"] > 0  # raw recall finds some old statements within the first 10
        assert 0 <= metrics["supersessions_correct"] <= metrics["supersessions_made"]
    ranked = [r for conv in run["conversations"] for r in conv["cases"]]
    assert len(ranked) == sum(1 for c in data.cases if c["conversation"] in (dev, test))
    assert any(r["original_rank"] is not None for r in ranked)
    assert (tmp_path / "raw").is_dir()  # the banks were kept in the workdir


def test_a_kept_workdir_is_scored_again_without_retaining_under_other_recall_settings(tmp_path: Path) -> None:
    from hindsight_core.hindsight import Hindsight

    data = load()
    cid = next(c for c, v in data.conversations.items() if v["split"] == "dev")
    first = run_updates("dev", conversations=[cid], workdir=tmp_path, log=lambda _: None)
    with Hindsight.open(tmp_path / "raw") as hs:
        ids = hs.store.unit_ids(f"updates-{cid}")
    lines: list[str] = []
    again = run_updates("dev", conversations=[cid], workdir=tmp_path, log=lines.append, reuse=True,
                        recall=["later_first_depth=0"])
    assert any("kept bank reused" in line for line in lines) and again["recall"] == ["later_first_depth=0"]
    assert again["paths"]["raw"]["recall_settings"] == {"later_first_depth": 0}
    assert first["paths"]["raw"]["recall_settings"] == {}
    with Hindsight.open(tmp_path / "raw") as hs:
        assert hs.store.unit_ids(f"updates-{cid}") == ids  # scored as kept: a retain would make new ids
    # The same bank and settings score the same; later-first off can only lose the current memory its place.
    same = run_updates("dev", conversations=[cid], workdir=tmp_path, log=lambda _: None, reuse=True)
    assert same["paths"]["raw"]["splits"] == first["paths"]["raw"]["splits"]
    assert (again["paths"]["raw"]["splits"]["dev"]["current_outranks"]
            <= first["paths"]["raw"]["splits"]["dev"]["current_outranks"])
    with pytest.raises(ValueError, match="unknown recall setting"):
        run_updates("dev", conversations=[cid], workdir=tmp_path, log=lambda _: None, reuse=True,
                    recall=["no_such_setting=1"])
    with pytest.raises(ValueError, match="workdir"):
        run_updates("dev", conversations=[cid], log=lambda _: None, reuse=True)


def test_the_command_prints_json_for_one_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load()
    cid = next(c for c, v in data.conversations.items() if v["split"] == "test")
    assert main(["updates", "--split", "test", "--conversations", cid, "--json", "--workdir", str(tmp_path / "w"),
                 "--out", str(tmp_path / "out")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["conversations"] == [cid] and set(result["paths"]["raw"]["splits"]) == {"test"}
    assert json.loads((tmp_path / "out" / "updates.json").read_text())["conversations"] == [cid]
    assert "current outranks" in (tmp_path / "out" / "updates.md").read_text()
    assert main(["updates", "--split", "dev", "--conversations", cid]) == 2  # a test conversation is not in dev


def test_the_misses_name_each_failed_case_with_its_messages() -> None:
    from hindsight_bench.updates import UpdateSet, format_misses

    conv = {"conversation": "c", "split": "dev", "sessions": [{"session": 1, "date": "2024-01-01T00:00:00+00:00",
            "messages": [{"id": "D1:1", "speaker": "Ana", "text": "I live in Lisbon."},
                         {"id": "D2:1", "speaker": "Ana", "text": "We moved to Porto."}]}]}
    case = {"case": "u", "conversation": "c", "kind": "update", "attribute": "home", "original": "D1:1",
            "later": "D2:1"}
    data = UpdateSet({}, {"c": conv}, [case])
    row = {"case": "u", "kind": "update", "original_rank": 1, "later_rank": 2, "current_outranks": False,
           "past_found": True}
    result = {"paths": {"raw": {"conversations": [{"conversation": "c", "cases": [row], "updates_found": [],
              "supersessions": [{"old": "a", "new": "b", "correct": False}]}]}}}
    text = format_misses(result, data)
    assert "WRONG [c] 'a' -> 'b'" in text and "not found, outranked" in text and "Ana: We moved to Porto." in text
    assert "past missed" not in text
