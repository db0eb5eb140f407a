"""The default path never makes anyone wait: reads run no queued job and call no model, ``close()`` returns at once
even while a job is inside a model call (the job stores nothing after it and runs again in the next process), and
``hindsight worker`` runs the queue."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM
from test_cli import call
from test_llm_unit import StubEndpoint

from hindsight_core import Hindsight
from hindsight_core.cli.commands import main
from hindsight_core.models import JobStatus, Memory
from hindsight_core.runtime.integrity import check

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
MESSAGES = [
    {"speaker": "Ana", "text": "I started running every morning in January.", "id": "m1"},
    {"speaker": "Ana", "text": "I finished my first 10k race last Sunday in Porto.", "id": "m2"},
]
FACTS = {"m1": "Ana started running every morning in January.",
         "m2": "Ana finished her first 10k race last Sunday in Porto."}
CLOSE_S = 1.0  # what "at once" means for close()


def facts_answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    """The facts of whichever of MESSAGES the prompt shows (and an entity summary, should one be asked for)."""
    if "summary" in schema.model_fields:
        return {"summary": "Ana runs every morning and finished a 10k race in Porto."}
    prompt = "\n".join(m["content"] for m in messages)
    return {"facts": [{"text": text, "src": [mid]} for mid, text in FACTS.items() if f"{mid}]" in prompt]}


class Blocking:
    """A model answer that waits until the test releases it: a job stays inside its model call meanwhile."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
        self.entered.set()
        assert self.release.wait(60), "the test never released the model"
        return facts_answer(messages, schema)


def units_of(hs: Hindsight, document_id: str) -> list[Memory]:
    return hs.store.get_units("b", hs.store.units_of_document("b", document_id))


def fact_texts(hs: Hindsight, document_id: str) -> list[str]:
    """The texts of the facts that cite the document's messages: its own, or a fact another document holds that its
    facts restated (the same messages retained twice: linked, not stored twice, ``retain/restated.py``)."""
    raw = {m.id for m in units_of(hs, document_id) if m.cites is None}
    every = hs.store.get_units("b", list(hs.store.unit_ids("b")))
    return [m.text for m in every if m.cites is not None and raw & set(m.cites)]


def has_the_facts_once(hs: Hindsight, document_id: str) -> bool:
    """Whether each of FACTS cites the document's messages exactly once (stored facts may carry a resolved date)."""
    return sorted(t[:25] for t in fact_texts(hs, document_id)) == sorted(t[:25] for t in FACTS.values())


def assert_sound(hs: Hindsight) -> None:
    report = check(hs)
    assert report.ok, report


def queue_facts(path: Path, *documents: str) -> None:
    """Retain MESSAGES once per document with extraction: raw units now, a facts job queued for each (no model)."""
    llm = ScriptedLLM([])
    with Hindsight.open(path, llm=llm, start_worker=False) as hs:
        for document_id in documents:
            hs.bank("b").retain(MESSAGES, timestamp=T0, document_id=document_id, background=False)
    assert llm.calls == []


def jobs_of(path: Path) -> dict[str, Any]:
    """Document id -> its facts job, read by a process that runs nothing."""
    with Hindsight.open(path, llm=ScriptedLLM([]), start_worker=False) as hs:
        return {j.payload["document_id"]: j for j in hs.bank("b", create=False).jobs() if j.kind == "facts"}


@pytest.fixture()
def slow_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StubEndpoint, threading.Event]]:
    """The environment's LLM: an OpenAI-compatible stub that holds every request until the event is set."""
    stub = StubEndpoint()
    release = threading.Event()

    def answer(request: dict[str, Any]) -> str:
        release.wait(60)
        prompt = "\n".join(m["content"] for m in request["messages"])
        if "summary" in request["messages"][0]["content"]:
            return json.dumps({"summary": "Ana runs."})
        return json.dumps({"facts": [{"text": t, "src": [i]} for i, t in FACTS.items() if f"{i}]" in prompt]})

    stub.content = answer
    monkeypatch.setenv("HINDSIGHT_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "stub")
    try:
        yield stub, release
    finally:
        release.set()
        stub.close()


def timed(*argv: str) -> tuple[float, str]:
    started = time.monotonic()
    code, out, err = call(*argv)
    assert code == 0, err
    return time.monotonic() - started, out


# ------------------------------------------------------------------------------------------------
# reads
# ------------------------------------------------------------------------------------------------
def test_stats_recall_and_export_run_no_queued_job_and_take_as_long_as_on_an_idle_bank(
    tmp_path: Path, slow_endpoint: tuple[StubEndpoint, threading.Event]
) -> None:
    stub, _ = slow_endpoint  # a job these commands started would hold them for a minute
    idle, queued = tmp_path / "idle", tmp_path / "queued"
    with Hindsight.open(idle, start_worker=False) as hs:
        hs.bank("b").retain(MESSAGES, timestamp=T0, document_id="d1", extract=False)
    queue_facts(queued, "d1")
    timed("--path", str(idle), "--json", "recall", "b", "10k race")  # loads the embedder: not part of the timing

    times: dict[str, dict[str, float]] = {"idle": {}, "queued": {}}
    for store, path in (("idle", idle), ("queued", queued)):
        times[store]["stats"], out = timed("--path", str(path), "--json", "stats", "b")
        assert json.loads(out)["units"] == 2
        times[store]["recall"], out = timed("--path", str(path), "--json", "recall", "b", "10k race in Porto")
        assert "m2" in json.loads(out)["memories"][0]["sources"]
        exported = tmp_path / f"{store}.jsonl"
        times[store]["export"], out = timed("--path", str(path), "export", "b", "-o", str(exported))
        assert "10k" in exported.read_text(encoding="utf-8")

    assert stub.requests == []  # no model was asked anything
    (job,) = jobs_of(queued).values()
    assert (job.status, job.attempts) == (JobStatus.QUEUED, 0)  # never claimed
    for command in ("stats", "recall", "export"):
        assert times["queued"][command] <= 2 * times["idle"][command] + 1.0, times


def test_library_reads_never_wait_for_a_job_in_flight(tmp_path: Path) -> None:
    model = Blocking()
    llm = ScriptedLLM([model])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:  # the library default: a worker runs the jobs
        bank = hs.bank("b")
        bank.retain(MESSAGES, timestamp=T0, document_id="d1", background=False)
        assert model.entered.wait(30)  # the facts job is inside its model call now
        started = time.monotonic()
        assert "m2" in bank.recall("10k race in Porto").memories[0].sources
        assert bank.stats()["units"] == 2 and [j.status for j in bank.jobs()] == [JobStatus.RUNNING]
        assert time.monotonic() - started < 30  # not held by the model (which holds for a minute)
        model.release.set()
        assert bank.wait_idle(60)
        assert has_the_facts_once(hs, "d1")


# ------------------------------------------------------------------------------------------------
# close
# ------------------------------------------------------------------------------------------------
def test_close_returns_at_once_with_a_job_in_a_model_call_and_one_queued_and_both_run_once_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m"
    model = Blocking()
    llm = ScriptedLLM([model])
    hs = Hindsight.open(path, llm=llm)
    bank = hs.bank("b")
    bank.retain(MESSAGES, timestamp=T0, document_id="d1", background=False)
    assert model.entered.wait(30)
    bank.retain(MESSAGES, timestamp=T0, document_id="d2", background=False)  # queued behind it
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="hindsight_core"):
        started = time.monotonic()
        hs.close()
        assert time.monotonic() - started < CLOSE_S
        model.release.set()  # the model answers after the close: the answer is dropped
        assert hs.worker.join(30)  # the abandoned thread ended by itself
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert len(llm.calls) == 1

    jobs = jobs_of(path)
    assert {d: (j.status, j.attempts) for d, j in jobs.items()} == {"d1": (JobStatus.QUEUED, 1),
                                                                     "d2": (JobStatus.QUEUED, 0)}
    llm = ScriptedLLM([facts_answer, facts_answer])
    with Hindsight.open(path, llm=llm, start_worker=False) as hs:
        assert fact_texts(hs, "d1") == [] and fact_texts(hs, "d2") == []  # nothing committed after the close
        assert_sound(hs)
    with Hindsight.open(path, llm=llm) as hs:  # the library default runs what was left
        assert hs.bank("b").wait_idle(60)
        assert len(llm.calls) == 2  # one model call per job: each ran to its end once
        for document_id in ("d1", "d2"):
            assert has_the_facts_once(hs, document_id)
        assert {j.status for j in hs.bank("b").jobs()} == {JobStatus.DONE}
        assert_sound(hs)


def hold_in_worker(target: Any, name: str) -> tuple[threading.Event, threading.Event]:
    """Make ``target.name`` wait, when the worker thread calls it, until the test releases it: (entered, release)."""
    entered, release = threading.Event(), threading.Event()
    original = getattr(target, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "hindsight-worker":
            entered.set()
            assert release.wait(60), "the test never released the worker"
        return original(*args, **kwargs)

    setattr(target, name, held)
    return entered, release


def test_a_job_that_reaches_its_commit_after_close_commits_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m"
    hs = Hindsight.open(path, llm=ScriptedLLM([facts_answer]))
    # The model has answered; the job is held just before its commit (outside the gate) until after the close.
    entered, release = hold_in_worker(hs.engine.retainer, "_commit")
    hs.bank("b").retain(MESSAGES, timestamp=T0, document_id="d1", background=False)
    assert entered.wait(30)
    with caplog.at_level(logging.DEBUG, logger="hindsight_core"):
        started = time.monotonic()
        hs.close()
        assert time.monotonic() - started < CLOSE_S
        release.set()
        assert hs.worker.join(30)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("ClosedError" in r.getMessage() for r in caplog.records)  # refused at the commit, said quietly

    (job,) = jobs_of(path).values()
    assert job.status == JobStatus.QUEUED
    with Hindsight.open(path, llm=ScriptedLLM([]), start_worker=False) as hs:
        assert fact_texts(hs, "d1") == []
        assert len(units_of(hs, "d1")) == 2  # the raw messages, untouched
        assert_sound(hs)


def test_a_commit_in_progress_finishes_before_close_returns_and_the_rerun_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "m"
    hs = Hindsight.open(path, llm=ScriptedLLM([facts_answer]))
    entered, release = hold_in_worker(hs.store, "add_units")  # inside the gate: the facts' graph transaction
    hs.bank("b").retain(MESSAGES, timestamp=T0, document_id="d1", background=False)
    assert entered.wait(30)
    closer = threading.Thread(target=hs.close)
    closer.start()
    closer.join(0.5)
    assert closer.is_alive()  # close waits for the commit (a transaction, not a model call) ...
    release.set()
    closer.join(30)
    assert not closer.is_alive() and hs.worker.join(30)
    # ... which is whole: the facts are there. Its outcome was not recorded after the close: the job runs again.
    llm = ScriptedLLM([facts_answer])
    with Hindsight.open(path, llm=llm, start_worker=False) as hs:
        assert has_the_facts_once(hs, "d1")
        (job,) = hs.bank("b").jobs()
        assert job.status == JobStatus.QUEUED
        assert_sound(hs)
        assert hs.worker.run_once() and len(llm.calls) == 1
        assert has_the_facts_once(hs, "d1")  # replaced, not doubled
        assert [j.status for j in hs.bank("b").jobs()] == [JobStatus.DONE]
        assert_sound(hs)


def test_closing_twice_is_harmless_and_a_closed_hindsight_waits_for_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m"
    queue_facts(path, "d1", "d2")
    model = Blocking()
    hs = Hindsight.open(path, llm=ScriptedLLM([model]))  # starts the worker for the queued jobs
    bank = hs.bank("b")
    assert model.entered.wait(30)
    started = time.monotonic()
    hs.close()
    hs.close()
    assert time.monotonic() - started < CLOSE_S
    started = time.monotonic()
    assert not bank.wait_idle(30)  # nothing more runs here: it says so instead of waiting
    assert time.monotonic() - started < CLOSE_S
    model.release.set()
    assert hs.worker.join(30)
    assert {j.status for j in jobs_of(path).values()} == {JobStatus.QUEUED}


# ------------------------------------------------------------------------------------------------
# hindsight worker
# ------------------------------------------------------------------------------------------------
def test_worker_until_idle_runs_the_queued_jobs_and_exits_0(
    tmp_path: Path, slow_endpoint: tuple[StubEndpoint, threading.Event]
) -> None:
    stub, release = slow_endpoint
    release.set()  # answers at once
    path = tmp_path / "m"
    queue_facts(path, "d1", "d2")
    code, out, err = call("--path", str(path), "--json", "worker", "--until-idle")
    assert code == 0, err
    report = json.loads(out)
    assert report == {"stopped_by": "idle", "pending": 0, "done": 2, "failed": 0, "retried": 0}
    assert len(stub.requests) == 2
    with Hindsight.open(path, start_worker=False) as hs:
        assert {j.status for j in hs.bank("b").jobs()} == {JobStatus.DONE}
        for document_id in ("d1", "d2"):
            assert has_the_facts_once(hs, document_id)
        assert_sound(hs)


def test_worker_on_an_empty_queue_until_idle_exits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "m"
    with Hindsight.open(path, start_worker=False) as hs:
        hs.bank("b").retain(MESSAGES, timestamp=T0, extract=False)
    code, out, err = call("--path", str(path), "worker", "--until-idle")
    assert code == 0, err
    assert out.startswith("idle: 0 jobs done")
    code, _, err = call("--path", str(tmp_path / "nowhere"), "worker", "--until-idle")
    assert code == 2 and "no memory store" in err


def test_worker_stops_on_sigterm_and_hands_the_job_in_flight_back(
    tmp_path: Path, slow_endpoint: tuple[StubEndpoint, threading.Event]
) -> None:
    stub, release = slow_endpoint
    path = tmp_path / "m"
    queue_facts(path, "d1")
    signalled: list[float] = []

    def stop_when_the_model_is_asked() -> None:
        deadline = time.monotonic() + 60
        while not stub.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        signalled.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the command: it stops instead of the process dying

    killer = threading.Thread(target=stop_when_the_model_is_asked, daemon=True)
    killer.start()
    code = main(["--path", str(path), "--json", "worker"])  # no --until-idle: runs until the signal
    assert code == 0 and signalled
    assert time.monotonic() - signalled[0] < 5  # stopped without waiting for the model
    assert len(stub.requests) == 1
    release.set()
    (job,) = jobs_of(path).values()
    assert (job.status, job.attempts) == (JobStatus.QUEUED, 1)  # handed back, not failed
    with Hindsight.open(path, start_worker=False) as hs:
        assert fact_texts(hs, "d1") == []
        assert_sound(hs)
