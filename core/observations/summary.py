"""Observation network (paper section 3): preference-neutral summaries of what the memories say about an entity.

Observations are regenerated in the background when enough new evidence about an entity has come in. One
structured LLM call turns the raw messages about the entity (with speaker and date), the facts drawn from them
that the messages bear out, and (when there is one) its previous summary into 2-4 objective sentences; the
disposition plays no part here (observations are neutral, opinions are where the disposition acts). This is the
``"model"`` observation mode; the default writes the observation from the checked facts (``extract``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage, MalformedOutputError
from ..llm.structured import astructured_call, clip, structured_call

__all__ = [
    "MAX_FACTS",
    "MAX_FACT_CHARS",
    "MAX_PROMPT_FACTS_BESIDE_MESSAGES",
    "MAX_PROMPT_FACT_CHARS",
    "MAX_PROMPT_MESSAGE_CHARS",
    "SUMMARY_CHARS",
    "asummarize_entity",
    "build_summary_prompt",
    "select_facts",
    "summarize_entity",
]

SUMMARY_CHARS = 600
"""Longest summary returned (characters)."""
MAX_FACTS = 40
"""At most this many facts go into one prompt."""
MAX_FACT_CHARS = 300
"""Each fact is clipped to this many characters."""
MAX_PROMPT_FACT_CHARS = 6000
"""Facts stop being added once their total length reaches this (about 1,500 tokens)."""
MAX_PROMPT_MESSAGE_CHARS = 4500
"""With messages, they take this much of the prompt and the facts beside them the rest of ``MAX_PROMPT_FACT_CHARS``
(the prompt stays as long as it was with facts alone: its length is most of a summary call's time)."""
MAX_PROMPT_FACTS_BESIDE_MESSAGES = 15
"""At most this many facts go into a prompt that shows messages."""

_MAX_TOKENS = 260  # 600 characters are ~150 tokens; the JSON wrapper and slack take the rest
_PREVIOUS_CHARS = SUMMARY_CHARS + 200


class _SummaryOut(BaseModel):
    """LLM-facing schema: one bounded string (the grammar cuts a looping model off at ``maxLength``)."""

    model_config = LLM_SCHEMA_CONFIG

    summary: str = Field(max_length=SUMMARY_CHARS + 100, description="2-4 objective sentences")

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, v: Any) -> Any:
        return "" if v is None else clip(v, SUMMARY_CHARS + 100) if isinstance(v, str) else v


# The messages and facts come newest first (the job sorts them so, and clipping drops the oldest): the conflict rule
# must say "newer", not "later in the list". Each sentence is checked against the messages afterwards
# (support.check_grounded), so the rules ask for what that check keeps: whole sentences about the entity,
# each person's own news kept to that person, stated details, no repeats.
_SYSTEM = """You write a short, objective summary of what the messages and facts say about one entity.
Rules:
- 2-4 sentences, at most 600 characters; each sentence is complete, ends with a period and says something different.
- Write about the entity only: every sentence is about it or names it.
- In a message, "I", "me" and "my" are its speaker and "you" is the person spoken to: never give one person's news,
  pets, places or plans to another.
- Only what the messages and facts state: no opinions, guesses, judgments, praise or advice.
- Keep names, places, numbers and dates exactly as given; add none.
- Newest first; when two conflict, the newer one wins.
- If a previous summary is given, update it and drop what the messages and facts do not support."""


def select_facts(
    facts: Sequence[tuple[str, str]],
    *,
    max_facts: int = MAX_FACTS,
    max_fact_chars: int = MAX_FACT_CHARS,
    max_chars: int = MAX_PROMPT_FACT_CHARS,
) -> list[str]:
    """The fact texts that go into the prompt, in the caller's order (pass the most informative first).

    Blank and repeated texts are dropped, each text is clipped to ``max_fact_chars``, and at most
    ``max_facts`` texts totalling about ``max_chars`` characters are kept (the first one always).
    """
    kept: list[str] = []
    seen: set[str] = set()
    total = 0
    for _, text in facts:
        fact = clip(str(text), max_fact_chars)
        key = fact.lower()
        if not fact or key in seen:
            continue
        if kept and (len(kept) >= max_facts or total + len(fact) > max_chars):
            break
        seen.add(key)
        kept.append(fact)
        total += len(fact)
    return kept


def build_summary_prompt(
    entity: str,
    facts: Sequence[tuple[str, str]],
    previous: str | None = None,
    *,
    messages: Sequence[tuple[str, str]] = (),
) -> list[ChatMessage]:
    """The chat messages of one summary call: the entity's ``messages`` (``(id, "[date] Speaker: text")``, bounded to
    ``MAX_PROMPT_MESSAGE_CHARS``), then ``facts`` (bounded by :func:`select_facts`, more tightly beside messages)."""
    lines = [f"Entity: {clip(entity, 120)}"]
    if previous and previous.strip():
        lines.append(f"Previous summary: {clip(previous, _PREVIOUS_CHARS)}")
    shown = select_facts(messages, max_chars=MAX_PROMPT_MESSAGE_CHARS)
    if shown:
        lines.append('Messages ("I" is the speaker):')
        lines.extend(f"- {message}" for message in shown)
    fact_lines = select_facts(facts, max_facts=MAX_PROMPT_FACTS_BESIDE_MESSAGES,
                              max_chars=MAX_PROMPT_FACT_CHARS - sum(len(m) for m in shown)) if shown \
        else select_facts(facts)
    if fact_lines or not shown:
        lines.append("Facts:")
        lines.extend(f"- {fact}" for fact in fact_lines)
    lines.append("Answer with JSON: summary.")
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content="\n".join(lines))]


def _check_inputs(entity: str, facts: Sequence[tuple[str, str]], messages: Sequence[tuple[str, str]] = ()) -> None:
    if not entity or not entity.strip():
        raise ValueError("entity name is empty")
    if not select_facts(facts) and not select_facts(messages):
        raise ValueError(f"no facts to summarize for entity {entity!r}")


def _finish(out: _SummaryOut) -> str:
    summary = clip(out.summary, SUMMARY_CHARS)
    if not summary:
        raise MalformedOutputError("empty entity summary", raw=out.model_dump_json())
    return summary


def summarize_entity(
    llm: LLM,
    entity: str,
    facts: Sequence[tuple[str, str]],
    previous: str | None = None,
    *,
    messages: Sequence[tuple[str, str]] = (),
) -> str:
    """A preference-neutral summary (2-4 sentences, at most 600 characters) of what ``messages`` and ``facts`` say
    about ``entity``.

    ``messages`` are ``(unit_id, "[date] Speaker: text")`` pairs, the raw messages about the entity, newest first
    (about 4,500 characters of them are shown); ``facts`` are ``(memory_id, text)`` pairs, most informative first
    (the first 40, each clipped to 300 characters, about 6,000 characters in all; beside messages, 15 in what is
    left of those 6,000). ``previous`` is the entity's current summary, updated rather than ignored. Raises
    ``ValueError`` when there are neither facts nor messages (or no entity name) and ``LLMError`` when the model
    answers malformed or empty twice.
    """
    _check_inputs(entity, facts, messages)
    prompt = build_summary_prompt(entity, facts, previous, messages=messages)
    return structured_call(llm, prompt, _SummaryOut, what="entity summary", max_tokens=_MAX_TOKENS, check=_finish)


async def asummarize_entity(
    llm: LLM,
    entity: str,
    facts: Sequence[tuple[str, str]],
    previous: str | None = None,
    *,
    messages: Sequence[tuple[str, str]] = (),
) -> str:
    """Async twin of :func:`summarize_entity`."""
    _check_inputs(entity, facts, messages)
    prompt = build_summary_prompt(entity, facts, previous, messages=messages)
    return await astructured_call(
        llm, prompt, _SummaryOut, what="entity summary", max_tokens=_MAX_TOKENS, check=_finish
    )
