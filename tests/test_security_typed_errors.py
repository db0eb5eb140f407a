"""Every public call that validates input answers with the library's typed errors, never pydantic's (issue 39, must
have 4): a walk over ``Hindsight`` and ``Bank`` with out-of-range values for each argument. A call may accept a
value (then it must not crash) or refuse it; a refusal is a ``HindsightError`` (``InvalidInputError`` for a value
out of range), never a ``pydantic.ValidationError``, ``TypeError``, ``KeyError`` or ``AttributeError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from scripted_llm import ScriptedLLM

from hindsight_core import Bank, Hindsight
from hindsight_core.errors import HindsightError, InvalidInputError

BAD_DISPOSITIONS: list[Any] = [
    {"skepticism": 9}, {"skepticism": 0}, {"literalism": -1}, {"empathy": 6}, {"bias": 2.0}, {"bias": -0.1},
    {"bias": math.nan}, {"bias": math.inf}, {"skepticism": "3"}, {"skepticism": 2.5}, {"nope": 1},
    {"skepticism": None}, {"bias": "high"}, [1, 2], "strict", 7,
]
BAD_INTS: list[Any] = [-1, 0, 10**12, 2**63, -(2**63), math.nan, "5", None, True, 2.5]
BAD_FLOATS: list[Any] = [-1.0, 1.5, math.nan, math.inf, -math.inf, "0.5", 1e308]
BAD_TIMES: list[Any] = ["9999-99-99", "", "x" * 100_000, 10**20, -(10**20), math.nan, math.inf, "10000-01-01",
                        ("2025-01-01", "2024-01-01"), object()]
BAD_IDS: list[Any] = ["", "x" * 1001, "a\x00b", "\ud800", 5, None, ["a"]]


def _calls(bank: Bank) -> Iterator[tuple[str, Callable[[], Any]]]:
    for value in BAD_DISPOSITIONS:
        yield f"set_disposition({value!r})", lambda v=value: bank.set_disposition(v)
        yield f"reflect(disposition={value!r})", lambda v=value: bank.reflect("q?", disposition=v)
        yield f"schedule_reflect(disposition={value!r})", lambda v=value: bank.schedule_reflect("q?", disposition=v)
    for value in BAD_INTS:
        yield f"recall(budget={value!r})", lambda v=value: bank.recall("Porto", budget=v)
        yield f"recall(max_memories={value!r})", lambda v=value: bank.recall("Porto", max_memories=v)
        yield f"reflect(budget={value!r})", lambda v=value: bank.reflect("q?", budget=v)
        yield f"audit(limit={value!r})", lambda v=value: bank.audit(limit=v)
        yield f"audit(offset={value!r})", lambda v=value: bank.audit(offset=v)
        yield f"reembed(batch_size={value!r})", lambda v=value: bank.reembed("minilm", batch_size=v)
    for value in BAD_FLOATS:
        yield f"add_opinion(confidence={value!r})", lambda v=value: bank.add_opinion("Porto is nice.", v)
        yield f"wait_idle(timeout={value!r})", lambda v=value: bank.wait_idle(v)
    for value in BAD_TIMES:
        yield f"recall(reference_time={value!r:.40})", lambda v=value: bank.recall("Porto", reference_time=v)
        yield f"recall(time_range=({value!r:.40}, None))", lambda v=value: bank.recall("Porto", time_range=(v, None))
        yield f"retain(timestamp={value!r:.40})", lambda v=value: bank.retain("Ben sails.", timestamp=v,
                                                                                extract=False)
        yield f"put_document(timestamp={value!r:.40})", lambda v=value: bank.put_document("p", "x", timestamp=v)
    for value in BAD_IDS:
        yield f"forget(memory_id={value!r:.40})", lambda v=value: bank.forget(memory_id=v)
        yield f"document({value!r:.40})", lambda v=value: bank.document(v)
        yield f"get({value!r:.40})", lambda v=value: bank.get(v)
        yield f"opinion_history({value!r:.40})", lambda v=value: bank.opinion_history(v)
        yield f"retain(document_id={value!r:.40})", lambda v=value: bank.retain("x", document_id=v, extract=False)
    for value in ["nope", 3, None, ["world", "nope"], [None]]:
        yield f"recall(networks={value!r})", lambda v=value: bank.recall("Porto", networks=v)
    for value in ["nope", 3]:
        yield f"documents(status={value!r})", lambda v=value: bank.documents(v)
    for value in [{"a": object()}, {"a": math.nan}, {1: 2}, "meta", [1]]:
        yield f"retain(metadata={value!r:.40})", lambda v=value: bank.retain("x", metadata=v, extract=False)
    for value in [None, 5, [{"text": 5}], [{"speaker": "A"}], [{"text": "hi", "timestamp": "9999-99-99"}],
                  {"messages": 3}, [{"text": "hi", "id": ""}], "", "x" * 2_000_001]:
        yield f"retain({value!r:.40})", lambda v=value: bank.retain(v, extract=False)


def _walk(bank: Bank, hs: Hindsight) -> dict[str, str]:
    leaks: dict[str, str] = {}
    refused = 0
    # The facade's own entry points with out-of-range values.
    calls = list(_calls(bank))
    for value in [{"skepticism": 9}, {"bias": 7}, "calm", {"nope": 1}]:
        calls.append((f"Hindsight.bank(disposition={value!r})", lambda v=value: hs.bank("new", disposition=v)))
    for value in BAD_INTS:
        calls.append((f"Hindsight.audit(limit={value!r})", lambda v=value: hs.audit(limit=v)))
    for value in ["", "x" * 513, "a\nb", 5]:
        calls.append((f"Hindsight.bank({value!r:.40})", lambda v=value: hs.bank(v)))
        calls.append((f"Hindsight.delete_bank({value!r:.40})", lambda v=value: hs.delete_bank(v)))
    for name, call in calls:
        try:
            call()
        except HindsightError:
            refused += 1
        except (ValidationError, TypeError, KeyError, AttributeError, ValueError, OverflowError) as exc:
            leaks[name] = f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:150]}"
    assert refused > len(calls) // 2, (refused, len(calls))  # the walk did reach the checks
    return leaks


def test_the_public_api_refuses_out_of_range_values_with_typed_errors(tmp_path: Path) -> None:
    llm = ScriptedLLM([])
    with Hindsight.open(tmp_path / "m", start_worker=False, llm=llm) as hs:
        bank = hs.bank("b")
        bank.retain("Ana moved to Porto in May.", extract=False, document_id="d1")
        leaks = _walk(bank, hs)
    assert not leaks, "\n".join(f"{k}: {v}" for k, v in leaks.items())


def test_set_disposition_out_of_range_names_the_trait(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        bank = hs.bank("b")
        with pytest.raises(InvalidInputError, match="skepticism") as raised:
            bank.set_disposition({"skepticism": 9})
        assert not isinstance(raised.value, ValidationError)
        assert bank.profile.disposition.skepticism == 3  # nothing was stored
        with pytest.raises(InvalidInputError, match="bias"):
            hs.bank("c", disposition={"bias": 2})
        assert "c" not in {p.id for p in hs.banks()}
