"""``OpinionStore`` on SQLite: moving an opinion once per piece of evidence, and its history.

The confidence written is the one ``hindsight_core.opinions.confidence`` computed; this module only checks, in
the transaction, that it was computed from the confidence still stored (compare-and-set)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ...models import OpinionEvent
from ..common import from_epoch as _dt
from ..records import OpinionUpdate, StaleConfidenceError
from .connection import SQLiteConnection
from .sql import _insert_event, _set_text


class SQLiteOpinions(SQLiteConnection):
    """Opinion confidence and history (``base.OpinionStore``)."""

    def apply_opinion_update(
        self, bank_id: str, update: OpinionUpdate, owner: str | None = None
    ) -> OpinionEvent | None:
        """Move an opinion once per (opinion, evidence): see ``GraphStore.apply_opinion_update``."""
        with self._tx() as con:
            row = con.execute(
                "SELECT confidence, text FROM units WHERE bank_id = ? AND id = ?", (bank_id, update.opinion_id)
            ).fetchone()
            if row is None:
                return None
            wanted = list(dict.fromkeys(update.evidence))
            applied = {r[0] for r in con.execute(
                f"SELECT evidence_id FROM opinion_evidence WHERE opinion_id = ? "
                f"AND evidence_id IN ({','.join('?' * len(wanted))})", [update.opinion_id, *wanted],
            )} if wanted else set()
            fresh = [e for e in wanted if e not in applied]
            if not fresh:
                return None
            if row[0] != update.read_confidence:  # moved by another writer since the caller read it
                raise StaleConfidenceError(f"opinion {update.opinion_id!r} changed while its move was computed")
            new_text = update.new_text if update.new_text and update.new_text != row[1] else None
            if new_text is not None:
                _set_text(con, bank_id, update.opinion_id, new_text, owner)
            con.execute("UPDATE units SET confidence = ? WHERE bank_id = ? AND id = ?",
                        (update.new_confidence, bank_id, update.opinion_id))
            event = OpinionEvent(
                opinion_id=update.opinion_id, at=update.at or datetime.now(UTC), label=update.label,
                old_confidence=update.old_confidence, new_confidence=update.new_confidence, evidence=fresh,
                old_text=row[1] if new_text else None, new_text=new_text, rationale=update.rationale,
            )
            _insert_event(con, bank_id, event)
            con.executemany("INSERT INTO opinion_evidence (opinion_id, evidence_id) VALUES (?, ?)",
                            [(update.opinion_id, e) for e in fresh])
            return event

    def applied_evidence(self, bank_id: str, opinion_id: str) -> set[str]:
        """Ids of the evidence already applied to an opinion of this bank."""
        return {r[0] for r in self._con().execute(
            "SELECT e.evidence_id FROM opinion_evidence e JOIN units u ON u.id = e.opinion_id "
            "WHERE e.opinion_id = ? AND u.bank_id = ?", (opinion_id, bank_id),
        )}

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history (ignored when the opinion is not a unit of this bank)."""
        with self._tx() as con:
            _insert_event(con, bank_id, event)

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        rows = self._con().execute(
            "SELECT * FROM opinion_events WHERE bank_id = ? AND opinion_id = ? ORDER BY seq", (bank_id, opinion_id)
        ).fetchall()
        return [
            OpinionEvent(
                opinion_id=r["opinion_id"], at=_dt(r["at"]), label=r["label"], old_confidence=r["old_confidence"],
                new_confidence=r["new_confidence"], evidence=json.loads(r["evidence"]), old_text=r["old_text"],
                new_text=r["new_text"], rationale=r["rationale"],
            )
            for r in rows
        ]
