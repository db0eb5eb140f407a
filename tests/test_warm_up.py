"""``Hindsight.warm_up``: the query model the first recall would load is loaded before it, with the real default
embedder; a failure in the background warm-up is logged, never raised into the process."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from hindsight_core import Hindsight
from hindsight_core.embedders.onnx_base import OnnxEncoderEmbedder


def test_warm_up_loads_the_query_session_the_first_recall_would_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OnnxEncoderEmbedder, "_sessions", {})  # as in a fresh process: nothing loaded yet
    with Hindsight.open(None, start_worker=False, embedder="mpnet-int8") as hs:  # the README install's default
        assert isinstance(hs.embedder, OnnxEncoderEmbedder)
        query_key = (hs.embedder.model_path, hs.embedder.query_threads)
        assert query_key not in OnnxEncoderEmbedder._sessions
        hs.warm_up()
        assert query_key in OnnxEncoderEmbedder._sessions
        bank = hs.bank("warm")
        bank.retain("Ana moved to Porto last month.", extract=False)  # loads the documents' session, not the query's
        loaded = dict(OnnxEncoderEmbedder._sessions)
        assert [m.text for m in bank.recall("Where does Ana live?").memories] == ["Ana moved to Porto last month."]
        assert OnnxEncoderEmbedder._sessions == loaded  # the recall loaded nothing more: its query session was ready


class _Reranker:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [0.0] * len(texts)


class _Broken:
    name = "broken"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("model file unreadable")


def test_warm_up_loads_a_reranker_too_and_a_failed_background_warm_up_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reranker = _Reranker()
    with Hindsight.open(None, start_worker=False, reranker=reranker) as hs:
        hs.warm_up()
        assert len(reranker.calls) == 1
    with Hindsight.open(None, start_worker=False, embedder=_Broken()) as hs, caplog.at_level(logging.WARNING):
        with pytest.raises(RuntimeError):
            hs.warm_up()  # called directly, the failure is the caller's
        hs.warm_up_in_background().join(10)
        assert any("warm-up failed" in r.getMessage() and "model file unreadable" in r.getMessage()
                   for r in caplog.records)
