"""``BankStore`` on Neo4j: bank profiles, and deleting a bank with everything in it."""

from __future__ import annotations

from typing import Any

from ...models import BankProfile, Disposition
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from .connection import Neo4jConnection
from .cypher import _mark


class Neo4jBanks(Neo4jConnection):
    """Bank profiles (``base.BankStore``)."""

    @staticmethod
    def _bank(row: dict[str, Any]) -> BankProfile:
        return BankProfile(
            id=row["id"], name=row["name"], background=row["background"],
            disposition=Disposition.model_validate_json(row["disposition"]), created_at=_dt(row["created_at"]),
        )

    def create_bank(self, profile: BankProfile) -> BankProfile:
        """Create a bank; return the existing profile unchanged if it already exists."""
        self._write(lambda tx: tx.run(
            "MERGE (b:Bank {id: $id}) ON CREATE SET b.name = $name, b.background = $background, "
            "b.disposition = $disposition, b.created_at = $created_at",
            id=profile.id, name=profile.name, background=profile.background,
            disposition=profile.disposition.model_dump_json(), created_at=_ts(profile.created_at),
        ).consume(), retry_duplicates=True)  # two processes opening a new bank at once both MERGE it
        existing = self.get_bank(profile.id)
        assert existing is not None
        return existing

    def get_bank(self, bank_id: str) -> BankProfile | None:
        """The bank's profile, or None."""
        rows = self._read("MATCH (b:Bank {id: $id}) RETURN properties(b) AS b", id=bank_id)
        return self._bank(rows[0]["b"]) if rows else None

    def update_bank(self, profile: BankProfile) -> None:
        """Replace the bank's name, background and disposition."""
        self._write(lambda tx: tx.run(
            "MATCH (b:Bank {id: $id}) SET b.name = $name, b.background = $background, b.disposition = $disposition",
            id=profile.id, name=profile.name, background=profile.background,
            disposition=profile.disposition.model_dump_json(),
        ).consume())

    def list_banks(self) -> list[BankProfile]:
        """All banks, oldest first."""
        rows = self._read("MATCH (b:Bank) RETURN properties(b) AS b ORDER BY b.created_at, b.id")
        return [self._bank(r["b"]) for r in rows]

    def delete_bank(self, bank_id: str, owner: str | None = None) -> None:
        """Delete a bank and everything in it; its vector collection is marked for dropping (unit id "")."""
        def work(tx: Any) -> None:
            for label in ("Job", "OpinionEvent", "Unit", "Entity", "Document", "VectorMark"):
                # Label from the fixed tuple above, never from input.
                tx.run(f"MATCH (n:{label}) WHERE n.bank_id = $bank DETACH DELETE n", bank=bank_id).consume()
            tx.run("MATCH (b:Bank {id: $bank}) DETACH DELETE b", bank=bank_id).consume()
            _mark(tx, bank_id, [""], owner)
        self._write(work, retry_duplicates=True)
        self._stale(bank_id)
