"""Any sentence-transformers model already on this machine: a local folder, or a model name in the Hugging Face
cache. Nothing is downloaded: a model that is not here is an ``EmbedderUnavailableError`` saying what is missing.

Spec form for ``make_embedder``/``HINDSIGHT_EMBEDDER``: ``st:FOLDER`` or ``st:ORG/NAME`` (a bare existing folder
works too). Recorded as ``st:ORG/NAME`` for a cached model and ``st:FOLDER_NAME`` for a folder (with its parent's
name when the folder's own is generic, like the bundled MiniLM's ``model``), so that the name stays the same when
the folder moves. Vectors are float32 (what sentence-transformers itself computes), loaded lazily;
``sentence_transformers`` is imported only when the model is first used.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..errors import EmbedderUnavailableError, InvalidInputError
from .sentence_transformer import ST_PIP_COMMAND, SentenceTransformerEmbedder

_GENERIC_FOLDERS = frozenset({"model", "models", "weights", "checkpoint", "final", "output", "default"})
_MARKERS = ("modules.json", "config_sentence_transformers.json", "config.json")


def folder_identity(folder: Path) -> str:
    """The name a folder's model is recorded under (without ``st:``): ``ORG/NAME`` for a Hugging Face cache
    snapshot (``models--ORG--NAME/snapshots/<hash>``), else the folder's name, prefixed by its parent's name
    when the folder's own is generic."""
    parts = folder.resolve().parts
    for part in reversed(parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    if folder.name.lower() in _GENERIC_FOLDERS and folder.parent.name:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


def _check_folder(folder: Path) -> None:
    if not any((folder / marker).is_file() for marker in _MARKERS):
        raise EmbedderUnavailableError(f"{folder} is not a sentence-transformers model folder: it has none of "
                                       f"{', '.join(_MARKERS)}")


def cached_folder(model_id: str) -> Path | None:
    """The local Hugging Face cache snapshot of ``model_id`` (also tried as ``sentence-transformers/ID``), or None.

    Only the cache is read (``try_to_load_from_cache``): no network, no download.
    """
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    from huggingface_hub import try_to_load_from_cache

    candidates = [model_id] if "/" in model_id else [model_id, f"sentence-transformers/{model_id}"]
    for repo in candidates:
        for marker in ("modules.json", "config.json"):
            try:
                found = try_to_load_from_cache(repo, marker)
            except ValueError:  # not a valid repo id
                break
            if isinstance(found, str):
                return Path(found).parent
    return None


def _hf_cache_dir() -> str:
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except ImportError:
        return "~/.cache/huggingface/hub"


def st_embedder(ref: str, *, name: str | None = None, precision: str = "float32") -> SentenceTransformerEmbedder:
    """A sentence-transformers embedder for a local folder or a cached model name (see the module docstring).

    Raises ``EmbedderUnavailableError`` when sentence-transformers is not installed (naming the pip command) or
    the model is not on this machine (naming the folder or cache looked in).
    """
    ref = ref.strip()
    if not ref:
        raise InvalidInputError("st: needs a model folder or name (st:FOLDER or st:ORG/NAME)")
    if any(importlib.util.find_spec(m) is None for m in ("torch", "sentence_transformers")):
        raise EmbedderUnavailableError(f"sentence-transformers models need the sentence-transformers package; "
                                       f"install with: {ST_PIP_COMMAND}")
    path = Path(ref).expanduser()
    if path.is_dir():
        _check_folder(path)
        folder, identity = path.resolve(), folder_identity(path)
    elif path.is_absolute() or ref.startswith((".", "~")) or ref.count("/") > 1:
        raise EmbedderUnavailableError(f"sentence-transformers folder {ref!r} does not exist")
    else:
        cached = cached_folder(ref)
        if cached is None:
            raise EmbedderUnavailableError(
                f"sentence-transformers model {ref!r} is not on this machine: no folder of that name here and not "
                f"in the Hugging Face cache ({_hf_cache_dir()}). Nothing is downloaded at run time: fetch it "
                f"where a network is reachable (huggingface-cli download {ref}) and pass st:FOLDER"
            )
        folder, identity = cached, ref
    return SentenceTransformerEmbedder(str(folder), name=name or f"st:{identity}", precision=precision)
