"""``OpinionStore`` on Neo4j: moving an opinion once per piece of evidence, and its history.

The confidence written is the one ``hindsight_core.opinions.confidence`` computed; this module only checks, in
the transaction, that it was computed from the confidence still stored (compare-and-set)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from ...models import OpinionEvent
from ..common import from_epoch as _dt
from ..records import OpinionUpdate, StaleConfidenceError
from .connection import Neo4jConnection
from .cypher import _event_props, _set_text


class Neo4jOpinions(Neo4jConnection):
    """Opinion confidence and history (``base.OpinionStore``)."""

    def apply_opinion_update(
        self, bank_id: str, update: OpinionUpdate, owner: str | None = None
    ) -> OpinionEvent | None:
        """Move an opinion once per (opinion, evidence): see ``GraphStore.apply_opinion_update``."""
        token = uuid.uuid4().hex

        def work(tx: Any) -> OpinionEvent | None:
            # Writing first takes the node's write lock on Neo4j (ArcadeDB reports a conflict and we retry), so
            # two workers applying the same evidence are serialised and the second sees it applied.
            rec = tx.run(
                "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank SET u.write_token = $token "
                "RETURN u.confidence AS c, u.text AS text, coalesce(u.applied_evidence, []) AS applied",
                id=update.opinion_id, bank=bank_id, token=token,
            ).single()
            if rec is None:
                return None
            applied = set(rec["applied"])
            fresh = [e for e in dict.fromkeys(update.evidence) if e not in applied]
            if not fresh:
                return None
            if rec["c"] != update.read_confidence:  # moved by another writer since the caller read it
                raise StaleConfidenceError(f"opinion {update.opinion_id!r} changed while its move was computed")
            new_text = update.new_text if update.new_text and update.new_text != rec["text"] else None
            if new_text is not None:
                _set_text(tx, bank_id, update.opinion_id, new_text, owner)
            event = OpinionEvent(
                opinion_id=update.opinion_id, at=update.at or datetime.now(UTC), label=update.label,
                old_confidence=update.old_confidence, new_confidence=update.new_confidence, evidence=fresh,
                old_text=rec["text"] if new_text else None, new_text=new_text, rationale=update.rationale,
            )
            tx.run(
                "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank "
                "SET u.confidence = $new, u.applied_evidence = coalesce(u.applied_evidence, []) + $fresh "
                "CREATE (o:OpinionEvent) SET o = $event",
                id=update.opinion_id, bank=bank_id, new=update.new_confidence, fresh=fresh,
                event=_event_props(bank_id, event, 0),
            ).consume()
            return event

        try:
            return self._write(work, retry_duplicates=True)
        finally:
            self._stale(bank_id)

    def applied_evidence(self, bank_id: str, opinion_id: str) -> set[str]:
        """Ids of the evidence already applied to an opinion of this bank."""
        rows = self._read("MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank RETURN u.applied_evidence AS a",
                          id=opinion_id, bank=bank_id)
        return set(rows[0]["a"] or []) if rows else set()

    def add_opinion_event(self, bank_id: str, event: OpinionEvent) -> None:
        """Append a step to an opinion's history (ignored when the opinion is not a unit of this bank)."""
        self._write(lambda tx: tx.run(
            "MATCH (u:Unit {id: $id}) WHERE u.bank_id = $bank CREATE (o:OpinionEvent) SET o = $props",
            id=event.opinion_id, bank=bank_id, props=_event_props(bank_id, event, 0),
        ).consume())

    def opinion_history(self, bank_id: str, opinion_id: str) -> list[OpinionEvent]:
        """Every step of an opinion's history, oldest first."""
        rows = self._read(
            "MATCH (o:OpinionEvent) WHERE o.opinion_id = $oid AND o.bank_id = $bank "
            "RETURN properties(o) AS o ORDER BY o.seq",
            oid=opinion_id, bank=bank_id,
        )
        return [
            OpinionEvent(
                opinion_id=o["opinion_id"], at=_dt(o["at"]), label=o["label"], old_confidence=o.get("old_confidence"),
                new_confidence=o["new_confidence"], evidence=json.loads(o["evidence"]), old_text=o.get("old_text"),
                new_text=o.get("new_text"), rationale=o.get("rationale"),
            )
            for o in (r["o"] for r in rows)
        ]
