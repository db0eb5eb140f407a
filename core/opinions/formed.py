"""The shape of an opinion formed during reflect (or added by a caller): text, why, confidence and its entities."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM_SCHEMA_CONFIG
from ..llm.structured import clip, trim
from .confidence import DEFAULT_CONFIDENCE

__all__ = ["FormedOpinion", "whole_sentences"]

_OPINION_CHARS = 300
_RATIONALE_CHARS = 160  # "one short sentence": a longer limit let the small model ramble for 300 characters
_ENTITY_CHARS = 80
_MAX_ENTITIES = 5


def whole_sentences(text: str, limit: int = _OPINION_CHARS) -> str:
    """``text`` without a sentence cut off at its end: a model's answer stops at the schema's length limit mid-phrase
    ("... he is not responsible for my home or plants,"). The complete sentences are kept; a text with none is kept
    when it is short (a sentence without its full stop), and dropped ("") when it reaches the limit (cut)."""
    text = " ".join(text.split())
    if not text or text.endswith((".", "!", "?", '."', '!"', '?"')):
        return text
    ends = [m.end() for m in re.finditer(r"[.!?][\"')\]]?(?=\s)", text)]
    if ends:
        return text[: ends[-1]]
    return "" if len(text) >= 0.9 * limit else text


class FormedOpinion(BaseModel):
    """An opinion formed during reflect: text (first person is fine), why, confidence and its entities.

    Ready to embed in an LLM schema: strings and the entity list carry ``maxLength``/``maxItems``, and the
    advertised schema is strict (all keys required, no extra keys). Validation is lenient (over-long values
    are clipped, ``"80"``/``80`` reads as 0.8, missing optional keys take defaults) so sloppy but usable
    output passes.
    """

    model_config = LLM_SCHEMA_CONFIG

    text: str = Field(max_length=_OPINION_CHARS, description="the opinion, one sentence")
    rationale: str = Field("", max_length=_RATIONALE_CHARS, description="why, one short sentence")
    confidence: float = Field(DEFAULT_CONFIDENCE, ge=0.0, le=1.0, description="0 to 1")
    entities: list[Annotated[str, Field(max_length=_ENTITY_CHARS)]] = Field(
        default_factory=list, max_length=_MAX_ENTITIES, description="names it is about"
    )

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return trim(v, _OPINION_CHARS)

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, v: Any) -> Any:
        return trim(v, _RATIONALE_CHARS)

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = float(v.strip().rstrip("%"))
            except ValueError:
                return v
        if isinstance(v, int | float) and 1.0 < v <= 100.0:  # percentages from small models
            return v / 100.0
        return v

    @field_validator("entities", mode="before")
    @classmethod
    def _entities(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            names = [clip(str(e), _ENTITY_CHARS) for e in v if isinstance(e, str | int) and str(e).strip()]
            return list(dict.fromkeys(names))[:_MAX_ENTITIES]
        return v
