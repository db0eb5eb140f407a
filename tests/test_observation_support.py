"""Observations keep only what the facts support, list the facts they rest on and carry the facts' time.

The support check runs with the real embedder; the observation job runs through a real store (SQLite + Chroma)
with a scripted model, so that the summary's bad sentences (a repeat, a claim no fact makes, a wrong detail)
are forced and the test can see them dropped.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM

from hindsight_core import Hindsight
from hindsight_core.config import CaraSettings, Settings
from hindsight_core.embedders import make_embedder
from hindsight_core.models import Network
from hindsight_core.observations.job import SUPPORT_KEY, ObservationWriter, fact_line
from hindsight_core.observations.support import (
    MIN_OVERLAP,
    MIN_SIMILARITY,
    check_support,
    content_words,
    detail_words,
    facts_about,
    split_sentences,
)

# The model-written summary: these tests check that path (the default is extractive, observations/extract.py).
MODEL_SUMMARIES = Settings(cara=CaraSettings(observation_mode="model"))

T0 = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)
JONAH = [
    {"speaker": "Jonah", "text": "I'm planning a trip to Lisbon with my sister.", "id": "m1"},
    {"speaker": "Jonah", "text": "I just started a new job as a nurse at the city hospital.", "id": "m2"},
    {"speaker": "Jonah", "text": "The night shifts are tough but my colleagues are great.", "id": "m3"},
]
FACTS = [("f1", "Jonah: I'm planning a trip to Lisbon in June with my sister."),
         ("f2", "Jonah: I just started a new job as a nurse at the city hospital."),
         ("f3", "Jonah: The night shifts are tough but my colleagues are great.")]


@pytest.fixture(scope="module")
def embed() -> Any:
    return make_embedder("minilm").embed


def test_sentences_words_and_details() -> None:
    assert split_sentences("Jonah is a nurse. He plans a trip!  Is it in June? 3 days.") == [
        "Jonah is a nurse.", "He plans a trip!", "Is it in June?", "3 days."]
    assert split_sentences("  ") == []
    # stems meet half way; stop words, summary boilerplate and the entity's own name are left out
    assert content_words("Jonah was running and planned the adoption", ignore=["Jonah"]) == {"run", "plan", "adopt"}
    assert content_words("She has also mentioned that she is currently ...") == set()
    # names, numbers, months and weekdays are details; a capital that only starts the sentence is not
    assert detail_words("Travel is planned for Lisbon on 12 June, a Friday.") == {"lisbon", "12", "june", "friday"}


def test_check_keeps_supported_drops_repeats_new_claims_and_wrong_details(embed: Any) -> None:
    summary = ("Jonah is planning a trip to Lisbon in June with his sister. He works as a nurse at the city "
               "hospital. He is also planning to visit Lisbon in May. Jonah is planning a trip to Lisbon in June. "
               "Pepper is currently in the hospital. He finds the night shifts tough but likes his colleagues.")
    check = check_support(summary, FACTS, "Jonah", embed=embed)
    reasons = [s.reason for s in check.sentences]
    assert reasons == ["supported", "supported", "new detail", "repeated", "unsupported", "supported"]
    assert check.text == ("Jonah is planning a trip to Lisbon in June with his sister. He works as a nurse at the "
                          "city hospital. He finds the night shifts tough but likes his colleagues.")
    assert [s.fact_ids for s in check.kept] == [["f1"], ["f2"], ["f3"]]
    assert check.fact_ids == ["f1", "f2", "f3"]
    assert check.supported_share == pytest.approx(3 / 6)


def test_check_drops_a_claim_without_new_names_and_keeps_a_merge(embed: Any) -> None:
    check = check_support("Jonah recently got married. He is a nurse who works night shifts.", FACTS, "Jonah",
                          embed=embed)
    assert [s.reason for s in check.sentences] == ["unsupported", "supported"]
    assert set(check.kept[0].fact_ids) == {"f2", "f3"}  # one sentence resting on two facts
    # Without an embedder the overlap rule alone decides; with no facts nothing is supported.
    assert check_support("He works night shifts as a nurse.", FACTS, "Jonah").kept
    assert not check_support("He works night shifts as a nurse.", [], "Jonah").kept
    assert check_support("", FACTS, "Jonah").text == "" and check_support("", FACTS).supported_share == 1.0


def test_first_person_news_of_another_speaker_supports_nobody_else(embed: Any) -> None:
    chat = [("d2", "[20 January 2023] Jon: Lost my job as a banker yesterday, so I'm starting my own business."),
            ("d3", "[20 January 2023] Gina: Sorry about your job Jon! I also lost my job at Door Dash this month."),
            ("d4", "[20 January 2023] Gina: Jon, a dance studio sounds awesome.")]
    check = check_support("Jon lost his job as a banker and is starting his own business. He also lost his job at "
                          "Door Dash. Gina lost her job at Door Dash. Jon is opening a dance studio.", chat, "Jon",
                          embed=embed)
    assert [s.reason for s in check.sentences] == ["supported", "new detail", "supported", "supported"]
    assert [s.fact_ids for s in check.kept] == [["d2"], ["d3"], ["d4"]]
    # what another speaker says of Jon (no first person) does support a sentence about him; dates count as said
    assert check_support("In January 2023 Jon lost his job as a banker.", chat, "Jon").kept
    # the model is shown only what speaks of the entity; an entity that is no speaker sees every fact
    assert facts_about(chat, "Jon") == [chat[0], ("d3", "[20 January 2023] Gina: Sorry about your job Jon!"),
                                        chat[2]]
    assert facts_about(chat, "Gina") == [("d3", "[20 January 2023] Gina: I also lost my job at Door Dash this "
                                                "month.")]
    assert facts_about(chat, "Door Dash") == chat


def test_shipped_thresholds_hold_on_the_labelled_test_half(embed: Any) -> None:
    """The thresholds chosen on the dev half keep precision on the held-out half of the labelled set."""
    from hindsight_bench.observations import choose_thresholds, load_labelled, score_labelled

    scenarios = load_labelled()
    splits = {s["split"] for s in scenarios}
    assert splits == {"dev", "test"} and sum(len(s["sentences"]) for s in scenarios) >= 100
    chosen = choose_thresholds(scenarios, embed)["chosen"]
    assert chosen == {"min_overlap": MIN_OVERLAP, "min_similarity": MIN_SIMILARITY}  # the shipped ones
    test = score_labelled(scenarios, "test", embed, MIN_OVERLAP, MIN_SIMILARITY)
    assert test["precision"] >= 0.9 and test["recall"] >= 0.7


def _summary_responder(summary: str) -> Any:
    def respond(messages: Any, schema: Any) -> dict[str, Any]:
        assert schema.__name__ == "_SummaryOut"
        return {"summary": summary}
    return respond


def test_observation_is_dated_by_its_facts_and_lists_them(tmp_path: Path) -> None:
    summary = ("Jonah is planning a trip to Lisbon with his sister. Jonah is planning a trip to Lisbon with his "
               "sister. Pepper is currently in the hospital. He started a new job as a nurse.")
    llm = ScriptedLLM([_summary_responder(summary)] * 4)
    with Hindsight.open(tmp_path / "m", llm=llm, settings=MODEL_SUMMARIES) as hs:
        bank = hs.bank("b")
        first = bank.retain(JONAH[:1], timestamp=T0, extract=False)
        second = bank.retain(JONAH[1:], timestamp=T0 + timedelta(days=9), extract=False)
        jonah = hs.store.find_entity(bank.id, "Jonah")
        assert jonah is not None and jonah.last_seen == T0 + timedelta(days=9)
        memory = hs.engine.observations.regenerate(bank.id, jonah.id)
        assert memory is not None and memory.network == Network.OBSERVATION
        assert memory.text == "Jonah is planning a trip to Lisbon with his sister. He started a new job as a nurse."
        # The facts it rests on, in metadata (with each sentence's share of them) and as message sources.
        rests_on = [first.memories[0].id, second.memories[0].id]
        assert memory.metadata["facts"] == rests_on
        assert memory.metadata[SUPPORT_KEY] == [[0], [1]] and memory.metadata["dropped"] == 2
        assert memory.sources == ["m1", "m2"]
        # Dated by the facts (2025), never the wall clock; the entity's last-seen does not move.
        assert memory.mentioned_at == T0 + timedelta(days=9) == memory.occurred_end
        assert memory.occurred_start == T0
        after = hs.store.find_entity(bank.id, "Jonah")
        assert after is not None and after.last_seen == T0 + timedelta(days=9)
        stored = bank.observation("Jonah")
        assert stored is not None and stored.id == memory.id and stored.mentioned_at == memory.mentioned_at
        # The prompt shows each fact with its date, newest first.
        user = llm.calls[0].user
        assert user.index("[12 March 2025]") < user.index("[3 March 2025]")


def test_nothing_supported_writes_no_observation_and_keeps_the_previous(tmp_path: Path) -> None:
    good = _summary_responder("Jonah works as a nurse at the city hospital.")
    bad = _summary_responder("Pepper is currently in the hospital. Jonah recently got married.")
    with Hindsight.open(tmp_path / "m", llm=ScriptedLLM([good, bad]), settings=MODEL_SUMMARIES) as hs:
        bank = hs.bank("b")
        bank.retain(JONAH, timestamp=T0, extract=False)
        jonah = hs.store.find_entity(bank.id, "Jonah")
        assert jonah is not None
        kept = hs.engine.observations.regenerate(bank.id, jonah.id)
        assert kept is not None
        assert hs.engine.observations.regenerate(bank.id, jonah.id) is None  # all unsupported: nothing written
        still = bank.observation("Jonah")
        assert still is not None and still.id == kept.id and still.text == kept.text


def test_writer_without_embedder_and_fact_line(tmp_path: Path) -> None:
    llm = ScriptedLLM([_summary_responder("Jonah works night shifts. Jonah loves jazz.")])
    with Hindsight.open(tmp_path / "m", llm=llm, settings=MODEL_SUMMARIES) as hs:
        bank = hs.bank("b")
        units = bank.retain(JONAH, timestamp=T0, extract=False).memories
        assert fact_line(units[0]) == f"[3 March 2025] {units[0].text}"
        writer = ObservationWriter(hs.store, hs.engine.retainer.store_facts, lambda: llm, mode="model")
        jonah = hs.store.find_entity(bank.id, "Jonah")
        assert jonah is not None
        draft = writer.draft(bank.id, jonah.id)
        assert draft is not None and [s.reason for s in draft.check.sentences] == ["supported", "unsupported"]
        assert draft.summary == "Jonah works night shifts. Jonah loves jazz."
        assert writer.draft(bank.id, "no-such-entity") is None


def test_labelled_set_is_well_formed() -> None:
    from hindsight_bench.observations import DATA

    lines = DATA.read_text(encoding="utf-8").splitlines()
    assert "_meta" in json.loads(lines[0])
    for line in lines[1:]:
        row = json.loads(line)
        assert row["split"] in ("dev", "test") and row["facts"] and row["entity"]
        assert all(isinstance(s["supported"], bool) and s["text"] for s in row["sentences"])


def test_a_sentence_saying_a_kept_one_again_in_other_words_is_a_repeat() -> None:
    # Two facts of one message (real chat) written as two sentences of one observation; a new fact about the same
    # place is not a repeat.
    facts = [("f1", "Akib: I guess fried chicken is considered an American food over there"),
             ("f2", "Akib thinks fried chicken is considered an American food."),
             ("f3", "Akib works in Porto."), ("f4", "Akib moved to Porto last month.")]
    summary = ("Akib believes fried chicken is considered an American food over there. Akib thinks fried chicken is "
               "considered an American food. Akib works in Porto. Akib moved to Porto last month.")
    for name in ("minilm", "mpnet-int8"):  # the default embedder puts the two at 0.94, below REPEAT_SIMILARITY
        check = check_support(summary, facts, "Akib", embed=make_embedder(name).embed)
        assert [s.reason for s in check.sentences] == ["supported", "repeated", "supported", "supported"], name
