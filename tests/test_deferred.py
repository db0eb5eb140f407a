"""Deferred retain and scheduled reflect: raw input durable at once, extraction and reflect as worker jobs."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.models import DocumentStatus, JobStatus

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
MESSAGES = [
    {"speaker": "Ana", "text": "I started running every morning in January.", "id": "m1"},
    {"speaker": "Ana", "text": "I finished my first 10k race last Sunday in Porto.", "id": "m2"},
]


def test_deferred_retain_stores_raw_document_first_then_the_worker_extracts(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain(MESSAGES, timestamp=T0, extract=False, document_id="d1", defer=True,
                             document_metadata={"session": "s1"})
        assert result.queued and result.job_id and result.memories == []
        doc = bank.document("d1")  # durable before any extraction ran
        assert doc.status == DocumentStatus.PENDING and doc.metadata == {"session": "s1"}
        assert bank.recall("10k race Porto").memories == []
        assert [j.kind for j in bank.jobs()] == ["retain"]
    # A new process picks the queued job up and extracts.
    with Hindsight.open(tmp_path / "m") as hs:
        bank = hs.bank("b")
        assert bank.wait_idle(60)
        assert bank.document("d1").status == DocumentStatus.DONE
        assert bank.document("d1").metadata == {"session": "s1"}
        hits = bank.recall("10k race in Porto").memories
        assert hits and "m2" in hits[0].sources
        assert [j.status for j in bank.jobs()] == [JobStatus.DONE]


def test_deferred_retain_with_a_failing_model_keeps_the_raw_text_and_records_the_facts_failure(tmp_path: Path) -> None:
    llm = ScriptedLLM([RuntimeError("model down")] * 10)
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        hs.worker.backoff_s = 0.01
        bank = hs.bank("b")
        result = bank.retain("Ana ran a marathon in Porto.", document_id="d1", defer=True)
        assert bank.wait_idle(60)
        jobs = {j.kind: j for j in bank.jobs()}
        assert jobs["retain"].id == result.job_id and jobs["retain"].status == JobStatus.DONE
        assert jobs["facts"].status == JobStatus.FAILED and "model down" in (jobs["facts"].error or "")
        assert len(llm.calls) == 4  # tried, then retried with backoff, then recorded
        doc = bank.document("d1")
        assert doc.status == DocumentStatus.DONE and doc.content == "Ana ran a marathon in Porto."
        assert [m.text for m in bank.recall("Where did Ana run a marathon?").memories] == [doc.content]


async def test_async_deferred_retain(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m") as hs:
        bank = hs.bank("b")
        result = await bank.aretain(MESSAGES, timestamp=T0, extract=False, defer=True)
        assert result.queued
        assert await bank.await_idle(60)
        assert len(bank.document(result.document_id).content) > 0
        assert (await bank.arecall("running every morning")).memories


def test_scheduled_reflect_forms_opinion_in_the_background(tmp_path: Path) -> None:
    op = {"text": "Ana is a dedicated runner.", "rationale": "runs daily", "confidence": 0.7, "entities": ["Ana"]}
    reply: dict[str, Any] = {"known": True, "answer": "Yes.", "based_on": [1], "opinions": [op]}
    llm = ScriptedLLM([reply])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        bank = hs.bank("b")
        bank.retain(MESSAGES, timestamp=T0, extract=False)
        job = asyncio.run(bank.aschedule_reflect("What do you think of Ana's running?", reference_time=T0))
        assert job.kind == "reflect"
        assert bank.wait_idle(60)
        assert [o.text for o in bank.opinions()] == ["Ana is a dedicated runner."]
        assert next(j for j in bank.jobs() if j.id == job.id).status == JobStatus.DONE
        assert "What do you think of Ana's running?" in llm.calls[0].user


def test_put_document_keeps_raw_value_only_and_delete_document_keeps_memories(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        assert bank.hindsight is hs
        bank.retain(MESSAGES, timestamp=T0, extract=False, document_id="d1")
        first = bank.document("d1")
        doc = bank.put_document("d1", "", metadata={"v": 1})  # replaces: its memories go, created_at stays
        assert doc.metadata == {"v": 1} and doc.created_at == first.created_at and doc.updated_at > first.updated_at
        assert bank.recall("10k race Porto").memories == []
        bank.retain(MESSAGES, timestamp=T0, extract=False, document_id="d2")
        bank.delete_document("d2")
        assert "d2" not in [d.id for d in bank.documents()]
        assert bank.recall("10k race in Porto").memories  # the memories outlive the transcript


def test_scheduled_reflect_takes_every_time_form_the_api_accepts(tmp_path: Path) -> None:
    """A date, epoch seconds or a string as reference time is stored in the job as ISO (a date object once
    reached the job's JSON payload and failed there)."""
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        for when in (date(2024, 3, 1), T0.timestamp(), "2024-03-01T12:00:00Z", T0):
            job = bank.schedule_reflect("How is Ana's running going?", reference_time=when)
            assert job.payload["reference_time"].startswith("2024-03-01T")
        assert bank.schedule_reflect("q").payload["reference_time"] is None
