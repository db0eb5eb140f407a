"""Words and regex fragments of the temporal grammar, shared by its rules."""

from __future__ import annotations

import calendar
import re
from datetime import timedelta

_FLAGS = re.IGNORECASE | re.ASCII  # ASCII: "\d"/"\w" must not match other scripts' digits and letters
_US = timedelta(microseconds=1)

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
_FULL_MONTHS = frozenset(calendar.month_name[i].lower() for i in range(1, 13))
# Full names that are no common English word or first name: fine without a cue ("Emma's January trip").
_BARE_MONTHS = frozenset({"january", "february", "july", "september", "october", "november", "december"})
_NAME_MONTHS = frozenset({"april", "may", "june", "august"})  # also first names: "a letter from June"
_VERB_MONTHS = frozenset({"may", "march", "mar"})  # also verbs: "this may be", "we march on"
_WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6,
}
_NUM_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50,
}
_FUZZY: dict[str, tuple[int, int]] = {"couple": (2, 3), "few": (2, 5), "several": (3, 7)}
# Hours of the day parts, [first, last) with 24+ reaching into the next day.
_DAY_PARTS: dict[str, tuple[int, int]] = {
    "morning": (5, 12), "afternoon": (12, 17), "evening": (17, 24), "night": (18, 30),
}
_SEASONS: dict[str, int] = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
_PARTS = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}

_MON = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR = r"[12][0-9]{3}"
_NUM = (
    r"(?:[0-9]{1,4}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|an?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
    r"|twenty|thirty|forty|fifty)"
)
_UNIT = r"(?:minute|hour|day|week|fortnight|month|year)"
_SEASON = r"(?:spring|summer|autumn|fall|winter)"
_DET = r"(?:the|my|our|his|her|their|your|its)"

# Cheap gate: text without any of these cannot hold an expression, so most chat messages stop here.
_PREFILTER = re.compile(
    r"[0-9]|\b(?:yesterday|today|tonight|tomorrow|day|week|month|year|fortnight|hour|minute|recent|lately"
    r"|late|other|earlier|later|spring|summer|autumn|fall|winter|morning|afternoon|evening|night|before"
    r"|after|since|until|till|during|prior|while|whilst|christmas|xmas|easter|hallowe|thanksgiving|valentine|"
    + _MON[3:-1] + r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day)",
    _FLAGS,
)


