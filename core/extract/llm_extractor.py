"""LLM fact extractor (paper section 4.1.2): narrative facts with time ranges, networks, entities and causes.

The messages of a document are cut into small windows ("exchanges", about ``chunk_messages`` messages,
balanced, and split further when a prompt would exceed ``token_budget``) so a small local model
(Qwen2.5-Coder-1.5B through llama.cpp) handles one window per call. Each call asks for schema-constrained
JSON; everything the model says is then checked and normalised here, because a 1.5B model gets ids, dates
and enum values wrong often enough that trusting it would corrupt provenance.

Prompt layout (one call per window)::

    system: rules (2-5 narrative facts per exchange, names not pronouns, dates only when stated)
            + a guide to the short JSON keys + two worked examples unrelated to any data set
    user:   Reference time: 2023-05-08 13:56 UTC (Monday)
            Context: <caller context, optional, truncated>
            Earlier message, for pronouns only: [D1:2] (2023-05-08 13:55) Melanie: ...
            Messages:
            [D1:3] (2023-05-08 13:56) Caroline: I went to a LGBTQ support group yesterday ...
            ...
            Return the facts as JSON.

The "earlier message" is the previous window's last message, shown (truncated) so that "she"/"that" at the
start of a window can be resolved; it is never a valid source of this window's facts.

Post-processing rules:

* **Sources.** Only ids of the window's own messages count (matched after stripping brackets, whitespace
  and case). Invented ids, and the id of the earlier context message, are dropped. A fact left without a
  valid source is attributed by lexical overlap: the window messages sharing the most content words with
  the fact (+0.5 when the fact names the speaker; at most 3 tied) become its sources; with no overlap at
  all, every message of the window is listed (the fact certainly came from that window). Messages
  without an id are shown as ``[m<position>]`` and cannot be cited.
* **Dates.** ``start``/``end`` are parsed as ISO dates (``YYYY-MM`` and ``YYYY`` become month/year
  ranges), relative expressions ("yesterday", "last week", "3 days ago", "last Friday") resolved against
  the *source message's* time, then free-form dates via dateparser. Unparseable or absurd dates (before
  1800, 50+ years after the message, 1970-01-01 placeholders) become None. Only when the model gave
  nothing for either end does the occurrence default to the source message's time; one given end copies
  to the other; reversed ends are swapped. If the fact text holds a relative phrase ("yesterday") while
  the model gave no date or merely copied the message date, the phrase wins. ``mentioned_at`` is always
  the earliest source message's time. Relative phrases left in the text get the absolute date appended
  ("yesterday (7 May 2023)").
* **Networks and enums.** Values outside world/experience/opinion become world (the extractor never makes
  observations); experience/opinion are kept only for the agent's own voice (first person, or an
  assistant speaker), else world. Opinion confidence defaults to 0.5, "80" reads as 0.8. Unknown entity
  types become OTHER; pronoun and role-name entities are dropped; participants are added as PERSON
  entities. Causal links with unknown types, to themselves or outside the window's answer are dropped;
  indices are remapped to document positions (``position`` runs over the whole document).
* **Failures.** A malformed answer, or one whose facts all fail validation (e.g. empty text), is retried up
  to ``max_retries`` times (corrective note, temperature 0.3), then raised as ``ExtractionError`` with the
  raw output. Empty or looping (mostly duplicate) answers are retried too, and then accepted as they are
  (a window of greetings has no facts); if the whole non-empty document yields zero facts,
  ``EmptyExtractionError`` is raised. Other ``LLMError`` s (backend down) propagate unchanged.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

from dateutil.relativedelta import relativedelta
from pydantic import BaseModel, Field, field_validator

from ..errors import EmptyExtractionError, ExtractionError, InvalidInputError
from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage, MalformedOutputError
from ..models import EntityType, LinkType, Message, Network, as_utc
from .base import CausalRelation, ExtractedEntity, ExtractedFact

__all__ = ["DEFAULT_TOKEN_BUDGET", "ExtractionWindow", "LLMExtractor"]

DEFAULT_TOKEN_BUDGET = 1500
"""Upper bound on prompt + JSON schema tokens per call (small local models have small, slow contexts)."""

# Reserved for the corrective note added on retries, so a retried prompt still fits the budget.
_NOTE_RESERVE = 60
# Output tokens allowed per requested fact (a fully filled fact is ~120-150 tokens of JSON).
_TOKENS_PER_FACT = 170
_MAX_CONTEXT_CHARS = 600
_MAX_PREVIOUS_CHARS = 300
_MIN_FACT_CHARS = 8
# Word-set Jaccard at or above which two facts of one answer count as the same fact. Numbers are words
# here, so "on 7 May" and "on 14 May" versions of a short fact stay apart.
_NEAR_DUPLICATE = 0.85

_NETWORKS = ("world", "experience", "opinion")
_ENTITY_TYPES = tuple(t.value for t in EntityType)
_CAUSAL_TYPES = ("causes", "caused_by", "enables", "prevents")


# --------------------------------------------------------------------------------------------------------
# Output schema: used only for the LLM call. Short keys (fewer output tokens), every list bounded (small
# models loop otherwise), flat strings for dates and Literal enums (llama.cpp's grammar converter handles
# these well). Validation is lenient (coercion, defaults, truncation) while the advertised JSON schema is
# strict (all keys required, no extra keys), so constrained decoders produce complete objects and
# unconstrained ones are still accepted when they are merely sloppy.
# --------------------------------------------------------------------------------------------------------


_SCHEMA_CONFIG = LLM_SCHEMA_CONFIG


def _as_str(value: Any) -> Any:
    return "" if value is None else str(value) if isinstance(value, int | float) else value


def _as_str_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str | int):
        value = [value]
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and not isinstance(v, dict | list)]
    return value


def _pick(value: Any, allowed: tuple[str, ...], default: str | None) -> Any:
    """Case-insensitive enum match; anything else maps to ``default`` (None keeps it for rejection)."""
    if isinstance(value, str):
        norm = value.strip().lower().replace("-", "_").replace(" ", "_")
        for option in allowed:
            if option.lower() == norm:
                return option
    return default if default is not None else value


class _Entity(BaseModel):
    model_config = _SCHEMA_CONFIG

    name: str = ""
    type: Literal["PERSON", "ORGANIZATION", "LOCATION", "PRODUCT", "CONCEPT", "OTHER"] = "OTHER"

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, v: Any) -> Any:
        return _as_str(v)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Any:
        return _pick(v, _ENTITY_TYPES, "OTHER")


class _Rel(BaseModel):
    model_config = _SCHEMA_CONFIG

    to: int = -1
    type: Literal["causes", "caused_by", "enables", "prevents"] = "causes"

    @field_validator("to", mode="before")
    @classmethod
    def _to(cls, v: Any) -> Any:
        if isinstance(v, str):  # "fact 2", "#2" -> 2; anything else is an unusable target
            digits = re.search(r"-?\d+", v)
            return int(digits.group(0)) if digits else -1
        return v if isinstance(v, int) else -1


class _Fact(BaseModel):
    model_config = _SCHEMA_CONFIG

    text: str = ""
    src: list[str] = Field(default_factory=list, max_length=4)
    net: Literal["world", "experience", "opinion"] = "world"
    start: str = ""
    end: str = ""
    conf: float = 0.0
    who: list[str] = Field(default_factory=list, max_length=4)
    ents: list[_Entity] = Field(default_factory=list, max_length=5)
    rel: list[_Rel] = Field(default_factory=list, max_length=2)

    @field_validator("text", "start", "end", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        return _as_str(v)

    @field_validator("src", "who", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        v = _as_str_list(v)
        return v[:4] if isinstance(v, list) else v  # truncate rather than reject an over-long list

    @field_validator("net", mode="before")
    @classmethod
    def _net(cls, v: Any) -> Any:
        return _pick(v, _NETWORKS, "world")  # "observation" and inventions fall back to world

    @field_validator("conf", mode="before")
    @classmethod
    def _conf(cls, v: Any) -> Any:
        try:
            return float(v)
        except (TypeError, ValueError):
            return 0.0

    @field_validator("ents", mode="before")
    @classmethod
    def _ents(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": e} if isinstance(e, str) else e for e in v if isinstance(e, str | dict)][:5]
        return [] if v is None else v

    @field_validator("rel", mode="before")
    @classmethod
    def _rels(cls, v: Any) -> Any:
        if v is None:
            return []
        if not isinstance(v, list):
            return v
        kept = []
        for item in v:  # unknown causal types are dropped, not guessed
            if isinstance(item, dict) and _pick(item.get("type"), _CAUSAL_TYPES, None) in _CAUSAL_TYPES:
                kept.append({**item, "type": _pick(item["type"], _CAUSAL_TYPES, None)})
        return kept[:2]


@lru_cache(maxsize=16)
def _output_model(max_facts: int) -> type[BaseModel]:
    """The top-level answer model; built per bound because ``maxItems`` depends on ``max_facts``."""

    class Facts(BaseModel):
        model_config = _SCHEMA_CONFIG

        facts: list[_Fact] = Field(default_factory=list, max_length=max_facts)

        @field_validator("facts", mode="before")
        @classmethod
        def _truncate(cls, v: Any) -> Any:
            return v[:max_facts] if isinstance(v, list) else [] if v is None else v

    return Facts


# --------------------------------------------------------------------------------------------------------
# Prompt
# --------------------------------------------------------------------------------------------------------

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


def _fmt_time(ts: datetime) -> str:
    # Date-only inputs (midnight) are shown as dates: a fake "00:00" invites wrong "tonight" readings.
    return ts.strftime("%Y-%m-%d") if (ts.hour, ts.minute, ts.second) == (0, 0, 0) else ts.strftime("%Y-%m-%d %H:%M")


def _default_count_tokens(text: str) -> int:
    """Cheap token estimate (about four characters per token) when no tokenizer is given."""
    return (len(text) + 3) // 4


# --------------------------------------------------------------------------------------------------------
# Dates: parse what the model wrote for start/end, resolving relative expressions against a reference.
# --------------------------------------------------------------------------------------------------------

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "a couple": 2,
    "a couple of": 2, "couple of": 2, "few": 3, "a few": 3, "several": 3,
}  # fmt: skip
_NUM = (
    r"(\d{1,3}|a couple of|a couple|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(day|week|month|year)s?"
_DAY_WORDS = (
    r"the day before yesterday|the day after tomorrow|(?:earlier |later )?today|tonight"
    r"|this (?:morning|afternoon|evening)|yesterday (?:morning|afternoon|evening)|yesterday|last night"
    r"|tomorrow"
)
_RELATIVE_PATTERNS: tuple[tuple[str, str], ...] = (
    (_DAY_WORDS, "day"),
    (rf"{_NUM} {_UNIT} ago", "ago"),
    (rf"(?:in|within) {_NUM} {_UNIT}|{_NUM} {_UNIT} (?:later|from now)", "ahead"),
    (r"(last|past|previous|this|next|the coming) (week(?:end)?|month|year)", "period"),
    (rf"(last|this|next|on|past)? ?({'|'.join(_WEEKDAYS)})", "weekday"),
)
_RELATIVE_RES = tuple((re.compile(rf"^(?:{p})$", re.I), kind) for p, kind in _RELATIVE_PATTERNS)
# Phrases annotated inside fact text. Only unambiguous anchors to the message time: "in two weeks" or
# "three days later" are often durations or relative to another event, and "past year" is a span.
_RELATIVE_IN_TEXT = re.compile(
    rf"\b({_DAY_WORDS}|{_NUM} {_UNIT} ago|(?:last|this|next) (?:week(?:end)?|month|year)"
    rf"|(?:last|next) (?:{'|'.join(_WEEKDAYS)}))\b(?!['’\w])(?! ?\()",
    re.I,
)
_DAY_OFFSETS = {
    "the day before yesterday": -2, "the day after tomorrow": 2, "yesterday": -1, "last night": -1,
    "tomorrow": 1,
}  # fmt: skip
_BLANK_DATES = {"", "none", "null", "unknown", "n/a", "na", "-", "?", "unspecified", "nil", "tbd"}
_ISO_DAY = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
_ISO_MONTH = re.compile(r"^(\d{4})-(\d{1,2})$")
_ISO_YEAR = re.compile(r"^(\d{4})$")
_PLACEHOLDER_DAYS = {date(1970, 1, 1), date(1900, 1, 1)}  # defaults small models emit for "don't know"

DateRange = tuple[date, date]


def _month_range(d: date) -> DateRange:
    first = d.replace(day=1)
    return first, first + relativedelta(months=1) - timedelta(days=1)


def _week_range(d: date) -> DateRange:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def _unit_range(d: date, unit: str) -> DateRange:
    # "3 weeks ago" means some day in that week: the whole calendar unit is the honest answer.
    if unit == "day":
        return d, d
    if unit == "week":
        return _week_range(d)
    if unit == "month":
        return _month_range(d)
    return date(d.year, 1, 1), date(d.year, 12, 31)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _relative_range(expr: str, ref: date) -> DateRange | None:
    """Resolve a relative expression ("yesterday", "2 weeks ago", "last Friday") to a date range."""
    text = " ".join(expr.lower().split())
    for pattern, kind in _RELATIVE_RES:
        m = pattern.match(text)
        if not m:
            continue
        if kind == "day":
            key = "yesterday" if text.startswith("yesterday ") else text
            day = ref + timedelta(days=_DAY_OFFSETS.get(key, 0))
            return day, day
        if kind in ("ago", "ahead"):
            groups = [g for g in m.groups() if g is not None]
            n, unit = _count(groups[0]), groups[1].lower()
            sign = -1 if kind == "ago" else 1
            delta = relativedelta(**{f"{unit}s": sign * n})
            return _unit_range(ref + delta, unit)
        if kind == "period":
            which, unit = m.group(1).lower(), m.group(2).lower()
            step = {"last": -1, "past": -1, "previous": -1, "this": 0}.get(which, 1)
            if unit == "weekend":
                # Weeks start on Monday, so "last weekend" is the previous week's Saturday and Sunday
                # whether it is said on a weekday (the latest weekend) or a weekend day (the one before).
                saturday = _week_range(ref)[0] + timedelta(days=5, weeks=step)
                return saturday, saturday + timedelta(days=1)
            return _unit_range(ref + relativedelta(**{f"{unit}s": step}), unit)
        # weekday: "last X" strictly before the reference day, "next/this X" after it, bare X on or before.
        which = (m.group(1) or "").lower()
        target = _WEEKDAYS.index(m.group(2).lower())
        diff = ref.weekday() - target
        if which in ("last", "past"):
            back = diff % 7 or 7
            day = ref - timedelta(days=back)
        elif which in ("next", "this"):
            day = ref + timedelta(days=(-diff) % 7 or 7)
        else:
            day = ref - timedelta(days=diff % 7)
        return day, day
    return None


def _dateparser_range(expr: str, ref: datetime) -> DateRange | None:
    """Free-form dates ("7 May 2023", "June 2022") through dateparser, imported only when needed."""
    try:
        from dateparser.date import DateDataParser
    except ImportError:  # an optional nicety: the ISO and relative paths cover what the prompt asks for
        return None
    parser = DateDataParser(
        languages=["en"],
        settings={
            "RELATIVE_BASE": ref.replace(tzinfo=None),
            "PREFER_DATES_FROM": "past",
            "PREFER_DAY_OF_MONTH": "first",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    try:
        data = parser.get_date_data(expr)
    except Exception:  # dateparser raises assorted errors on odd input; a bad date is just unknown
        return None
    if data is None or data.date_obj is None:
        return None
    day = data.date_obj.date()
    period = data.period or "day"
    if period == "year":
        return date(day.year, 1, 1), date(day.year, 12, 31)
    if period == "month":
        return _month_range(day)
    if period == "week":
        return _week_range(day)
    return day, day


def _parse_range(value: str, ref: datetime) -> DateRange | None:
    """Parse one model-written date (ISO, partial ISO, relative or free-form) to a date range."""
    text = value.strip().strip(".").strip()
    if m := _ISO_DAY.match(text):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        return day, day
    if m := _ISO_MONTH.match(text):
        if not 1 <= int(m.group(2)) <= 12:
            return None
        return _month_range(date(int(m.group(1)), int(m.group(2)), 1))
    if m := _ISO_YEAR.match(text):
        year = int(m.group(1))
        return (date(year, 1, 1), date(year, 12, 31)) if year >= 1 else None
    if not re.search(r"[A-Za-z]", text) or len(text) > 60:
        return None  # digits-only oddities ("0", "20230507") and rambling are not dates we trust
    relative = _relative_range(text, ref.date())
    return relative if relative is not None else _dateparser_range(text, ref)


def _plausible(day: date, ref: datetime) -> bool:
    """Reject absurd dates: placeholders, the distant past, or far beyond the conversation's time."""
    return day not in _PLACEHOLDER_DAYS and 1800 <= day.year <= ref.year + 50


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _day_end(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)


def _fmt_day(day: date) -> str:
    return f"{day.day} {day:%B %Y}"


def _fmt_range(rng: DateRange) -> str:
    start, end = rng
    if start == end:
        return _fmt_day(start)
    if (start.month, start.day, end.month, end.day) == (1, 1, 12, 31) and start.year == end.year:
        return str(start.year)
    if start.day == 1 and _month_range(start)[1] == end:
        return f"{start:%B %Y}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}-{end.day} {start:%B %Y}"
    if start.year == end.year:
        return f"{start.day} {start:%B} - {_fmt_day(end)}"
    return f"{_fmt_day(start)} - {_fmt_day(end)}"


def _relative_in_text(text: str, ref: datetime) -> DateRange | None:
    """The date range of the first relative time phrase in ``text`` ("yesterday", "last week"), if any."""
    for m in _RELATIVE_IN_TEXT.finditer(text):
        rng = _relative_range(m.group(0), ref.date())
        if rng is not None:
            return rng
    return None


def _annotate_relative(text: str, ref: datetime) -> str:
    """Append the absolute date to relative phrases the model left in the fact ("yesterday (7 May 2023)")."""

    def _sub(m: re.Match[str]) -> str:
        rng = _relative_range(m.group(0), ref.date())
        return f"{m.group(0)} ({_fmt_range(rng)})" if rng else m.group(0)

    return _RELATIVE_IN_TEXT.sub(_sub, text)


# --------------------------------------------------------------------------------------------------------
# Chunks and sources
# --------------------------------------------------------------------------------------------------------

_STOPWORDS_TEXT = """the a an and or but of to in on at for with from by about as is are was were be
been being it its this that these those he she they them his her their i me my we our you your so very just
really also too have has had do did does not no yes what when where who how which would could should will can
there then than some any all one get got like well"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_PRONOUNS = frozenset({"me", "i", "you", "he", "she", "they", "we", "it", "him", "her", "them", "us"})
# Not entities: pronouns and role names would link every fact of every conversation together.
_GENERIC_PEOPLE = _PRONOUNS | {"user", "assistant", "system", "ai", "bot", "human", "unknown", "speaker"}


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _STOPWORDS}


def _norm_id(value: str) -> str:
    return re.sub(r"\s+", "", value.strip().strip("[]()").strip()).casefold()


@dataclass(frozen=True)
class _Line:
    """One message (or one segment of an over-long message) as shown in a prompt."""

    label: str  # shown in [brackets]: the message id, or a positional label when the message has none
    msg_id: str | None
    time: datetime
    speaker: str
    text: str
    index: int  # position of the message in the input

    def render(self, max_chars: int | None = None) -> str:
        text = self.text if max_chars is None or len(self.text) <= max_chars else self.text[:max_chars] + "..."
        return f"[{self.label}] ({_fmt_time(self.time)}) {self.speaker}: {text}"


@dataclass
class ExtractionWindow:
    """One prompt window: the messages of one LLM call, the earlier context line and the reference time."""

    lines: list[_Line]
    previous: _Line | None
    reference: datetime
    context: str | None

    def describe(self) -> str:
        first, last = self.lines[0].label, self.lines[-1].label
        return f"messages {first}" if first == last else f"messages {first}..{last}"


@dataclass
class _Draft:
    """A validated fact of one window, before document positions are assigned."""

    fact: ExtractedFact
    rels: list[tuple[int, LinkType]]  # targets are indices into the window's raw answer


@dataclass
class _ChunkResult:
    drafts: list[_Draft]
    local_index: dict[int, int]  # raw answer index -> index into drafts (duplicates share one)
    raw: str
    duplicates: int = 0

    @property
    def looped(self) -> bool:
        """The model mostly repeated itself (a degenerate loop worth one more try)."""
        return self.duplicates >= 2 and self.duplicates >= len(self.drafts)


@dataclass
class _Request:
    messages: list[ChatMessage]
    temperature: float


class _Rejected(Exception):
    """An answer that parsed but failed the extractor's own validation."""


@dataclass
class _ChunkOutcome:
    result: _ChunkResult | None = None
    error: ExtractionError | None = None
    raws: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------------
# The extractor
# --------------------------------------------------------------------------------------------------------


class LLMExtractor:
    """Extracts narrative facts with an ``LLM`` (paper 4.1.2); implements the ``Extractor`` protocol.

    Args:
        llm: any backend implementing ``hindsight_core.llm.base.LLM``.
        max_retries: extra attempts per window after a malformed or invalid answer.
        chunk_messages: about this many messages per call (windows are balanced, so 19 messages with 8
            become 7+6+6, and split further when a window would exceed ``token_budget``).
        max_facts_per_chunk: ``maxItems`` of the facts list; also sizes the output token limit.
        count_tokens: tokenizer used for the prompt budget; defaults to ``len(text) / 4``.
        token_budget: bound on prompt + JSON schema tokens per call.
        max_concurrency: windows processed at once by ``aextract``.
        include_previous: show the previous window's last message for pronoun resolution.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        max_retries: int = 2,
        chunk_messages: int = 8,
        max_facts_per_chunk: int = 6,
        count_tokens: Callable[[str], int] | None = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_concurrency: int = 2,
        include_previous: bool = True,
    ) -> None:
        if max_retries < 0:
            raise InvalidInputError(f"max_retries must be >= 0, got {max_retries}")
        if chunk_messages < 1 or max_facts_per_chunk < 1 or max_concurrency < 1:
            raise InvalidInputError("chunk_messages, max_facts_per_chunk and max_concurrency must be >= 1")
        self.llm = llm
        self.max_retries = max_retries
        self.chunk_messages = chunk_messages
        self.max_facts_per_chunk = max_facts_per_chunk
        self.count_tokens: Callable[[str], int] = count_tokens or _default_count_tokens
        self.token_budget = token_budget
        self.max_concurrency = max_concurrency
        self.include_previous = include_previous
        self.schema: type[BaseModel] = _output_model(max_facts_per_chunk)
        self.max_output_tokens = _TOKENS_PER_FACT * max_facts_per_chunk + 32
        self._system = _SYSTEM_PROMPT.format(
            max_facts=max_facts_per_chunk,
            example_messages=_EXAMPLE_MESSAGES,
            example_facts="\n".join(json.dumps(f, separators=(",", ":")) for f in _EXAMPLE_FACTS),
        )
        self._schema_json = json.dumps(self.schema.model_json_schema(), separators=(",", ":"))
        fixed = self.count_tokens(self._system) + self.count_tokens(self._schema_json) + 80
        if fixed + _NOTE_RESERVE >= token_budget:
            raise InvalidInputError(
                f"token_budget {token_budget} cannot hold the extraction prompt and schema ({fixed} tokens)"
            )

    # ---- public API ----------------------------------------------------------------------------------

    def extract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Extract facts from ``messages`` (one document), one LLM call per window, in order."""
        chunks = self.plan(messages, document_time=document_time, context=context)
        outcomes = [self._run_sync(chunk) for chunk in chunks]
        return self._assemble(chunks, outcomes)

    async def aextract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        """Async twin of ``extract``: windows run concurrently (at most ``max_concurrency`` at once)."""
        chunks = self.plan(messages, document_time=document_time, context=context)
        gate = asyncio.Semaphore(self.max_concurrency)  # per call: never bound to another event loop

        async def run(chunk: ExtractionWindow) -> _ChunkOutcome:
            async with gate:
                return await self._run_async(chunk)

        tasks = [asyncio.ensure_future(run(chunk)) for chunk in chunks]
        try:
            outcomes = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # one window failed: stop spending model time on the others
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return self._assemble(chunks, list(outcomes))

    def plan(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractionWindow]:
        """Cut messages into prompt windows that respect ``chunk_messages`` and ``token_budget``."""
        reference = as_utc(document_time)
        lines: list[_Line] = []
        for i, raw in enumerate(messages):
            msg = raw if isinstance(raw, Message) else Message.model_validate(raw)
            text = " ".join(msg.text.split())
            if not text:
                continue  # blank messages carry nothing to extract
            lines.append(
                _Line(
                    label=msg.id or f"m{i + 1}",
                    msg_id=msg.id,
                    time=msg.timestamp or reference,
                    speaker=(msg.speaker or "unknown").strip() or "unknown",
                    text=text,
                    index=i,
                )
            )
        if context:
            context = " ".join(context.split())[:_MAX_CONTEXT_CHARS]
        chunks: list[ExtractionWindow] = []
        n_groups = math.ceil(len(lines) / self.chunk_messages)
        start = 0
        for g in range(n_groups):
            # Balanced windows: no lonely one-message tail window that lacks conversational context.
            size = len(lines) // n_groups + (1 if g < len(lines) % n_groups else 0)
            group = lines[start : start + size]
            start += size
            previous = chunks[-1].lines[-1] if chunks and self.include_previous else None
            chunks.extend(self._fit(group, previous, reference, context))
        return chunks

    def build_prompt(self, chunk: ExtractionWindow, note: str | None = None) -> list[ChatMessage]:
        """The chat messages sent for one window (``note`` is the corrective text added on retries)."""
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": self._user_prompt(chunk, note)},
        ]

    def prompt_tokens(self, chunk: ExtractionWindow, note: str | None = None) -> int:
        """Estimated tokens of the prompt plus the JSON schema for one window."""
        msgs = self.build_prompt(chunk, note)
        return sum(self.count_tokens(m["content"]) + 4 for m in msgs) + self.count_tokens(self._schema_json)

    # ---- planning ------------------------------------------------------------------------------------

    def _user_prompt(self, chunk: ExtractionWindow, note: str | None) -> str:
        ref = chunk.reference
        parts = [f"Reference time: {_fmt_time(ref)} UTC ({ref:%A})"]
        if chunk.context:
            parts.append(f"Context: {chunk.context}")
        if chunk.previous is not None:
            parts.append("Earlier message, for pronouns only: " + chunk.previous.render(max_chars=_MAX_PREVIOUS_CHARS))
        parts.append("Messages:")
        parts.extend(line.render() for line in chunk.lines)
        parts.append(note or "Return the facts as JSON.")
        return "\n".join(parts)

    def _fits(self, chunk: ExtractionWindow) -> bool:
        return self.prompt_tokens(chunk) + _NOTE_RESERVE <= self.token_budget

    def _fit(
        self, group: list[_Line], previous: _Line | None, reference: datetime, context: str | None
    ) -> list[ExtractionWindow]:
        chunk = ExtractionWindow(group, previous, reference, context)
        if self._fits(chunk):
            return [chunk]
        if previous is not None:  # the context line is a nicety: drop it before splitting real messages
            return self._fit(group, None, reference, context)
        if len(group) > 1:
            mid = len(group) // 2
            head = self._fit(group[:mid], None, reference, context)
            return head + self._fit(
                group[mid:], head[-1].lines[-1] if self.include_previous else None, reference, context
            )
        if context:  # one message and no room: the caller's context goes before the message is cut
            return self._fit(group, None, reference, None)
        return [ExtractionWindow([seg], None, reference, None) for seg in self._segments(group[0], reference)]

    def _segments(self, line: _Line, reference: datetime) -> list[_Line]:
        """Split one over-long message into segments that each fit; all keep the message's id."""
        empty = ExtractionWindow(
            [_Line(line.label, line.msg_id, line.time, line.speaker, "", line.index)], None, reference, None
        )
        room = max(16, self.token_budget - _NOTE_RESERVE - self.prompt_tokens(empty))
        pieces: list[str] = []
        for sentence in re.split(r"(?<=[.!?])\s+", line.text):
            if self.count_tokens(sentence) <= room:
                pieces.append(sentence)
                continue
            words = sentence.split(" ")  # a sentence longer than the room: cut it at word boundaries
            step = max(1, len(words) * room // max(1, self.count_tokens(sentence)) - 1)
            pieces.extend(" ".join(words[i : i + step]) for i in range(0, len(words), step))
        segments: list[str] = []
        current = ""
        for piece in pieces:
            candidate = f"{current} {piece}".strip()
            if current and self.count_tokens(candidate) > room:
                segments.append(current)
                candidate = piece
            current = candidate
        if current:
            segments.append(current)
        return [_Line(line.label, line.msg_id, line.time, line.speaker, seg, line.index) for seg in segments]

    # ---- one window: attempts and validation ---------------------------------------------------------

    def _attempts(
        self, chunk: ExtractionWindow
    ) -> Generator[_Request, BaseModel | MalformedOutputError, _ChunkOutcome]:
        """Retry loop shared by the sync and async drivers: yields requests, receives answers or errors."""
        note: str | None = None
        outcome = _ChunkOutcome()
        reason = ""
        best: _ChunkResult | None = None  # the best valid-but-unsatisfying answer (empty or looping)
        for attempt in range(self.max_retries + 1):
            # Retry at a little temperature as well: a deterministic model repeats its mistake.
            reply = yield _Request(self.build_prompt(chunk, note), 0.0 if attempt == 0 else 0.3)
            if isinstance(reply, MalformedOutputError):
                raw = reply.raw or ""
                reason = f"output did not match the schema ({reply})"
            else:
                raw = reply.model_dump_json()
                try:
                    result = self._validate(reply, chunk, raw)
                except _Rejected as rejected:
                    reason = str(rejected)
                else:
                    if result.drafts and not result.looped:
                        outcome.raws.append(raw)
                        outcome.result = result
                        return outcome
                    if best is None or len(result.drafts) > len(best.drafts):
                        best = result
                    reason = "the same fact was repeated" if result.drafts else "no facts were returned"
            outcome.raws.append(raw)
            note = (
                f"Your previous answer was rejected: {reason[:200]}. Answer again with valid JSON: different "
                "facts with non-empty text and src ids from the [brackets]."
            )
        if best is not None:
            # Valid but empty (a window of greetings has no facts) or repetitive (its distinct facts are
            # still good) on every try: accept it. The document level raises EmptyExtractionError if
            # nothing at all was found.
            outcome.result = best
            return outcome
        outcome.error = ExtractionError(
            f"LLM extraction failed for {chunk.describe()} after {self.max_retries + 1} attempt(s) with "
            f"{getattr(self.llm, 'name', type(self.llm).__name__)}: {reason}",
            raw_output=outcome.raws[-1] if outcome.raws else None,
        )
        return outcome

    def _run_sync(self, chunk: ExtractionWindow) -> _ChunkOutcome:
        steps = self._attempts(chunk)
        request = next(steps)
        while True:
            reply: BaseModel | MalformedOutputError
            try:
                reply = self.llm.generate(
                    request.messages,
                    self.schema,
                    max_tokens=self.max_output_tokens,
                    temperature=request.temperature,
                )
            except MalformedOutputError as exc:
                reply = exc
            try:
                request = steps.send(reply)
            except StopIteration as stop:
                return self._raise_on_error(stop.value)

    async def _run_async(self, chunk: ExtractionWindow) -> _ChunkOutcome:
        steps = self._attempts(chunk)
        request = next(steps)
        while True:
            reply: BaseModel | MalformedOutputError
            try:
                reply = await self.llm.agenerate(
                    request.messages,
                    self.schema,
                    max_tokens=self.max_output_tokens,
                    temperature=request.temperature,
                )
            except MalformedOutputError as exc:
                reply = exc
            try:
                request = steps.send(reply)
            except StopIteration as stop:
                return self._raise_on_error(stop.value)

    @staticmethod
    def _raise_on_error(outcome: _ChunkOutcome) -> _ChunkOutcome:
        if outcome.error is not None:
            raise outcome.error
        return outcome

    def _validate(self, answer: BaseModel, chunk: ExtractionWindow, raw: str) -> _ChunkResult:
        """Turn one parsed answer into drafts; raise ``_Rejected`` when it has facts but none usable."""
        facts: list[_Fact] = list(getattr(answer, "facts", []))
        by_id: dict[str, _Line] = {}
        for line in chunk.lines:
            if line.msg_id is not None:
                by_id.setdefault(_norm_id(line.msg_id), line)
        drafts: list[_Draft] = []
        local_index: dict[int, int] = {}
        seen_words: list[frozenset[str]] = []
        duplicates = 0
        problems: list[str] = []
        for i, item in enumerate(facts):
            text = " ".join(item.text.split())
            if len(text) < _MIN_FACT_CHARS or not re.search(r"[A-Za-z]", text):
                problems.append(f"fact {i} has empty or meaningless text")
                continue
            words = frozenset(re.findall(r"\w+", text.lower()))
            twin = next((k for k, seen in enumerate(seen_words) if _jaccard(words, seen) >= _NEAR_DUPLICATE), None)
            if twin is not None:
                # Small models repeat themselves, often with one word swapped ("with their mom", "... dad"):
                # keep the first copy; relations to a copy point at the kept fact.
                local_index[i] = twin
                duplicates += 1
                continue
            local_index[i] = len(drafts)
            seen_words.append(words)
            drafts.append(self._draft(item, text, chunk, by_id))
        if facts and not drafts:
            raise _Rejected("; ".join(problems[:3]))
        return _ChunkResult(drafts, local_index, raw, duplicates)

    def _draft(self, item: _Fact, text: str, chunk: ExtractionWindow, by_id: dict[str, _Line]) -> _Draft:
        # Sources: only ids of this window's messages; the earlier context line and inventions are dropped.
        lines: list[_Line] = []
        for src in item.src:
            line = by_id.get(_norm_id(src))
            if line is not None and line not in lines:
                lines.append(line)
        if not lines:
            lines = self._attribute(text, item, chunk)
        lines.sort(key=lambda ln: ln.index)
        mentioned = min(ln.time for ln in lines)
        sources = list(dict.fromkeys(ln.msg_id for ln in lines if ln.msg_id is not None))

        start_raw, end_raw = item.start.strip(), item.end.strip()
        gave_start = start_raw.lower() not in _BLANK_DATES
        gave_end = end_raw.lower() not in _BLANK_DATES
        start_rng = _parse_range(start_raw, mentioned) if gave_start else None
        end_rng = _parse_range(end_raw, mentioned) if gave_end else None
        said = _relative_in_text(text, mentioned)
        today = (mentioned.date(), mentioned.date())
        if (
            said is not None
            and said != today
            and all(rng == today for rng, gave in ((start_rng, gave_start), (end_rng, gave_end)) if gave)
        ):
            # The fact itself says "yesterday"/"last week" but the model gave no date or just copied the
            # message date (a common small-model slip): the phrase in the text is the better evidence.
            start_rng = end_rng = said
            gave_start = gave_end = True
        start = _day_start(start_rng[0]) if start_rng and _plausible(start_rng[0], mentioned) else None
        end = _day_end(end_rng[1]) if end_rng and _plausible(end_rng[1], mentioned) else None
        if not gave_start and not gave_end:
            start = end = mentioned  # nothing said about when: it is known to hold at the mention
        elif start is not None and end is None and not gave_end:
            end = _day_end(start_rng[1]) if start_rng else None  # one end given: a range of that date
        elif end is not None and start is None and not gave_start:
            start = _day_start(end_rng[0]) if end_rng else None
        if start is not None and end is not None and start > end:
            start, end = _day_start(end.date()), _day_end(start.date())  # swapped ends

        network = Network(item.net)
        if network is not Network.WORLD and not _agent_voice(text, lines):
            # Experience and opinion belong to the agent itself; small models also tag a *person's*
            # experiences and views that way, which are world facts about that person.
            network = Network.WORLD
        confidence: float | None = None
        if network is Network.OPINION:
            conf = item.conf / 100 if 1 < item.conf <= 100 else item.conf  # "80" meant 80%
            confidence = min(1.0, max(0.0, conf)) if conf > 0 else 0.5  # unstated: neither sure nor unsure

        participants = _dedupe(p for p in item.who if p.strip().lower() not in _PRONOUNS)
        if not participants:  # the speakers of the source messages are involved by default
            participants = _dedupe(ln.speaker for ln in lines if ln.speaker.lower() != "unknown")
        entities: list[ExtractedEntity] = []
        names: set[str] = set()
        for ent in item.ents:
            name = " ".join(ent.name.split())
            if not name or name.lower() in _GENERIC_PEOPLE or name.casefold() in names:
                continue
            names.add(name.casefold())
            entities.append(ExtractedEntity(name=name, type=EntityType(ent.type)))
        for person in participants:  # participants are people the graph should know about
            if person.casefold() not in names and person.lower() not in _GENERIC_PEOPLE:
                names.add(person.casefold())
                entities.append(ExtractedEntity(name=person, type=EntityType.PERSON))

        fact = ExtractedFact(
            text=_annotate_relative(text, mentioned),
            network=network,
            occurred_start=start,
            occurred_end=end,
            mentioned_at=mentioned,
            entities=entities,
            participants=participants,
            sources=sources,
            confidence=confidence,
        )
        return _Draft(fact, [(rel.to, LinkType(rel.type)) for rel in item.rel])

    @staticmethod
    def _attribute(text: str, item: _Fact, chunk: ExtractionWindow) -> list[_Line]:
        """Most likely source lines of a fact that cited none validly (lexical overlap, speaker bonus)."""
        words = _content_words(" ".join([text, *item.who, *(e.name for e in item.ents)]))
        lowered = text.lower()
        scores = []
        for line in chunk.lines:
            score = len(words & _content_words(line.text))
            if line.speaker.lower() not in _GENERIC_PEOPLE and line.speaker.lower() in lowered:
                score += 0.5
            scores.append(score)
        best = max(scores)
        if best < 1:  # no real overlap: the fact came from this window, but we cannot say which message
            return list(chunk.lines)
        return [line for line, score in zip(chunk.lines, scores, strict=True) if score == best][:3]

    # ---- document assembly ---------------------------------------------------------------------------

    def _assemble(self, chunks: list[ExtractionWindow], outcomes: list[_ChunkOutcome]) -> list[ExtractedFact]:
        facts: list[ExtractedFact] = []
        for outcome in outcomes:
            result = outcome.result
            if result is None:
                continue
            offset = len(facts)
            for k, draft in enumerate(result.drafts):
                position = offset + k
                causal: list[CausalRelation] = []
                for target, kind in draft.rels:
                    local = result.local_index.get(target)
                    if local is None or local == k:
                        continue  # out of range, a rejected fact, or the fact itself
                    relation = CausalRelation(target=offset + local, type=kind)
                    if relation not in causal:
                        causal.append(relation)
                facts.append(draft.fact.model_copy(update={"position": position, "causal": causal}))
        if chunks and not facts:
            raws = [raw for outcome in outcomes for raw in outcome.raws]
            raise EmptyExtractionError(
                f"LLM extraction produced zero facts from {sum(len(c.lines) for c in chunks)} non-empty "
                f"message line(s) in {len(chunks)} window(s) with "
                f"{getattr(self.llm, 'name', type(self.llm).__name__)}",
                raw_output="\n".join(raws) if raws else None,
            )
        return facts


_AGENT_ROLES = frozenset({"assistant", "ai", "bot", "agent"})
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b")


def _agent_voice(text: str, lines: list[_Line]) -> bool:
    """Whether a fact can be the agent's own: written in the first person or said by the assistant."""
    return bool(_FIRST_PERSON.search(text)) or any(ln.speaker.lower() in _AGENT_ROLES for ln in lines)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _dedupe(values: Any) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        name = " ".join(str(value).split())
        if name and name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(name)
    return out
