"""Bank background (paper section 5.1): a first-person profile merged with new snippets by the LLM.

:func:`merge_background` puts the snippet in the first person (:func:`to_first_person`, a regex pass),
then asks the model, in one structured call, first which sentences of the current background the snippet
replaces and then for the merged background (new snippet wins conflicts, other details stay). The
answer goes through :func:`to_first_person` again, because small models sometimes keep "you".

Prompt layout::

    system: task, the two output keys, one worked example (Oslo/Lima, unrelated to real data)
    user:   Current background: I was born in Colorado.
            New information: I was born in Texas and have 10 years of startup experience.
            Answer with JSON: outdated, background.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage, MalformedOutputError
from ..llm.structured import astructured_call, clip, structured_call

__all__ = [
    "BACKGROUND_CHARS",
    "amerge_background",
    "build_merge_prompt",
    "merge_background",
    "to_first_person",
]

BACKGROUND_CHARS = 800
"""Longest merged background returned (characters)."""

_SNIPPET_CHARS = 1000
_MAX_TOKENS = 420  # 800 characters are ~200 tokens; the outdated list, JSON wrapper and slack take the rest
_MAX_OUTDATED = 5
_SENTENCE_CHARS = 200

# --------------------------------------------------------------------------------------------------------
# Deterministic second -> first person rewrite
# --------------------------------------------------------------------------------------------------------

_APOS = "['\u2019]"
_FLAGS = re.IGNORECASE

# "are you" / "were you" (questions): the verb agrees with the new subject.
_INVERTED = re.compile(r"\b(are|were)(\s+)you\b", _FLAGS)
# "you are" / "you were" / "you aren't" / "you weren't".
_BE = re.compile(rf"\byou(\s+)(are|were)(n{_APOS}t)?\b", _FLAGS)
# "you're", "you've", "you'll", "you'd".
_CONTRACTION = re.compile(rf"\byou({_APOS})(re|ve|ll|d)\b", _FLAGS)
_POSSESSIVE = re.compile(r"\byour(selves|self|s)?\b", _FLAGS)
_YOU = re.compile(r"\byou\b", _FLAGS)

_WORD_BEFORE = re.compile(r"([A-Za-z]+)\s*$")  # only the word right before (no comma between)
_WORDS_AFTER = re.compile(r"\s+([A-Za-z'\u2019]+)(?:\s+([A-Za-z'\u2019]+))?")

# After these, "you" is an object ("to you", "with you") -> "me". Conjunctions that open a clause
# ("before", "after", "since", "until", "when") are deliberately absent: there "you" is usually a subject.
_PREPOSITIONS = frozenset(
    "to for with about at from by of on in into onto like than as without toward towards upon behind "
    "around between among against near under over through beside besides except via".split()
)
# Skipped when looking for the verb after "you" ("you also worked", "you never liked").
_ADVERBS = frozenset(
    "also always never often usually once still now then recently currently previously just really later "
    "first originally sometimes even only both all already mostly rarely".split()
)
# Verbs that can follow a subject "you" (base and past forms; regular pasts are caught by "-ed").
_VERBS = frozenset(
    "am is was be have had do did can could will would shall should may might must need want like love "
    "enjoy prefer hate live work grew grow go went come came get got make made know knew think thought "
    "feel felt see saw say said tell told take took give gave find found become became begin began run ran "
    "lead led hold held keep kept leave left meet met buy bought bring brought build built teach taught "
    "speak spoke write wrote read study play use help believe hope plan try manage own spend spent lose lost "
    "win won drive drove eat ate sing sang swim swam fly flew sleep slept pay paid sell sold send sent stand "
    "stood understand understood hear heard mean meant seem look sound care miss wish remember forget forgot "
    "speak run ride rode wear wore choose chose fall fell".split()
)
# Where a new sentence or clause starts, "you" is a subject. Hyphen is excluded ("thank-you").
_SENTENCE_END = ".!?;:\n\u2014"
_OPENERS = " \t\"'\u201c\u2018(["


def _case_like(source: str, replacement: str) -> str:
    """``replacement`` cased like ``source``: ALL CAPS stays all caps, a capital first letter stays."""
    if len(source) > 1 and source.isupper():
        return replacement.upper()
    if source[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _inverted(m: re.Match[str]) -> str:
    verb = m.group(1)
    new = "am" if verb.lower() == "are" else "was"
    return f"{_case_like(verb, new)}{m.group(2)}I"


def _be(m: re.Match[str]) -> str:
    verb, negation = m.group(2), m.group(3)
    if verb.lower() == "were":
        return f"I{m.group(1)}{_case_like(verb, f'wasn{negation[1:-1]}t' if negation else 'was')}"
    # "I amn't" does not exist: "aren't" becomes "am not".
    return f"I{m.group(1)}{_case_like(verb, 'am not' if negation else 'am')}"


def _contraction(m: re.Match[str]) -> str:
    suffix = m.group(2)
    new = {"re": "m", "ve": "ve", "ll": "ll", "d": "d"}[suffix.lower()]
    return f"I{m.group(1)}{_case_like(suffix, new)}"


def _possessive(m: re.Match[str]) -> str:
    suffix = (m.group(1) or "").lower()
    new = {"": "my", "s": "mine", "self": "myself", "selves": "ourselves"}[suffix]
    return _case_like(m.group(0), new)


def _is_subject(text: str, start: int, end: int) -> bool:
    """Heuristic: is the "you" at ``text[start:end]`` a subject (-> "I") rather than an object (-> "me")?

    1. At the start of the text, a sentence or a clause (after ``. ! ? ; :``, a newline or a dash, opening
       quotes and brackets skipped): subject.
    2. Right after a preposition ("to you", "with you"): object.
    3. Followed by a verb (a known verb, a word ending in "-ed" or "-n't", one adverb skipped: "you also
       worked"): subject.
    4. Otherwise: object ("I told you", "Alice likes you").
    """
    before = text[:start].rstrip(_OPENERS)
    if not before or before[-1] in _SENTENCE_END:
        return True
    previous = _WORD_BEFORE.search(before)
    if previous and previous.group(1).lower() in _PREPOSITIONS:
        return False
    after = _WORDS_AFTER.match(text, end)
    if not after:
        return False
    word = after.group(1).lower().replace("\u2019", "'")
    if word in _ADVERBS and after.group(2):
        word = after.group(2).lower().replace("\u2019", "'")
    return word in _VERBS or (len(word) > 4 and word.endswith("ed")) or word.endswith("n't")


def _you(m: re.Match[str], text: str) -> str:
    if _is_subject(text, m.start(), m.end()):
        return "I"
    return _case_like(m.group(0), "me")


def to_first_person(text: str) -> str:
    """Rewrite second-person references to the first person, deterministically (a post-pass on LLM output).

    "you are/were" -> "I am/was" ("aren't" -> "am not", "weren't" -> "wasn't"), "are/were you" -> "am/was I",
    "you're/you've/you'll/you'd" -> "I'm/I've/I'll/I'd", "your" -> "my", "yours" -> "mine",
    "yourself" -> "myself", "yourselves" -> "ourselves", and a bare "you" -> "I" when it is a subject, else
    "me" (see :func:`_is_subject`: sentence start or followed by a verb means subject). Only whole words
    change ("young", "youth" stay); case follows the original (``YOUR`` -> ``MY``, ``Your`` -> ``My``) and
    "I" is always capitalised. Third-person text passes through unchanged.
    """
    text = _INVERTED.sub(_inverted, text)
    text = _BE.sub(_be, text)
    text = _CONTRACTION.sub(_contraction, text)
    text = _POSSESSIVE.sub(_possessive, text)
    # Decisions look at the text as it is after the earlier passes; replacing "you" by "I"/"me" never
    # changes another "you"'s context in a way the heuristic reads (sentence ends, prepositions, verbs).
    return _YOU.sub(lambda m: _you(m, text), text)


# --------------------------------------------------------------------------------------------------------
# LLM merge
# --------------------------------------------------------------------------------------------------------


class _MergeOut(BaseModel):
    """LLM-facing schema. ``outdated`` comes first: naming the replaced sentences before writing the merge
    is what makes a 1.5B model drop them (asked for the merge alone, it just appends the new text)."""

    model_config = LLM_SCHEMA_CONFIG

    outdated: list[Annotated[str, Field(max_length=_SENTENCE_CHARS)]] = Field(
        max_length=_MAX_OUTDATED, description="current sentences the new info replaces"
    )
    background: str = Field(max_length=BACKGROUND_CHARS + 100, description="first person, short")

    @field_validator("outdated", mode="before")
    @classmethod
    def _outdated(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            return [clip(str(s), _SENTENCE_CHARS) for s in v if isinstance(s, str | int)][:_MAX_OUTDATED]
        return v

    @field_validator("background", mode="before")
    @classmethod
    def _background(cls, v: Any) -> Any:
        return "" if v is None else clip(v, BACKGROUND_CHARS + 100) if isinstance(v, str) else v


# Measured on Qwen2.5-Coder-1.5B over 12 merge cases (birthplace, home, job, shift, age, marital status,
# preference and colour changes, pure additions, empty current): this prompt 11/12; the same without "first
# the new information" 10-11/12; a plain "merge, the new wins conflicts" prompt without the outdated list
# 2/5 (it appended the new text and kept the old detail). Deleting the model's "outdated" sentences from
# its answer in code would not help: it lists non-conflicting sentences there as often as it forgets to
# drop conflicting ones. The example shares no content with real inputs on purpose.
_SYSTEM = """You update an AI agent's first-person background with new information.
outdated: the sentences of the current background that the new information replaces or contradicts \
(another birthplace, home, job, age...), copied exactly; [] if none.
background: the updated background: first the new information, then every current sentence that is \
not in outdated. First person ("I", "my"), at most 5 short sentences.
Example:
Current background: I live in Oslo. I like chess.
New information: I moved to Lima and I have a dog.
{"outdated": ["I live in Oslo."], "background": "I moved to Lima and I have a dog. I like chess."}"""


def build_merge_prompt(current: str, snippet: str) -> list[ChatMessage]:
    """The chat messages of one merge call.

    The snippet is put in the first person with :func:`to_first_person` before the model sees it, so the
    model's one job is the merge (it still rewrites whatever the regex pass missed).
    """
    current_text = clip(current, BACKGROUND_CHARS + 200) if current and current.strip() else "(empty)"
    user = (
        f"Current background: {current_text}\n"
        f"New information: {to_first_person(clip(snippet, _SNIPPET_CHARS))}\n"
        "Answer with JSON: outdated, background."
    )
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


def _finish(out: _MergeOut) -> str:
    merged = clip(to_first_person(out.background), BACKGROUND_CHARS)
    if not merged:
        raise MalformedOutputError("empty merged background", raw=out.model_dump_json())
    return merged


def merge_background(llm: LLM, current: str, snippet: str) -> str:
    """The new first-person background after merging ``snippet`` into ``current`` (at most ~800 characters).

    The model resolves conflicts in favour of the snippet, keeps the current background's other details
    and writes in the first person; :func:`to_first_person` then fixes any "you" it kept. An empty
    ``current`` still goes through the model (to normalise the snippet); a blank ``snippet`` returns
    ``current`` (normalised) without a call. Raises ``LLMError`` when the model answers malformed or
    empty twice.
    """
    if not snippet or not snippet.strip():
        return clip(to_first_person(current or ""), BACKGROUND_CHARS)
    return structured_call(
        llm, build_merge_prompt(current, snippet), _MergeOut, what="background merge",
        max_tokens=_MAX_TOKENS, check=_finish,
    )


async def amerge_background(llm: LLM, current: str, snippet: str) -> str:
    """Async twin of :func:`merge_background`."""
    if not snippet or not snippet.strip():
        return clip(to_first_person(current or ""), BACKGROUND_CHARS)
    return await astructured_call(
        llm, build_merge_prompt(current, snippet), _MergeOut, what="background merge",
        max_tokens=_MAX_TOKENS, check=_finish,
    )
