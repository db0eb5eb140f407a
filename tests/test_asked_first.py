"""Asked first (``core/recall/current.asked_first``): for a question about how a named person is now, what is about
nobody it names follows what is about them within the first ranks; the keyword channel's matches of a word of the
question in other people's messages no longer come first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_core.config import RecallSettings, Settings
from hindsight_core.hindsight import Hindsight
from hindsight_core.models import Memory, Network
from hindsight_core.recall.current import CurrentNotes, asked_first, asked_names
from hindsight_core.retain.supersede import subject_of


@pytest.mark.parametrize(("question", "names"), [
    ("Where does Jen live now?", {"jen"}),
    ("Is Joris's collarbone still broken?", {"joris"}),
    ("Is Larissa still with Rafael?", {"larissa", "rafael"}),
    ("What car does Rosângela drive now?", {"rosângela"}),
    ("Where does she live now?", set()),
    ("where does jen live now", set()),  # nothing capitalised: nobody named, nothing moves
    ("Where does Will work now?", {"will"}),
    ("Is 'Jen's' flat still for rent?", {"jen"}),
])
def test_the_names_a_question_asks_about(question: str, names: set[str]) -> None:
    assert asked_names(question) == names


def _said(mid: str, text: str, entities: tuple[str, ...] = ()) -> Memory:
    """A memory; a message's speaker among its entities, as retain records it."""
    speaker = [text.split(":")[0]] if ":" in text else []
    return Memory(id=mid, bank_id="b", text=text, entities=[*speaker, *entities],
                  mentioned_at=datetime(2025, 1, 1, tzinfo=UTC))


def test_memories_about_nobody_asked_follow_within_the_window() -> None:
    ranked = [_said("husky", "Aisha: My sister's husky is with us while she's in Jamaica."),
              _said("jen1", "Jen: Transferred to the Calgary office at New Year."),
              _said("band", "Marco: We saw a live band on Friday."),
              _said("kin", "Aisha: Her mum says the flat by the river is lovely."),  # the semantic channel's closest
              _said("tag", "Her new place has a balcony.", ("Jen",)),  # names her among its entities
              Memory(id="obs", bank_id="b", text="Renting in Kensington.", network=Network.OBSERVATION,
                     metadata={"entity": "Jen"}),
              _said("jen2", "Jen: Renting in Kensington by the river.")]
    notes = CurrentNotes()
    out = [m.id for m in asked_first(iter(ranked), {"jen"}, {"kin"}, subject_of, notes, 20)]
    assert out == ["jen1", "kin", "tag", "obs", "jen2", "husky", "band"]
    assert notes.not_of_asked == {"husky", "band"}
    notes = CurrentNotes()
    out = [m.id for m in asked_first(iter(ranked), {"jen"}, {"kin"}, subject_of, notes, 3)]
    assert out == ["jen1", "husky", "band", "kin", "tag", "obs", "jen2"]  # beyond the window: untouched
    # A correction (no name, no entity) that current_first brought in ahead of what it corrected stays ahead of it.
    old = _said("toronto", "Jen: I live in Toronto.").model_copy(update={"metadata": {"superseded_by": "fix"}})
    fix = _said("fix", "I live in Calgary, not Toronto.")
    notes = CurrentNotes(brought_by={"fix": "toronto"})
    out = [m.id for m in asked_first(iter([fix, old, ranked[0]]), {"jen"}, set(), subject_of, notes, 20)]
    assert out == ["fix", "toronto", "husky"]
    # Along a chain of corrections (A by B by C, none naming her), in any order the window holds them.
    b = _said("b", "I live in Calgary.").model_copy(update={"metadata": {"superseded_by": "c"}})
    c = _said("c", "Actually Edmonton, since May.")
    for chain, brought in (([c, b, old, ranked[0]], {}), ([ranked[0], c, b, old], {"c": "b"})):
        toronto = old.model_copy(update={"metadata": {"superseded_by": "b"}})
        window = [toronto if m.id == "toronto" else m for m in chain]
        out = [m.id for m in asked_first(iter(window), {"jen"}, set(), subject_of,
                                         CurrentNotes(brought_by=brought), 20)]
        assert out == ["c", "b", "toronto", "husky"], out
    # A capitalised word that names nobody among the memories ("Now", "Tell", "I'm") is not a name.
    assert asked_names("Now, tell me: I'm asking where Jen lives?") >= {"now", "i'm", "jen"}
    back = _said("back", "Marco: I'm back now.")
    moved = [m.id for m in asked_first(iter([back, *ranked]), {"now", "i'm", "jen"}, set(), subject_of,
                                       CurrentNotes(), 20)]
    assert moved == ["jen1", "tag", "obs", "jen2", "back", "husky", "band", "kin"]
    # A person is known by each word of the name retain stored ("Jen Park" is asked of as "Jen").
    park = [_said("aisha", "Aisha: Jamaica for three weeks."), _said("jp", "I live in Calgary now.", ("Jen Park",))]
    assert [m.id for m in asked_first(iter(park), {"jen"}, set(), subject_of, CurrentNotes(), 20)] == ["jp", "aisha"]
    unchanged = [m.id for m in ranked]
    assert [m.id for m in asked_first(iter(ranked), set(), set(), subject_of, CurrentNotes(), 20)] == unchanged
    assert [m.id for m in asked_first(iter(ranked), {"jen"}, set(), subject_of, CurrentNotes(), 0)] == unchanged
    nobody = [m for m in ranked if m.id in ("husky", "band")]
    assert [m.id for m in asked_first(iter(nobody), {"jen"}, set(), subject_of, CurrentNotes(), 20)] == \
        ["husky", "band"]  # about nobody asked at all: nothing to put first


_TOPICS = ["the match on Saturday", "the new bakery", "the ferry", "my tomato plants", "the book club", "the rain",
           "the concert tickets", "the dentist", "the bike lane", "the quiz night", "the garage sale", "the heatwave"]


def _chat(first: str, other: tuple[str, str]) -> list[dict[str, str]]:
    """Jen speaks every other message (so her name is in most of the bank and the keyword channel cannot weigh it);
    one other person's message holds "work"."""
    out = [("Jen", first)]
    for i, topic in enumerate(_TOPICS):
        out += [(["Aisha", "Marco"][i % 2], f"Anyone going to {topic}?"),
                ("Jen", f"Maybe, ask me about {topic} later.")]
    out[5] = other
    return [{"speaker": who, "text": text} for who, text in out]


def test_real_recall_of_how_a_named_person_is_now_puts_what_is_about_them_first(tmp_path: Path) -> None:
    def top(window: int) -> tuple[list[str], dict[str, str | None]]:
        settings = Settings(recall=RecallSettings(asked_first_window=window))
        with Hindsight.open(tmp_path / f"w{window}", settings=settings) as hs:
            bank = hs.bank("jen")
            bank.retain(_chat("I'm a senior copywriter at an agency on King Street.",
                              ("Marco", "Traffic on the Gardiner was brutal this morning, I was late for work again.")),
                        timestamp=datetime(2024, 3, 1, tzinfo=UTC), extract=False)
            bank.retain(_chat("Transferred to the Calgary office at New Year, different team, same agency.",
                              ("Aisha", "I walk the dogs before work every day, rain or shine.")),
                        timestamp=datetime(2025, 3, 1, tzinfo=UTC), extract=False)
            found = bank.recall("Where does Jen work now?", reference_time=datetime(2025, 4, 1, tzinfo=UTC),
                                max_memories=5, trace=True)
            assert found.trace is not None
            why = {item.memory_id: item.demoted_as for item in found.trace.items}
            return [m.text for m in found.memories], {m.text: why.get(m.id) for m in bank.memories(
                [item.memory_id for item in found.trace.items])}

    plain, _ = top(0)
    assert any(not text.startswith("Jen:") for text in plain)  # the others' "work" outranks what Jen said
    first, why = top(20)
    assert all(text.startswith("Jen:") for text in first), first
    assert why["Aisha: I walk the dogs before work every day, rain or shine."] == "not_of_asked"
