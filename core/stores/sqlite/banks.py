"""``BankStore`` on SQLite: bank profiles, and deleting a bank with everything in it."""

from __future__ import annotations

import sqlite3

from ...models import BankProfile, Disposition
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from .connection import SQLiteConnection
from .sql import _now


class SQLiteBanks(SQLiteConnection):
    """Bank profiles (``base.BankStore``)."""

    @staticmethod
    def _bank(row: sqlite3.Row) -> BankProfile:
        return BankProfile(
            id=row["id"], name=row["name"], background=row["background"],
            disposition=Disposition.model_validate_json(row["disposition"]),
            created_at=_dt(row["created_at"]),
        )

    def create_bank(self, profile: BankProfile) -> BankProfile:
        """Create a bank; return the existing profile unchanged if it already exists."""
        with self._tx() as con:
            con.execute(
                "INSERT OR IGNORE INTO banks (id, name, background, disposition, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (profile.id, profile.name, profile.background, profile.disposition.model_dump_json(),
                 _ts(profile.created_at)),
            )
        existing = self.get_bank(profile.id)
        assert existing is not None
        return existing

    def get_bank(self, bank_id: str) -> BankProfile | None:
        """The bank's profile, or None."""
        row = self._con().execute("SELECT * FROM banks WHERE id = ?", (bank_id,)).fetchone()
        return self._bank(row) if row else None

    def update_bank(self, profile: BankProfile) -> None:
        """Replace the bank's name, background and disposition."""
        with self._tx() as con:
            con.execute(
                "UPDATE banks SET name = ?, background = ?, disposition = ? WHERE id = ?",
                (profile.name, profile.background, profile.disposition.model_dump_json(), profile.id),
            )

    def list_banks(self) -> list[BankProfile]:
        """All banks, oldest first."""
        rows = self._con().execute("SELECT * FROM banks ORDER BY created_at, id").fetchall()
        return [self._bank(r) for r in rows]

    def delete_bank(self, bank_id: str, owner: str | None = None) -> None:
        """Delete a bank and everything in it; its vector collection is marked for dropping (unit id "")."""
        with self._tx() as con:
            con.execute("DELETE FROM vector_marks WHERE bank_id = ?", (bank_id,))
            con.execute("INSERT INTO vector_marks (bank_id, unit_id, owner, marked_at) VALUES (?, '', ?, ?)",
                        (bank_id, owner, _now()))
            con.execute("DELETE FROM jobs WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM opinion_events WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM units WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM entities WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM documents WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM keyword_terms WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM keyword_totals WHERE bank_id = ?", (bank_id,))
            con.execute("DELETE FROM banks WHERE id = ?", (bank_id,))
