"""``OnnxEncoderEmbedder``: a sentence-transformers encoder run as an ONNX graph on onnxruntime.

What the int8 MiniLM and the ONNX mpnet share: the ``tokenizers`` tokenizer of the original model (cut where
its ``max_seq_length`` cuts, padded per batch), mean pooling over the attention mask and L2 normalisation (what
both models' sentence-transformers configs say), length-sorted batches, and sessions cached per (file, threads)
for the whole process. A subclass says where the graph and the tokenizer are, how wide the vectors are, and
how a missing file is reported; the graph's inputs are read from the graph (``token_type_ids`` only if it has
one: BERT's MiniLM does, mpnet does not).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import EmbedderUnavailableError


class OnnxEncoderEmbedder:
    """Base of the onnxruntime embedders (see the module note); subclasses set the class attributes below
    and implement ``model_path`` and ``tokenizer_path``.

    Queries (``embed_query``) run in a session with ``query_threads`` intra-op threads (default 1: on 2 cores
    a second thread made a single MiniLM query slower, 7.6 vs 4.2 ms p50 under load, and took the core recall's
    keyword search runs on). Batches (``embed``) run in a session with ``batch_threads`` threads, the texts
    sorted by length so that each batch pads little (unsorted batches ran at half the speed); a call of at
    least ``wide_from`` texts (a long text's passages) uses ``wide_threads`` (default 2: its embedding outlasts
    NER by far, and on one thread the second core idled). Sessions and tokenizers are loaded on first use and
    shared by every instance in the process; ``onnxruntime`` sessions are safe to call from several threads.
    """

    MAX_TOKENS: ClassVar[int] = 256
    """Where the original model stops reading (its ``max_seq_length``): longer texts are cut alike."""

    DIMENSION: ClassVar[int] = 384
    """Vector size."""

    NAME: ClassVar[str] = ""
    """The recorded name when none is given (the original model's: the vectors are in its space)."""

    LABEL: ClassVar[str] = "the ONNX embedder"
    """How messages name the model."""

    PIP_COMMAND: ClassVar[str] = "pip install onnxruntime"
    """What a message about a missing package tells the user to run."""

    _sessions: ClassVar[dict[tuple[str, int], Any]] = {}
    _tokenizers: ClassVar[dict[str, Any]] = {}
    _pad_ids: ClassVar[dict[str, int]] = {}
    _input_names: ClassVar[dict[str, tuple[str, ...]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        *,
        name: str | None = None,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        query_threads: int = 1,
        batch_threads: int = 1,
        batch_size: int = 32,
        wide_threads: int = 2,
        wide_from: int = 128,
    ) -> None:
        """``name`` is what a bank records (``NAME`` by default); ``model_path``/``tokenizer_path`` default to the
        subclass's files."""
        if min(query_threads, batch_threads, wide_threads, batch_size, wide_from) < 1:
            raise ValueError("thread counts, batch_size and wide_from must be at least 1")
        self._name = name if name is not None else self.NAME
        self._model_path = str(model_path) if model_path is not None else None
        self._tokenizer_path = str(tokenizer_path) if tokenizer_path is not None else None
        self.query_threads = query_threads
        self.batch_threads = batch_threads
        self.batch_size = batch_size
        self.wide_threads = wide_threads
        self.wide_from = wide_from

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r})"

    @property
    def name(self) -> str:
        """The recorded name (the original model's: the vectors are in its space)."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector size (``DIMENSION``)."""
        return self.DIMENSION

    @property
    def model_path(self) -> str:
        """The ONNX file (subclasses locate their default)."""
        if self._model_path is None:
            raise EmbedderUnavailableError(f"{type(self).__name__} needs a model_path")
        return self._model_path

    @property
    def tokenizer_path(self) -> str:
        """The original model's ``tokenizer.json`` (subclasses locate their default)."""
        if self._tokenizer_path is None:
            raise EmbedderUnavailableError(f"{type(self).__name__} needs a tokenizer_path")
        return self._tokenizer_path

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch (documents): length-sorted batches of ``batch_size`` on ``batch_threads`` threads
        (``wide_threads`` from ``wide_from`` texts)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) == 1:
            return self.embed_query(texts)
        session = self._session(self.wide_threads if len(texts) >= self.wide_from else self.batch_threads)
        tokenizer = self._tokenizer()
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=True)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run(session, [encodings[i] for i in chunk])
        return out

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries on ``query_threads`` threads (one by default), in a single pass."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session = self._session(self.query_threads)
        return self._run(session, self._tokenizer().encode_batch(list(texts), add_special_tokens=True))

    def _run(self, session: Any, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_ids.get(self.tokenizer_path, 0), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):  # padded here: the batch is re-cut after sorting by length
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        names = self._input_names.get(self.model_path) or tuple(i.name for i in session.get_inputs())
        hidden = session.run(None, {n: feeds[n] for n in names})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _tokenizer(self) -> Any:
        path = self.tokenizer_path
        tok = self._tokenizers.get(path)
        if tok is None:
            with self._lock:
                tok = self._tokenizers.get(path)
                if tok is None:
                    from tokenizers import Tokenizer

                    tok = Tokenizer.from_file(path)
                    # The files pad every text to 128 tokens and cut at 128; the original models read up to
                    # MAX_TOKENS and pad per batch. Padding is done in _run (with the file's pad id: mpnet's
                    # position ids skip it); truncation matches the original model.
                    self._pad_ids[path] = int((tok.padding or {}).get("pad_id", 0))
                    tok.no_padding()
                    tok.enable_truncation(max_length=self.MAX_TOKENS)
                    self._tokenizers[path] = tok
        return tok

    def _session(self, threads: int) -> Any:
        path = self.model_path
        key = (path, threads)
        session = self._sessions.get(key)
        if session is None:
            with self._lock:
                session = self._sessions.get(key)
                if session is None:
                    session = self._load(path, threads)
                    self._sessions[key] = session
                    self._input_names[path] = tuple(i.name for i in session.get_inputs())
        return session

    def _check_file(self, path: str) -> None:
        """Raise ``EmbedderUnavailableError`` if ``path`` is missing or not the file expected (a hook)."""
        if not Path(path).is_file():
            raise EmbedderUnavailableError(f"{self.LABEL} model not found: {path}; install with: {self.PIP_COMMAND}")

    def _load(self, path: str, threads: int) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"{self.LABEL} needs onnxruntime; install with: {self.PIP_COMMAND}") from exc
        self._check_file(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads spin by default (like OpenMP's, see sentence_transformer.py): on a shared 2-core
        # machine that steals the core other work needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
