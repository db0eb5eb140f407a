"""Extractive observations (issue 36): an entity's observation made of its checked facts, with no model call.

The bundled 1.5B model's summaries were the least trustworthy thing the bank wrote: read beside their messages, 36-45%
of their sentences were supported (``hindsight bench beliefs``, model summaries), and the grounded check lifted the
kept ones to only 50-56%, while a summary call took 6-80 s on 2 cores, about half of all background work. The
entity's facts have passed two checks by then (the facts job's, against the messages each cites, and
:func:`~hindsight_core.observations.support.grounded_facts`, against the raw messages about the entity with
each speaker's "I" kept to that speaker), and read by the same labels they are supported about nine times in ten.

So by default (``CaraSettings.observation_mode = "extractive"``) an observation is those facts: newest first, each a
whole sentence, checked once more as a summary would be (about the entity, nothing a kept sentence already said), up
to :data:`~hindsight_core.observations.summary.SUMMARY_CHARS`. ``"model"`` keeps the model-written summary.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from .summary import SUMMARY_CHARS
from .support import Embed, SupportCheck, check_grounded, is_whole_sentence

__all__ = ["OVER_LENGTH", "QUOTED", "compose_from_facts", "extractive_check"]

OVER_LENGTH = "over length"
"""The verdict reason of a supported sentence left out because the observation was already full."""
QUOTED = "quoted"
"""The verdict reason of a sentence in the first or second person: a fact that copied its message's words ("My parrot
is actually skilled at problem-solving") reads, in a summary about the entity, as the summary's own voice."""

# "us" in lower case only: "the US" is a country.
_PERSONAL = re.compile(r"\b(?:(?i:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|you|your|yours|"
                       r"you're|you've)|us)\b")


def compose_from_facts(facts: Sequence[tuple[str, str]]) -> str:
    """The facts' texts (``(id, text)``, newest first) as one candidate summary, each a whole sentence."""
    out: list[str] = []
    for _, text in facts:
        sentence = " ".join(str(text).split())
        if not sentence:
            continue
        out.append(sentence if is_whole_sentence(sentence) else sentence.rstrip(" ,;:") + ".")
    return " ".join(out)


def extractive_check(
    facts: Sequence[tuple[str, str]],
    messages: Sequence[tuple[str, str]],
    entity: str,
    *,
    aliases: Sequence[str] = (),
    about_ids: Collection[str] | None = None,
    embed: Embed | None = None,
    max_chars: int = SUMMARY_CHARS,
    own_words: bool = True,
) -> tuple[str, SupportCheck]:
    """The extractive observation of ``entity``: ``(candidate summary, verdicts)``.

    ``facts`` are the entity's facts the messages bear out (``(id, text)``, newest first); ``messages`` and
    ``about_ids`` are what :func:`~hindsight_core.observations.support.check_grounded` reads. Each fact is
    judged as a summary sentence would be (whole, about the entity, supported, not a repeat) and one in the first or
    second person is left out (:data:`QUOTED`); the supported ones are kept in order until ``max_chars`` is reached,
    the rest marked :data:`OVER_LENGTH`. The check's ``text`` is what
    is stored and its ``fact_ids`` the messages it rests on.
    """
    summary = compose_from_facts(facts)
    if not summary:
        return "", SupportCheck([])
    check = check_grounded(summary, messages, entity, aliases=aliases, about_ids=about_ids, embed=embed,
                           own_words=own_words)
    used = 0
    verdicts = []
    for verdict in check.sentences:
        if verdict.supported and _PERSONAL.search(verdict.text.replace("’", "'")):
            verdict = replace(verdict, supported=False, reason=QUOTED, fact_ids=[])
        if verdict.supported:
            size = len(verdict.text) + (1 if used else 0)
            if used + size > max_chars:
                verdict = replace(verdict, supported=False, reason=OVER_LENGTH, fact_ids=[])
            else:
                used += size
        verdicts.append(verdict)
    return summary, SupportCheck(verdicts)
