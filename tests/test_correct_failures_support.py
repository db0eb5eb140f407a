"""Shared by ``test_correct_failures.py`` and ``test_forget_failures.py``: both backends, the invariants a correction
or a forget must leave whatever happened to it, and the child process that corrects or forgets (killed half way on
request, or at the same time as another).

Not a test module (it holds no test); run by path as the child: ``python tests/test_correct_failures_support.py
SPEC OPERATION ...`` (see ``child``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight
from hindsight_core.models import Memory
from hindsight_core.retain.correct import CORRECTION_KEY, correction_document_id
from hindsight_core.runtime.integrity import check

HERE = Path(__file__).resolve()
EMBEDDER = "minilm-int8"  # the default's vector space without importing torch in every child
T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


# backends ------------------------------------------------------------------------------------------------------------
def open_spec(spec: dict[str, Any]) -> Hindsight:
    """``Hindsight.open`` from a JSON-able spec (``{"path": ...}`` or the server's addresses), as a child does."""
    if "path" in spec:
        return Hindsight.open(spec["path"], embedder=EMBEDDER, start_worker=False)
    return Hindsight.open(None, graph=spec["uri"], vectors=spec["vectors"], neo4j_user=spec["user"],
                          neo4j_password=spec["password"], neo4j_database=spec["database"], embedder=EMBEDDER,
                          start_worker=False)


def servers_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The session's Bolt and Chroma servers (those ``scripts/test.sh`` exports, else started here) as a spec."""
    from support.security_backends import session_servers

    with session_servers(tmp_path_factory.mktemp("servers")) as s:
        yield {"uri": s.uri, "vectors": s.chroma_url, "user": s.user, "password": s.password,
               "database": s.database, "env": s.env()}


def backend_fixture(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A spec per backend: ``embedded`` (SQLite + on-disk Chroma under ``tmp_path``) or ``server``; the bank id
    under ``bank`` is the test's own (the server is shared)."""
    if request.param == "embedded":
        spec: dict[str, Any] = {"path": str(tmp_path / "m")}
    else:
        spec = {k: v for k, v in request.getfixturevalue("servers").items() if k != "env"}
        for name, value in request.getfixturevalue("servers")["env"].items():
            monkeypatch.setenv(name, value)
    return {**spec, "name": request.param, "bank": f"fail-{uuid.uuid4().hex[:10]}"}


def say(speaker: str, text: str, mid: str, days: int) -> dict[str, Any]:
    """One message ``days`` after T0."""
    return {"speaker": speaker, "text": text, "id": mid, "timestamp": (T0 + timedelta(days=days)).isoformat()}


def fill(hs: Hindsight, bank_id: str) -> dict[str, Memory]:
    """Rui says he is a nurse, Ana where she lives (then that she moved): each message's memory by message id."""
    bank = hs.bank(bank_id)
    bank.retain([say("Rui", "I work as a nurse at the Santa Maria hospital.", "r1", 0),
                 say("Ana", "I live in Lisbon, in a small flat near the river.", "a1", 0)], document_id="s1",
                extract=False, background=False)
    bank.retain([say("Ana", "We moved to Porto last month, the new flat is much bigger.", "a3", 300),
                 say("Rui", "The quokka at the zoo was adorable yesterday.", "r3", 300)], document_id="s2",
                extract=False, background=False)
    units = hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id)))
    return {m.sources[0]: m for m in units}


# invariants ----------------------------------------------------------------------------------------------------------
def assert_sound(hs: Hindsight, bank_id: str, *, gone_words: tuple[str, ...] = ()) -> list[Memory]:
    """The bank's invariants after a correction or a forget, whatever happened to it; returns its memories.

    ``hindsight check`` (every unit has its one vector and no vector outlives its unit, links, mentions, keyword
    statistics, marks of dead processes) and, on top: no ``superseded_by`` naming a missing memory; every correction
    corrects a memory that exists, one correction per corrected memory, and the memory superseded by a correction is
    superseded by that one; ``gone_words`` (only in forgotten memories) in no keyword hit, no memory's text and no
    stored document (a forgotten message is cut out of the raw input retain stored, ``retain/redact.py``).
    """
    report = check(hs, [bank_id])
    assert report.ok, report.model_dump()
    units = hs.store.get_units(bank_id, list(hs.store.unit_ids(bank_id)))
    by_id = {m.id: m for m in units}
    dangling = {m.id: m.superseded_by for m in units if m.superseded_by and m.superseded_by not in by_id}
    assert not dangling, f"superseded by missing memories: {dangling}"
    corrections: dict[str, list[Memory]] = {}
    for m in units:
        of = (m.metadata.get(CORRECTION_KEY) or {}).get("of")
        if of is not None:
            corrections.setdefault(str(of), []).append(m)
    for of, made in corrections.items():
        assert of in by_id, f"corrections {[m.id for m in made]} of a missing memory {of}"
        assert len(made) == 1, f"memory {of} has {len(made)} corrections: {[m.text for m in made]}"
        assert [m.document_id for m in made] == [correction_document_id(of)]
        holder = by_id[of].superseded_by
        assert holder is None or holder not in hs.store.units_of_document(bank_id, correction_document_id(of)) \
            or holder == made[0].id
    for word in gone_words:
        assert hs.store.keyword_search(bank_id, word, 50) == [], word
        assert not [m.text for m in units if word.casefold() in m.text.casefold()], word
        assert not [d.id for d in hs.store.list_documents(bank_id) if word.casefold() in d.content.casefold()], word
    return units


# the child -----------------------------------------------------------------------------------------------------------
def spawn(spec: dict[str, Any], *args: str) -> subprocess.Popen[str]:
    """The child doing ``args`` on the backend of ``spec``."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(HERE), json.dumps(spec), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, dict[str, Any], str]:
    """The child's exit status, its printed result and its stderr."""
    out, err = proc.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return proc.returncode, json.loads(lines[-1]) if lines else {}, err


def together(procs: list[subprocess.Popen[str]], go: Path, timeout: float = 120) -> None:
    """Wait until every child is ready, then let them go at once."""
    deadline = time.monotonic() + timeout
    while len(list(go.parent.glob(go.name + ".ready.*"))) < len(procs):
        assert all(p.poll() is None for p in procs), [finish(p) for p in procs if p.poll() is not None]
        assert time.monotonic() < deadline, "children never got ready"
        time.sleep(0.02)
    go.write_text("go")


def _kill_after(obj: Any, name: str) -> None:
    """Make ``obj.name`` do its work and then kill this process: the crash between the graph and the vectors."""
    real = getattr(obj, name)

    def then_die(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(obj, name, then_die)


def _kill_before(obj: Any, name: str) -> None:
    """Make ``obj.name`` kill this process instead (after the vectors were written, before the graph commit)."""
    def die(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(obj, name, die)


def child(argv: list[str]) -> None:
    """``SPEC correct BANK MEMORY TEXT [GO] [KILL]`` or ``SPEC forget BANK memory|document ID [GO] [KILL]``: KILL is
    ``after-commit`` or ``before-commit`` (``-`` for none); GO a file to wait for (``-``: none). Prints JSON."""
    from hindsight_core.errors import HindsightError

    spec, op, bank_id = json.loads(argv[0]), argv[1], argv[2]
    go = argv[5] if len(argv) > 5 else "-"
    kill = argv[6] if len(argv) > 6 else "-"
    with open_spec(spec) as hs:
        bank = hs.bank(bank_id)
        hs.embedder.embed(["warm up"])
        if op == "correct":  # the extractor's model loaded before the race, so that both reach the store together
            from hindsight_core.models import Message

            hs.engine.corrector.extractor().extract([Message(text="Warm up.", timestamp=T0)], document_time=T0)
        if go != "-":
            Path(f"{go}.ready.{os.getpid()}").write_text("ok")
            deadline = time.monotonic() + 120
            while not Path(go).exists() and time.monotonic() < deadline:
                time.sleep(0.002)
        method = "add_units" if op == "correct" else ("forget_document" if argv[3] == "document" else "delete_units")
        if kill == "after-commit":
            _kill_after(hs.store, method)
        elif kill == "before-commit":
            _kill_before(hs.store, method)
        try:
            if op == "correct":
                made = bank.correct(argv[3], argv[4], by=f"pid{os.getpid()}")
                result: dict[str, Any] = {"ok": True, "id": made.id}
            else:
                which = {"memory": "memory_id", "document": "document_id", "entity": "entity"}[argv[3]]
                result = {"ok": True, "count": bank.forget(**{which: argv[4]})}
        except HindsightError as exc:  # a typed error is an answer; anything else is the bug the tests look for
            result = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    child(sys.argv[1:])
