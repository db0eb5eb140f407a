"""A whole bank in memory, as the format's records: what export reads from a store, what a file parses into and
what import writes. ``validate`` checks that it is whole and self-consistent before anything is written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..validation import check_bank_id
from .errors import ArchiveError
from .format import (
    RECORD_KINDS,
    SINCE_VERSION,
    AuditRecord,
    BankRecord,
    DocumentRecord,
    EntityRecord,
    HeaderRecord,
    LinkRecord,
    OpinionHistoryRecord,
    UnitRecord,
    decode_vector,
)


@dataclass
class BankArchive:
    """A bank's records (unit records without their vectors, which live in ``vectors`` by unit id).

    ``lines`` maps a kind to the file line of each of its records (same order as the list), for error messages;
    an archive read from a store has none. An archive streamed from a file (``jsonl.read_archive(stream=True)``)
    holds ``FileRecords`` for documents, units, links and audit entries (read from the file on each iteration) and,
    with ``vectors_inline``, its unit records carry their vectors themselves (``vector_of``).
    """

    header: HeaderRecord
    bank: BankRecord
    documents: Collection[DocumentRecord] = field(default_factory=list)
    entities: list[EntityRecord] = field(default_factory=list)
    units: Collection[UnitRecord] = field(default_factory=list)
    links: Collection[LinkRecord] = field(default_factory=list)
    opinions: list[OpinionHistoryRecord] = field(default_factory=list)
    audit: Collection[AuditRecord] = field(default_factory=list)
    vectors: dict[str, np.ndarray] | None = None
    vectors_inline: bool = False
    vector_problem: str | None = None
    """Why the file's vectors are not used (a vector no embedder makes), or None."""
    lines: dict[str, list[int]] = field(default_factory=dict)
    path: str | None = None

    def counts(self) -> dict[str, int]:
        """Records per kind, as the header lists them."""
        return {"bank": 1, "document": len(self.documents), "entity": len(self.entities), "unit": len(self.units),
                "link": len(self.links), "opinion_history": len(self.opinions), "audit": len(self.audit)}

    @property
    def has_vectors(self) -> bool:
        """Whether the archive holds a vector for every unit."""
        return self.vectors is not None or self.vectors_inline

    def vector_of(self, unit: UnitRecord) -> np.ndarray:
        """A unit's vector (``has_vectors`` must hold)."""
        if unit.vector is not None:
            return decode_vector(unit.vector, self.header.embedder.dimension)
        if self.vectors is None:
            raise KeyError(unit.id)
        return self.vectors[unit.id]

    def networks(self) -> dict[str, int]:
        """Unit records per network (networks without units are left out)."""
        return dict(sorted(Counter(u.network.value for u in self.units).items()))

    def _line(self, kind: str, index: int) -> int | None:
        found = self.lines.get(kind)
        return found[index] if found is not None and index < len(found) else None

    def _fail(self, message: str, kind: str | None = None, index: int = 0) -> ArchiveError:
        return ArchiveError(message, line=self._line(kind, index) if kind else None, path=self.path)

    def validate(self) -> None:
        """Raise ``ArchiveError`` (naming the line) unless the archive is whole and every reference resolves."""
        try:
            check_bank_id(self.bank.id)
        except ValueError as exc:
            raise self._fail(f"invalid bank id {self.bank.id[:80]!r}: {exc}", "bank") from None
        if self.bank.id != self.header.bank_id:
            raise self._fail(f"bank record {self.bank.id!r} does not match the header's {self.header.bank_id!r}",
                             "bank")
        counts = self.counts()
        # A file older than a kind holds none of it and does not count it.
        expected = {kind: self.header.counts.get(kind, 0 if self.header.version < SINCE_VERSION.get(kind, 0) else None)
                    for kind in RECORD_KINDS}
        if counts != expected or set(self.header.counts) - set(RECORD_KINDS):
            wrong = [f"{k}: header {expected.get(k)}, file {counts.get(k)}" for k in RECORD_KINDS
                     if counts.get(k) != expected.get(k)] or [f"unknown kinds {sorted(self.header.counts)}"]
            raise self._fail("record counts do not match the header (" + "; ".join(wrong) + ")")
        if self.networks() != {k: v for k, v in sorted(self.header.networks.items()) if v}:
            raise self._fail(f"units per network {self.networks()} do not match the header's {self.header.networks}")
        self._unique("document", [d.id for d in self.documents])
        entity_ids = self._unique("entity", [e.id for e in self.entities])
        unit_ids = self._unique("unit", [u.id for u in self.units])
        self._unique("link", [f"{k.source_id} -> {k.target_id} ({k.type.value})" for k in self.links])
        self._unique("opinion_history", [o.opinion_id for o in self.opinions])
        self._unique("audit", [a.id for a in self.audit])
        for i, unit in enumerate(self.units):
            unknown = [e for e in unit.entities if e not in entity_ids]
            if unknown:
                raise self._fail(f"unit {unit.id!r} mentions entity {unknown[0]!r}, which the file does not hold",
                                 "unit", i)
            if len(set(unit.entities)) != len(unit.entities):
                raise self._fail(f"unit {unit.id!r} lists an entity twice", "unit", i)
        for i, link in enumerate(self.links):
            for end in (link.source_id, link.target_id):
                if end not in unit_ids:
                    raise self._fail(f"link points at unit {end!r}, which the file does not hold", "link", i)
        networks = {u.id: u.network.value for u in self.units}
        for i, opinion in enumerate(self.opinions):
            if networks.get(opinion.opinion_id) != "opinion":
                raise self._fail(f"opinion history of {opinion.opinion_id!r}, which is not an opinion unit of the "
                                 "file", "opinion_history", i)
        if self.header.vectors and not self.vectors_inline:  # streamed units were checked as they were read
            missing = [u.id for u in self.units if self.vectors is None or u.id not in self.vectors]
            if missing:
                index = next(i for i, u in enumerate(self.units) if u.id == missing[0])
                raise self._fail(f"unit {missing[0]!r} has no vector although the header says vectors are included",
                                 "unit", index)

    def _unique(self, kind: str, keys: Sequence[str]) -> set[str]:
        seen: set[str] = set()
        for i, key in enumerate(keys):
            if key in seen:
                raise self._fail(f"{kind.replace('_', ' ')} {key!r} appears twice", kind, i)
            seen.add(key)
        return seen
