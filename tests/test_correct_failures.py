"""``bank.correct`` when things go wrong, on both backends: a correction that fails inside its transaction, fails
after its commit, or dies (SIGKILL) half way, then retried; two processes correcting the same memory at once; a
correction racing a forget; and bad input. Afterwards the invariants hold (``assert_sound``: ``hindsight check``, no
dangling ``superseded_by``, one correction per corrected memory and it holds the supersession) and a retry completes
the work."""

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

from hindsight_core import Hindsight
from hindsight_core.errors import (
    BankNotFoundError,
    HindsightError,
    InvalidInputError,
    MemoryNotFoundError,
    StoreError,
)
from hindsight_core.retain.correct import MAX_CORRECTION_CHARS, MAX_CORRECTOR_CHARS, correction_document_id
from hindsight_core.stores.neo4j import units as neo4j_units
from hindsight_core.stores.sqlite import units as sqlite_units


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from servers_fixture(tmp_path_factory)


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return backend_fixture(request, tmp_path, monkeypatch)


def _corrections(hs: Hindsight, bank_id: str, memory_id: str) -> list[str]:
    return hs.store.units_of_document(bank_id, correction_document_id(memory_id))


def _fail_inside_the_transaction(backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The supersession is written, then the store fails before the transaction commits (a full disk, a dropped
    connection): the backend's own error, inside its transaction."""
    if backend["name"] == "embedded":
        real = sqlite_units._supersede

        def disk_full(con: Any, *args: Any) -> int:
            real(con, *args)
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(sqlite_units, "_supersede", disk_full)
    else:
        from neo4j.exceptions import DatabaseError

        real_tx = neo4j_units._supersede_tx

        def server_fails(tx: Any, *args: Any) -> Any:
            real_tx(tx, *args)
            raise DatabaseError("injected: the server failed inside the transaction")

        monkeypatch.setattr(neo4j_units, "_supersede_tx", server_fails)


def test_a_correction_failing_inside_its_transaction_changes_nothing_and_a_retry_completes(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        wrong = fill(hs, bank_id)["r1"]
        bank = hs.bank(bank_id)
        before = hs.store.unit_ids(bank_id)
        with monkeypatch.context() as m:
            _fail_inside_the_transaction(backend, m)
            with pytest.raises(StoreError):
                bank.correct(wrong.id, "Rui works as a paramedic.", by="rui")
        # Nothing of it: no unit, no vector, the memory current, no audit entry.
        assert hs.store.unit_ids(bank_id) == before and hs.index.ids(bank_id) == before
        assert bank.get(wrong.id).superseded_by is None  # type: ignore[union-attr]
        assert [e.operation for e in bank.audit()].count("correct") == 0
        assert_sound(hs, bank_id)
        fixed = bank.correct(wrong.id, "Rui works as a paramedic.", by="rui")
        assert bank.get(wrong.id).superseded_by == fixed.id  # type: ignore[union-attr]
        assert _corrections(hs, bank_id, wrong.id) == [fixed.id]
        assert [e.operation for e in bank.audit()].count("correct") == 1
        assert_sound(hs, bank_id)


def test_a_correction_whose_vector_index_fails_changes_nothing(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        wrong = fill(hs, bank_id)["r1"]
        bank = hs.bank(bank_id)
        before = hs.store.unit_ids(bank_id)

        def unreachable(*args: Any, **kwargs: Any) -> None:
            raise StoreError("injected: the vector index is unreachable")

        monkeypatch.setattr(hs.index, "upsert", unreachable)
        with pytest.raises(StoreError):
            bank.correct(wrong.id, "Rui works as a paramedic.")
        monkeypatch.undo()
        assert hs.store.unit_ids(bank_id) == before and bank.get(wrong.id).superseded_by is None  # type: ignore[union-attr]
        assert_sound(hs, bank_id)
        fixed = bank.correct(wrong.id, "Rui works as a paramedic.")
        assert bank.get(wrong.id).superseded_by == fixed.id  # type: ignore[union-attr]
        assert_sound(hs, bank_id)


def test_a_correction_whose_commit_stood_keeps_its_vector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph committed the correction and its answer was lost: the caller hears of it, and the committed memory
    keeps its vector (only a write that did not commit has its new vectors undone)."""
    with open_spec({"path": str(tmp_path / "m")}) as hs:
        wrong = fill(hs, "lost")["r1"]
        real = hs.store.add_units

        def lost_answer(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            raise StoreError("injected: the connection dropped after the commit")

        monkeypatch.setattr(hs.store, "add_units", lost_answer)
        with pytest.raises(StoreError):
            hs.bank("lost").correct(wrong.id, "Rui works as a paramedic.")
        assert_sound(hs, "lost")


def test_a_correction_failing_after_its_commit_is_completed_by_a_retry(
    backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store committed, then the answer was lost (a connection dropped after the commit): the caller sees a
    typed error, and calling again leaves exactly one correction, holding the supersession, with its vector."""
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        wrong = fill(hs, bank_id)["r1"]
        bank = hs.bank(bank_id)
        real = hs.store.add_units

        def lost_answer(*args: Any, **kwargs: Any) -> Any:
            real(*args, **kwargs)
            raise StoreError("injected: the connection dropped after the commit")

        monkeypatch.setattr(hs.store, "add_units", lost_answer)
        with pytest.raises(StoreError):
            bank.correct(wrong.id, "Rui works as a paramedic.", by="rui")
        monkeypatch.undo()
        again = bank.correct(wrong.id, "Rui works as a paramedic.", by="rui")
        assert bank.get(wrong.id).superseded_by == again.id  # type: ignore[union-attr]
        assert _corrections(hs, bank_id, wrong.id) == [again.id]
        assert again.id in hs.index.ids(bank_id)
        assert_sound(hs, bank_id)


def test_a_correction_killed_half_way_is_recovered_and_completed_by_a_retry(backend: dict[str, Any]) -> None:
    """SIGKILL after the vector was written and before the graph commit (bank ``-before``), or after the commit and
    before the replaced vectors went (``-after``): the next process recovers the dead ones' marks on open, and a
    retry leaves one correction. (The server backend runs the second; its recovery code is the same.)"""
    kills = ["before-commit", "after-commit"] if backend["name"] == "embedded" else ["after-commit"]
    banks = {kill: f"{backend['bank']}-{kill.split('-')[0]}" for kill in kills}
    wrong, first = {}, {}
    with open_spec(backend) as hs:
        for kill, bank_id in banks.items():
            wrong[kill] = fill(hs, bank_id)["r1"]
            first[kill] = hs.bank(bank_id).correct(wrong[kill].id, "Rui works as a firefighter.")  # replaced next
    procs = [spawn(backend, "correct", banks[k], wrong[k].id, "Rui works as a paramedic.", "-", k) for k in kills]
    for proc in procs:  # both killed at once: their start-up overlaps
        code, _, err = finish(proc)
        assert code == -9, err
    with open_spec(backend) as hs:  # opening recovers what the dead processes left (their marked vectors)
        for kill, bank_id in banks.items():
            bank, old = hs.bank(bank_id), wrong[kill]
            held = _corrections(hs, bank_id, old.id)
            if kill == "before-commit":  # nothing of it: the first correction stands
                assert held == [first[kill].id] and bank.get(old.id).superseded_by == first[kill].id  # type: ignore[union-attr]
            else:  # all of it in the graph: the new correction replaced the first and holds the supersession
                assert len(held) == 1 and held[0] != first[kill].id
                assert bank.get(old.id).superseded_by == held[0]  # type: ignore[union-attr]
            assert_sound(hs, bank_id)
            again = bank.correct(old.id, "Rui works as a paramedic.", by="rui")
            assert _corrections(hs, bank_id, old.id) == [again.id]
            assert bank.get(old.id).superseded_by == again.id  # type: ignore[union-attr]
            assert_sound(hs, bank_id)


def test_two_processes_correcting_the_same_memory_leave_one_correction(
    backend: dict[str, Any], tmp_path: Path,
) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        wrong = fill(hs, bank_id)["r1"]
    go = tmp_path / "go"
    texts = ["Rui works as a paramedic.", "Rui works as a firefighter."]
    procs = [spawn(backend, "correct", bank_id, wrong.id, text, str(go)) for text in texts]
    together(procs, go)
    results = [finish(p) for p in procs]
    for code, result, err in results:
        assert code == 0 and result.get("ok"), (result, err)  # both calls succeed: the later one stands
    with open_spec(backend) as hs:
        bank = hs.bank(bank_id)
        held = _corrections(hs, bank_id, wrong.id)
        assert len(held) == 1
        assert bank.get(wrong.id).superseded_by == held[0]  # type: ignore[union-attr]
        assert bank.get(held[0]).text in texts  # type: ignore[union-attr]
        entries = [e for e in bank.audit() if e.operation == "correct"]
        assert len(entries) == 2 and all(wrong.id in e.memory_ids for e in entries)
        assert held[0] in {i for e in entries for i in e.memory_ids}
        assert_sound(hs, bank_id)


def test_a_correction_committed_between_another_ones_read_and_commit_is_settled(backend: dict[str, Any]) -> None:
    """The race of two processes, made deterministic: B reads the memory's corrections, A corrects it, then B
    commits. B is the later call, so B's correction stands, alone, holding the supersession."""
    bank_id = backend["bank"]
    with open_spec(backend) as a, open_spec(backend) as b:
        wrong = fill(a, bank_id)["r1"]
        real = b.store.add_units
        written: list[str] = []

        def a_commits_first(*args: Any, **kwargs: Any) -> Any:
            b.store.add_units = real  # type: ignore[method-assign]
            written.append(a.bank(bank_id).correct(wrong.id, "Rui works as a firefighter.").id)
            return real(*args, **kwargs)

        b.store.add_units = a_commits_first  # type: ignore[method-assign]
        later = b.bank(bank_id).correct(wrong.id, "Rui works as a paramedic.")
        assert written and written[0] != later.id
        assert _corrections(a, bank_id, wrong.id) == [later.id]
        assert a.bank(bank_id).get(wrong.id).superseded_by == later.id  # type: ignore[union-attr]
        assert_sound(a, bank_id)


def test_a_memory_forgotten_while_it_is_corrected_keeps_no_correction(backend: dict[str, Any]) -> None:
    """Forgotten between the correction's read and its commit: the correction must not outlive what it corrects
    (``MemoryNotFoundError``); forgotten after the correction committed: forgetting takes it along."""
    bank_id = backend["bank"]
    with open_spec(backend) as a, open_spec(backend) as b:
        by_msg = fill(a, bank_id)
        wrong = by_msg["r1"]
        real = b.store.add_units

        def forgotten_meanwhile(*args: Any, **kwargs: Any) -> Any:
            b.store.add_units = real  # type: ignore[method-assign]
            assert a.bank(bank_id).forget(memory_id=wrong.id) == 1
            return real(*args, **kwargs)

        b.store.add_units = forgotten_meanwhile  # type: ignore[method-assign]
        with pytest.raises(MemoryNotFoundError):
            b.bank(bank_id).correct(wrong.id, "Rui works as a paramedic.")
        assert _corrections(a, bank_id, wrong.id) == []
        assert_sound(a, bank_id, gone_words=("paramedic", "nurse"))
        # The other order: the forget read what rests on the memory before the correction committed.
        lisbon = by_msg["a1"]
        real_refs = a.store.units_with_references

        def corrected_meanwhile(*args: Any, **kwargs: Any) -> Any:
            refs = real_refs(*args, **kwargs)
            a.store.units_with_references = real_refs  # type: ignore[method-assign]
            b.bank(bank_id).correct(lisbon.id, "Ana lived in Coimbra, not Lisbon.")
            return refs

        a.store.units_with_references = corrected_meanwhile  # type: ignore[method-assign]
        assert a.bank(bank_id).forget(memory_id=lisbon.id) == 2
        assert _corrections(a, bank_id, lisbon.id) == []
        assert_sound(a, bank_id, gone_words=("Coimbra", "Lisbon"))


def test_bad_input_is_a_typed_error_and_changes_nothing(backend: dict[str, Any]) -> None:
    bank_id = backend["bank"]
    with open_spec(backend) as hs:
        by_msg = fill(hs, bank_id)
        wrong = by_msg["r1"]
        bank = hs.bank(bank_id)
        elsewhere = hs.bank(bank_id + "-other").retain("Lea keeps bees in Braga.", extract=False,
                                                        background=False).memories[0]
        before = hs.store.unit_ids(bank_id)
        cases: list[tuple[tuple[Any, ...], dict[str, Any], type[HindsightError]]] = [
            (("no-such-memory", "Rui is a paramedic."), {}, MemoryNotFoundError),
            ((elsewhere.id, "Lea keeps wasps."), {}, MemoryNotFoundError),  # another bank's memory
            ((wrong.id, ""), {}, InvalidInputError),
            ((wrong.id, "   \n\t "), {}, InvalidInputError),
            ((wrong.id, "\u200b\u200b\ufeff"), {}, InvalidInputError),  # only invisible characters
            ((wrong.id, "\x00\x01"), {}, InvalidInputError),
            ((wrong.id, "?! ..."), {}, InvalidInputError),
            ((wrong.id, "paramedic " * MAX_CORRECTION_CHARS), {}, InvalidInputError),
            ((wrong.id, None), {}, InvalidInputError),
            ((wrong.id, 42), {}, InvalidInputError),
            ((wrong.id, b"Rui is a paramedic."), {}, InvalidInputError),
            ((wrong.id, ["Rui is a paramedic."]), {}, InvalidInputError),
            ((None, "Rui is a paramedic."), {}, InvalidInputError),
            ((42, "Rui is a paramedic."), {}, InvalidInputError),
            (({"id": wrong.id}, "Rui is a paramedic."), {}, InvalidInputError),
            (("", "Rui is a paramedic."), {}, InvalidInputError),
            (("\ud800", "Rui is a paramedic."), {}, InvalidInputError),
            (("x" * 5000, "Rui is a paramedic."), {}, InvalidInputError),
            ((wrong.id, "Rui is a paramedic."), {"by": 7}, InvalidInputError),
            ((wrong.id, "Rui is a paramedic."), {"by": "b" * (MAX_CORRECTOR_CHARS + 1)}, InvalidInputError),
            ((wrong.id, "Rui is a paramedic."), {"by": ["rui"]}, InvalidInputError),
        ]
        for args, kwargs, expected in cases:
            with pytest.raises(expected):
                bank.correct(*args, **kwargs)
        with pytest.raises(BankNotFoundError):
            hs.bank(bank_id + "-missing", create=False).correct(wrong.id, "Rui is a paramedic.")
        assert hs.store.unit_ids(bank_id) == before
        assert bank.get(wrong.id).superseded_by is None  # type: ignore[union-attr]
        assert [e.operation for e in bank.audit()].count("correct") == 0
        # Broken unicode in the text is stored as U+FFFD, like retain's; the corrector's name is bounded and tidy.
        fixed = bank.correct(wrong.id, "Rui works as a paramedic \ud800 now.", by="  rui\n ")
        assert "\ufffd" in fixed.text and fixed.metadata["correction"]["by"] == "rui"
        # Correcting a correction, and an opinion, keeps the chain whole.
        fixed_again = bank.correct(fixed.id, "Rui works as a paramedic in Porto.")
        assert bank.get(fixed.id).superseded_by == fixed_again.id  # type: ignore[union-attr]
        opinion = bank.add_opinion("Rui is a careful nurse.", 0.7, based_on=[wrong.id])
        changed = bank.correct(opinion.id, "Rui is a careful paramedic.")
        # An opinion corrected is an opinion still: held as firmly, its history starting with its formation.
        assert changed.network == opinion.network and changed.confidence == opinion.confidence
        assert [e.label for e in bank.opinion_history(changed.id)] == ["formed"]
        assert [o.id for o in bank.opinions()] and bank.recall("Rui paramedic").memories
        assert_sound(hs, bank_id)


def test_retaining_the_corrected_memorys_document_again_keeps_it_corrected(tmp_path: Path) -> None:
    """The correction lives under its own document so that retaining the source document again never drops it, and
    the memory that replaces the corrected one (the same message, the same text) is superseded by the same correction
    (``RetainPipeline._kept_corrections``). (Forgetting the document still takes the correction along:
    ``test_forget_failures``.)"""
    spec = {"path": str(tmp_path / "m")}
    with open_spec(spec) as hs:
        bank = hs.bank("again")
        said = [{"speaker": "Rui", "text": "I work as a nurse at the Santa Maria hospital.", "id": "r1"}]
        wrong = bank.retain(said, document_id="s1", extract=False, background=False).memories[0]
        fixed = bank.correct(wrong.id, "Rui works as a paramedic.")
        again = bank.retain(said, document_id="s1", extract=False, background=False).memories[0]
        assert bank.get(fixed.id) is not None
        assert bank.get(again.id).superseded_by == fixed.id  # type: ignore[union-attr]
