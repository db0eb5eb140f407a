"""Every public method of ``Bank`` and ``Hindsight``, called with wrong types and hostile values, raises only
``HindsightError`` subclasses (never a bare KeyError/TypeError/AttributeError) and leaves the store sound."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Bank, Hindsight
from hindsight_core.errors import (
    BankNotFoundError,
    DocumentNotFoundError,
    HindsightError,
    InvalidInputError,
    LLMError,
)
from hindsight_core.models import Disposition
from hindsight_core.runtime.integrity import check


class NoModel:
    """An LLM that is never reachable: every model call must surface as ``LLMError``."""

    name = "unreachable"

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMError("no model in this test")

    async def agenerate(self, *args: Any, **kwargs: Any) -> Any:
        raise LLMError("no model in this test")


HOSTILE: list[Any] = [
    None, 0, -1, 7.5, float("nan"), float("inf"), True, "", "   ", "\x00\x07\x1b", "broken \ud800 surrogate",
    "x" * 2_100_000, "'; MATCH (n) DETACH DELETE n //", 'a" OR "b" NEAR(c d) *', "{{ bank_id }} %s %(x)s",
    [], {}, [1, 2], {"text": 3}, object(), b"bytes", datetime(1, 1, 1, tzinfo=UTC), date(9999, 12, 31),
    1e20, -1e20, "9999-99-99", ["not", {"a": "message"}], ("tuple",),
]

# Valid arguments for every public method (those not listed take no required argument).
VALID: dict[str, dict[str, Any]] = {
    "retain": {"content": "Ana ran a marathon in Porto.", "extract": False},
    "aretain": {"content": "Ana ran a marathon in Porto.", "extract": False},
    "reprocess": {"document_id": "doc-1", "extract": False},
    "recall": {"query": "Where did Ana run?"},
    "arecall": {"query": "Where did Ana run?"},
    "reflect": {"query": "Is Ana fit?"},
    "areflect": {"query": "Is Ana fit?"},
    "schedule_reflect": {"query": "Is Ana fit?"},
    "aschedule_reflect": {"query": "Is Ana fit?"},
    "add_opinion": {"text": "Ana is fit", "confidence": 0.7},
    "correct": {"memory_id": "missing", "text": "Ana ran a marathon in Lisbon."},
    "acorrect": {"memory_id": "missing", "text": "Ana ran a marathon in Lisbon."},
    "opinion_history": {"opinion_id": "missing"},
    "update_opinions": {"memory_ids": ["missing"]},
    "aupdate_opinions": {"memory_ids": ["missing"]},
    "observation": {"entity": "Ana"},
    "merge_background": {"snippet": "I like running."},
    "amerge_background": {"snippet": "I like running."},
    "set_background": {"background": "I coach runners."},
    "set_disposition": {"disposition": Disposition()},
    "get": {"memory_id": "missing"},
    "memories": {"ids": ["missing"]},
    "document": {"document_id": "doc-1"},
    "put_document": {"document_id": "value-1", "content": "raw value"},
    "delete_document": {"document_id": "value-1"},
    "forget": {"memory_id": "missing"},
    "aforget": {"memory_id": "missing"},
    "wait_idle": {"timeout": 0.0},
    "await_idle": {"timeout": 0.0},
    "bank": {"bank_id": "walk"},
    "delete_bank": {"bank_id": "no-such-bank"},
    "audit": {"limit": 5},
    "aaudit": {"limit": 5},
    # the int8 MiniLM records MiniLM's name: the bank still opens with the walk's embedder afterwards
    "reembed": {"embedder": "minilm-int8"},
    "areembed": {"embedder": "minilm-int8"},
}
SKIP = {"hindsight", "profile", "open", "close", "recover", "notify_worker", "llm",  # not argument-taking calls
        "warm_up", "awarm_up", "warm_up_in_background"}


def public_methods(obj: Any) -> list[str]:
    names = []
    for name, member in inspect.getmembers(type(obj)):
        if name.startswith("_") or name in SKIP or isinstance(member, property):
            continue
        if callable(member):
            names.append(name)
    return names


def _valid_wait(method: str, param: str, value: Any) -> bool:
    """A valid wait on the pending jobs (a positive finite timeout, or None: until idle), only slow: the walk's
    scheduled reflects fail on ``NoModel`` and are retried with backoff (None waited out 14.5 s of it)."""
    if method not in ("wait_idle", "await_idle") or param != "timeout":
        return False
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                             and 0 < value < float("inf"))


def call(obj: Any, name: str, kwargs: dict[str, Any]) -> Any:
    result = getattr(obj, name)(**kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(result)  # type: ignore[arg-type]
    return result


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hindsight, Bank]]:
    with Hindsight.open(tmp_path_factory.mktemp("walk") / "memory", llm=NoModel(), start_worker=False) as hs:
        bank = hs.bank("walk")
        bank.retain([{"speaker": "Ana", "text": "I ran a marathon in Porto.", "id": "m1"}], document_id="doc-1",
                    extract=False, background=False)
        # Export and import take files: real ones in this test's folder (an import under a new id succeeds once,
        # then meets an existing bank).
        files = tmp_path_factory.mktemp("walk-files")
        bank.export(files / "walk.jsonl")
        for name in ("export", "aexport"):
            VALID[name] = {"path": str(files / f"{name}.jsonl")}
        for name in ("import_bank", "aimport_bank"):
            VALID[name] = {"path": str(files / "walk.jsonl"), "bank_id": "walk-copy"}
        yield hs, bank


def test_the_walk_covers_every_public_method(opened: tuple[Hindsight, Bank]) -> None:
    hs, bank = opened
    assert set(public_methods(bank)) - set(VALID) <= {"opinions", "jobs", "entities", "documents", "stats"}
    assert set(public_methods(hs)) - set(VALID) <= {"banks"}


@pytest.mark.parametrize("target", ["bank", "hindsight"])
def test_hostile_arguments_raise_only_typed_errors(opened: tuple[Hindsight, Bank], target: str) -> None:
    hs, bank = opened
    obj: Any = bank if target == "bank" else hs
    tried = failures = 0
    for name in public_methods(obj):
        params = [p for p in inspect.signature(getattr(obj, name)).parameters.values()
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        for param in params:
            for value in HOSTILE:
                if _valid_wait(name, param.name, value):
                    continue  # a real wait of that many seconds on the pending jobs: valid input, only slow
                kwargs = {**VALID.get(name, {}), param.name: value}
                tried += 1
                try:
                    call(obj, name, kwargs)
                except HindsightError:
                    failures += 1
                except Exception as exc:  # the point of the test: nothing untyped escapes
                    pytest.fail(f"{type(obj).__name__}.{name}({param.name}={value!r:.60}) raised "
                                f"{type(exc).__name__}: {exc}")
    assert tried > 100 and failures > 0
    report = check(hs)
    assert report.ok, report.model_dump()


def test_typed_errors_are_also_the_stdlib_types_users_expect(opened: tuple[Hindsight, Bank]) -> None:
    hs, bank = opened
    with pytest.raises(KeyError):
        bank.document("missing")
    with pytest.raises(DocumentNotFoundError):
        bank.document("missing")
    with pytest.raises(ValueError):
        bank.recall("q", max_memories="3")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="confidence"):
        bank.add_opinion("x", 2.0)  # never read as 2% any more
    with pytest.raises(InvalidInputError, match="background"):
        bank.set_background(123)  # type: ignore[arg-type]
    with pytest.raises(BankNotFoundError):
        hs.bank("never-created", create=False)
    with pytest.raises(LLMError):
        bank.reflect("Where did Ana run?")


def test_plain_text_that_looks_like_json_stays_text(opened: tuple[Hindsight, Bank], tmp_path: Path) -> None:
    _, bank = opened
    text = '[{"text": "not a message", "speaker": "x"}]'
    bank.retain(text, document_id="looks-like-json", extract=False, background=False)
    again = bank.reprocess("looks-like-json", extract=False)
    assert [m.text for m in again.memories] == [text]
    assert bank.document("looks-like-json").kind.value == "text"  # type: ignore[union-attr]
