"""Forgetting a message by id or by entity takes its words out of the stored document too, on every backend: the
raw input retain stored first is what ``export`` writes and what a queued facts job reads (``retain/redact.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance_support import Backend

from hindsight_core.models import Memory
from hindsight_core.runtime.integrity import check

MESSAGES = [
    {"speaker": "Ana", "text": "I see Dr. Okafor about my knee every Tuesday.", "id": "m1"},
    {"speaker": "Rui", "text": "I run along the river every Sunday morning.", "id": "m2"},
    {"speaker": "Ana", "text": "The bakery on our street sells great rye bread.", "id": "m3"},
]


def _retained(hs: Any, bank_id: str) -> tuple[Any, list[Memory]]:
    """``MESSAGES`` retained raw as document ``d1``: the bank and the memories made of them."""
    bank = hs.bank(bank_id)
    return bank, bank.retain(MESSAGES, document_id="d1", extract=False, background=False).memories


def _with(memories: list[Memory], word: str) -> Memory:
    """The memory whose text holds ``word``."""
    return next(m for m in memories if word in m.text)


def _export_text(hs: Any, bank_id: str, path: Path) -> str:
    hs.bank(bank_id).export(path)
    return path.read_text(encoding="utf-8").lower()


def test_forgetting_a_message_cuts_it_out_of_its_document_and_the_export(
    backend: Backend, embedder: Any, bank_id: str, tmp_path: Path,
) -> None:
    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        knee = _with(memories, "Okafor")
        assert "okafor" in _export_text(hs, bank_id, tmp_path / "before.jsonl")
        assert bank.forget(memory_id=knee.id) == 1
        doc = hs.store.get_document(bank_id, "d1")
        assert doc is not None and "Okafor" not in doc.content
        # The other messages stay in the document, whole, as retain stored them; the forgotten one keeps its place
        # and id (the timeline places the gap by it), with no text and no speaker.
        assert "every Sunday morning" in doc.content and "great rye bread" in doc.content
        stored = json.loads(doc.content)
        assert [m["id"] for m in stored] == ["m1", "m2", "m3"]
        assert stored[0]["text"] == "" and "speaker" not in stored[0]
        assert "okafor" not in _export_text(hs, bank_id, tmp_path / "after.jsonl")
        assert check(hs).ok


def test_forgetting_an_entity_cuts_its_messages_out_and_the_trail_does_not_name_it(
    backend: Backend, embedder: Any, bank_id: str, tmp_path: Path,
) -> None:
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        bank.retain(MESSAGES, document_id="d1", extract=False, background=False)
        assert bank.forget(entity="Dr Okafor") >= 1
        doc = hs.store.get_document(bank_id, "d1")
        assert doc is not None and "Okafor" not in doc.content and "rye bread" in doc.content
        assert "okafor" not in _export_text(hs, bank_id, tmp_path / "after.jsonl")
        entry = bank.audit(limit=1)[0]
        assert entry.operation == "forget" and "okafor" not in entry.summary.lower()
        assert entry.summary.startswith("entity sha256:")


def test_a_forgotten_passage_of_a_text_is_blanked_and_the_others_keep_their_offsets(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    paragraphs = [
        "The allotment committee met on Monday. " * 12,
        "Marguerite Holloway asked for the shed key to be copied. " * 9,
        "The water butts will be cleaned before the frost comes. " * 9,
    ]
    text = "\n\n".join(p.strip() for p in paragraphs)
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        memories = bank.retain(text, document_id="t1", extract=False, background=False).memories
        assert len(memories) >= 3
        secret = next(m for m in memories if "Holloway" in m.text)
        others = [m for m in memories if m.id != secret.id]
        bank.forget(memory_id=secret.id)
        doc = hs.store.get_document(bank_id, "t1")
        assert doc is not None and "Holloway" not in doc.content and len(doc.content) == len(text)
        # Each other passage's offsets still point at its own words in the stored text.
        for unit in others:
            span = next(s for s in unit.sources if s.startswith("chars:"))
            start, end = (int(x) for x in span.removeprefix("chars:").split("-"))
            assert doc.content[start:end] == text[start:end] and doc.content[start:end].strip() in unit.text


def test_forgetting_a_message_drops_the_rejected_facts_sampled_in_its_document_s_job(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    # A facts job's result samples the facts the checks did not store, which may quote the forgotten message.
    import uuid

    from hindsight_core.models import Job

    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        job = Job(id=uuid.uuid4().hex, bank_id=bank_id, kind="facts", payload={"document_id": "d1", "revision": 1})
        hs.store.enqueue_job(job)
        sample = {"text": "Ana sees Dr. Okafor about her knee.", "sources": ["m1"], "reason": "speaker", "detail": ""}
        hs.store.finish_job(job.id, result={"facts": 2, "rejected": 1, "rejected_by_reason": {"speaker": 1},
                                            "rejections": [sample]})
        knee = _with(memories, "Okafor")
        bank.forget(memory_id=knee.id)
        (stored,) = [j for j in hs.store.list_jobs(bank_id) if j.id == job.id]
        # The sample goes, the counts stay.
        assert stored.result == {"facts": 2, "rejected": 1, "rejected_by_reason": {"speaker": 1}, "rejections": []}


def test_a_document_stored_again_during_a_forget_is_not_overwritten(
    backend: Backend, embedder: Any, bank_id: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The forget reads the document, then a retain of the same id commits before the forget writes: the write
    # conflicts, nothing of it lands, and the forget reads again (its memory is gone with the old version).
    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        knee = _with(memories, "Okafor")
        forgetter = hs.engine.forgetter
        real = forgetter._redactions
        newer = [{"speaker": "Ana", "text": "We moved to Porto, the flat is bigger.", "id": "n1"}]

        retained: list[bool] = []

        def then_retain(*args: Any) -> Any:
            out = real(*args)
            if not retained:  # once: the forget's second read finds the new version
                retained.append(True)
                bank.retain(newer, document_id="d1", extract=False, background=False)
            return out

        monkeypatch.setattr(forgetter, "_redactions", then_retain)
        assert bank.forget(memory_id=knee.id) == 0
        doc = hs.store.get_document(bank_id, "d1")
        assert doc is not None and json.loads(doc.content)[0]["text"] == newer[0]["text"]
        assert check(hs).ok


def test_two_forgets_in_one_document_both_hold(backend: Backend, embedder: Any, bank_id: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The second forget commits between the first one's read of the document and its write.
    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        knee, bread = (_with(memories, word) for word in ("Okafor", "rye"))
        forgetter = hs.engine.forgetter
        real = forgetter._redactions
        calls = []

        def and_another(*args: Any) -> Any:
            out = real(*args)
            calls.append(1)
            if len(calls) == 1:
                bank.forget(memory_id=bread.id)
            return out

        monkeypatch.setattr(forgetter, "_redactions", and_another)
        assert bank.forget(memory_id=knee.id) == 1
        doc = hs.store.get_document(bank_id, "d1")
        assert doc is not None and "Okafor" not in doc.content and "rye" not in doc.content
        assert "Sunday morning" in doc.content and len(calls) >= 3  # the first forget read again


def test_what_a_unit_holds_is_read_from_its_sources_not_from_today_s_settings(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    text = "\\n\\n".join(p.strip() for p in (
        "The allotment committee met on Monday. " * 12,
        "Marguerite Holloway asked for the shed key to be copied. " * 9,
        "The water butts will be cleaned before the frost comes. " * 9))
    text = text.replace("\\n\\n", "\\n\\n\\x07", 1)  # a control character the stored text keeps as it was given
    with backend.open(embedder) as hs:
        bank = hs.bank(bank_id)
        memories = bank.retain(text, document_id="t1", extract=False, background=False).memories
        secret = next(m for m in memories if "Holloway" in m.text)
        forgetter = hs.engine.forgetter
        was = forgetter.settings
        forgetter.settings = was.model_copy(update={"passage_chars": 870})  # cut differently today
        try:
            bank.forget(memory_id=secret.id)
        finally:
            forgetter.settings = was
        doc = hs.store.get_document(bank_id, "t1")
        assert doc is not None and len(doc.content) == len(text)
        start, end = (int(x) for x in next(s for s in secret.sources if s.startswith("chars:"))[6:].split("-"))
        assert "Holloway" in text[start:end] and doc.content[start:end].strip() == ""
        assert doc.content[:start] == text[:start] and doc.content[end:] == text[end:]  # the rest byte for byte


def test_reprocessing_a_document_after_a_forget_does_not_bring_the_message_back(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        knee = _with(memories, "Okafor")
        bank.forget(memory_id=knee.id)
        again = bank.reprocess("d1", extract=False)
        assert len(again.memories) == 2 and not any("Okafor" in m.text for m in again.memories)
        units = hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id)))
        assert not any("Okafor" in u.text for u in units) and hs.store.keyword_search(bank_id, "Okafor", 10) == []
        assert check(hs).ok


def test_check_finds_a_fact_citing_a_missing_message_and_repair_mends_it(
    backend: Backend, embedder: Any, bank_id: str,
) -> None:
    # A delete that bypassed forget (the store called directly) leaves facts citing what is gone.
    from hindsight_core.extract.base import ExtractedFact
    from hindsight_core.models import Document, Network

    with backend.open(embedder) as hs:
        bank, memories = _retained(hs, bank_id)
        knee, river = (_with(memories, w) for w in ("Okafor", "river"))
        doc = Document(id="d1", bank_id=bank_id, content="", timestamp=knee.mentioned_at)
        facts = [ExtractedFact(text=t, network=Network.WORLD, sources=["m1"], mentioned_at=knee.mentioned_at)
                 for t in ("Ana sees Dr. Okafor about her knee.", "Ana sees a doctor and Rui runs by the river.")]
        stored = hs.engine.retainer.store_facts(doc, facts, cites=[[knee.id], [knee.id, river.id]]).memories
        hs.store.delete_units(bank_id, [knee.id])
        hs.index.delete(bank_id, [knee.id])
        report = check(hs, [bank_id])
        assert sorted(report.banks[0].problems["dangling_citation"]) == sorted(m.id for m in stored)
        repaired = check(hs, [bank_id], repair=True)
        assert repaired.ok and repaired.banks[0].repaired["dangling_citation"] == 2
        assert bank.get(stored[0].id) is None  # it cited nothing else: it rests on nothing
        assert bank.get(stored[1].id).cites == [river.id]  # type: ignore[union-attr]
