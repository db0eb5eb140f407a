"""A message forgotten while its document's facts job is queued is not extracted again: the job reads the document
with the message cut out (``retain/redact.py``), and a job that read it before the forget stores no fact citing it
(``retain/fact_job.py``, rejected as ``forgotten`` without quoting it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.extract.grounding import GroundingReport
from hindsight_core.runtime.integrity import check

MESSAGES = [
    {"speaker": "Ana", "text": "I see Dr. Okafor about my knee every Tuesday.", "id": "s1"},
    {"speaker": "Ana", "text": "I run along the river every Sunday, it is lovely.", "id": "s2"},
]


def _facts(messages: Any, schema: Any) -> dict[str, Any]:
    """The model's answer: a fact of each message it was shown (what it was not shown it cannot cite)."""
    prompt = " ".join(str(getattr(m, "content", m)) for m in messages)
    facts = []
    if "Okafor" in prompt:
        facts.append({"text": "Ana sees Dr. Okafor about her knee every Tuesday.", "src": ["s1"]})
    if "river" in prompt:
        facts.append({"text": "Ana runs along the river every Sunday.", "src": ["s2"]})
    return {"facts": facts}


def _texts(hs: Hindsight) -> list[str]:
    return [u.text for u in hs.store.get_units("ana", list(hs.store.unit_ids("ana")))]


def test_a_message_forgotten_before_its_facts_job_runs_is_not_extracted(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([_facts] * 4), start_worker=False) as hs:
        bank = hs.bank("ana")
        result = bank.retain(MESSAGES, document_id="d1")
        knee = next(m for m in result.memories if "Okafor" in m.text)
        bank.forget(memory_id=knee.id)
        while hs.worker.run_once():
            pass
        texts = _texts(hs)
        assert not any("Okafor" in t for t in texts)
        facts = [u for u in hs.store.get_units("ana", list(hs.store.unit_ids("ana"))) if u.cites is not None]
        assert [f.text.split(" (")[0] for f in facts] == ["Ana runs along the river every Sunday"]
        assert all(f.cites for f in facts)
        assert check(hs).ok


def test_a_facts_job_that_read_the_message_before_the_forget_stores_no_fact_citing_it(
    tmp_path: Path, monkeypatch: Any,
) -> None:
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([_facts] * 4), start_worker=False) as hs:
        bank = hs.bank("ana")
        result = bank.retain(MESSAGES, document_id="d1")
        read_first = hs.store.get_document("ana", "d1")  # the job's read, before the forget committed
        assert read_first is not None
        knee = next(m for m in result.memories if "Okafor" in m.text)
        bank.forget(memory_id=knee.id)
        # The job reads the document again after its units, and so sees the message emptied ...
        stored = hs.engine.facts.add_facts(read_first, GroundingReport())
        assert stored is not None and [m.text.split(" (")[0] for m in stored.memories] == [
            "Ana runs along the river every Sunday"]
        # ... and were its copy still the old one, the fact citing the forgotten message is rejected, unquoted.
        monkeypatch.setattr(hs.store, "get_document", lambda bank_id, document_id: read_first)
        report = GroundingReport()
        hs.engine.facts.add_facts(read_first, report)
        forgotten = [r for r in report.rejected if r.reason == "forgotten"]
        assert len(forgotten) == 1 and forgotten[0].text == ""
        assert not any("Okafor" in t for t in _texts(hs))


def test_a_document_that_no_longer_parses_does_not_stop_a_forget(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("ana")
        result = bank.retain(MESSAGES, document_id="d1", extract=False)
        doc = hs.store.get_document("ana", "d1")
        assert doc is not None
        hs.store.put_document(doc.model_copy(update={"content": "{not json"}))  # damaged outside the library
        knee = next(m for m in result.memories if "Okafor" in m.text)
        assert bank.forget(memory_id=knee.id) == 1
        assert bank.get(knee.id) is None and check(hs).ok


def test_a_message_forgotten_during_the_facts_job_s_model_call_leaves_no_fact(tmp_path: Path) -> None:
    # The forget commits while the model answers: the job's facts citing the message are stored after the forget
    # looked for them, so the job looks after its own commit and deletes them as the forget would have.
    opened: list[Hindsight] = []

    def forget_then_answer(messages: Any, schema: Any) -> dict[str, Any]:
        hs = opened[0]
        knee = next(u for u in hs.store.get_units("ana", list(hs.store.unit_ids("ana"))) if "Okafor" in u.text)
        hs.bank("ana").forget(memory_id=knee.id)
        return _facts(messages, schema)

    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([forget_then_answer, _facts, _facts]),
                        start_worker=False) as hs:
        opened.append(hs)
        bank = hs.bank("ana")
        bank.retain(MESSAGES, document_id="d1")
        while hs.worker.run_once():
            pass
        assert not any("Okafor" in t for t in _texts(hs))
        facts = [u for u in hs.store.get_units("ana", list(hs.store.unit_ids("ana"))) if u.cites is not None]
        assert [f.text.split(" (")[0] for f in facts] == ["Ana runs along the river every Sunday"]
        assert check(hs).ok


def test_a_job_that_read_a_document_without_message_ids_before_a_forget_keeps_the_other_facts(tmp_path: Path) -> None:
    # Without ids the messages line up with their units by count only: the job reads the document again after the
    # units, so the forgotten message is an empty one there and the others still line up.
    plain = [{k: v for k, v in m.items() if k != "id"} for m in MESSAGES]

    def by_label(messages: Any, schema: Any) -> dict[str, Any]:
        prompt = " ".join(str(getattr(m, "content", m)) for m in messages)
        facts = []
        for line in prompt.splitlines():
            if "river" in line and "[" in line:
                label = line[line.index("[") + 1 : line.index("]")]
                facts.append({"text": "Ana runs along the river every Sunday.", "src": [label]})
        return {"facts": facts}

    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([by_label] * 3), start_worker=False) as hs:
        bank = hs.bank("ana")
        result = bank.retain(plain, document_id="d1")
        read_first = hs.store.get_document("ana", "d1")
        assert read_first is not None
        knee = next(m for m in result.memories if "Okafor" in m.text)
        bank.forget(memory_id=knee.id)
        stored = hs.engine.facts.add_facts(read_first, GroundingReport())
        assert stored is not None and [m.text.split(" (")[0] for m in stored.memories] == [
            "Ana runs along the river every Sunday"]
        assert all(m.cites for m in stored.memories)


def test_close_waits_for_the_facts_job_s_look_for_orphans_and_a_closing_store_skips_it(
    tmp_path: Path, monkeypatch: Any,
) -> None:
    # The look after the commit reads the store: it runs as a gated write, so close() waits for it (a read of a
    # store closed under it crashed the process), and once closing has begun it is not started.
    import threading
    import time

    from hindsight_core.retain.fact_job import FactJob

    inside, finished = threading.Event(), threading.Event()
    real = FactJob._without_orphans

    def slow(self: FactJob, bank_id: str, result: Any) -> Any:
        inside.set()
        time.sleep(0.5)
        out = real(self, bank_id, result)
        finished.set()
        return out

    monkeypatch.setattr(FactJob, "_without_orphans", slow)
    hs = Hindsight.open(tmp_path / "m", llm=ScriptedLLM([_facts] * 4), start_worker=False)
    hs.bank("ana").retain(MESSAGES, document_id="d1")
    # The follow-ups (observation jobs) read the store too: never once closing has begun (CI caught a segfault).
    follow_ups: list[bool] = []
    queue = hs.engine.facts.on_retained
    hs.engine.facts.on_retained = lambda result: (follow_ups.append(hs.engine.gate.closed), queue(result))[1]
    runner = threading.Thread(target=hs.worker.run_once)
    runner.start()
    assert inside.wait(30)
    hs.close()
    assert finished.is_set()  # close returned only after the look
    runner.join(30)
    assert not runner.is_alive() and True not in follow_ups
    # Closing between the commit and the look: the look is skipped, nothing touches the closing store.
    hs = Hindsight.open(tmp_path / "m2", llm=ScriptedLLM([_facts] * 4), start_worker=False)
    hs.bank("ana").retain(MESSAGES, document_id="d1")
    retainer = hs.engine.retainer
    store_facts = retainer.store_facts

    def then_close(*args: Any, **kwargs: Any) -> Any:
        out = store_facts(*args, **kwargs)
        hs.engine.gate.close()
        return out

    monkeypatch.setattr(retainer, "store_facts", then_close)
    inside.clear()
    stored = hs.engine.facts.add_facts(hs.store.get_document("ana", "d1"))  # type: ignore[arg-type]
    assert stored is not None and len(stored.memories) == 2 and not inside.is_set()
    hs.close()
