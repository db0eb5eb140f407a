"""The LLM extractor's prompt: rules, a guide to the short JSON keys, two worked examples, and the window.

Layout of one call::

    system: rules (2-5 narrative facts per exchange, names not pronouns, dates only when stated)
            + a guide to the short JSON keys + two worked examples unrelated to any data set
    user:   Reference time, when the messages were said unless a line shows its own: 2023-05-08 13:56 UTC (Monday)
            Context: <caller context, optional, truncated>
            Speakers: "user" is the user ...; "assistant" is you ... (only where chat roles speak)
            Earlier message, for pronouns only: [D1:2] (2023-05-08 13:55) Melanie: ...
            Messages:
            [D1:3] Caroline: I went to a LGBTQ support group yesterday ...
            ...
            Return the facts as JSON.

The "earlier message" is the previous window's last message, shown (truncated) so that "she"/"that" at the
start of a window can be resolved; it is never a valid source of this window's facts.
"""

from __future__ import annotations

import json

from .windows import ExtractionWindow, fmt_time

__all__ = ["NOTE_RESERVE", "default_count_tokens", "system_prompt", "user_prompt"]

NOTE_RESERVE = 60
"""Tokens reserved for the corrective note added on retries, so a retried prompt still fits the budget."""

_MAX_PREVIOUS_CHARS = 300

# The worked examples deliberately share nothing with real data sets (small models copy examples); the
# second one shows that a fact without a stated time gets no date.
_EXAMPLE_MESSAGES = (
    "[S2:5] (2024-03-11 09:10) Tom: My sister Ana started at Google last week, she's thrilled.\n"
    "[S2:6] (2024-03-11 09:12) Lea: Congrats to her! I love hiking with my dog Max."
)
_EXAMPLE_FACTS = (
    {
        "text": "Tom's sister Ana started working at Google in the week of 4 March 2024 and is thrilled.",
        "src": ["S2:5"],
        "net": "world",
        "start": "2024-03-04",
        "end": "2024-03-10",
        "conf": 0,
        "who": ["Tom", "Ana"],
        "ents": [{"name": "Ana", "type": "PERSON"}, {"name": "Google", "type": "ORGANIZATION"}],
        "rel": [],
    },
    {
        "text": "Lea loves hiking with her dog Max.",
        "src": ["S2:6"],
        "net": "world",
        "start": "",
        "end": "",
        "conf": 0,
        "who": ["Lea"],
        "ents": [{"name": "Lea", "type": "PERSON"}, {"name": "Max", "type": "OTHER"}],
        "rel": [],
    },
)

_SYSTEM_PROMPT = """You turn conversation messages into facts for a long-term memory.
Rules:
- Write 2-5 facts per exchange (a message and its replies), at most {max_facts} in all. Cover every \
message that tells something: events, plans, feelings, preferences, relationships. Skip greetings and \
small talk.
- Each fact is one self-contained sentence about what a person did, plans, thinks or feels. Credit the \
speaker who said it, not the listener. Use names, never "I", "you", "she". Keep details (places, \
numbers, reasons).
- Give a date only when the message says when it happened: turn "yesterday", "last week" etc. into \
dates using the message date. Otherwise leave start and end "".
- Use only what the messages say.
Fields:
- text: the fact.
- src: ids of the messages it comes from, copied from the [brackets].
- net: "world" for facts about people and the world (the usual case); "experience" only for what the \
assistant (the AI whose memory this is) did itself, written as "I ..."; "opinion" only for a belief the \
assistant holds.
- start, end: YYYY-MM-DD or "".
- conf: confidence of an opinion, 0 to 1; 0 otherwise.
- who: people involved.
- ents: named people, organizations, places, products and concepts, with their type.
- rel: causal links to other facts of your answer by 0-based index, type causes, caused_by, enables or \
prevents.
Example messages:
{example_messages}
Example facts:
{example_facts}"""



# The lean schema's prompt: one short fact per message that tells something, its text and source only (dates come
# from the time words the text keeps; entities, people and networks are found in code). No worked example: the
# 1.5B model copied the example's people into real conversations ("Melanie loves hiking with her dog Max"), and
# the answer's shape is in the instruction and the grammar. Measured in docs/BENCHMARKS.md ("Raw first, facts
# later"): a third of the tokens per fact.
_LEAN_SYSTEM_PROMPT = """You turn conversation messages into facts for a long-term memory.
Rules:
- Write one fact for each message that tells something new: events, plans, feelings, preferences, \
relationships. Skip greetings, thanks, questions and small talk. At most {max_facts} facts.
- A fact is one short sentence (under 20 words) about what a person did, plans, thinks or feels. Credit the \
speaker who said it. Use names, never "I", "you", "she". Keep places, numbers, reasons and the time words as \
said ("yesterday", "last week", "next June").
- Use only what the messages say.
Answer with JSON: {{"facts": [{{"text": the fact, "src": [the id of its message, copied from the [brackets]]}}]}}"""


def system_prompt(max_facts: int, lean: bool = False) -> str:
    """The system message for answers of at most ``max_facts``: rules, field guide and worked examples, or with
    ``lean`` the short rules of the text-and-sources schema."""
    if lean:
        return _LEAN_SYSTEM_PROMPT.format(max_facts=max_facts)
    return _SYSTEM_PROMPT.format(
        max_facts=max_facts,
        example_messages=_EXAMPLE_MESSAGES,
        example_facts="\n".join(json.dumps(f, separators=(",", ":")) for f in _EXAMPLE_FACTS),
    )


# Chat roles are no people. Told only "use names, never I", a small model gave the assistant's "Nice! I'll remember
# that." the one name it could find, the user's ("Alice will remember that", in a bank named after her); said
# only where such roles speak, so that the prompts of conversations between named people stay as they were.
_USER_ROLES = frozenset({"user", "human"})
_AGENT_ROLES = frozenset({"assistant", "ai", "bot", "agent"})
_ROLES_NOTE = ('Speakers: "{user}" is the user (write "the user" unless they give their name); "{agent}" is you, the '
               "AI whose memory this is: write what it said or did as \"I ...\", never under a person's name.")


def _roles_note(chunk: ExtractionWindow) -> str | None:
    """The line saying who the chat roles are, when the window has any (None otherwise)."""
    lines = [*chunk.lines, *([chunk.previous] if chunk.previous is not None else [])]
    speakers = {ln.speaker.strip().lower(): ln.speaker.strip() for ln in lines}
    user = next((speakers[r] for r in speakers if r in _USER_ROLES), None)
    agent = next((speakers[r] for r in speakers if r in _AGENT_ROLES), None)
    if user is None and agent is None:
        return None
    return _ROLES_NOTE.format(user=user or "user", agent=agent or "assistant")


def user_prompt(chunk: ExtractionWindow, note: str | None = None) -> str:
    """The user message of one window (``note`` is the corrective text added on retries)."""
    ref = chunk.reference
    parts = [f"Reference time, when the messages were said unless a line shows its own: {fmt_time(ref)} UTC "
             f"({ref:%A})"]
    if chunk.context:
        parts.append(f"Context: {chunk.context}")
    roles = _roles_note(chunk)
    if roles is not None:
        parts.append(roles)
    if chunk.previous is not None:
        parts.append("Earlier message, for pronouns only: " + chunk.previous.render(max_chars=_MAX_PREVIOUS_CHARS))
    parts.append("Messages:")
    parts.extend(line.render(reference=ref) for line in chunk.lines)
    parts.append(note or "Return the facts as JSON.")
    return "\n".join(parts)


def default_count_tokens(text: str) -> int:
    """Cheap token estimate (about four characters per token) when no tokenizer is given."""
    return (len(text) + 3) // 4
