"""The JSON answer schema of the LLM extractor: short keys, bounded lists, lenient validation.

Used only for the LLM call. Short keys (fewer output tokens), every list bounded (small models loop
otherwise), flat strings for dates and Literal enums (llama.cpp's grammar converter handles these well).
Validation is lenient (coercion, defaults, truncation) while the advertised JSON schema is strict (all keys
required, no extra keys), so constrained decoders produce complete objects and unconstrained ones are still
accepted when they are merely sloppy.

The class names ``_Entity``, ``_Rel`` and ``_Fact`` are part of the schema sent to the model (its ``$defs``
keys): renaming them changes every prompt.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..llm.base import LLM_SCHEMA_CONFIG
from ..models import EntityType

__all__ = ["AnyFact", "output_model"]

_NETWORKS = ("world", "experience", "opinion")
_ENTITY_TYPES = tuple(t.value for t in EntityType)
_CAUSAL_TYPES = ("causes", "caused_by", "enables", "prevents")

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


class _LeanFact(BaseModel):
    """A fact as the lean schema asks for it: its text and sources only. Dates come from the time words the text
    keeps ("yesterday", "next June"), resolved by ``hindsight_core.temporal`` against the source message's time;
    entities from NER on the text, participants from the source messages' speakers and the network from the voice
    (``normalise``). The model writes well under half the tokens per fact."""

    model_config = _SCHEMA_CONFIG

    text: str = ""
    src: list[str] = Field(default_factory=list, max_length=4)

    @field_validator("text", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        return _as_str(v)

    @field_validator("src", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        v = _as_str_list(v)
        return v[:4] if isinstance(v, list) else v


AnyFact = _Fact | _LeanFact
"""What ``normalise`` reads: the full schema's fact or the lean one's (absent fields read as empty)."""


@lru_cache(maxsize=16)
def output_model(max_facts: int, lean: bool = False) -> type[BaseModel]:
    """The top-level answer model; built per bound because ``maxItems`` depends on ``max_facts``. ``lean`` asks
    for text and sources only (``_LeanFact``)."""
    fact_type: type[BaseModel] = _LeanFact if lean else _Fact

    class Facts(BaseModel):
        model_config = _SCHEMA_CONFIG

        facts: list[fact_type] = Field(default_factory=list, max_length=max_facts)  # type: ignore[valid-type]  # chosen at build time

        @field_validator("facts", mode="before")
        @classmethod
        def _truncate(cls, v: Any) -> Any:
            return v[:max_facts] if isinstance(v, list) else [] if v is None else v

    return Facts

