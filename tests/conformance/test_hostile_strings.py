"""Hostile strings in bank ids, document ids, entity names, text and queries reach no query language."""

from __future__ import annotations

from typing import Any

import pytest
from conformance_support import Backend

from hindsight_core.models import BankProfile, Entity, Memory, Network
from hindsight_core.stores.base import Mention, UnitBatch

HOSTILE = [
    "quote ' double \" backtick ` backslash \\",
    "'; DROP TABLE units; --",
    "x'}) MATCH (n) DETACH DELETE n //",
    "`Unit`) DETACH DELETE u RETURN 1 //",
    "text:* OR bank_key:* AND NOT context:\"x\"~2^9 [a TO z] {b TO c} (paint*)",
    "+bank_key:\"b00\" -text:?ello \\\\ && || !",
    "$bank {id: $id} ${x} %s %(x)s ? :1",
    "unicode: Zoë Ñandú 北京 Москва שלום 🤖🔥 e\u0301",
    "L" * 500,
]


@pytest.mark.parametrize("hostile", HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
def test_hostile_strings_in_store(backend: Backend, hostile: str) -> None:
    s = backend.store()
    bank = hostile[:512]
    neighbour = "neighbour-bank"
    for b in (bank, neighbour):
        s.create_bank(BankProfile(id=b, name=hostile))
        s.add_units(b, UnitBatch(
            units=[Memory(id=f"{b}|u1", bank_id=b, text=f"painted sunrise {hostile}", network=Network.WORLD,
                          sources=[hostile], document_id=hostile, metadata={"h": hostile})],
            new_entities=[Entity(id=f"{b}|e1", bank_id=b, name=hostile, aliases=[hostile + "!"])],
            mentions=[Mention(f"{b}|u1", f"{b}|e1")],
        ))
    got = s.get_bank(bank)
    assert got is not None and got.name == hostile
    (m,) = s.get_units(bank, [f"{bank}|u1"])
    assert (m.text, m.sources, m.document_id, m.metadata, m.entities) == (
        f"painted sunrise {hostile}", [hostile], hostile, {"h": hostile}, [hostile])
    found = s.find_entity(bank, hostile.upper())
    assert found is not None and found.name == hostile
    alias = s.find_entity(bank, hostile + "!")
    assert alias is not None and alias.id == f"{bank}|e1"
    assert s.units_of_document(bank, hostile) == [f"{bank}|u1"]
    # the hostile text as a query: no syntax error, no other bank's unit
    for query in (hostile, f"sunrise {hostile}", "sunrise"):
        hits = s.keyword_search(bank, query, 10)
        assert [i for i, _ in hits] in ([f"{bank}|u1"], []), query
    assert [i for i, _ in s.keyword_search(bank, "sunrise", 10)] == [f"{bank}|u1"]
    assert {b.id for b in s.list_banks()} == {bank, neighbour}
    s.delete_bank(bank)
    assert s.get_bank(bank) is None and s.unit_ids(neighbour) == {f"{neighbour}|u1"}


def test_hostile_strings_through_facade(backend: Backend, embedder: Any) -> None:
    with backend.open(embedder) as hs:
        ids: dict[str, str] = {}
        for i, hostile in enumerate(HOSTILE):
            bank = hs.bank(hostile[:512])
            res = bank.retain([{"speaker": "Zoë", "text": f"Fact {i}: {hostile}", "id": hostile[:80]}],
                              document_id=f"doc/{hostile[:100]}", extract=False, background=False)
            ids[hostile] = res.memories[0].id
        for hostile in HOSTILE:
            bank = hs.bank(hostile[:512])
            mems = bank.recall(hostile, budget=4000).memories
            assert [m.id for m in mems] == [ids[hostile]]  # its own memory, nobody else's
            assert [d.id for d in bank.documents(prefix="doc/")] == [f"doc/{hostile[:100]}"]
            assert bank.forget(document_id=f"doc/{hostile[:100]}") == 1
            assert bank.recall(hostile, budget=4000).memories == []
        assert {p.id for p in hs.banks()} == {h[:512] for h in HOSTILE}
