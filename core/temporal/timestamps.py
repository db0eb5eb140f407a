"""Timestamps a caller gives (``timestamp=``, ``reference_time=``, a message's time) and the one free-form date
fallback (``read_free_date``, through dateparser) that the rules, the model's dates and timestamps all share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from ..errors import InvalidInputError
from ..models import as_utc

MAX_DATE_CHARS = 200
"""The longest date or timestamp string read: longer input is refused before any parser sees it (dateparser
spends seconds on long text, and no date is that long)."""


@dataclass(frozen=True)
class FreeDate:
    """A date dateparser read: the moment, the calendar period it names and which parts the text gave."""

    moment: datetime
    period: str
    parts: frozenset[str]

    @property
    def day(self) -> date:
        """The moment's calendar day."""
        return self.moment.date()


def read_free_date(
    text: str, *, now: datetime | None = None, prefer: Literal["past", "future"] = "past", to_utc: bool = False
) -> FreeDate | None:
    """A free-form date the rules do not read ("08May2023", "2023 May 8", "5 March 2025 14:00"), or None.

    One set of settings for every caller: English, month-day-year for numeric dates, the first of the month
    when no day is given, relative words against ``now`` (default: the clock), ``prefer`` for a date without a
    year; wall-clock times are kept as written unless ``to_utc`` (an explicit offset is then converted).
    Never raises: text over ``MAX_DATE_CHARS`` or anything dateparser chokes on is None.
    """
    if len(text) > MAX_DATE_CHARS or not text.strip():
        return None
    settings: dict[str, Any] = {"PREFER_DATES_FROM": prefer, "PREFER_DAY_OF_MONTH": "first", "DATE_ORDER": "MDY",
                                "RETURN_AS_TIMEZONE_AWARE": True, "TIMEZONE": "UTC"}
    if now is not None:
        settings["RELATIVE_BASE"] = now.replace(tzinfo=None)
    if to_utc:
        settings["TO_TIMEZONE"] = "UTC"
    try:
        from dateparser.date import DateDataParser

        data = DateDataParser(languages=["en"], settings=settings).get_date_data(text)
    except Exception:  # dateparser raises assorted errors on odd input: not a date
        return None
    if data is None or data.date_obj is None:
        return None
    return FreeDate(moment=data.date_obj, period=data.period or "day",
                    parts=frozenset(getattr(data, "parts", None) or ()))


def parse_timestamp(value: Any, what: str = "timestamp") -> datetime | None:
    """Accept a datetime, date, epoch seconds or ISO-8601 / natural date string; return aware UTC.

    ``InvalidInputError`` names ``what`` and shows at most a short prefix of a string that is not a time.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise InvalidInputError(f"invalid {what}: {value!r} ({exc})") from exc
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if len(text) > MAX_DATE_CHARS:
            raise InvalidInputError(f"invalid {what}: {len(text):,} characters starting {text[:40]!r} is longer "
                                    f"than any date ({MAX_DATE_CHARS} characters at most)")
        try:
            return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError:
            pass
        found = read_free_date(text, to_utc=True)
        if found is not None:
            return as_utc(found.moment)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    raise InvalidInputError(f"invalid {what}: {shown} is not a date or time")
