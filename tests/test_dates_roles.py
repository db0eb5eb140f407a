"""Issue 36, point 5: a fact's dates come from its source message and its roles from the message's speaker.

* (a) Dates count from the time of the message that says them, never from the moment of the retain: a note written on
  5 November 2024 (its date line) and retained later keeps "last Tuesday" as 29 October 2024, on the raw path, the
  facts path, with per-message times and through the LangGraph store; a fact citing a question and its later answer
  counts from the answer.
* (b) "the 14th of next month" and its kin are one day, not a month (more rows in ``test_temporal*.py``).
* (c) In a user/assistant chat retained into a bank named ``alice``, the bank id is nobody: no entity Alice, and no
  memory gives the assistant's words to Alice, on the raw path and the facts path.

Real SQLite, Chroma and embedder; scripted models.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.extract.llm_extractor import LLMExtractor
from hindsight_core.extract.raw_extractor import RawExtractor
from hindsight_core.models import Memory, Message, Network
from hindsight_core.temporal import find_dateline, statement_time
from langchain_hindsight import HindsightStore

NOTE_DAY = datetime(2024, 11, 5, tzinfo=UTC)  # a Tuesday: "last Tuesday" is 29 October 2024
LAST_TUESDAY = date(2024, 10, 29)
NOTE = "Note written on 5 November 2024: Alice went to the dentist last Tuesday."
FACT = "Alice went to the dentist last Tuesday."
LINE = re.compile(r"^\[([^\]]+)\] (?:\([^)]*\) )?([^:]+): (.*)$", re.MULTILINE)

Writer = Callable[[str, str, str], str | None]  # (label, speaker, text) -> the fact the model writes, or None


def lean_model(write: Writer, prompts: list[str] | None = None) -> ScriptedLLM:
    """A scripted model answering every facts call with ``write``'s facts for the prompt's messages (and every entity
    summary the facts job queues after it); ``prompts`` collects the facts prompts."""

    def answer(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
        if "summary" in schema.model_fields:
            return {"summary": "Priya is moving to Lisbon."}
        body = messages[-1]["content"]
        if prompts is not None:
            prompts.append(body)
        facts = []
        for label, speaker, text in LINE.findall(body.split("Messages:\n", 1)[1]):
            fact = write(label, speaker, text)
            if fact is not None:
                facts.append({"text": fact, "src": [label]})
        return {"facts": facts}

    return ScriptedLLM([answer] * 20)


def the_dentist(label: str, speaker: str, text: str) -> str | None:
    return FACT if "dentist" in text else None


def units(hs: Hindsight, bank_id: str) -> list[Memory]:
    return hs.store.get_units(bank_id, sorted(hs.store.unit_ids(bank_id)))


def drain(hs: Hindsight) -> None:
    while hs.worker.run_once():
        pass


def fact_of(hs: Hindsight, bank_id: str, document_id: str) -> Memory:
    (fact,) = [u for u in hs.store.get_units(bank_id, hs.store.units_of_document(bank_id, document_id))
               if u.cites is not None]
    return fact


def days(memory: Memory) -> tuple[date | None, date | None]:
    start, end = memory.occurred_start, memory.occurred_end
    return (start.date() if start else None), (end.date() if end else None)


# ---- (a) dates from the source message ---------------------------------------------------------------------------


def test_a_note_retained_without_a_time_counts_from_its_date_line_not_from_the_retain(tmp_path: Path) -> None:
    prompts: list[str] = []
    with Hindsight.open(tmp_path / "m", llm=lean_model(the_dentist, prompts), start_worker=False) as hs:
        result = hs.bank("b").retain(NOTE, document_id="note")  # no timestamp: retained today, written in 2024
        (raw,) = result.memories
        assert hs.bank("b").document("note").timestamp == NOTE_DAY
        assert raw.mentioned_at == NOTE_DAY and days(raw) == (LAST_TUESDAY, LAST_TUESDAY)
        drain(hs)
        fact = fact_of(hs, "b", "note")
        # Counted back from the retain (today) this was the last Tuesday before today: the reported bug.
        assert days(fact) == (LAST_TUESDAY, LAST_TUESDAY)
        assert fact.text == "Alice went to the dentist last Tuesday (29 October 2024)."
        assert fact.mentioned_at == NOTE_DAY
        assert "2024-11-05 UTC (Tuesday)" in prompts[0]  # the model is told when the note was written too


def test_a_given_timestamp_and_per_message_times_date_the_facts(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=lean_model(the_dentist), start_worker=False) as hs:
        # Two banks: in one bank the second document's fact would say the same as the first's, and be linked to it
        # rather than stored twice (retain/restated.py).
        hs.bank("b").retain("Alice went to the dentist last Tuesday.", timestamp=NOTE_DAY, document_id="text")
        hs.bank("c").retain([{"speaker": "Alice", "text": "I went to the dentist last Tuesday.", "id": "m1",
                              "timestamp": "2024-11-05T18:30:00+00:00"}], document_id="chat")  # no retain timestamp
        drain(hs)
        for bank_id, document_id in (("b", "text"), ("c", "chat")):
            fact = fact_of(hs, bank_id, document_id)
            assert days(fact) == (LAST_TUESDAY, LAST_TUESDAY), document_id
            assert fact.mentioned_at is not None and fact.mentioned_at.date() == NOTE_DAY.date()


def test_the_langgraph_store_dates_a_note_by_its_date_line(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=lean_model(the_dentist), start_worker=False) as hs:
        store = HindsightStore(hs, extract=True)
        store.put(("notes", "bob"), "n1", {"content": NOTE})  # langmem's shape: no time anywhere but the text
        drain(hs)
        fact = fact_of(hs, "notes.bob", "n1")
        assert days(fact) == (LAST_TUESDAY, LAST_TUESDAY) and fact.mentioned_at == NOTE_DAY


def test_a_fact_citing_a_question_and_its_later_answer_counts_from_the_answer() -> None:
    asked, answered = datetime(2024, 10, 1, 9, tzinfo=UTC), datetime(2024, 11, 5, 9, tzinfo=UTC)
    messages = [Message(id="m1", speaker="Bo", text="How did the dentist visit go, Alice?", timestamp=asked),
                Message(id="m2", speaker="Alice", text="Fine, I went to the dentist last Tuesday.", timestamp=answered)]
    llm = ScriptedLLM([{"facts": [{"text": FACT, "src": ["m1", "m2"]}]}])
    (fact,) = LLMExtractor(llm).extract(messages, document_time=datetime(2024, 12, 5, tzinfo=UTC))
    # From the question's day (1 October) "last Tuesday" would be 24 September.
    assert fact.occurred_start == datetime(2024, 10, 29, tzinfo=UTC)
    assert fact.text == "Alice went to the dentist last Tuesday (29 October 2024)."
    assert fact.mentioned_at == asked  # when the fact was first spoken of: the earliest message it cites


@pytest.mark.parametrize(
    ("text", "day"),
    [
        (NOTE, NOTE_DAY),
        ("5 November 2024\nAlice went to the dentist last Tuesday.", NOTE_DAY),
        ("Tuesday, 5 November 2024: went to the dentist.", NOTE_DAY),
        ("Date: 2024-11-05. Dentist done.", NOTE_DAY),
        ("[2024-11-05] Dentist done.", NOTE_DAY),
        ("# 5 Nov 2024\nDentist done.", NOTE_DAY),
        ("2024-11-05 Alice called the dentist.", NOTE_DAY),  # a log line's own date
        ("Journal entry, 5 November 2024 - dentist done.", NOTE_DAY),
        # what a note tells about, not when it was written
        ("On 5 November 2024 we signed the lease.", None),
        ("5 November 2024 was a Tuesday.", None),
        ("Alice went to the dentist on 5 November 2024.", None),
        ("5 November: dentist.", None),  # no year: could be any November
        ("November 2024: dentist.", None),  # no day
        ("Written on 5 November 2031: dentist.", None),  # after the retain: no writing date
        ("We met 3 people at 5.", None),
    ],
)
def test_date_lines(text: str, day: datetime | None) -> None:
    found = find_dateline(text, datetime(2024, 12, 5, tzinfo=UTC))
    assert (found.time if found else None) == day


def test_a_date_line_naming_the_day_said_is_not_when_the_note_happened() -> None:
    text = "5 November 2024: went to the dentist last Tuesday."
    said = statement_time(text, NOTE_DAY)
    assert said is not None and said.expression == "last Tuesday"
    other_day = statement_time(text, datetime(2024, 11, 20, tzinfo=UTC))  # a date line of another day is an event
    assert other_day is not None and other_day.expression == "5 November 2024"


# ---- (b) a day of the month is one day ---------------------------------------------------------------------------

DEC = datetime(2026, 12, 5, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("Dinner with Sam on the 14th of next month.", date(2027, 1, 14)),
        ("The exam is the 3rd of next month.", date(2027, 1, 3)),
        ("We fly next month on the 14th.", date(2027, 1, 14)),
        ("The concert is the 14th of March.", date(2027, 3, 14)),
        ("I'll see her on the 14th.", date(2026, 12, 14)),
        ("I saw her on the 14th.", date(2026, 11, 14)),
    ],
)
def test_a_day_of_the_month_is_stored_as_that_day_raw_and_from_a_fact(text: str, day: date) -> None:
    message = Message(id="m1", speaker="Ana", text=text, timestamp=DEC)
    (raw,) = RawExtractor().extract([message], document_time=DEC)
    assert raw.occurred_start is not None and raw.occurred_end is not None
    assert (raw.occurred_start.date(), raw.occurred_end.date()) == (day, day)
    (fact,) = LLMExtractor(ScriptedLLM([{"facts": [{"text": f"Ana: {text}", "src": ["m1"]}]}])).extract(
        [message], document_time=DEC)
    assert fact.occurred_start is not None and fact.occurred_end is not None
    assert (fact.occurred_start.date(), fact.occurred_end.date()) == (day, day)


# ---- (c) roles, not the bank id ----------------------------------------------------------------------------------

CHAT = [
    {"speaker": "user", "text": "My sister Priya is moving to Lisbon in March.", "id": "c1"},
    {"speaker": "assistant", "text": "Nice! I'll remember that. I'll remind you to call Priya before she leaves.",
     "id": "c2"},
]
ROLES_NOTE = "is you, the AI whose memory this is"


def no_alice(hs: Hindsight) -> None:
    names = [n.casefold() for e in hs.store.list_entities("alice") for n in (e.name, *e.aliases)]
    assert "alice" not in names
    assert all("alice" not in u.text.casefold() for u in units(hs, "alice")), [u.text for u in units(hs, "alice")]


def test_raw_retain_into_a_bank_named_alice_makes_nobody_alice(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        result = hs.bank("alice").retain(CHAT, timestamp=NOTE_DAY, extract=False)
        user, agent = result.memories
        assert (user.network, agent.network) == (Network.WORLD, Network.EXPERIENCE)
        assert agent.text.startswith("assistant: ")
        no_alice(hs)


def model_that_reads_the_roles(label: str, speaker: str, text: str) -> str | None:
    """What a model does with the roles explained: the user is "the user", the assistant writes as "I"."""
    if speaker == "user":
        return "The user's sister Priya is moving to Lisbon in March."
    return "I will remind the user to call Priya before she leaves."


def model_that_names_the_assistant(label: str, speaker: str, text: str) -> str | None:
    """What users saw: the assistant's words given the only name around (the bank's, or the user's)."""
    if speaker == "user":
        return "Alice's sister Priya is moving to Lisbon in March."
    return "Alice will remind the user to call Priya before she leaves."


def test_the_facts_prompt_says_who_the_roles_are_and_never_names_the_bank(tmp_path: Path) -> None:
    prompts: list[str] = []
    with Hindsight.open(tmp_path / "m", llm=lean_model(model_that_reads_the_roles, prompts), start_worker=False) as hs:
        hs.bank("alice").retain(CHAT, timestamp=NOTE_DAY, document_id="chat")
        drain(hs)
        assert prompts and all(ROLES_NOTE in p and "alice" not in p.casefold() for p in prompts)
        facts = [u for u in units(hs, "alice") if u.cites is not None]
        by_text = {f.text: f for f in facts}
        agent = by_text["I will remind the user to call Priya before she leaves."]
        assert agent.network is Network.EXPERIENCE and agent.sources == ["c2"]
        no_alice(hs)


def test_a_model_that_gives_the_assistants_words_to_alice_stores_no_alice(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", llm=lean_model(model_that_names_the_assistant), start_worker=False) as hs:
        hs.bank("alice").retain(CHAT, timestamp=NOTE_DAY, document_id="chat")
        drain(hs)
        no_alice(hs)  # the facts' "Alice" is in no message: the check before storing rejects them
        assert [u.sources for u in units(hs, "alice") if u.cites is None] != []  # the messages stay


def test_prompts_of_named_speakers_have_no_roles_note() -> None:
    llm = ScriptedLLM([{"facts": [{"text": "Caroline painted a lake.", "src": ["m1"]}]}])
    messages = [Message(id="m1", speaker="Caroline", text="I painted a lake.", timestamp=NOTE_DAY),
                Message(id="m2", speaker="Melanie", text="Lovely!", timestamp=NOTE_DAY)]
    LLMExtractor(llm).extract(messages, document_time=NOTE_DAY)
    assert "Speakers:" not in llm.calls[0].user  # conversations between people are prompted as before


def test_reflect_does_not_make_the_bank_id_the_agent_s_name() -> None:
    """A bank created as ``alice`` (a user's id) has no name of its own: reflect's system message says who the agent
    is without calling it Alice; a profile that names the agent keeps the name."""
    from hindsight_core.models import BankProfile, Disposition
    from hindsight_core.reflect.pipeline import system_message

    unnamed = system_message(BankProfile(id="alice", name="alice"), Disposition())
    assert "alice" not in unnamed.lower() and unnamed.startswith("You are an AI assistant")
    named = system_message(BankProfile(id="alice", name="Ada the concierge"), Disposition())
    assert named.startswith("You are Ada the concierge.")
