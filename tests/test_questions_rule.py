"""The question / acknowledgement classifier and the orders built on it (core/recall/questions.py), without stores."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hindsight_core.models import FACT_CITES_KEY, Memory
from hindsight_core.recall.questions import (
    MAX_HELD,
    QuestionNotes,
    classify,
    is_acknowledgement,
    is_pure_question,
    message_text,
    questions_last,
    questions_paired,
)

PURE_QUESTIONS = [
    "user: When is my flight to Porto, and what's the occasion?",  # the example: asks, tells nothing
    "What pet do you have?",
    "Hi Kevin! How are you? What are you doing?",
    "That's awesome, Melanie! How have your family been supportive during your move?",
    "Cool! Got any fav tunes?",
    "Any plans for today?",
    "How about you?",
    "Hows your day going?",
]
ACKNOWLEDGEMENTS = [
    "assistant: Got it.", "Got it", "Nice!", "Thanks!", "Thanks, Mel!", "Thank you so much!", "That's amazing!",
    "Sounds good", "Wow, that's really cool!", "Good morning!", "Bye Joanna! Good luck!", "lol", "Okay 👍",
]
# Messages that say something, however much they look like a question or an acknowledgement.
STATEMENTS = [
    # A question that tells: decided *not* pure, it carries the move (the answer to "Where does she live?").
    "Did you know I moved to Porto?",
    "Guess what? I got the job!",
    "Have I told you about my new puppy?",
    "I moved to Porto last week, right?",          # a statement with a tag
    "You moved to Porto?",                         # declarative word order: an echo that restates
    "How are you, I just got back from Porto?",    # a first-person clause after the comma
    "I just moved to Porto. Have you been?",       # a declarative sentence beside the question
    "Yes!", "No, not yet.", "Me too!",             # answers, not acknowledgements
    "It was great!",                               # answers "How was the trip?"
    "Oh Germany sounds nice",                      # a place named is content, not a vocative
    "Hey! [shares a photo of a golden retriever on a beach]",  # an image shared
    "How am I gonna go to partiesss",              # no question mark: left alone
    "Check this out https://example.com/porto?",
    "What is it",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "",
    "🙂",
]


@pytest.mark.parametrize("text", PURE_QUESTIONS)
def test_pure_questions(text: str) -> None:
    assert classify(text) == "question"
    assert is_pure_question(text) and not is_acknowledgement(text)


@pytest.mark.parametrize("text", ACKNOWLEDGEMENTS)
def test_acknowledgements(text: str) -> None:
    assert classify(text) == "acknowledgement"
    assert is_acknowledgement(text) and not is_pure_question(text)


@pytest.mark.parametrize("text", STATEMENTS)
def test_messages_that_say_something_are_never_pure(text: str) -> None:
    assert classify(text) is None


def test_a_long_question_is_taken_to_carry_information() -> None:
    long = "Do you think " + "and ".join(["we could go to the beach with the kids"] * 4) + "?"
    assert classify(long) is None


def test_message_text_drops_the_speaker_prefix_only() -> None:
    assert message_text("Caroline: Got it!") == "Got it!"
    assert message_text("Got it!") == "Got it!"
    assert message_text("Note: the wedding is on June 5. Really.") == "the wedding is on June 5. Really."


def _mem(mid: str, text: str, **extra: object) -> Memory:
    return Memory(id=mid, bank_id="b", text=text, sources=[mid], **extra)  # type: ignore[arg-type]


RANKED = [
    _mem("q1", "Ana: When is my flight to Porto?"),
    _mem("k1", "Bot: Got it."),
    _mem("a1", "Bot: Your flight is on May 3rd."),
    _mem("s1", "Ana: I like tea."),
    _mem("q2", "Ana: How are you?"),
]


def test_questions_last_follows_the_next_memory_that_says_something() -> None:
    notes = QuestionNotes()
    order = [m.id for m in questions_last(iter(RANKED), notes)]
    assert order == ["a1", "q1", "k1", "s1", "q2"]
    assert notes.demoted == {"q1": "question", "k1": "acknowledgement"}  # q2: nothing below it, keeps its place


def test_questions_last_leaves_facts_alone_and_a_ranking_of_questions_as_it_is() -> None:
    fact = _mem("f1", "Ana asked when her flight is?", metadata={FACT_CITES_KEY: ["q1"]})
    assert [m.id for m in questions_last(iter([fact, RANKED[2]]), QuestionNotes())] == ["f1", "a1"]
    many = [_mem(f"q{i}", "What time is it?") for i in range(MAX_HELD + 3)] + [RANKED[2]]
    order = [m.id for m in questions_last(iter(many), QuestionNotes())]
    assert order[:3] == ["q0", "q1", "q2"] and order[3] == "a1"  # at most MAX_HELD wait for it
    assert sorted(order) == sorted(m.id for m in many)


def test_questions_paired_brings_the_reply_or_the_acknowledged_message_in() -> None:
    doc = {  # document order: p0 -> q1 -> a1 -> k1
        "q1": ("p0", "a1"), "k1": ("a1", None), "q2": (None, "k9"),
    }
    store = {m.id: m for m in [*RANKED, _mem("p0", "Ana: I booked a trip."), _mem("k9", "Bot: Nice!")]}

    def adjacent(ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        return {i: doc[i] for i in ids if i in doc}

    def load(ids: Sequence[str]) -> list[Memory]:
        return [store[i] for i in ids if i in store]

    ranked = [RANKED[0], RANKED[3], RANKED[1], RANKED[4], _mem("t1", "Ana: The tea was green.")]
    notes = QuestionNotes()
    order = [m.id for m in questions_paired(iter(ranked), adjacent, load, notes)]
    # q1 brings its reply a1 in ahead of it; k1's acknowledged message (a1) is already shown, so k1 waits for the
    # next memory that says something, as q2 does (its neighbour is an acknowledgement).
    assert order == ["a1", "q1", "s1", "t1", "k1", "q2"]
    assert notes.paired == {"a1": "q1"}
    assert notes.demoted == {"q1": "question", "k1": "acknowledgement", "q2": "question"}
