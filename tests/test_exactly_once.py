"""Background effects happen once however often a job runs: an opinion job that fails half way and is retried
(or run again by a second process) moves every opinion once, with one history event per piece of evidence;
a scheduled reflect that is retried stores its opinions once."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scripted_llm import ScriptedLLM, assessment

from hindsight_core import Hindsight
from hindsight_core.errors import LLMError
from hindsight_core.models import Job, JobStatus
from hindsight_core.runtime.integrity import check
from hindsight_core.runtime.jobs import OPINIONS

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
OPINIONS_HELD = {
    "Ana is a dedicated runner.": "reinforce",
    "Ana will win the Porto race.": "weaken",
    "Ana dislikes Porto.": "contradict",
}


def assessor(fail_on: set[str]) -> Any:
    """Answers each assessment by the opinion in the prompt; fails once for the opinions in ``fail_on``."""
    def respond(messages: list[dict[str, str]], schema: type) -> Any:
        user = messages[-1]["content"]
        opinion = next(o for o in OPINIONS_HELD if o in user)
        if opinion in fail_on:
            fail_on.discard(opinion)
            return LLMError("the model went away half way through the job")
        label = OPINIONS_HELD[opinion]
        return assessment(label, "Ana likes Porto." if label == "contradict" else "")
    return respond


def test_a_retried_opinion_job_moves_each_opinion_once(tmp_path: Path) -> None:
    failing = {"Ana will win the Porto race."}
    llm = ScriptedLLM([assessor(failing)] * 20)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        hs.worker.backoff_s = 0.0
        bank = hs.bank("coach")
        for text in OPINIONS_HELD:
            bank.add_opinion(text, 0.6, entities=["Ana", "Porto"])
        new = bank.retain([{"speaker": "Ana", "text": "Ana ran the Porto race on Sunday.", "id": "m1"}],
                          timestamp=T0, extract=False, background=False)
        job = Job(id=str(uuid.uuid4()), bank_id="coach", kind=OPINIONS, payload={"unit_ids": new.memory_ids})
        hs.store.enqueue_job(job)
        assert hs.worker.run_once()  # fails half way: the opinions before the failing one moved, the rest not
        assert {j.id: j.status for j in bank.jobs()}[job.id] == JobStatus.QUEUED
        moved_first = sum(1 for o in bank.opinions() if len(bank.opinion_history(o.id)) > 1)
        assert moved_first < len(OPINIONS_HELD)
        def assessed() -> int:  # verdict calls (a contradiction adds one more, for the revised text)
            return sum(1 for c in llm.calls if c.schema.__name__ == "_AssessmentOut")

        calls_before_retry = assessed()
        assert hs.worker.run_once()  # the retry
        assert {j.id: j.status for j in bank.jobs()}[job.id] == JobStatus.DONE
        # The retry asked the model only about the opinions the first attempt had not applied.
        assert assessed() - calls_before_retry == len(OPINIONS_HELD) - moved_first
        # The same job queued again (another process, or a crash after its effects): nothing moves.
        hs.store.enqueue_job(job.model_copy(update={"id": str(uuid.uuid4())}))
        assert hs.worker.run_once()
        assert assessed() - calls_before_retry == len(OPINIONS_HELD) - moved_first
        moved = {}
        for opinion in bank.opinions():
            history = bank.opinion_history(opinion.id)
            steps = [e for e in history if e.label != "formed"]
            assert len(steps) == 1, [e.label for e in history]  # one event per evidence, never two
            assert steps[0].evidence == new.memory_ids and steps[0].old_confidence == 0.6
            assert opinion.confidence == steps[0].new_confidence
            moved[steps[0].old_text or opinion.text] = steps[0].label
        assert moved == OPINIONS_HELD
        assert any(o.text == "Ana likes Porto." for o in bank.opinions())  # the contradiction rewrote it
        assert check(hs).ok


def test_a_retried_scheduled_reflect_stores_its_opinions_once(tmp_path: Path) -> None:
    op = {"text": "Ana is a dedicated runner.", "rationale": "races", "confidence": 0.7, "entities": ["Ana"]}
    answer = {"known": True, "answer": "Ana runs.", "based_on": [1], "opinions": [op]}
    llm = ScriptedLLM([answer, answer])
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        bank = hs.bank("coach")
        bank.retain([{"speaker": "Ana", "text": "I ran the Porto race on Sunday.", "id": "m1"}], timestamp=T0,
                    extract=False, background=False)
        job = bank.schedule_reflect("What do you think of Ana's running?")
        assert hs.worker.run_once()
        # The worker died before marking the job done: the same job runs again from the start.
        hs.engine.jobs.run_reflect(job)
        opinions = bank.opinions()
        assert [o.text for o in opinions] == ["Ana is a dedicated runner."]
        assert [e.label for e in bank.opinion_history(opinions[0].id)] == ["formed"]
