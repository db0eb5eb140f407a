"""The opinion confidence formula (``opinions.confidence.grounded_confidence``), at its edges (see its module)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from hindsight_core.models import Disposition, Memory, Network
from hindsight_core.opinions.confidence import CEILING, grounded_confidence

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def fact(i: int, *, doc: str | None = None, days_old: float = 0.0, network: Network = Network.WORLD) -> Memory:
    return Memory(id=f"m{i}", bank_id="b", text=f"fact {i}", network=network, document_id=doc or f"d{i}",
                  mentioned_at=NOW - timedelta(days=days_old))


def conf(support: list[Memory], against: list[Memory] | None = None, **traits: int) -> float:
    return grounded_confidence(support, against or [], Disposition(**traits), NOW)


def test_no_support_is_no_confidence() -> None:
    assert conf([]) == 0.0
    assert conf([], [fact(1)]) == 0.0


def test_one_source_and_the_skepticism_it_meets() -> None:
    one = [fact(1)]
    assert conf(one, skepticism=1) == pytest.approx(0.95 * (1 - math.exp(-4)), abs=1e-4)  # 0.93
    assert conf(one, skepticism=5) == pytest.approx(0.95 * (1 - math.exp(-0.25)), abs=1e-4)  # 0.21
    values = [conf(one, skepticism=s) for s in range(1, 6)]
    assert values == sorted(values, reverse=True) and len(set(values)) == 5  # each point of skepticism counts


def test_more_independent_support_more_confidence_but_never_certainty() -> None:
    assert conf([fact(i) for i in range(3)], skepticism=3) == pytest.approx(0.95 * (1 - math.exp(-3)), abs=1e-4)
    assert conf([fact(i) for i in range(3)], skepticism=5) == pytest.approx(0.95 * (1 - math.exp(-0.75)), abs=1e-4)
    assert conf([fact(i) for i in range(3)], skepticism=3) > conf([fact(0)], skepticism=3)
    assert conf([fact(i) for i in range(50)], skepticism=1) <= CEILING < 1.0
    # The same three memories from one conversation corroborate less than from three.
    same_source = [fact(i, doc="chat") for i in range(3)]
    assert conf(same_source, skepticism=3) < conf([fact(i) for i in range(3)], skepticism=3)


def test_conflicting_support_weighs_against() -> None:
    support = [fact(1), fact(2)]
    alone = conf(support)
    assert conf(support, [fact(3), fact(4)]) == pytest.approx(alone / 2, abs=1e-4)
    assert conf(support, [fact(3)]) == pytest.approx(alone * 2 / 3, abs=1e-4)
    # A memory cited on both sides is opposition, not support.
    assert conf([fact(1), fact(2)], [fact(2)]) == pytest.approx(conf([fact(1)], [fact(2)]), abs=1e-9)
    # The same memory cited twice counts once.
    assert conf([fact(1), fact(1)]) == conf([fact(1)])


def test_old_evidence_counts_less_but_still_counts() -> None:
    fresh, year, ancient = conf([fact(1)]), conf([fact(1, days_old=365)]), conf([fact(1, days_old=3650)])
    assert fresh > year > ancient > 0
    assert ancient == conf([fact(1, days_old=36500)])  # floored at MIN_RECENCY


def test_literalism_decides_whether_inferred_memories_are_evidence() -> None:
    observation = [fact(1, network=Network.OBSERVATION)]
    assert conf(observation, literalism=1) > conf(observation, literalism=3) > 0
    assert conf(observation, literalism=5) == 0.0  # only what was said counts
    assert conf([fact(1)], literalism=5) == conf([fact(1)], literalism=1)  # facts count the same


def test_hearsay_counts_less_as_skepticism_rises_and_nothing_at_five() -> None:
    heard = Memory(id="h", bank_id="b", text="I heard that Tom fixes bikes for free.", network=Network.WORLD,
                   document_id="d1", mentioned_at=NOW)
    seen = Memory(id="s", bank_id="b", text="Tom fixed my bike for free.", network=Network.WORLD,
                  document_id="d2", mentioned_at=NOW)
    assert conf([heard], skepticism=3) == conf([seen], skepticism=3)  # a balanced mind takes it as told
    assert 0.0 < conf([heard], skepticism=4) < conf([seen], skepticism=4)
    assert conf([heard], skepticism=5) == 0.0  # only second-hand: no opinion for the strictest mind
    assert conf([heard, seen], skepticism=5) < conf([seen, fact(3)], skepticism=5)
