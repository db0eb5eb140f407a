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
    # another person's news is theirs (``subject``): it never changes the speaker's own statements
    assert change is None or change.subject or not change.attributes & {"home", "job", "vehicle", "habit", "pet"}, \
        change


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


# Issue 37, the second round of rules: another person's change, finished studies, a sport given up, a pet taken,
# a bare "I quit", generic cues, a clause that opens with its verb.

@pytest.mark.parametrize(("text", "attribute", "subject"), [
    ("Jordan: Uncle Ray retired in January! He already reorganised his garage twice.", "job", {"ray"}),
    ("Meera: Vikram was made head of the mechanical department, so now he's mostly in meetings.", "job", {"vikram"}),
    ("Grace: Mum finished her last round of chemo and the scan is all clear!", "health", {"mum"}),
    ("Bruno: My sister Rita graduated in July, she's an architect now.", "school", {"sister", "rita"}),
    ("Ana: Tomás quit his job at the bank, he's sailing now.", "job", {"tomás"}),
    ("Ines: Hugo and his girlfriend broke up last month.", "partner", {"hugo"}),
])
def test_another_persons_change_names_them(text: str, attribute: str, subject: set[str]) -> None:
    change = change_of(said(text))
    assert change is not None and attribute in change.attributes and change.subject == frozenset(subject), change


@pytest.mark.parametrize("text", [
    "Ana: Does anyone know a good dentist? Mine retired.",        # nobody named: "mine"
    "Rui: My friend moved to Munich, I'll miss her.",             # an unnamed friend: nothing to link
    "Tasha: Dan's parents got a second dog, a corgi named Pickle.",  # an addition, and a possessive
    "Ana: Did Tomás quit his job?",                               # a question
    "Ana: If Tomás quit his job he'd go sailing.",                # a hypothetical
    "Ana: Tomás might quit his job next year.",                   # a plan
    "Andrew: Haven't specifically gone out for it, but I hike.",  # a contraction is no name
])
def test_news_that_names_nobody_or_is_not_a_change_has_no_subject(text: str) -> None:
    change = change_of(said(text))
    assert change is None or not change.subject, change


def test_a_death_in_the_family_is_no_pet_change() -> None:
    change = change_of(said("Deborah: Sorry to tell you this but my dad passed away two days ago."))
    assert change is None or "pet" not in change.attributes, change


def test_another_persons_earlier_state_is_the_statement_that_names_them() -> None:
    from hindsight_core.retain.supersede import tells_of

    ray = change_of(said("Jordan: Uncle Ray retired in January!"))
    assert ray is not None
    assert tells_of(said("Tasha: Uncle Ray is still driving trucks, he says three more years."), ray) == "job"
    assert tells_of(said("Tasha: Ray loves his garden."), ray) is None                 # no job stated
    assert tells_of(said("Tasha: I work at the depot with Ray's son."), ray) is None  # the speaker's job
    assert tells_of(said("Tasha: Will Ray ever retire?"), ray) is None                # a question
    mum = change_of(said("Grace: Mum finished her last round of chemo!"))
    assert mum is not None and mum.family
    assert tells_of(said("Grace: My mum Patricia is doing chemo every three weeks."), mum) == "health"
    assert tells_of(said("Chloe: My mum is doing chemo too."), mum) is None  # another speaker's mum
    # A speaker of the chat named by another: their own first-person statement.
    ana = change_of(said("Bruno: Ana moved to Porto last month!"))
    assert ana is not None and ana.subject == frozenset({"ana"})
    assert tells_of(said("Ana: I live in Lisbon, near the river."), ana) == "home"


@pytest.mark.parametrize(("text", "attribute"), [
    ("Grace: Being a chartered accountant at last means I can finally say no to night classes.", "school"),
    ("Zoe: Got my certificate in the mail and framed it next to the coffee machine.", "school"),
    ("Sam: Passed my finals, no more library all-nighters.", "school"),
    ("Olu: Hung up my boots, my knees said no more. I referee the juniors on Sundays instead.", "sport"),
    ("Dev: Stopped playing cricket after the shoulder op.", "sport"),
    ("Mia: A fox got both chooks, so we've got a cat now, a rescue called Toast.", "pet"),
    ("Jo: Our cat Biscuit went missing in March, we've stopped hoping.", "pet"),
    ("Lucía: I quit completely, not even on weekends anymore.", "habit"),
    ("Marcus: Since starting the physiotherapy I haven't needed a single painkiller.", "health"),
    ("Marta: The doctor said I can stop the low-FODMAP diet, I'm eating garlic again, life is good.", "diet"),
    ("Pablo: Unpacking the last boxes in Valencia, the balcony gets sun all afternoon.", "home"),
    ("Jordan: Moving to Denver was the best call, I'll never complain again.", "home"),
    ("Arjun: Onboarding week at Flipkart was so well organised, they gave us a hamper.", "job"),
])
def test_a_change_said_in_a_chats_own_words_is_found(text: str, attribute: str) -> None:
    change = change_of(said(text))
    assert change is not None and attribute in change.attributes and not change.subject, change


@pytest.mark.parametrize(("text", "attribute"), [
    ("Sam: I don't eat meat anymore.", "diet"),
    ("Fiona: I walk the hills on Sundays instead of the swimming.", "habit"),
    ("Jo: I cycle to work these days.", "habit"),
])
def test_a_generic_cue_changes_the_attribute_its_clause_speaks_of(text: str, attribute: str) -> None:
    change = change_of(said(text))
    assert change is not None and attribute in change.attributes and change.generic, change


@pytest.mark.parametrize("text", [
    "Ana: I'll drive instead, the train is on strike.",            # a plan
    "Ana: I had tea instead of coffee this morning.",             # a one-off
    "Ana: Maybe I'll stop eating meat one day.",                   # a wish
    "Ana: Do you still play football?",                            # a question
    "Ana: I'm thinking about quitting, the hours are awful.",      # an intention
    "Ana: When I was a kid I played football every day.",          # a story about the past
    "Ana: I've also started tutoring two kids on Saturdays.",     # an addition
    "Ana: I got another certificate, a first-aid one, too.",      # an addition
    "Ana: I ran away from the meeting, it was awful.",             # not a pet
    "Ana: The neighbours' dog went missing, poor thing.",         # not the speaker's pet, nobody named
    "Ana: I didn't quit, I just took a week off.",                 # a denial
    "Ana: Living in Lisbon, still.",                               # a restatement
    # found in LoCoMo's chats: a generic cue as a figure of speech, an attempt, a general remark
    "Tim: I had a tough exam. But instead of giving up, I studied hard.",
    "John: I messed up during a big game. Instead of getting stuck, I worked hard to get better.",
    "Sam: Trying to eat healthier these days.",
    "Sam: Dealing with a new car breaking down is such a hassle.",
])
def test_look_alikes_of_the_new_rules_state_no_change_of_the_speaker(text: str) -> None:
    change = change_of(said(text))
    assert change is None or change.subject or not change.attributes, change


def test_the_earlier_state_is_found_in_a_clause_that_opens_with_a_gerund_or_a_stay() -> None:
    home = frozenset({"home"})
    assert states(said("Liam: Renting in Bondi is daylight robbery but I love the beach."), "Liam", home) == "home"
    assert states(said("Jordan: Three years in Capitol Hill and I still have no raincoat."), "Jordan", home) == "home"
    assert states(said("Liam: Renting in Bondi must be awful."), "Liam", home) is None  # nothing says it is his
    school = frozenset({"school"})
    assert states(said("Pablo: I'm in the third year of medicine at the Complutense."), "Pablo", school) == "school"


# Real chat (realtalk_dev and LoCoMo's dev half, retained raw): every one of these made a supersession that hid a
# true message, because "left", "stopped", "quit" and "gone" have other senses and the word after them is often no
# thing named before.
@pytest.mark.parametrize("text", [
    "Paola: One project that left a lasting impact on me was volunteering at a local homeless shelter.",
    "Paola: Other books that left a lasting impression on me, I recently read Educated by Tara Westover.",
    "Nicolas: Lol how do you try to flirt with someone then quit a job cause u dont got rizz",
    "Nicolas: Realistically you shouldnt quit though so I would ask for the raise first.",
    "Nicolas: Nah you got rid of a toxic relationship they didnt value you for your actual work",
    "Nicolas: Theyll realize once youre gone",
    "Nebraas: Like at this point we are too far gone to fix anything",
    "Vanessa: I upped and left to start focusing on myself more",
    "Akib: I watched a pretty big portion of the game but I stopped watching towards the end.",
    "Akib: I left my phone running over night on that video Playlist so now I'm almost at 0 charge",
    "Akib: I've been busy but not like head down ignore everything else busy, left playing catchup.",
    "Akib: You said it wasn't great so I assumed you stopped reading it",
    "Akib: We stopped and got some food at a local diner near the trek",
    "Vanessa: I stopped going after i started my training so it was a sad period of time",
    "John: Took a trip to a new place - it's been amazing. Love the energy there.",
    "Tim: Joined a travel club and, like I said, working on studies.",
    "Nicolas: Like the most id do is have a butler drive me around or fly first class with others instead",
    "Vanessa: One of my relatives who I didn't really care about died because they got hit by a falling tree.",
    "Nate: Plus, I picked up a new hobby, I'm learning to make pasta.",
])
def test_real_chat_look_alikes_name_nothing_earlier(text: str) -> None:
    change = change_of(said(text))
    assert change is None or (not change.objects and not change.attributes & {"home", "team", "job", "hobby", "pet",
                                                                               "vehicle"}), change


def test_real_chat_changes_still_name_what_changed() -> None:
    ducks = change_of(said("Fahim Khan: I stopped reading ducks newburyport, not worth the time investment imo"))
    assert ducks is not None and "ducks" in ducks.objects
    assert "surfing" in (change_of(said("Liam: No more surfing for me since the move.")) or ducks).objects
    assert "journalism" in (change_of(said("Lucía: I left journalism. I'm a press officer now.")) or ducks).objects
    assert "band" in (change_of(said("Rob: I left the band in March.")) or ducks).objects
    vietnamese = change_of(said("Jack: I've switched to learning Vietnamese, her family speak it at home."))
    assert vietnamese is not None and "language" in vietnamese.attributes
    told = change_of(said("Arjun: Like I told you I sold the Enfield last week."))
    assert told is not None and "enfield" in told.objects  # "you" is not the one who sold it
    rowing = change_of(said("Pablo: I've joined a rowing club on the river."))
    assert rowing is not None and "club" in rowing.attributes


def test_a_mention_of_work_or_home_states_no_job_or_home() -> None:
    busy = said("John: Hey Maria, I've been busy with work and family, but last week I had an incident on my way home.")
    assert states(busy, "John", frozenset({"job", "home"})) is None
    assert states(said("John: Having a strong team is key - it's like a family away from home."), "John",
                  frozenset({"home"})) is None
    assert states(said("John: I work at a bank downtown."), "John", frozenset({"job"})) == "job"
    assert states(said("Tim: I play padel three times a week at the club in Retiro."), "Tim",
                  frozenset({"club"})) == "club"
    assert states(said("Tim: I'm working on a Harry Potter fan project."), "Tim", frozenset({"club"})) is None


@pytest.mark.parametrize(("text", "attribute", "named", "subject"), [
    ("Maya: Leo's my ex now, I'm okay.", "partner", "leo", None),
    ("Zara: Sam proposed last night! I said yes!", "partner", "sam", None),
    ("Nia: Handed in my notice today, off to a new firm in May.", "job", None, None),
    ("Omar: Started at the bakery on Monday, the 4am starts are brutal.", "job", None, None),
    ("Ivy: Transferred to the Glasgow office in June.", "job", None, None),
    ("Kim: Back on night shifts, send coffee.", "job", None, None),
    ("Tom: Retired! No more alarms.", "job", None, None),
    ("Rosa: Started my PhD at Leiden this autumn.", "school", None, None),
    ("Ben: Been off meat since Easter, feeling great.", "diet", None, None),
    ("Kasia: After Biscuit passed last winter we got two cats.", "pet", "biscuit", None),
    ("Ali: Bea's started at the pharmacy on the high street.", "job", None, {"bea"}),
    ("Rui: Pedro's no longer at the bank, he got a job at a startup.", "job", None, {"pedro"}),
    ("Kim: Lily's finished her degree, she's job hunting.", "school", None, {"lily"}),  # a name ending in -ly
])
def test_changes_said_in_other_words_are_found(text: str, attribute: str, named: str | None,
                                               subject: set[str] | None) -> None:
    """Wordings beyond the first rules' (written after new dev conversations showed them missing; none of these
    sentences is in the update set)."""
    change = change_of(said(text))
    assert change is not None and attribute in change.attributes, change
    if named is not None:
        assert named in change.objects
    assert change.subject == frozenset(subject or ()), change


@pytest.mark.parametrize("text", [
    "Jo: My phone died halfway through the call.",     # things die too
    "Jo: My watch died on the hike, no GPX.",
    "Ngozi: Ada passed her driving test!",             # passing a test is no death
    "Ben: I'm a Spurs man now, don't judge.",           # a team, not a job
    "Tim: Retired people get all the discounts.",       # the word, not the news
    "Kate: Grandpa passed last year, we still miss him.",  # kin, not a pet
])
def test_look_alikes_of_the_other_words_state_no_such_change(text: str) -> None:
    change = change_of(said(text))
    assert change is None or not change.attributes & {"pet", "job"}, change


def test_a_statement_before_a_trailing_question_is_still_a_statement() -> None:
    earlier = said("Ola: My boyfriend Tomas and I are off to Crete in May, Jen, any tips?", "e")
    change = change_of(said("Ola: Tomas is my ex now, so I'm free that weekend.", "l"))
    assert change is not None and change.objects == {"tomas"} and not change.subject
    assert names(earlier, "Ola", change.objects) == "tomas"
    assert states(earlier, "Ola", frozenset({"partner"})) == "partner"
    assert names(said("Ola: Is Tomas coming to Crete?", "q"), "Ola", change.objects) is None  # it all asks


@pytest.mark.parametrize("text", [
    "Sue: Let me go and check the oven.",                  # not a dismissal
    "Sue: Yesterday was my last day in Paris, so sad.",     # a trip ends, not a job
    "Sue: It was my last day of school today.",             # a term ends
    "Sue: My boss proposed a new rota for the summer.",     # a plan, not a marriage
    "Sue: Time passed so quickly, we were there for hours.",
    "Sue: Summer passed in a blur.",
])
def test_the_new_cues_keep_to_their_sense(text: str) -> None:
    change = change_of(said(text))
    assert change is None or not change.attributes & {"job", "partner", "pet"}, change


@pytest.mark.parametrize("text", [
    "Sue: Sam proposed! I'm so happy for them.",          # a friend's engagement
    "Sue: Leo proposed to Mia last night, I cried.",       # to someone else
])
def test_someone_elses_proposal_is_not_the_speakers_change(text: str) -> None:
    change = change_of(said(text))
    assert change is None or change.subject or "partner" not in change.attributes, change


@pytest.mark.parametrize("text", [
    "Nina: For the record, Omar and I are NOT getting divorced.",   # a denial whatever the cue
    "Nina: We aren't moving to Leeds, whatever my mum says.",
    "Nina: I'm never quitting this choir.",
])
def test_a_negation_just_before_any_cue_denies_the_change(text: str) -> None:
    assert change_of(said(text)) is None


def test_a_story_needs_a_time_after_back_in() -> None:
    assert change_of(said("Omar: Back in 2019 we moved to Leeds for a year.")) is None  # a story of the past
    # "back in" without a time is news of now: the change is found
    change = change_of(said("Omar: Sold the van, so I'm back in the bike lane every morning."))
    assert change is not None and "vehicle" in change.attributes and "van" in change.objects, change
