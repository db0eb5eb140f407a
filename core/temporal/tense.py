"""Does a sentence speak about the past or about a plan? Just enough grammar for time expressions.

The answer only steers expressions whose direction English leaves open ("on Monday", "this Monday",
"this weekend", "in June", "over the summer"), so a small verb-tense rule does:

* **future** when the text has a future or plan marker: "will", "'ll", "shall", "won't", "gonna",
  "going to" (not "was going to"), "about to", "plan(s/ned/ning) to", "intend(s) to", "hope(s) to",
  "looking forward to", "can't wait", "upcoming", or a present progressive "am/is/are (not) V-ing"
  ("we're going this Monday", "Caroline is visiting Paris in June", "are you doing anything on Friday?"):
  a progressive never narrates the past, and with a time attached it describes an arrangement;
* **past** otherwise, when it has a past-tense form: "did", "was", "were", "had", a common irregular past
  ("went", "saw", "took", ...) or a regular "-ed" form;
* ``None`` when it has neither (the resolver's default, which prefers the past).

A future marker wins over past ones: reported plans ("Caroline said she'll visit in June") are about the
future. Adjectives in "-ing" and "-ed" ("is amazing", "is excited") are not verbs; the common ones are
listed so that they do not count.
"""

from __future__ import annotations

import re

from .model import Tense

__all__ = ["detect_tense", "sentence_spans", "statement_tense"]

_FLAGS = re.IGNORECASE

# Rescheduling counts as a plan only when it moves something *to a time* ("moved my appointment to 3 December"),
# not to a place ("we moved to Leeds in March").
_MONTH_OR_DAY = (
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday|spring|summer|autumn|fall|winter|christmas|easter)"
)
_FUTURE_MARKERS = re.compile(
    r"\b(?:will|shall|won't|wont|gonna|about\s+to|upcoming|can't\s+wait|cannot\s+wait|looking\s+forward"
    r"|plan(?:s|ned|ning)?\s+(?:to|on)|intend(?:s|ed|ing)?\s+to|hop(?:e|es|ing)\s+to)\b"
    # Wishes and obligations point ahead ("should start", "wants to come"); "should have" looks back.
    r"|\b(?:(?:should|might|must)\s+(?!have\b|['’]ve\b|not\s+have\b)[a-z]+|wants?\s+to|wanna|needs?\s+to"
    r"|ha(?:ve|s)\s+to|would\s+(?:like|love)|['’]d\s+(?:like|love)|let['’]s|let\s+us)\b"
    # Arrangements made in the past are about what comes: "we booked Porto for June", "I signed up for the race
    # in April", "tickets for the show in May", "the match was pushed back to Friday".
    r"|\b(?:book(?:ed|s)?|reserv(?:ed|es?)|schedul(?:ed|es?)|signed\s+up|sign\s+up|register(?:ed|s)?\s+for"
    r"|enrolled\s+in|arrang(?:ed|es?)\s+(?:to|for)|tickets?\s+(?:for|to)|plans?\s+for"
    r"|(?:postpone|reschedule|delay|put\s+off|push|move|bring|brought)(?:d|ed|s|es)?\s+(?:[a-z'’]+\s+){0,4}?"
    r"(?:to|until|till)\s+(?=[0-9]|the\s+[0-9]|next\b|tomorrow\b|later\b|" + _MONTH_OR_DAY + r"))\b"
    r"|(?<!\bwas\s)(?<!\bwere\s)\bgoing\s+to\b"
    r"|\w['’]ll\b",
    _FLAGS,
)
_PROGRESSIVE = re.compile(
    r"(?:\b(?:am|is|are)|\w['’](?:m|re))\s+(?:not\s+|also\s+|still\s+|just\s+|really\s+|finally\s+)?"
    r"(?P<v>[a-z]+ing)\b",
    _FLAGS,
)
# Questions invert it: "are you doing", "is Caroline visiting" (a pronoun or a capitalised name between).
_PROGRESSIVE_QUESTION = re.compile(
    r"\b(?:[Aa]m|[Ii]s|[Aa]re)\s+(?:I|you|he|she|we|they|[A-Z][a-z]+)\s+(?:not\s+)?(?P<v>[a-z]+ing)\b"
)
# "-ing" words after "is/are" that are adjectives or nouns, not a progressive verb.
_NOT_PROGRESSIVE = frozenset(
    """amazing interesting exciting boring inspiring annoying relaxing challenging rewarding surprising amusing
    fascinating charming stunning refreshing encouraging touching frustrating disappointing overwhelming
    heartwarming satisfying thrilling terrifying tiring confusing entertaining welcoming willing loving caring
    understanding outgoing calming soothing comforting fulfilling humbling exhausting intimidating depressing
    promising demanding striking pleasing shocking appealing alarming embarrassing missing lacking
    something nothing anything everything thing king ring spring evening morning during ceiling""".split()
)
_PAST = re.compile(
    r"\b(?:did|didn't|was|wasn't|were|weren't|had|hadn't|went|came|saw|took|made|got|met|bought|found|gave"
    r"|told|felt|left|won|lost|began|ran|wrote|spent|thought|said|heard|brought|kept|sat|stood|ate|drank|drove"
    r"|flew|swam|sang|paid|sent|built|caught|taught|fell|held|grew|knew|threw|wore|chose|broke|spoke|rode"
    r"|became|forgot|understood|ago)\b"
    r"|\b(?:should|would|could|might|must)\s+(?:have|['’]ve)\b"
    r"|\b[a-z]+[^e\W]ed\b",
    _FLAGS,
)
# "-ed" words after "am/is/are/feel(s)/get(s)" are adjectives ("is excited"), not the past tense.
_ADJECTIVE_ED = re.compile(
    r"(?:\b(?:am|is|are|be|being|feel|feels|feeling|get|gets|getting|so|very|really)|\w['’](?:m|re|s))"
    r"\s+[a-z]+ed\b",
    _FLAGS,
)


def _progressive(text: str) -> bool:
    matches = [*_PROGRESSIVE.finditer(text), *_PROGRESSIVE_QUESTION.finditer(text)]
    return any(m.group("v").lower() not in _NOT_PROGRESSIVE for m in matches)


def detect_tense(text: str) -> Tense | None:
    """``"future"`` for a plan, ``"past"`` for a narrated event, ``None`` when the text shows neither.

    >>> detect_tense("I'm going to Paris in June")
    'future'
    >>> detect_tense("What did Caroline do in June?")
    'past'
    """
    if _FUTURE_MARKERS.search(text) or _progressive(text):
        return "future"
    if _PAST.search(_ADJECTIVE_ED.sub(" ", text)):
        return "past"
    return None


def statement_tense(text: str) -> Tense:
    """The tense a *stated* text is resolved in: ``detect_tense``, with ``"present"`` where it finds neither.

    English narrates the past with a past form, so a statement without one (and without a plan marker) speaks
    in the present: "The race is on 13 April", "Let's meet on Monday", "Rent goes up on 1 October". Recall's
    queries keep ``detect_tense``'s ``None`` (past preferred) instead.
    """
    return detect_tense(text) or "present"


# Sentences end at ".", "!", "?" or ";" before a space, or at a line break; not after a title or "St".
_SENTENCE_END = re.compile(r"[.!?;]+[\"'’”)]*\s+|\n+")
_ABBREVIATIONS = frozenset("dr mr mrs ms st mt prof vs etc approx no fig jr sr".split())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, in order, covering it (each tense is decided per sentence:
    "They approved it on Tuesday. Construction should start in August." has one of each)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        before = text[start : m.start()].split()
        if before and before[-1].lower().rstrip(".") in _ABBREVIATIONS and text[m.start()] == ".":
            continue  # "Dr. Okafor", "St. Patrick's Day"
        spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans
