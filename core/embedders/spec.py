"""Embedders from a string other than a built-in name: what ``make_embedder`` and ``HINDSIGHT_EMBEDDER`` accept.

| spec | embedder |
|---|---|
| ``st:FOLDER`` / ``st:ORG/NAME`` / an existing folder | a sentence-transformers model on this machine (``st_model``) |
| ``openai:URL#MODEL`` | an OpenAI-compatible ``/embeddings`` endpoint (``openai_compat``) |
| ``module:attr`` (``module.sub:attr.attr``) | the object there (a factory is called with no arguments), then |
|  | as ``make_embedder`` takes objects: an ``Embedder``, a LangChain or LlamaIndex embedding object |

The ``module:attr`` form lets a command line (``hindsight bench embedders --embedder``) or the environment
name an embedder built in the user's own code, e.g. ``myapp.models:embeddings``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from ..errors import EmbedderUnavailableError, InvalidInputError
from .base import Embedder
from .openai_compat import OpenAICompatibleEmbedder
from .st_model import st_embedder
from .wrapped import embedder_from_object, kind_of

SPEC_FORMS = ("st:FOLDER", "st:ORG/NAME", "openai:URL#MODEL", "module:attr")
"""The spec forms, for error messages."""

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def embedder_from_spec(spec: str, *, name: str | None = None) -> Embedder | None:
    """The embedder a spec names (see the module's table), or None when ``spec`` has none of the forms."""
    if spec.startswith("st:"):
        return st_embedder(spec[3:], name=name)
    if spec.startswith("openai:"):
        return OpenAICompatibleEmbedder.from_spec(spec[len("openai:"):], name=name)
    if _IMPORT_PATH.match(spec):
        return embedder_from_object(load_object(spec), name=name)
    if ("/" in spec or spec.startswith((".", "~"))) and Path(spec).expanduser().is_dir():
        return st_embedder(spec, name=name)
    return None


def load_object(spec: str) -> Any:
    """The object at ``module:attr``; a callable that is not itself an embedding object is called (a factory)."""
    module_name, _, attr_path = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise EmbedderUnavailableError(f"cannot import {module_name!r} for embedder {spec!r}: {exc}") from exc
    for attr in attr_path.split("."):
        if not hasattr(obj, attr):
            raise InvalidInputError(f"embedder {spec!r}: {type(obj).__name__} {module_name!r} has no {attr!r}")
        obj = getattr(obj, attr)
    if callable(obj) and kind_of(obj) is None and not callable(getattr(obj, "embed", None)):
        try:
            obj = obj()
        except TypeError as exc:
            raise InvalidInputError(f"embedder {spec!r}: a factory must take no arguments ({exc})") from exc
    return obj
