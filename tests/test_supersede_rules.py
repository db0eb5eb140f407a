"""The rules that decide, without a model, whether a message states a change of its speaker's own situation, and
which earlier statement it changes (``core/retain/supersede.py``): changes are found, look-alikes are not."""

from __future__ import annotations

import pytest

from hindsight_core.models import Memory
from hindsight_core.retain.supersede import change_of, names, states


def said(text: str, mid: str = "m") -> Memory:
    """A raw message memory as retain writes it (``Speaker: text``)."""
    return Memory(id=mid, bank_id="b", text=text)


@pytest.mark.parametrize(("text", "attribute", "named"), [
    ("Ana: We moved to Porto last month, the new flat is much bigger.", "home", None),
    ("Rui: I left nursing, I'm a paramedic now.", "job", None),
    ("Arjun: Sold the Enfield, I bought a second-hand Activa scooter.", "vehicle", "enfield"),
    ("Jordan: I left Amazon in October. Starting at a startup on Monday.", None, "amazon"),
    ("Carla: Miguel and I broke up in December.", "partner", "miguel"),
    ("Chloe: The party is moving to 2 September, the club double-booked.", None, "party"),
    ("Carla: Also, we postponed Japan to next spring.", "event", "japan"),
    ("Sam: Also, I went fully vegan in January.", "diet", None),
    ("Mia: We've moved Ella's 21st to 16 December, half her friends have exams.", "event", "ella"),
    ("Rory: The ceilidh's moved to 14 October, the hall flooded.", "event", "ceilidh"),
])
def test_a_change_of_the_speakers_own_situation_is_found(text: str, attribute: str | None, named: str | None) -> None:
    change = change_of(said(text))
    assert change is not None and change.speaker == text.split(":")[0]
    if attribute is not None:
        assert attribute in change.attributes
    if named is not None:
        assert named in change.objects


@pytest.mark.parametrize("text", [
    "Rui: My sister moved to Porto for her new job.",            # another person
    "Lena: My best friend moved to Munich, I'll miss her.",      # another person, with an adjective
    "Melanie: Yeah, a buddy of mine adopted last year.",         # another person
    "Kavya: My husband has switched to cheering for CSK.",       # another person
    "Ana: If we ever moved to Porto I'd miss the river.",        # hypothetical
    "Ana: Did you move to Porto?",                               # a question
    "Ana: When I was a kid we moved to Faro.",                   # a story about the past
    "Ana: We didn't move to Porto in the end.",                  # a denial
    "Jon: Thanks! I won't quit on my dreams.",                   # negated
    "Ana: Still living in Lisbon, still loving it.",            # a repetition
    "Ana: We're thinking about moving to Porto next year.",     # a plan
    "Rafael: We moved the christening to March.",                # an event, not a home
    "Ana: Does anyone know a good dentist? Mine retired.",       # someone else retired
    "Grace: I bought a paddling pool. For myself.",              # a purchase, no vehicle
    "Lucía: The rebajas started, I bought a coat.",              # a start, no habit
    "Tom: We moved the sofa to the window, much better light.",  # moved to a place, no date: no event
])
def test_look_alikes_state_no_change_of_home_job_or_vehicle(text: str) -> None:
    change = change_of(said(text))
    assert change is None or not change.attributes & {"home", "job", "vehicle", "habit", "pet"}, change


def test_the_earlier_statement_is_the_speakers_own_state_of_the_attribute() -> None:
    assert states(said("Ana: I live in Lisbon, near the river."), "Ana", frozenset({"home"})) == "home"
    assert states(said("Rui: I live in Lisbon."), "Ana", frozenset({"home"})) is None  # another speaker
    assert states(said("Ana: Do you live in Lisbon?"), "Ana", frozenset({"home"})) is None  # a question
    assert states(said("Ana: If I lived in Lisbon I'd walk more."), "Ana", frozenset({"home"})) is None
    assert states(said("Leo: Set him an alarm, that's what worked for my gran."), "Leo", frozenset({"job"})) is None
    assert states(said("Chloe: I'm a primary school teacher in Salford."), "Chloe", frozenset({"job"})) == "job"
    # An event's state is its date.
    assert states(said("Ines: The wedding is on 14 June in Braga."), "Ines", frozenset({"event"})) == "event"
    assert states(said("Ines: Hugo wants to meet everyone before the wedding."), "Ines", frozenset({"event"})) is None


def test_a_named_thing_links_the_change_to_the_statement_that_has_it() -> None:
    objects = frozenset({"enfield"})
    assert names(said("Arjun: My Royal Enfield is my baby, I ride it every day."), "Arjun", objects) == "enfield"
    assert names(said("Arjun: Would I ever sell the Enfield? Never."), "Arjun", objects) is None  # a question
    assert names(said("Meera: Arjun's Enfield is loud."), "Arjun", objects) is None  # another speaker
    # Forms of the same word: "journalism" / "journalist", "surfing" / "surf".
    assert names(said("Lucía: I work as a journalist at El País."), "Lucía", frozenset({"journalism"}))
    assert names(said("Liam: I surf every morning at six."), "Liam", frozenset({"surfing"}))


def test_a_past_event_is_not_a_state_a_later_change_supersedes() -> None:
    repaired = said("Marek: Lovely! I spent the weekend repairing my sailboat in Gdynia.")
    assert names(repaired, "Marek", frozenset({"sailboat"})) is None
    assert names(said("Marek: My sailboat is moored in Gdynia."), "Marek", frozenset({"sailboat"})) == "sailboat"
    assert states(said("Ana: Yesterday I moved the couch into our flat."), "Ana", frozenset({"home"})) is None


def test_reflect_is_told_which_memories_are_superseded() -> None:
    from datetime import UTC, datetime

    from hindsight_core.reflect.pipeline import user_message

    now = datetime(2024, 6, 1, tzinfo=UTC)
    porto = Memory(id="new", bank_id="b", text="Ana: We moved to Porto last month.",
                   mentioned_at=datetime(2024, 2, 5, tzinfo=UTC))
    lisbon = Memory(id="old", bank_id="b", text="Ana: I live in Lisbon.", mentioned_at=datetime(2023, 1, 5, tzinfo=UTC),
                    metadata={"superseded_by": "new", "valid_until": "2024-02-05T00:00:00+00:00"})
    text = user_message("Where does Ana live?", [porto, lisbon], now)
    line = next(x for x in text.splitlines() if "Lisbon" in x)
    assert "superseded on 2024-02-05 by [1]" in line and "no longer current" in line
    assert "superseded" not in next(x for x in text.splitlines() if "Porto" in x)
    # As of a time before the change, the old memory was current: nothing to say.
    assert "superseded" not in user_message("Where does Ana live?", [lisbon], datetime(2023, 6, 1, tzinfo=UTC))


def test_an_event_moved_to_a_date_supersedes_its_dated_statement_only() -> None:
    change = change_of(said("Mia: We've moved Ella's 21st to 16 December, half her friends have exams."))
    assert change is not None and change.attributes == frozenset({"event"})
    dated = said("Mia: Ella's 21st is on 9 December at the bowls club, you're all invited.", "old")
    assert names(dated, "Mia", change.objects) is not None and states(dated, "Mia", change.attributes) is None


def test_a_question_about_a_past_time_keeps_a_corrected_plan_first() -> None:
    from datetime import UTC, datetime

    from hindsight_core.models import TimeRange
    from hindsight_core.recall.current import speaks_of

    december = TimeRange(start=datetime(2023, 12, 1, tzinfo=UTC), end=datetime(2023, 12, 31, 23, 59, tzinfo=UTC))
    plan = Memory(id="goa", bank_id="b", text="Kavya: We're going to Goa in December.",
                  occurred_start=december.start, occurred_end=december.end)
    kerala = plan.model_copy(update={"id": "kerala", "text": "Kavya: We cancelled Goa, Kerala in December instead."})
    porto = Memory(id="porto", bank_id="b", text="Ana: We moved to Porto last month.",
                   occurred_start=datetime(2024, 4, 1, tzinfo=UTC), occurred_end=datetime(2024, 4, 30, tzinfo=UTC))
    tells = speaks_of(december)
    assert tells(plan, kerala)       # the newer tells of December too: it corrects the plan
    assert not tells(plan, porto)    # the newer tells of another time: the older stays first for December
