"""``AuditLog`` on every graph store: entries append once per (bank, id), page newest or oldest first, and outlive
their bank."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conformance_support import Backend

from hindsight_core.models import AuditEntry, BankProfile


def entry(bank_id: str, n: int, **kw: object) -> AuditEntry:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n)
    fields: dict[str, object] = {"id": f"e{n}", "bank_id": bank_id, "at": at, "surface": "mcp", "token_id": "tok1",
                                 "operation": "retain", "document_id": f"d{n}", "memory_ids": [f"u{n}"],
                                 "counts": {"memories": 1}, "summary": "s"}
    return AuditEntry.model_validate({**fields, **kw})


def test_audit_log(backend: Backend, bank_id: str) -> None:
    store = backend.store()
    other = bank_id + "-other"
    store.create_bank(BankProfile(id=bank_id, name="b"))
    assert store.append_audit([entry(bank_id, n) for n in range(5)]) == 5
    assert store.append_audit([entry(other, 1, surface="cli", token_id=None, document_id=None, memory_ids=[])]) == 1
    # The same entries again (an import retried) change nothing; the same id in another bank is its own entry.
    assert store.append_audit([entry(bank_id, 0), entry(bank_id, 1)]) == 0
    assert store.count_audit(bank_id) == 5 and store.count_audit(other) == 1 and store.count_audit() == 6
    newest = store.audit_entries(bank_id, limit=2)
    assert [e.id for e in newest] == ["e4", "e3"] and newest[0] == entry(bank_id, 4)
    assert [e.id for e in store.audit_entries(bank_id, limit=2, offset=3)] == ["e1", "e0"]
    assert [e.id for e in store.audit_entries(bank_id, oldest_first=True)] == [f"e{n}" for n in range(5)]
    assert store.audit_entries(other) == [entry(other, 1, surface="cli", token_id=None, document_id=None,
                                                memory_ids=[])]
    assert [e.bank_id for e in store.audit_entries(limit=100)].count(bank_id) == 5
    # Deleting the bank keeps its trail.
    store.delete_bank(bank_id)
    assert store.get_bank(bank_id) is None and store.count_audit(bank_id) == 5
