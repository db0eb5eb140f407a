"""Forgetting forgets, with the bundled model (Qwen2.5-Coder-1.5B through llama.cpp): a document the model has read
(facts beside its messages, an observation of the person written from them, an opinion resting on them) is forgotten,
and no text of it stays in recall over every network, in the person's observation (rewritten from what is left), in
the opinions or in an export. A few minutes on 2 CPU cores.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM
from hindsight_core.models import Network
from hindsight_core.runtime.integrity import check

pytestmark = pytest.mark.llm

SECRET = [
    {"speaker": "Ana", "text": "I have started seeing a therapist, Dr. Okafor, every Tuesday in Alvalade.", "id": "s1"},
    {"speaker": "Rui", "text": "That takes courage. How are the sessions with Dr. Okafor going?", "id": "s2"},
    {"speaker": "Ana", "text": "Good, Dr. Okafor is helping me with the panic attacks I get on the metro.", "id": "s3"},
]
OTHER = [
    {"speaker": "Ana", "text": "I run along the river in Lisbon every Sunday morning.", "id": "o1"},
    {"speaker": "Rui", "text": "Nice, how far do you run?", "id": "o2"},
    {"speaker": "Ana", "text": "About ten kilometres, then I have a coffee at the market.", "id": "o3"},
    {"speaker": "Ana", "text": "I work as a nurse at Santa Maria hospital, mostly night shifts.", "id": "o4"},
    {"speaker": "Ana", "text": "My cat Miso sleeps on my laptop when I study.", "id": "o5"},
]
WORDS = ("okafor", "therapist", "therapy", "panic", "alvalade")


def leaked(text: str) -> list[str]:
    low = text.casefold()
    return [w for w in WORDS if w in low]


def test_forgetting_a_document_the_model_read_leaves_no_text_of_it(tmp_path: Path, qwen: LocalLLM) -> None:
    with Hindsight.open(tmp_path / "memory", llm=qwen) as hs:
        bank = hs.bank("ana")
        bank.retain(OTHER, document_id="doc-a", timestamp=datetime(2024, 3, 3, tzinfo=UTC), extract=True,
                    background=False)
        bank.retain(SECRET, document_id="doc-b", timestamp=datetime(2024, 3, 10, tzinfo=UTC), extract=True,
                    background=False)
        assert bank.wait_idle(900)
        facts = [m for m in hs.store.get_units("ana", hs.store.units_of_document("ana", "doc-b")) if m.cites]
        assert facts, "the model wrote no fact of the document: nothing to forget beyond its messages"
        ana = hs.store.find_entity("ana", "Ana")
        assert ana is not None
        summary = hs.engine.observations.regenerate("ana", ana.id)
        if summary is None:
            # The 1.5B model's facts about Ana can all fail the observation's checks (then nothing is written); the
            # observation to forget is then written from the same material with a summary that quotes the secret.
            observations = hs.engine.observations
            real, mode = observations._llm, observations.mode
            observations.mode = "model"
            observations._llm = lambda: ScriptedLLM([{"summary": (
                "Ana sees a therapist, Dr. Okafor, every Tuesday in Alvalade. Ana runs along the river in Lisbon "
                "every Sunday morning.")}])
            try:
                summary = observations.regenerate("ana", ana.id)
            finally:
                observations._llm, observations.mode = real, mode
        assert summary is not None and summary.network == Network.OBSERVATION
        opinion = bank.add_opinion("Ana is looking after her mental health.", 0.7, based_on=[facts[0].id])

        deleted = bank.forget(document_id="doc-b")
        assert deleted >= len(SECRET) + len(facts)
        assert bank.get(opinion.id) is None
        entry = bank.audit(limit=1)[0]
        assert entry.operation == "forget" and not leaked(entry.summary + str(entry.counts))
        # The observation is written again from what is left, by the job the forget queued.
        assert bank.wait_idle(900)
        for query in ("Ana therapist Dr. Okafor", "panic attacks on the metro", "What does Ana do on Tuesdays?"):
            recalled = bank.recall(query, budget=100_000, networks=list(Network))
            assert not [m.text for m in recalled.memories if leaked(m.text)], query
        rewritten = bank.observation("Ana")
        assert rewritten is None or not leaked(rewritten.text)
        assert not [o.text for o in bank.opinions() if leaked(o.text)]
        assert not [w for w in WORDS if hs.store.keyword_search("ana", w, 10)]
        path = tmp_path / "ana.jsonl.gz"
        bank.export(path)
        assert not leaked(gzip.decompress(path.read_bytes()).decode("utf-8"))
        assert check(hs).ok


def test_forgetting_an_entity_of_a_document_that_stays_leaves_no_text_of_its_messages(tmp_path: Path,
                                                                                      qwen: LocalLLM) -> None:
    # One document holds the secret and the rest: forgetting the entity deletes its messages and what rests on them,
    # and cuts them out of the stored document, which stays for the rest (``retain/redact.py``).
    with Hindsight.open(tmp_path / "memory", llm=qwen) as hs:
        bank = hs.bank("ana")
        bank.retain([*OTHER[:3], *SECRET, *OTHER[3:]], document_id="doc", timestamp=datetime(2024, 3, 3, tzinfo=UTC),
                    extract=True, background=False)
        assert bank.wait_idle(900)
        assert bank.forget(entity="Dr. Okafor") >= len(SECRET)
        entry = bank.audit(limit=1)[0]
        assert entry.operation == "forget" and not leaked(entry.summary + str(entry.counts))
        assert bank.wait_idle(900)
        for query in ("Ana therapist Dr. Okafor", "panic attacks on the metro", "What does Ana do on Tuesdays?"):
            recalled = bank.recall(query, budget=100_000, networks=list(Network))
            assert not [m.text for m in recalled.memories if leaked(m.text)], query
        doc = hs.store.get_document("ana", "doc")
        assert doc is not None and not leaked(doc.content) and "ten kilometres" in doc.content
        assert "river" in " ".join(m.text for m in bank.recall("Where does Ana run?").memories)
        path = tmp_path / "ana.jsonl.gz"
        bank.export(path)
        assert not leaked(gzip.decompress(path.read_bytes()).decode("utf-8"))
        assert check(hs).ok
