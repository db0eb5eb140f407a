"""The writer that the kill torture test SIGKILLs, and the journal that says what it had acknowledged.

The writer retains documents (synchronously and deferred, new ones and new versions of old ones), forgets
documents and runs its background worker (which extracts the deferred ones), in a loop, until it is killed.
Around every operation it appends to a journal, fsync-ed: ``{"intent": ...}`` before the call and
``{"ack": seq}`` after it returned. An acknowledged operation must never be lost or undone; the one
operation in flight when the process died may have happened or not, but nothing in between may remain
visible once the store is reopened (documents resumed, vectors in step with units).

Document ``d<N>`` at version ``v`` holds two messages with ids ``d<N>:v:0`` and ``d<N>:v:1``; the memories
of a retained version have exactly those sources, so the store's state names the version it holds.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BANK = "torture"
_WORDS = ["Oscar", "Lisbon", "Porto", "Maya", "Ana", "marathon", "violin", "green tea", "garden", "Boston"]


def document_messages(doc: str, version: int) -> list[dict[str, str]]:
    """The two messages of ``doc`` at ``version`` (their ids encode both)."""
    rnd = random.Random(f"{doc}:{version}")
    a, b = rnd.sample(_WORDS, 2)
    return [
        {"speaker": "Maya", "text": f"Note {doc} v{version}: I talked about {a} with Ana.", "id": f"{doc}:{version}:0"},
        {"speaker": "Ana", "text": f"Reply {doc} v{version}: {b} sounds lovely.", "id": f"{doc}:{version}:1"},
    ]


def sources_version(sources: list[str]) -> int | None:
    """The version a set of memory sources belongs to (None when mixed or not from this workload)."""
    found = {int(m.group(1)) for s in sources if (m := re.match(r"^d\d+:(\d+):\d$", s))}
    return found.pop() if len(found) == 1 else None


@dataclass
class Journal:
    """What the writer intended and acknowledged, per document, read back from the journal file."""

    acked: dict[str, dict[str, Any]] = field(default_factory=dict)  # doc -> last acknowledged op
    # doc -> ops intended after the last acknowledged one and never acknowledged (each one was in flight at a
    # kill; a retain among them may still have taken effect, e.g. resumed by the next process)
    in_flight: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_doc: int = 0
    acks: int = 0

    @classmethod
    def read(cls, path: Path) -> Journal:
        """Parse the journal (a torn last line, from a kill mid-write, is ignored)."""
        out = cls()
        pending: dict[int, dict[str, Any]] = {}
        if not path.exists():
            return out
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "intent" in rec:
                op = rec["intent"]
                pending[rec["seq"]] = op
                out.in_flight.setdefault(op["doc"], []).append(op)
                out.next_doc = max(out.next_doc, int(op["doc"][1:]) + 1)
            elif "ack" in rec and rec["ack"] in pending:
                op = pending.pop(rec["ack"])
                out.acked[op["doc"]] = op
                out.in_flight.pop(op["doc"], None)
                out.acks += 1
        return out


def run_writer(path: str, journal_path: str, ready_path: str, seed: int) -> None:
    """The writer's life: open the store, then retain, defer, re-retain and forget until killed."""
    from hindsight_core import Hindsight
    from hindsight_core.config import LeaseSettings, Settings

    journal = Journal.read(Path(journal_path))
    rnd = random.Random(seed)
    settings = Settings(leases=LeaseSettings(heartbeat_s=0.5, ttl_s=5.0, maintenance_every=2))
    hs = Hindsight.open(path, settings=settings, start_worker=True)
    bank = hs.bank(BANK)
    live = [d for d, op in journal.acked.items() if op["op"] != "forget"]
    versions = {d: op["version"] for d, op in journal.acked.items() if op["op"] != "forget"}
    for d, ops in journal.in_flight.items():
        versions[d] = max([versions.get(d, 0), *(op.get("version", 0) for op in ops)])
    seq = 0
    next_doc = journal.next_doc
    with open(journal_path, "a", encoding="utf-8") as out:
        def log(rec: dict[str, Any]) -> None:
            out.write(json.dumps(rec) + "\n")
            out.flush()
            os.fsync(out.fileno())

        Path(ready_path).write_text("ready")
        while True:
            seq += 1
            kind = rnd.choices(["retain", "defer", "reretain", "forget"], weights=[4, 3, 2, 2])[0]
            if kind in ("reretain", "forget") and not live:
                kind = "retain"
            if kind in ("retain", "defer"):
                doc = f"d{next_doc}"
                next_doc += 1
                version = 1
            else:
                doc = rnd.choice(live)
                version = versions[doc] + 1 if kind == "reretain" else versions[doc]
            op = {"op": "defer" if kind == "defer" else ("forget" if kind == "forget" else "retain"), "doc": doc,
                  "version": version}
            key = f"{os.getpid()}-{seq}"
            log({"intent": op, "seq": key})
            if op["op"] == "forget":
                bank.forget(document_id=doc)
                live.remove(doc)
            else:
                bank.retain(document_messages(doc, version), document_id=doc, extract=False, background=False,
                            defer=op["op"] == "defer")
                versions[doc] = version
                if doc not in live:
                    live.append(doc)
            log({"ack": key})
