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

__all__ = ["detect_tense"]

_FLAGS = re.IGNORECASE

_FUTURE_MARKERS = re.compile(
    r"\b(?:will|shall|won't|wont|gonna|about\s+to|upcoming|can't\s+wait|cannot\s+wait|looking\s+forward"
    r"|plan(?:s|ned|ning)?\s+(?:to|on)|intend(?:s|ed|ing)?\s+to|hop(?:e|es|ing)\s+to)\b"
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
