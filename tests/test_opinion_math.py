"""Opinion update arithmetic, the skepticism-scaled step, and disposition verbalisation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hindsight_core import Disposition
from hindsight_core.opinions.confidence import Assessment, opinion_step, update_confidence
from hindsight_core.opinions.disposition import verbalize


@pytest.mark.parametrize(
    ("confidence", "label", "step", "expected"),
    [
        (0.5, Assessment.REINFORCE, 0.1, 0.6),
        (0.5, Assessment.WEAKEN, 0.1, 0.4),
        (0.5, Assessment.CONTRADICT, 0.1, 0.3),
        (0.5, Assessment.NEUTRAL, 0.1, 0.5),
        (0.9, Assessment.REINFORCE, 0.1, 0.95),  # held at the one ceiling, as at formation
        (1.0, Assessment.REINFORCE, 0.1, 1.0),  # a value set above the ceiling is never lowered by support
        (0.05, Assessment.WEAKEN, 0.1, 0.0),  # clamped at 0
        (0.15, Assessment.CONTRADICT, 0.1, 0.0),
        (0.0, Assessment.CONTRADICT, 0.1, 0.0),
        (0.0, Assessment.REINFORCE, 0.1, 0.1),
        (1.0, Assessment.CONTRADICT, 0.1, 0.8),
        (0.7, Assessment.REINFORCE, 0.0, 0.7),  # a zero step changes nothing
    ],
)
def test_update_for_every_label_and_edge(confidence: float, label: Assessment, step: float, expected: float) -> None:
    assert update_confidence(confidence, label, step) == pytest.approx(expected)


@pytest.mark.parametrize(("confidence", "step"), [(-0.1, 0.1), (1.1, 0.1), (0.5, -0.1)])
def test_update_rejects_invalid_inputs(confidence: float, step: float) -> None:
    with pytest.raises(ValueError):
        update_confidence(confidence, Assessment.REINFORCE, step)


@given(st.floats(0, 1), st.sampled_from(list(Assessment)), st.floats(0, 0.5))
def test_update_stays_in_unit_interval_and_moves_the_right_way(c: float, label: Assessment, step: float) -> None:
    new = update_confidence(c, label, step)
    assert 0.0 <= new <= 1.0
    if label is Assessment.REINFORCE:
        assert new >= c
    elif label is Assessment.NEUTRAL:
        assert new == c
    else:
        assert new <= c
    if label is Assessment.CONTRADICT:
        assert new <= update_confidence(c, Assessment.WEAKEN, step)


def test_step_shrinks_with_skepticism() -> None:
    steps = [opinion_step(0.1, Disposition(skepticism=s)) for s in range(1, 6)]
    assert all(a > b for a, b in itertools.pairwise(steps))
    assert all(s > 0 for s in steps)


def test_every_disposition_reads_differently() -> None:
    texts = {
        verbalize(Disposition(skepticism=s, literalism=lit, empathy=e, bias=b))
        for s, lit, e, b in itertools.product(range(1, 6), range(1, 6), range(1, 6), (0.0, 0.5, 1.0))
    }
    assert len(texts) == 5 * 5 * 5 * 3


def test_bias_moves_from_neutral_to_strong() -> None:
    low, mid, high = (verbalize(Disposition(bias=b)) for b in (0.0, 0.5, 1.0))
    assert "neutral" in low.lower() and "strongly" in high.lower()
    assert len({low, mid, high}) == 3


def test_disposition_is_validated() -> None:
    for bad in ({"skepticism": 0}, {"empathy": 6}, {"bias": 1.5}, {"literalism": -1}):
        with pytest.raises(ValueError):
            Disposition(**bad)
