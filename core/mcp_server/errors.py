"""Library errors as MCP tool errors: one line that says what kind of failure it was and what was wrong.

A tool error reaches the calling model as a result with ``isError`` set (MCP reports tool failures that way so
the model can read and correct them); its text starts with a kind (``invalid input``, ``unknown bank``, ...)
followed by the library's own message. Only failures nobody anticipated (bugs) stay with the SDK: the client then
sees ``Error executing tool NAME`` and the server logs the traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from hindsight_core import (
    BankNotFoundError,
    ConflictError,
    DocumentNotFoundError,
    EmbedderMismatchError,
    ExtractionError,
    HindsightError,
    InvalidInputError,
    LLMError,
    StoreError,
    StoreLockedError,
)
from hindsight_core.cli.run import one_line
from hindsight_core.errors import MemoryNotFoundError, bounded, shown

# Most specific first: StoreLockedError is a StoreError.
_KINDS: tuple[tuple[type[HindsightError], str], ...] = (
    (InvalidInputError, "invalid input"),
    (BankNotFoundError, "unknown bank"),
    (DocumentNotFoundError, "not found"),
    (MemoryNotFoundError, "not found"),
    (StoreLockedError, "store busy"),
    (StoreError, "store error"),
    (ExtractionError, "extraction failed"),
    (LLMError, "model error"),
    (ConflictError, "conflict"),
    (EmbedderMismatchError, "embedder mismatch"),
)
_SHOWN_INPUT_CHARS = 60


class HindsightToolError(ToolError):
    """A tool failure reported to the client as ``KIND: message``."""

    def __init__(self, kind: str, message: str) -> None:
        """``kind`` names the failure (``invalid input``...), ``message`` says what was wrong (bounded: no long
        input is echoed whole, ``errors.bounded``)."""
        message = bounded(message)
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.detail = message


def tool_error(exc: HindsightError) -> HindsightToolError:
    """The tool error for a library error."""
    kind = next((k for cls, k in _KINDS if isinstance(exc, cls)), "error")
    message = one_line(exc)
    if isinstance(exc, ExtractionError) and exc.document_id:
        message += f" (the raw document {exc.document_id!r} is kept)"
    return HindsightToolError(kind, message)


@contextmanager
def reported() -> Iterator[None]:
    """Raise any library error inside the block as the matching tool error."""
    try:
        yield
    except HindsightError as exc:
        raise tool_error(exc) from exc


def invalid_arguments(exc: ValidationError) -> HindsightToolError:
    """The tool error for arguments that do not fit a tool's schema: each field, what is wrong, what was sent."""
    parts: list[str] = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err.get("loc", ())) or "arguments"
        given = repr(err.get("input"))
        if len(given) > _SHOWN_INPUT_CHARS:
            given = given[: _SHOWN_INPUT_CHARS - 3] + "..."
        shown = "" if err.get("type") == "missing" else f" (got {given})"
        parts.append(f"{field}: {err.get('msg', 'invalid')}{shown}")
    return HindsightToolError("invalid input", "; ".join(parts))


def unexpected_arguments(tool: str, names: Iterable[str], accepted: Iterable[str],
                         fixed_bank: str | None) -> HindsightToolError:
    """The tool error for arguments a tool does not take (rejected rather than silently ignored)."""
    unknown = ", ".join(shown(n, _SHOWN_INPUT_CHARS) for n in sorted(names))
    known = ", ".join(sorted(accepted)) or "none"
    message = f"{tool} takes no argument {unknown} (it takes: {known})"
    if fixed_bank is not None:
        message += f"; this server serves bank {fixed_bank!r} only, so no tool takes a bank"
    return HindsightToolError("invalid input", message)
