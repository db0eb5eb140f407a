"""LLM retain of one LoCoMo session with a real model: facts, their sources, entities, links and time taken."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hindsight_core.cli.formats import locomo_sessions


def run_llm_retain(
    data_path: str | Path,
    *,
    conversation: int = 0,
    session: int = 1,
    llm: Any = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Retain one session with ``extract=True`` and check every fact's sources against its dia_ids."""
    from hindsight_core.hindsight import Hindsight

    sample = json.loads(Path(data_path).read_text())[conversation]
    sessions = locomo_sessions(sample)
    if not 1 <= session <= len(sessions):
        raise ValueError(f"conversation {conversation} has sessions 1..{len(sessions)}")
    chosen = sessions[session - 1]
    ids = {m["id"] for m in chosen.messages}
    with tempfile.TemporaryDirectory(prefix="hindsight-llm-retain-") as tmp, \
            Hindsight.open(tmp, **({"llm": llm} if llm is not None else {})) as hs:
        bank = hs.bank("llm-retain")
        t = time.perf_counter()
        result = bank.retain(chosen.messages, timestamp=chosen.timestamp, document_id=chosen.document_id,
                             background=False)
        bank.wait_idle(None)  # the facts job: retain returned once the messages were memories
        seconds = time.perf_counter() - t
        units = bank.memories(hs.store.units_of_document(bank.id, result.document_id))
        facts = [
            {"text": m.text, "network": m.network.value, "sources": m.sources, "entities": m.entities,
             "occurred": [str(m.occurred_start), str(m.occurred_end)]}
            for m in units if m.cites is not None
        ]
        bad = [f for f in facts if not f["sources"] or not set(f["sources"]) <= ids]
        summary = {
            "model": getattr(hs.llm, "name", type(hs.llm).__name__),
            "session": chosen.document_id,
            "messages": len(chosen.messages),
            "facts": facts,
            "facts_with_invalid_sources": len(bad),
            "entities": bank.entities() and [e.name for e in bank.entities()],
            "links": bank.stats()["links"],
            "seconds": seconds,
            "timings_ms": result.timings_ms,
        }
    log(f"LLM retain of {summary['session']} ({summary['messages']} messages) with {summary['model']}: "
        f"{len(facts)} facts in {seconds:.1f} s; {len(bad)} with sources outside the session")
    for f in facts:
        log(f"  [{', '.join(f['sources'])}] ({f['network']}) {f['text']}  entities: {', '.join(f['entities'])}")
    log(f"entities: {', '.join(summary['entities'] or [])}")
    log(f"links: {summary['links']}")
    return summary
