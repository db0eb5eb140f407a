"""Raw first with the bundled model (Qwen2.5-Coder-1.5B through llama.cpp): a chat turn added through LangChain's
chat history is stored as raw memories without waiting for the model; a SIGKILL before the facts job finished loses
nothing, and the next process to open the store adds the facts, each citing the raw messages it came from.

A few minutes on 2 CPU cores. A missing runtime or missing weights is a failure, not a skip: the test command
installs both.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from hindsight_core.models import JobStatus
from hindsight_core.runtime.integrity import check

pytestmark = pytest.mark.llm

CHILD = """
import json, os, signal, sys, time
from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from langchain_core.messages import AIMessage, HumanMessage
from langchain_hindsight import HindsightChatMessageHistory

hs = Hindsight.open(sys.argv[1], llm=LocalLLM("qwen2.5-1.5b"))
history = HindsightChatMessageHistory(hs.bank("chat"), "session-1")
began = time.perf_counter()
history.add_messages([
    HumanMessage("My sister Lena moved to Lisbon last spring and opened a bakery there."),
    AIMessage("That is lovely! How is the bakery going?"),
])
elapsed = time.perf_counter() - began
result = history.last_result
units = hs.store.get_units("chat", hs.store.units_of_document("chat", result.document_id))
job = next(j for j in hs.bank("chat").jobs() if j.id == result.job_id)
print(json.dumps({"elapsed": elapsed, "document": result.document_id, "job": result.job_id, "job_status": job.status,
                  "raw": [m.id for m in result.memories], "facts": sum(m.cites is not None for m in units)}),
      flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # before the facts job can finish: no close, no clean shutdown
"""


def test_chat_turn_returns_before_the_model_and_a_killed_process_loses_no_facts(tmp_path: Path, qwen: LocalLLM) -> None:
    store = tmp_path / "memory"
    child = subprocess.run([sys.executable, "-c", CHILD, str(store)], capture_output=True, text=True, timeout=600)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    said = json.loads(child.stdout.strip().splitlines()[-1])
    # add_messages returned with both messages stored as memories and the model not yet heard from.
    assert len(said["raw"]) == 2 and said["facts"] == 0 and said["job_status"] in ("queued", "running")
    print(f"add_messages of one turn returned in {said['elapsed']:.3f} s with the bundled model configured")

    with Hindsight.open(store, llm=qwen) as hs:
        bank = hs.bank("chat")
        assert bank.wait_idle(900)
        job = next(j for j in bank.jobs() if j.id == said["job"])
        assert job.status == JobStatus.DONE, job.error
        units = hs.store.get_units("chat", hs.store.units_of_document("chat", said["document"]))
        raw = [m for m in units if m.cites is None]
        facts = [m for m in units if m.cites is not None]
        assert [m.id for m in raw] == said["raw"]  # the raw messages are the ones stored before the kill
        assert facts and all(set(f.cites or []) <= set(said["raw"]) for f in facts)
        assert any(f.cites and "Lisbon" in f.text for f in facts)
        assert all(not b.problems for b in check(hs).banks)
        rec = bank.recall("Where does Lena live?", budget=300)
        assert rec.memories and any("Lisbon" in m.text for m in rec.memories[:2])
