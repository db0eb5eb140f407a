"""``RetainOptions``: how one retain is done, as one record from ``Bank.retain`` through the pipeline, the
deferred job and the stored document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..validation import When


@dataclass(frozen=True)
class RetainOptions:
    """Every keyword of ``Bank.retain`` but ``defer`` (see there for what each does). Validated once at the public
    edge; the pipeline and the jobs take the record as it is."""

    timestamp: When = None
    document_id: str | None = None
    context: str | None = None
    extract: bool = True
    metadata: dict[str, Any] | None = None
    background: bool | None = None
    document_metadata: dict[str, Any] | None = None

    @property
    def runs_background(self) -> bool:
        """Background work (observations, opinions) defaults to on with the LLM and off for raw ingest."""
        return self.extract if self.background is None else self.background

    def recorded(self) -> dict[str, Any]:
        """What the document keeps of these options, so that a resumed or deferred retain does the same."""
        return {"extract": bool(self.extract), "background": self.background, "metadata": dict(self.metadata or {})}
