"""``hindsight bench`` end to end on tiny inputs: results files, plots and sane, correctly computed metrics.

The benchmarks are their own distribution (``benchmarks/``, ``hindsight-memory-bench``); these tests reach them
through the engine's ``hindsight bench`` (``hindsight_core.cli.commands``), which hands over to ``hindsight_bench.cli``.

Real stores and the real embedder throughout; the QA benchmark runs once with a scripted model (exact
accounting) and once with the real local model (``llm`` marker).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hindsight_core.cli.commands import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def tiny_locomo(sample_id: str = "bench-tiny") -> dict[str, Any]:
    """Two sessions in the LoCoMo shape with five questions (written for these tests)."""
    s1 = [
        ("Ines", "I finally adopted a grey rescue cat, her name is Pixel."),
        ("Marek", "Lovely! I spent the weekend repairing my sailboat in Gdynia."),
        ("Ines", "Pixel already knocked my coffee mug off the desk twice."),
        ("Marek", "My sister is moving to Toronto for a nursing job in spring."),
    ]
    s2 = [
        ("Marek", "How is Pixel settling in?"),
        ("Ines", "Very well, she sleeps on my keyboard while I work on my thesis about glaciers."),
        ("Marek", "I sold the sailboat and signed up for a pottery course."),
        ("Ines", "Pottery sounds relaxing, send me photos of your first bowl."),
    ]

    def session(n: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)]

    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ines", "speaker_b": "Marek",
            "session_1_date_time": "10:00 am on 2 March, 2024", "session_1": session(1, s1),
            "session_2_date_time": "7:15 pm on 9 April, 2024", "session_2": session(2, s2),
        },
        "qa": [
            {"question": "What is the name of Ines's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Marek repair his sailboat?", "answer": "Gdynia", "evidence": ["D1:2"],
             "category": 4},
            {"question": "What is Ines's thesis about?", "answer": "glaciers", "evidence": ["D2:2"], "category": 4},
            {"question": "What did Marek do with the sailboat he repaired?", "answer": "He sold it",
             "evidence": ["D1:2", "D2:3"], "category": 1},
            {"question": "Where is Marek's sister moving?", "answer": "Toronto", "evidence": ["D1:4"], "category": 3},
            {"question": "Is Marek a sailor?", "adversarial_answer": "no", "evidence": ["D1:2"], "category": 5},
        ],
    }


def assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 2000, path
    assert path.read_bytes()[:8] == PNG_MAGIC


def assert_percent(value: float) -> None:
    assert 0.0 <= value <= 100.0


# --------------------------------------------------------------------------------------------------
# locomo
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def locomo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    tmp = tmp_path_factory.mktemp("locomo")
    data = tmp / "tiny_locomo.json"
    data.write_text(json.dumps([tiny_locomo(), tiny_locomo("second")]), encoding="utf-8")
    out = tmp / "results"
    code = main(["bench", "locomo", "--data", str(data), "--conversations", "1", "--out", str(out),
                 "--no-progress", "--latency-every", "1"])
    assert code == 0
    return out, json.loads((out / "locomo.json").read_text()), (out / "locomo.md").read_text()


def test_locomo_writes_json_markdown_and_plots(locomo_run: tuple[Path, dict[str, Any], str]) -> None:
    out, result, markdown = locomo_run
    for name in ("locomo_budget_by_category.png", "locomo_topk.png", "locomo_ablations.png"):
        assert_png(out / name)
    assert result["benchmark"] == "locomo" and result["backend"] == "embedded"
    assert result["conversations"] == 1 and result["units"] == 8
    assert result["questions"] == 6  # the adversarial question has evidence too, so retrieval scores it
    assert "git_commit" in result["run"] and result["run"]["cpus"] >= 1
    assert "| full |" in markdown and "| no-graph |" in markdown and "DRAGON (published)" in markdown
    assert "full by category:" in markdown and "| single-hop | 3 |" in markdown


def test_locomo_split_selects_a_half_and_reports_each(tmp_path: Path) -> None:
    """conv-26 is in the dev half, conv-44 in the test half: ``--split`` picks one, ``all`` reports both."""
    data = tmp_path / "halves.json"
    data.write_text(json.dumps([tiny_locomo("conv-26"), tiny_locomo("conv-44")]), encoding="utf-8")
    runs = {}
    for split in ("test", "all"):
        out = tmp_path / split
        assert main(["bench", "locomo", "--data", str(data), "--split", split, "--configs", "full,keyword-only",
                     "--out", str(out), "--no-progress"]) == 0
        runs[split] = (json.loads((out / "locomo.json").read_text()), (out / "locomo.md").read_text())
    test, _ = runs["test"]
    assert test["split"] == "test" and test["conversations"] == 1 and test["units"] == 8
    assert {q["sample_id"] for q in test["per_question"]} == {"conv-44"}
    both, markdown = runs["all"]
    recall = both["configs"]["full"]["recall"]["R@10"]
    assert both["configs"]["full"]["questions_per_category"]["split:dev"] == 6
    assert recall["split:test"] == test["configs"]["full"]["recall"]["R@10"]["all"]
    assert "By half" in markdown and "| full | test | 6 |" in markdown and "full, dev half, by category:" in markdown


def test_locomo_reuse_keeps_fully_retained_banks_and_records_the_embedder(tmp_path: Path) -> None:
    """``--reuse`` with ``--workdir`` skips retaining a conversation already stored, with the same scores;
    a bank missing a session is retained again."""
    data = tmp_path / "one.json"
    data.write_text(json.dumps([tiny_locomo("conv-26")]), encoding="utf-8")
    work = tmp_path / "work"
    args = ["bench", "locomo", "--data", str(data), "--configs", "full", "--workdir", str(work), "--no-progress"]
    assert main([*args, "--reuse", "--embedder", "minilm", "--out", str(tmp_path / "a")]) == 0
    first = json.loads((tmp_path / "a" / "locomo.json").read_text())
    assert main([*args, "--reuse", "--out", str(tmp_path / "b")]) == 0
    second = json.loads((tmp_path / "b" / "locomo.json").read_text())
    assert first["reused_banks"] == 0 and first["retain_units_per_s"] > 0
    assert second["reused_banks"] == 1 and second["retain_units_per_s"] is None
    assert first["embedder"] == second["embedder"] == "all-MiniLM-L6-v2"
    assert second["units"] == first["units"] == 8
    assert second["configs"]["full"]["recall"] == first["configs"]["full"]["recall"]
    # A session deleted from the kept bank: the conversation is retained again, not reused half-filled.
    from hindsight_core import Hindsight

    with Hindsight.open(work, start_worker=False) as hs:
        bank = hs.bank("locomo-conv-26", create=False)
        bank.forget(document_id=bank.documents()[0].id)
    assert main([*args, "--reuse", "--out", str(tmp_path / "c")]) == 0
    third = json.loads((tmp_path / "c" / "locomo.json").read_text())
    assert third["reused_banks"] == 0 and third["units"] == 8
    # --reuse without --workdir has nothing to reuse: a usage error, not a silent full run.
    assert main(["bench", "locomo", "--data", str(data), "--reuse", "--out", str(tmp_path / "e")]) == 2


def test_locomo_runs_every_ablation_and_the_metrics_are_sane(
        locomo_run: tuple[Path, dict[str, Any], str]) -> None:
    _, result, _ = locomo_run
    configs = result["configs"]
    assert list(configs) == ["full", "no-semantic", "no-keyword", "no-graph", "no-temporal", "semantic-only",
                             "keyword-only"]
    assert configs["no-graph"]["channels"] == ["semantic", "keyword", "temporal"]
    for cfg in configs.values():
        rec = cfg["recall"]
        for metric in rec.values():
            for value in metric.values():
                assert_percent(value)
        # More memories, or more tokens, never cover less evidence.
        ks = [rec[f"k={k}"]["all"] for k in (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50)]
        assert all(a <= b + 1e-9 for a, b in itertools.pairwise(ks))
        budgets = [rec[f"tok={b}"]["all"] for b in (100, 250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000)]
        assert all(a <= b + 1e-9 for a, b in itertools.pairwise(budgets))
        assert cfg["questions_per_category"]["all"] == 6
    full = configs["full"]["recall"]
    # Eight units in the bank: the semantic channel returns all of them, so everything is within the top 25.
    assert full["R@25"]["all"] == 100.0 and full["R@2000tok"]["all"] == 100.0
    # The exact-name questions are answered by their first hit.
    first = {q["question"]: q["first_evidence_rank"] for q in result["per_question"]}
    assert first["What is the name of Ines's cat?"] == 1
    assert first["Where did Marek repair his sailboat?"] == 1
    # Full-pipeline latency is timed on every question.
    assert configs["full"]["latency_ms"]["n"] == 6 and configs["full"]["latency_ms"]["median"] > 0


def test_locomo_on_several_backends_writes_a_comparison(tmp_path: Path) -> None:
    from hindsight_bench.backends import open_embedded
    from hindsight_bench.locomo import run_locomo_backends, write_locomo

    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([tiny_locomo()]), encoding="utf-8")
    logged: list[str] = []
    combined = run_locomo_backends(data, {"embedded": open_embedded, "embedded-again": open_embedded},
                                   workdir=tmp_path / "work", configs={"full": None}, limit_questions=3,
                                   progress=False, log=logged.append)
    comp = combined["comparison"]
    assert list(comp) == ["embedded", "embedded-again"]
    # Same engine, same data: the same evidence recall; both latencies measured.
    assert comp["embedded"]["recall"] == comp["embedded-again"]["recall"]
    assert all(c["latency_ms"]["median"] > 0 and c["latency_ms"]["p95"] > 0 for c in comp.values())
    written = write_locomo(tmp_path / "out", combined)
    assert (tmp_path / "out" / "embedded" / "locomo.json").is_file()
    assert (tmp_path / "out" / "embedded-again" / "locomo.md").is_file()
    assert_png(tmp_path / "out" / "embedded" / "locomo_topk.png")
    compare_md = (tmp_path / "out" / "locomo-compare.md").read_text()
    assert "| embedded |" in compare_md and "| embedded-again |" in compare_md and "p95 ms" in compare_md
    assert tmp_path / "out" / "locomo-compare.json" in written
    assert any("backends side by side" in line for line in logged)


def test_unknown_backend_and_config_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([tiny_locomo()]), encoding="utf-8")
    assert main(["bench", "locomo", "--data", str(data), "--backend", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err
    assert main(["bench", "locomo", "--data", str(data), "--configs", "full,bogus", "--out", str(tmp_path)]) == 2
    assert "bogus" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# longmemeval
# --------------------------------------------------------------------------------------------------
def test_longmemeval_on_the_bundled_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    code = main(["--json", "bench", "longmemeval", "--out", str(out), "--no-progress"])
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "bundled longmemeval_tiny.json" in err
    result = json.loads(printed)
    assert result == json.loads((out / "longmemeval.json").read_text())
    assert_png(out / "longmemeval_recall_at_k.png")
    assert_png(out / "longmemeval_budget_coverage.png")
    markdown = (out / "longmemeval.md").read_text()
    assert "recall_any@k" in markdown and "| knowledge-update | 1 |" in markdown and "1000 tok" in markdown

    assert result["questions"] == 6 and result["skipped_abstention"] == 1
    assert result["questions_per_type"]["all"] == 6 and result["questions_per_type"]["multi-session"] == 1
    # Only user turns are indexed: count them in the file.
    entries = json.loads(Path(result["dataset"]).read_text())
    users = sum(1 for e in entries if not e["question_id"].endswith("_abs")
                for s in e["haystack_sessions"] for t in s if t["role"] == "user")
    assert result["units"] == users
    m = result["metrics"]
    for metric in m.values():
        for value in metric.values():
            assert_percent(value)
    for t in ("single-session-user", "single-session-preference", "multi-session", "knowledge-update",
              "temporal-reasoning"):
        # A dozen turns per bank: everything is retrieved by k = 50.
        assert m["session/recall_any@50"][t] == 100.0 and m["session/recall_all@50"][t] == 100.0
        assert m["coverage@2000tok"][t] == 100.0
        anys = [m[f"session/recall_any@{k}"][t] for k in (1, 3, 5, 10, 30, 50)]
        assert all(a <= b for a, b in itertools.pairwise(anys))
    # The assistant holds the answer: no correct user turn, so the official any is 0 and all vacuously 1,
    # while the session itself is still covered by the budgeted memories.
    assert m["session/recall_any@50"]["single-session-assistant"] == 0.0
    assert m["session/recall_all@50"]["single-session-assistant"] == 100.0
    assert m["coverage@2000tok"]["single-session-assistant"] == 100.0
    assert result["latency_ms"]["n"] == 6
    # Multi-session: two answer sessions; recall_all needs both.
    ms = next(q for q in result["per_question"] if q["question_type"] == "multi-session")
    assert ms["correct_turns"] == ["answer_ms_04a:1", "answer_ms_04b:1"]


def test_longmemeval_missing_data_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "longmemeval", "--data", str(tmp_path / "none.json"), "--out", str(tmp_path)]) == 2
    assert "LongMemEval data not found" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# scale
# --------------------------------------------------------------------------------------------------
def test_scale_writes_throughput_latency_memory_disk_and_reopen(tmp_path: Path) -> None:
    out = tmp_path / "results"
    code = main(["bench", "scale", "--units", "150,300", "--queries", "8", "--out", str(out), "--no-progress"])
    assert code == 0
    result = json.loads((out / "scale.json").read_text())
    assert list(result["sizes"]) == ["150", "300"] and result["queries"] == 8
    for size, e in result["sizes"].items():
        assert e["units"] == int(size) and e["retain_units_per_s"] > 0
        assert e["embed_only_units_per_s"] > 0 and e["retain_vs_embed_only"] == pytest.approx(
            e["retain_units_per_s"] / e["embed_only_units_per_s"])
        assert 0 < e["recall_ms"]["median"] <= e["recall_ms"]["p95"]
        assert 0 < e["bare_chroma_query_ms"]["median"] <= e["bare_chroma_query_ms"]["p95"]
        assert e["bare_chroma_nn_only_ms"]["median"] <= e["bare_chroma_query_ms"]["median"] + 1e-6
        assert e["ratio_to_bare"] == pytest.approx(e["recall_ms"]["median"] / e["bare_chroma_query_ms"]["median"])
        assert {"embed_ms", "semantic_ms", "keyword_ms", "graph_ms", "fusion_ms", "pack_ms"} <= set(e["stages_ms"])
        assert e["rss_mb_after_recall"] > 50  # the process holds the embedding model
        assert 100 < e["disk_bytes_per_unit"] < 1_000_000
        assert e["disk_bytes_per_unit"] * e["units"] == pytest.approx(e["disk_bytes"])
        assert e["reopen_seconds"] > 0 and e["first_recall_after_reopen_ms"] > 0
    # Some queries carry a time expression, so the temporal channel is measured too.
    assert "temporal_ms" in result["sizes"]["300"]["stages_ms"]
    markdown = (out / "scale.md").read_text()
    assert "| 150 |" in markdown and "| 300 |" in markdown and "bare Chroma median ms" in markdown
    assert_png(out / "scale_latency.png")
    assert_png(out / "scale_stages.png")


def test_synthetic_units_are_deterministic_varied_and_dated() -> None:
    from hindsight_bench.scale import synthetic_queries, synthetic_units

    units = list(synthetic_units(2000))
    assert units == list(synthetic_units(2000))
    assert len({text for text, _ in units}) > 1900
    assert all(a[1] < b[1] for a, b in itertools.pairwise(units))
    assert sum(any(m in text for m in ("January", "March", "June", "October")) for text, _ in units) > 50
    assert synthetic_queries(20) == synthetic_queries(20) and len(set(synthetic_queries(50))) > 40


# --------------------------------------------------------------------------------------------------
# the command line and the package
# --------------------------------------------------------------------------------------------------
def test_the_standalone_command_is_the_same_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from hindsight_bench.cli import main as bench_main

    assert bench_main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: hindsight-bench")
    assert bench_main(["longmemeval", "--data", "/nonexistent.json", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "error: LongMemEval data not found: /nonexistent.json\n"


def test_bench_command_line_import_is_light() -> None:
    code = ("import sys, hindsight_bench.cli; "
            "print(sorted(m for m in ('hindsight_core.hindsight', 'chromadb', 'torch', 'matplotlib', "
            "'hindsight_bench.locomo') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_data_files_ship_inside_the_package() -> None:
    import hindsight_bench
    from hindsight_bench.entities import DATA
    from hindsight_bench.longmemeval import TINY_DATA

    package = Path(hindsight_bench.__file__).parent
    assert DATA.is_file() and TINY_DATA.is_file()
    assert DATA.parent == TINY_DATA.parent == package / "data"


def test_locomo_data_is_found_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hindsight_bench.commands import find_locomo

    monkeypatch.setenv("HINDSIGHT_LOCOMO", str(tmp_path / "x.json"))
    assert find_locomo() == tmp_path / "x.json"


def test_server_backend_without_servers_or_checkout_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from hindsight_bench import servers
    from hindsight_core.errors import StoreError

    for name in servers.REQUIRED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(servers, "LAUNCHER", tmp_path / "absent.py")
    monkeypatch.delitem(sys.modules, servers._LAUNCHER_MODULE, raising=False)
    with pytest.raises(StoreError, match="NEO4J_URI"), servers.open_server_backend(tmp_path):
        pass


def test_server_backend_finds_the_tests_launcher_in_a_checkout() -> None:
    from hindsight_bench import servers

    launcher = servers.checkout_launcher()
    assert launcher is not None and callable(launcher.bolt_server) and callable(launcher.chroma_server)


# --------------------------------------------------------------------------------------------------
# qa
# --------------------------------------------------------------------------------------------------
def test_judge_prompts_follow_the_published_harnesses() -> None:
    from hindsight_bench.qa import lme_judge_prompt, locomo_judge_prompt

    p = locomo_judge_prompt("Where?", "Gdynia", "In Gdynia.")
    assert "Gold answer: Gdynia" in p and "Generated answer: In Gdynia." in p
    assert "’CORRECT’ or ’WRONG’" in p and 'the key as "label"' in p
    assert "off-by-one" in lme_judge_prompt("temporal-reasoning", "q", "a", "r", False)
    assert "Rubric: a" in lme_judge_prompt("single-session-preference", "q", "a", "r", False)
    assert "updated answer" in lme_judge_prompt("knowledge-update", "q", "a", "r", False)
    assert "unanswerable" in lme_judge_prompt("single-session-user", "q", "a", "r", True)
    standard = lme_judge_prompt("multi-session", "Q?", "A!", "R.", False)
    assert "Question: Q?\n\nCorrect Answer: A!\n\nModel Response: R." in standard
    with pytest.raises(ValueError):
        lme_judge_prompt("no-such-type", "q", "a", "r", False)


def test_qa_accuracy_is_counted_per_category_with_a_scripted_model(tmp_path: Path) -> None:
    from scripted_llm import ScriptedLLM

    from hindsight_bench.longmemeval import TINY_DATA
    from hindsight_bench.qa import run_qa, write_qa

    def answer(messages: Any, schema: Any) -> dict[str, Any]:
        return {"known": True, "based_on": [1], "answer": "A corgi.", "opinions": []}

    answerer = ScriptedLLM([answer] * 3, name="scripted-answer")
    judge = ScriptedLLM([{"answer": "yes"}, {"answer": "no"}, {"answer": "yes"}], name="scripted-judge")
    result = run_qa("longmemeval", TINY_DATA, answer_llm=answerer, judge_llm=judge, limit_questions=3,
                    progress=False, log=lambda _: None)
    assert [r["correct"] for r in result["per_question"]] == [True, False, True]
    cats = result["categories"]
    assert cats["all"]["n"] == 3 and cats["all"]["accuracy"] == pytest.approx(200 / 3)
    assert cats["single-session-user"]["accuracy"] == 100.0
    assert cats["single-session-assistant"]["accuracy"] == 0.0
    assert result["answer_model"] == "scripted-answer" and result["judge_model"] == "scripted-judge"
    # The judge saw the standard prompt with the question, the gold answer and reflect's answer.
    first = judge.calls[0].user
    assert "Question: What breed is my new puppy?" in first and "Correct Answer: A corgi" in first
    assert "Model Response: A corgi." in first
    # Reflect answered from the retained haystack, with the question date as "now".
    assert "Current time: 2023-05-20 14:02" in answerer.calls[0].user
    paths = write_qa(tmp_path, result)
    assert tmp_path / "qa.json" in paths and "| all | 3 |" in (tmp_path / "qa.md").read_text()
    assert_png(tmp_path / "qa_accuracy.png")


@pytest.mark.llm
def test_qa_with_the_real_local_model_as_answerer_and_judge(tmp_path: Path) -> None:
    from hindsight_core.llm import shutdown_local_servers

    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([tiny_locomo()]), encoding="utf-8")
    out = tmp_path / "results"
    try:
        code = main(["bench", "qa", "--dataset", "locomo", "--data", str(data), "--questions", "1",
                     "--answer-model", "qwen2.5-0.5b", "--judge-model", "qwen2.5-0.5b", "--out", str(out),
                     "--no-progress"])
    finally:
        shutdown_local_servers()
    assert code == 0
    result = json.loads((out / "qa.json").read_text())
    assert result["answer_model"] == "local/qwen2.5-0.5b" and result["judge_model"] == "local/qwen2.5-0.5b"
    records = result["per_question"]
    # One question (a model call to answer, one to judge): per-category counting over several questions is
    # covered with a scripted model above.
    assert [r["question"] for r in records] == ["What is the name of Ines's cat?"]
    for r in records:
        assert r["answer"].strip() and r["memories"] > 0
        assert r["judge_tokens"]["calls"] >= 1 and r["judge_tokens"]["prompt"] > 200  # the judge prompt is long
        assert r["judge_tokens"]["completion"] > 0
        if r["known"]:
            assert r["answer_tokens"]["prompt"] > 0 and r["answer_tokens"]["completion"] > 0
        assert r["answer_seconds"] > 0 and r["judge_seconds"] > 0
    accuracy = 100.0 * sum(r["correct"] for r in records)
    assert result["categories"]["all"]["accuracy"] == pytest.approx(accuracy)
    assert result["categories"]["single-hop"]["n"] == 1
    assert "| all | 1 |" in (out / "qa.md").read_text()
    assert_png(out / "qa_accuracy.png")
    assert_png(out / "qa_tokens.png")
