"""``bank.forget`` when things go wrong, on both backends: a forget that fails inside its transaction, after its
commit, or in the vector index, or dies (SIGKILL) between the graph and the vectors, then retried; two processes
forgetting the same memory at once; a forget racing a write that rests on what it deletes; and bad input.
Afterwards the invariants hold (``assert_sound``), no text of what was forgotten is left in the keyword index or in
any memory, and what the forgotten memory superseded is current again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_correct_failures_support import (
    assert_sound,
    backend_fixture,
    fill,
    finish,
    open_spec,
    servers_fixture,
    spawn,
    together,
)

from hindsight_core.errors import HindsightError, InvalidInputError, StoreError
from hindsight_core.stores.neo4j import cypher as neo4j_cypher
from hindsight_core.stores.sqlite import sql as sqlite_sql

PORTO_WORDS = ("bigger", "Porto")
"""Words only the Porto message (``a3``, which supersedes Lisbon) holds."""


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from servers_fixture(tmp_path_factory)


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return backend_fixture(request, tmp_path, monkeypatch)


def _fail_inside_the_transaction(backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The units are deleted, then the store fails before the transaction commits (the backend's own error)."""
    if backend["name"] == "embedded":
        real = sqlite_sql._release_superseded

        def disk_full(con: Any, *args: Any) -> None:
            real(con, *args)
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(sqlite_sql, "_release_superseded", disk_full)
    else:
        from neo4j.exceptions import DatabaseError

        real_tx = neo4j_cypher._release_superseded_tx

        def server_fails(tx: Any, *args: Any) -> None:
            real_tx(tx, *args)
            raise DatabaseError("injected: the server failed inside the transaction")

        monkeypatch.setattr(neo4j_cypher, "_release_superseded_tx", server_fails)


def test_a_forget_failing_inside_its_transaction_changes_nothing_and_a_retry_completes(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        by_msg = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        lisbon, porto = by_msg["a1"], by_msg["a3"]
        opinion = bank.add_opinion("Ana is happier in Porto.", 0.6, based_on=[porto.id])
        before, vectors = hs.store.unit_ids(bank_id), hs.index.ids(bank_id)
        with monkeypatch.context() as m:
            _fail_inside_the_transaction(backend, m)
            with pytest.raises(StoreError):
                bank.forget(memory_id=porto.id)
        assert hs.store.unit_ids(bank_id) == before and hs.index.ids(bank_id) == vectors
        assert "bigger" in hs.store.get_document(bank_id, "s2").content  # type: ignore[union-attr]
        assert bank.get(lisbon.id).superseded_by == porto.id  # type: ignore[union-attr]
        assert [e.operation for e in bank.audit()].count("forget") == 0
        assert_sound(hs, bank_id)
        assert bank.forget(memory_id=porto.id) == 2
        assert bank.get(opinion.id) is None and bank.get(lisbon.id).superseded_by is None  # type: ignore[union-attr]
        assert bank.audit(limit=1)[0].counts == {"memories": 1, "opinion": 1}
        assert_sound(hs, bank_id, gone_words=PORTO_WORDS)


def test_a_forget_whose_vector_index_fails_stands_and_a_retry_finishes_it(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        porto = fill(hs, bank_id)["a3"]
        bank = hs.bank(bank_id)

        def unreachable(*args: Any, **kwargs: Any) -> None:
            raise StoreError("injected: the vector index is unreachable")

        monkeypatch.setattr(hs.index, "delete", unreachable)
        assert bank.forget(memory_id=porto.id) == 1  # the graph is the truth: the forget stands
        assert porto.id in hs.index.ids(bank_id)  # left marked ...
        hits = bank.recall("Where does Ana live? The new flat is much bigger.", budget=100_000).memories
        assert porto.id not in [m.id for m in hits]  # ... and never trusted without its unit
        assert hs.store.keyword_search(bank_id, "bigger", 10) == []
        monkeypatch.undo()
        assert bank.forget(memory_id=porto.id) == 0  # calling it again finishes it
        assert porto.id not in hs.index.ids(bank_id)
        assert_sound(hs, bank_id, gone_words=PORTO_WORDS)


def test_a_forget_failing_after_its_commit_is_finished_by_a_retry(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The graph committed, then the answer was lost: a typed error, and calling again removes the vectors."""
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        by_msg = fill(hs, bank_id)
        bank = hs.bank(bank_id)
        real = hs.store.forget_document

        def lost_answer(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            raise StoreError("injected: the connection dropped after the commit")

        monkeypatch.setattr(hs.store, "forget_document", lost_answer)
        with pytest.raises(StoreError):
            bank.forget(document_id="s2")
        monkeypatch.undo()
        assert bank.forget(document_id="s2") == 0
        assert not {by_msg["a3"].id, by_msg["r3"].id} & hs.index.ids(bank_id)
        assert bank.get(by_msg["a1"].id).superseded_by is None  # type: ignore[union-attr]
        assert_sound(hs, bank_id, gone_words=(*PORTO_WORDS, "quokka"))


def test_the_trail_records_a_forget_whose_commit_stood(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store committed the forget and its answer was lost: the caller hears of it (``LostAnswerError``, a
    ``StoreError``), the trail records what went, and calling again finds nothing left."""
    with open_spec({"path": str(tmp_path / "m")}) as hs:
        fill(hs, "trail")
        bank = hs.bank("trail")
        real = hs.store.forget_document

        def lost_answer(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            raise StoreError("injected: the connection dropped after the commit")

        monkeypatch.setattr(hs.store, "forget_document", lost_answer)
        with pytest.raises(StoreError):
            bank.forget(document_id="s2")
        monkeypatch.undo()
        bank.forget(document_id="s2")
        assert sum(e.counts.get("memories", 0) for e in bank.audit() if e.operation == "forget") == 2


def test_a_forget_killed_between_the_graph_and_the_vectors_is_recovered(backend: dict[str, Any]) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        by_msg = fill(hs, bank_id)
        hs.bank(bank_id).add_opinion("Ana is happier in Porto.", 0.6, based_on=[by_msg["a3"].id])
    code, _, err = finish(spawn(backend, "forget", bank_id, "document", "s2", "-", "after-commit"))
    assert code == -9, err
    with open_spec(backend) as hs:  # opening recovers what the dead process left: its marked vectors go
        bank = hs.bank(bank_id)
        assert bank.get(by_msg["a1"].id).superseded_by is None  # type: ignore[union-attr]
        assert [m.text for m in bank.opinions()] == []
        assert_sound(hs, bank_id, gone_words=(*PORTO_WORDS, "quokka"))
        assert bank.forget(document_id="s2") == 0
        assert_sound(hs, bank_id, gone_words=(*PORTO_WORDS, "quokka"))


def test_two_processes_forgetting_the_same_memory_forget_it_once(backend: dict[str, Any], tmp_path: Path) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        by_msg = fill(hs, bank_id)
        porto = by_msg["a3"]
        hs.bank(bank_id).add_opinion("Ana is happier in Porto.", 0.6, based_on=[porto.id])
    go = tmp_path / "go"
    procs = [spawn(backend, "forget", bank_id, "memory", porto.id, str(go)) for _ in range(2)]
    together(procs, go)
    results = [finish(p) for p in procs]
    for code, result, err in results:
        assert code == 0 and result.get("ok"), (result, err)
    assert sorted(r["count"] for _, r, _ in results) in ([0, 2], [2, 2])
    with open_spec(backend) as hs:
        bank = hs.bank(bank_id)
        entries = [e for e in bank.audit() if e.operation == "forget"]
        assert len(entries) == 2
        # The trail says once what went (both calls, when they deleted at the same moment, claim it).
        assert sorted(e.counts.get("memories", 0) for e in entries) in ([0, 1], [1, 1])
        assert bank.get(by_msg["a1"].id).superseded_by is None  # type: ignore[union-attr]
        assert_sound(hs, bank_id, gone_words=PORTO_WORDS)


def test_what_another_process_rests_on_a_memory_while_it_is_forgotten_goes_too(backend: dict[str, Any]) -> None:
    """The forget read what rests on the memory, then another process formed an opinion on it, then the forget
    deleted: the opinion must not outlive its evidence."""
    bank_id = backend["bank"]
    with open_spec(backend) as a, open_spec(backend) as b:
        porto = fill(a, bank_id)["a3"]
        real = a.store.units_with_references
        formed: list[str] = []

        def opinion_meanwhile(*args: Any, **kwargs: Any) -> Any:
            refs = real(*args, **kwargs)
            a.store.units_with_references = real  # type: ignore[method-assign]
            formed.append(b.bank(bank_id).add_opinion("Ana loves the bigger flat.", 0.7, based_on=[porto.id]).id)
            return refs

        a.store.units_with_references = opinion_meanwhile  # type: ignore[method-assign]
        assert a.bank(bank_id).forget(memory_id=porto.id) == 2
        assert formed and a.bank(bank_id).get(formed[0]) is None
        assert a.bank(bank_id).audit(limit=1)[0].counts == {"memories": 1, "opinion": 1}
        assert_sound(a, bank_id, gone_words=PORTO_WORDS)


def test_forgetting_a_document_takes_the_corrections_of_its_memories_even_replaced_ones(
    backend: dict[str, Any],
) -> None:
    """A correction of a memory whose document was retained again (the corrected memory replaced since) still goes
    with the document: it corrects what the document's messages were taken to say."""
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        bank = hs.bank(bank_id)
        said = [{"speaker": "Rui", "text": "I work as a nurse at the Santa Maria hospital.", "id": "r1"}]
        wrong = bank.retain(said, document_id="s1", extract=False, background=False).memories[0]
        fixed = bank.correct(wrong.id, "Rui works as a paramedic in Setubal.")
        bank.retain(said, document_id="s1", extract=False, background=False)
        assert bank.forget(document_id="s1") == 2
        assert bank.get(fixed.id) is None
        assert bank.audit(limit=1)[0].counts == {"memories": 1, "correction": 1}
        assert_sound(hs, bank_id, gone_words=("paramedic", "Setubal", "nurse"))


def test_bad_input_is_a_typed_error_and_forgets_nothing(backend: dict[str, Any]) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        fill(hs, bank_id)
        bank = hs.bank(bank_id)
        other = hs.bank(bank_id + "-other")
        elsewhere = other.retain("Lea keeps bees in Braga.", extract=False, background=False, document_id="s2")
        before = hs.store.unit_ids(bank_id)
        refused: list[dict[str, Any]] = [
            {}, {"memory_id": "a", "document_id": "b"}, {"memory_id": "a", "entity": "Ana"},
            {"memory_id": None, "document_id": None}, {"memory_id": 5}, {"memory_id": ["x"]}, {"memory_id": ""},
            {"memory_id": "\ud800"}, {"memory_id": "m" * 5000}, {"document_id": {"id": "s1"}},
            {"document_id": b"s1"}, {"entity": 3.5}, {"entity": ["Ana"]}, {"bank": bank_id},
        ]
        for kwargs in refused:
            with pytest.raises(InvalidInputError):
                bank.forget(**kwargs)
        # Unknown ids, another bank's memory, an entity nobody mentions: nothing to forget, never an error.
        for kwargs in ({"memory_id": "no-such-memory"}, {"memory_id": elsewhere.memories[0].id},
                       {"document_id": "no-such-document"}, {"entity": "Nobody Atall"}, {"entity": "\ud800"},
                       {"entity": "   "}):
            assert bank.forget(**kwargs) == 0
        assert hs.store.unit_ids(bank_id) == before
        assert other.get(elsewhere.memories[0].id) is not None  # another bank's document of the same id stays
        assert bank.forget(document_id="s2") > 0 and other.get(elsewhere.memories[0].id) is not None
        with pytest.raises(HindsightError):
            hs.bank(bank_id + "-missing", create=False).forget(memory_id="x")
        assert_sound(hs, bank_id)
        assert_sound(hs, bank_id + "-other")
