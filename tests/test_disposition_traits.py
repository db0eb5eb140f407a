"""What each disposition trait does in code (``hindsight_core.opinions``), beyond the verbalised prompt."""

from __future__ import annotations

import pytest

from hindsight_core.models import Disposition, Memory, Network
from hindsight_core.opinions.confidence import hearsay_factor
from hindsight_core.opinions.disposition import EMPATHY_SHIFT, empathy_order, is_emotional, is_hearsay


def mem(i: int, text: str, network: Network = Network.WORLD) -> Memory:
    return Memory(id=f"m{i}", bank_id="b", text=text, network=network)


@pytest.mark.parametrize("text", [
    "I heard that Tom quit his job.", "Apparently the gym is closing.", "People say the dentist is rough.",
    "Someone told me Rex bites.", "I was told the landlord never fixes anything.", "Rumour is the bakery shut.",
])
def test_second_hand_reports_are_hearsay(text: str) -> None:
    assert is_hearsay(text)


@pytest.mark.parametrize("text", [
    "Tom fixed my bike.", "They fixed the lift yesterday.", "My hearing test went fine.",
    "Sam said he would come and he came.",
])
def test_first_hand_reports_are_not(text: str) -> None:
    assert not is_hearsay(text)


def test_hearsay_factor_by_skepticism() -> None:
    assert [hearsay_factor(Disposition(skepticism=s)) for s in range(1, 6)] == [1.0, 1.0, 1.0, 0.5, 0.0]


def test_emotional_memories() -> None:
    assert is_emotional(mem(1, "I felt so lonely after the move."))
    assert is_emotional(mem(2, "Walked the dog.", Network.EXPERIENCE))  # the agent's own experience
    assert not is_emotional(mem(3, "The train leaves at nine from platform two."))
    assert not is_emotional(mem(4, "What kind of car does Sam drive?"))


def test_empathy_moves_emotional_memories_and_keeps_the_rest_in_order() -> None:
    memories = [mem(i, f"fact number {i}") for i in range(8)]
    memories[6] = mem(6, "Maya was heartbroken when the dog ran away.")
    ids = lambda ms: [m.id for m in ms]  # noqa: E731
    assert ids(empathy_order(memories, Disposition(empathy=3))) == ids(memories)
    warm = ids(empathy_order(memories, Disposition(empathy=5)))
    cold = ids(empathy_order(memories, Disposition(empathy=1)))
    assert warm.index("m6") == 6 - 2 * EMPATHY_SHIFT + 1  # a tie keeps recall's order: just after m2
    assert cold.index("m6") == 7  # pushed back as far as the list goes
    for order in (warm, cold):
        rest = [i for i in order if i != "m6"]
        assert rest == [f"m{i}" for i in range(8) if i != 6]
    assert sorted(warm) == sorted(cold) == sorted(ids(memories))  # reordered, nothing lost
