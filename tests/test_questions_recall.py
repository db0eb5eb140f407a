"""Questions are not answers, on a real bank (SQLite + embedded Chroma, the real embedder): the message that answers
outranks the user's own question and the acknowledgement that followed it, and the trace says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.config import RecallSettings, Settings

# The two cases: a user's question ranked above the reply that answers it, and "Got it." (embedded with
# the message it replies to) ranked above the message that holds the date.
CHAT = [
    {"id": "D1:1", "speaker": "user", "text": "When is my flight to Porto, and what's the occasion?"},
    {"id": "D1:2", "speaker": "assistant", "text": "You leave on 3 May: your cousin Rita gets married that weekend."},
    {"id": "D1:3", "speaker": "user", "text": "Got it."},
    {"id": "D1:4", "speaker": "user", "text": "I also need to buy a new suit before then?"},
    {"id": "D1:5", "speaker": "assistant", "text": "Yes, the tailor on Rua das Flores is open on Saturdays."},
    {"id": "D1:6", "speaker": "user", "text": "Nice!"},
    {"id": "D1:7", "speaker": "user", "text": "My sister Ines is bringing her dog to the wedding."},
]
QUERY = "When am I flying to Porto and why?"


def _open(path: Path, rule: str) -> Hindsight:
    return Hindsight.open(path, settings=Settings(recall=RecallSettings(question_rule=rule)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def bank_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("questions") / "memory"
    with Hindsight.open(path) as hs:
        hs.bank("trip").retain(CHAT, timestamp="2026-04-20T10:00:00Z", document_id="chat-1", extract=False,
                               background=False)
    yield path


def _ranked_sources(hs: Hindsight, query: str) -> list[str]:
    rec = hs.bank("trip", create=False).recall(query, budget=10**6, reference_time="2026-04-21T00:00:00Z")
    return [m.sources[0] for m in rec.memories]


def test_without_the_rule_the_question_outranks_its_answer(bank_path: Path) -> None:
    # The failure the rule is for, measured on this bank: if this stops holding, the next test proves nothing.
    with _open(bank_path, "off") as hs:
        order = _ranked_sources(hs, QUERY)
    assert order.index("D1:1") < order.index("D1:2")


@pytest.mark.parametrize("rule", ["demote", "pair"])
def test_the_answer_outranks_its_question(bank_path: Path, rule: str) -> None:
    with _open(bank_path, rule) as hs:
        bank = hs.bank("trip", create=False)
        rec = bank.recall(QUERY, budget=10**6, reference_time="2026-04-21T00:00:00Z", trace=True)
        order = [m.sources[0] for m in rec.memories]
        assert order.index("D1:2") < order.index("D1:1")
        assert order[0] not in ("D1:3", "D1:4", "D1:6")  # no question or acknowledgement on top
        assert rec.trace is not None
        by_id = {item.memory_id: item for item in rec.trace.items}
        question = next(m for m in rec.memories if m.sources == ["D1:1"])
        answer = next(m for m in rec.memories if m.sources == ["D1:2"])
        assert by_id[question.id].demoted_as == "question"
        assert not by_id[question.id].demoted  # ``demoted`` stays supersession's (the explorer reads it so)
        assert by_id[answer.id].demoted_as is None and not by_id[answer.id].demoted
        if rule == "pair" and by_id[answer.id].context_of is not None:
            assert by_id[answer.id].context_of == question.id  # brought in beside the question as its reply


def test_the_budget_holds_the_answer_first(bank_path: Path) -> None:
    with _open(bank_path, "demote") as hs:
        rec = hs.bank("trip", create=False).recall(QUERY, budget=30, reference_time="2026-04-21T00:00:00Z")
    assert rec.memories and rec.memories[0].sources != ["D1:1"]
    assert "D1:2" in [m.sources[0] for m in rec.memories]
    assert rec.tokens <= 30


def test_the_default_demotes_questions(bank_path: Path) -> None:
    assert RecallSettings().question_rule == "demote"
    with Hindsight.open(bank_path) as hs:
        order = _ranked_sources(hs, QUERY)
    assert order.index("D1:2") < order.index("D1:1")
