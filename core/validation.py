"""Argument checking at the public edge: a wrong type or value is an ``InvalidInputError`` naming the argument.

``@public`` validates a method's arguments against its type hints with pydantic in strict mode (no "3" for
an int, no 1 for a bool, no NaN where a finite number is expected), before the method body runs, so bad
input fails before anything is stored and never surfaces as a bare ``TypeError`` or ``AttributeError``
from deep inside. Value checks that types cannot express stay in the methods.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Annotated, Any, TypeVar, cast

from pydantic import AfterValidator, ConfigDict, Field, ValidationError, validate_call

from .errors import InvalidInputError
from .models import Disposition, TimeRange

F = TypeVar("F", bound=Callable[..., Any])

_CONFIG = ConfigDict(strict=True, arbitrary_types_allowed=True)


def _message(fn: Callable[..., Any], exc: ValidationError) -> str:
    """One readable line: which argument, what was wrong, what was given."""
    names = [p for p in inspect.signature(fn).parameters if p != "self"]
    parts = []
    seen: set[object] = set()
    for err in exc.errors():
        loc = err.get("loc") or ()
        head: Any = loc[0] if loc else "?"
        if isinstance(head, int):  # a positional argument: validate_call counts self as 0
            head = names[head - 1] if 0 < head <= len(names) else head
        if head in seen:
            continue  # a union reports once per member; the first says enough
        seen.add(head)
        given = err.get("input")
        shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
        # pydantic prefixes the message of a check raised in a validator ("Value error, ..."): the check is ours
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        parts.append(f"argument {head!r}: {msg} (got {type(given).__name__} {shown})")
    return f"{fn.__qualname__}: " + "; ".join(parts)


def _drop_return(fn: Callable[..., Any]) -> None:
    # The return type is not validated, and may name a class still being defined (``Hindsight.open``).
    fn.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "return"}


class _BodyError(Exception):
    """Carries a ValidationError raised inside the method body past the argument check."""


def public(fn: F) -> F:
    """Validate ``fn``'s arguments against its annotations; ``InvalidInputError`` when they do not fit.

    A ``ValidationError`` raised by the method body itself (a model built from stored data) is a different
    failure and is re-raised unchanged, not blamed on the caller's arguments.
    """
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_body(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ValidationError as exc:
                raise _BodyError(exc) from exc

        _drop_return(async_body)
        async_checked = validate_call(config=_CONFIG, validate_return=False)(async_body)

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await async_checked(*args, **kwargs)
            except _BodyError as inner:
                raise inner.args[0] from None
            except ValidationError as exc:
                raise InvalidInputError(_message(fn, exc)) from exc

        return cast(F, async_wrapper)

    @functools.wraps(fn)
    def body(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValidationError as exc:
            raise _BodyError(exc) from exc

    _drop_return(body)
    checked = validate_call(config=_CONFIG, validate_return=False)(body)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return checked(*args, **kwargs)
        except _BodyError as inner:
            raise inner.args[0] from None
        except ValidationError as exc:
            raise InvalidInputError(_message(fn, exc)) from exc

    return cast(F, wrapper)


# Argument types shared by the public methods.
When = datetime | date | str | float | None
"""A point in time: a datetime, a date, an ISO-8601 or natural-language string, or epoch seconds."""
Window = TimeRange | tuple[Any, Any] | list[Any] | None
"""A time range: a ``TimeRange`` or a (start, end) pair of ``When`` values (either may be None)."""
Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
"""A confidence in [0, 1] (1 means certain; percentages are not accepted here)."""
Seconds = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
"""A finite, non-negative number of seconds."""

MAX_ID_CHARS = 1000
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_identifier(value: str) -> str:
    """An id as every public method takes it (non-empty, printable, valid unicode, at most ``MAX_ID_CHARS``), or
    ``ValueError`` naming the rule broken."""
    if not value:
        raise ValueError("must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"is longer than {MAX_ID_CHARS} characters")
    if _SURROGATES.search(value) or _CONTROL.search(value):
        raise ValueError("contains control characters or invalid unicode (lone surrogates)")
    return value


def _text(value: str) -> str:
    # A lone surrogate cannot be stored as UTF-8 anywhere; like retain's text, it becomes U+FFFD.
    return _SURROGATES.sub("\ufffd", value)


MAX_BANK_ID_CHARS = 512


def check_bank_id(value: object) -> str:
    """A bank id, or ``ValueError`` naming the rule it breaks: a string with something besides whitespace, at
    most ``MAX_BANK_ID_CHARS`` characters, no control characters or lone surrogates. The one rule for banks:
    ``Hindsight.bank``, ``delete_bank``, import, the MCP tools and the explorer all apply it."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a bank id must be a non-empty string (not only whitespace)")
    if len(value) > MAX_BANK_ID_CHARS:
        raise ValueError(f"a bank id is at most {MAX_BANK_ID_CHARS} characters")
    if _SURROGATES.search(value) or _CONTROL.search(value):
        raise ValueError("a bank id may not contain control characters or invalid unicode")
    return value


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_printable(value: str) -> str:
    """``value`` as retain stores text: control characters other than tab and line breaks (a NUL, a terminal
    escape) become spaces and lone surrogates U+FFFD, so nothing read from elsewhere can reach a terminal."""
    return _UNPRINTABLE.sub(" ", _SURROGATES.sub("\ufffd", value))


Identifier = Annotated[str, AfterValidator(check_identifier)]
"""An id (memory, document, opinion, bank): non-empty, printable, valid unicode, at most 1000 characters."""
BankId = Annotated[str, AfterValidator(check_bank_id)]
"""A bank id as every public entry point takes it (see ``check_bank_id``)."""
Text = Annotated[str, AfterValidator(_text)]
"""Free text: any string; lone surrogates (broken unicode) are replaced by U+FFFD."""


def _disposition(value: Disposition | Mapping[str, Any]) -> Disposition:
    # A mapping becomes a Disposition here, at the edge, so that a trait out of range is the caller's error
    # (``InvalidInputError`` naming the argument) and never pydantic's from inside the method.
    if isinstance(value, Disposition):
        return value
    try:
        return Disposition.model_validate(dict(value))
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ())) or "disposition"
            given = repr(err.get("input"))
            parts.append(f"{where}: {err.get('msg', 'invalid')} (got {given[:40]})")
        raise ValueError("; ".join(parts)) from None


DispositionArg = Annotated[Disposition | Mapping[str, Any], AfterValidator(_disposition)]
"""A disposition as the public methods take it: a ``Disposition`` or a mapping of its fields (skepticism,
literalism, empathy 1..5; bias 0..1), checked at the edge."""
