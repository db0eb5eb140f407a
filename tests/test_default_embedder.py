"""The default embedder (issue 40): ``mpnet-int8`` for new stores where it can run, MiniLM where it cannot (the plain
install), and a store keeps the built-in embedder its banks were built with, saying how to switch.

The rest of the suite pins ``HINDSIGHT_EMBEDDER=minilm`` (``conftest.py``) for speed; these tests lift the pin.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from hindsight_core import EmbedderMismatchError, Hindsight
from hindsight_core.cli.commands import main as cli_main
from hindsight_core.embedders import (
    DEFAULT_EMBEDDER,
    FALLBACK_EMBEDDER,
    EmbedderUnavailableError,
    OnnxMiniLMEmbedder,
    SplitEmbedder,
    default_embedder,
    make_embedder,
)
from hindsight_core.embedders.onnx_mpnet import OnnxMpnetEmbedder, mpnet_int8_available

MESSAGES = [
    {"speaker": "Ana", "text": "I moved to Porto last month, the flat is near the river.", "id": "m1"},
    {"speaker": "Ben", "text": "Our cat Miso knocked the plant off the shelf again.", "id": "m2"},
    {"speaker": "Ana", "text": "I left nursing, I'm a paramedic now.", "id": "m3"},
]


def _top(hs: Hindsight, question: str) -> str:
    return hs.bank("ana").recall(question, budget=200).memories[0].text


@pytest.fixture(autouse=True)
def _unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_EMBEDDER", raising=False)


def test_a_new_store_gets_mpnet_int8_and_records_it(tmp_path: Path) -> None:
    assert DEFAULT_EMBEDDER == "mpnet-int8" and mpnet_int8_available()  # the README's install builds it
    assert default_embedder() == "mpnet-int8"
    with Hindsight.open(tmp_path / "memory") as hs:
        assert isinstance(hs.embedder, OnnxMpnetEmbedder)
        assert (hs.embedder.name, hs.embedder.dimension) == ("all-mpnet-base-v2", 768)
        bank = hs.bank("ana")
        bank.retain(MESSAGES, extract=False)
        assert hs.index.collection_embedder("ana") == ("all-mpnet-base-v2", 768)  # type: ignore[attr-defined]
        top = bank.recall("What does Ana do for work now?", budget=300).memories[0]
        assert top.text == "Ana: I left nursing, I'm a paramedic now."
    with Hindsight.open(tmp_path / "memory") as hs:  # reopened without a name: the same embedder, no warning
        assert hs.embedder.name == "all-mpnet-base-v2"


def test_a_minilm_store_keeps_minilm_says_so_and_switches_with_reembed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "memory"
    with Hindsight.open(path, embedder="minilm") as hs:
        hs.bank("ana").retain(MESSAGES, extract=False)
        hs.bank("ben").retain(MESSAGES[1:2], extract=False)
    with caplog.at_level(logging.WARNING), Hindsight.open(path) as hs:
        assert isinstance(hs.embedder, SplitEmbedder) and hs.embedder.name == "all-MiniLM-L6-v2"
        assert _top(hs, "Where does Ana live?").startswith("Ana: I moved to Porto")
    warned = [r.getMessage() for r in caplog.records if "keeps it" in r.getMessage()]
    assert len(warned) == 1 and "hindsight reembed --all --embedder mpnet-int8" in warned[0], caplog.text
    assert cli_main(["--path", str(path), "reembed", "--all", "--embedder", "mpnet-int8", "--json"]) == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING), Hindsight.open(path) as hs:
        assert isinstance(hs.embedder, OnnxMpnetEmbedder)
        assert _top(hs, "Where does Ana live?").startswith("Ana: I moved to Porto")
    assert not [r for r in caplog.records if "keeps it" in r.getMessage()]


def test_a_named_embedder_is_never_overridden_by_the_record(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "memory"
    with Hindsight.open(path, embedder="minilm-int8") as hs:
        hs.bank("ana").retain(MESSAGES[:1], extract=False)
    with pytest.raises(EmbedderMismatchError, match="hindsight reembed"):
        Hindsight.open(path, embedder="mpnet-int8")
    monkeypatch.setenv("HINDSIGHT_EMBEDDER", "mpnet-int8")
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        Hindsight.open(path)


def test_banks_on_two_embedders_are_reported_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with Hindsight.open(path, embedder="minilm") as hs:
        hs.bank("ana").retain(MESSAGES[:1], extract=False)
        hs.bank("ben").retain(MESSAGES[1:2], extract=False)
    assert cli_main(["--path", str(path), "reembed", "ana", "--embedder", "mpnet-int8"]) == 0  # half switched
    with pytest.raises(EmbedderMismatchError, match="reembed"):
        Hindsight.open(path)  # the default (mpnet) meets the MiniLM bank: a clear error, not a silent choice


def test_the_plain_install_keeps_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    import hindsight_core.embedders.factory as factory

    monkeypatch.setattr(factory, "mpnet_int8_available", lambda: False)  # no torch to export the graph with
    assert default_embedder() == FALLBACK_EMBEDDER == "minilm"
    monkeypatch.setattr(factory, "st_available", lambda: False)
    assert isinstance(make_embedder(), OnnxMiniLMEmbedder)


def test_the_plain_install_opening_an_mpnet_store_says_what_to_install_without_a_keep_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import hindsight_core.embedders.factory as factory

    monkeypatch.setattr(factory, "mpnet_int8_available", lambda: False)
    with caplog.at_level(logging.WARNING):
        kept = factory.default_for_recorded({factory.MPNET_NAME})
    assert kept == "mpnet-int8" and "keeps it" not in caplog.text  # it cannot keep it here: the open says why
    with caplog.at_level(logging.WARNING):
        assert factory.default_for_recorded({factory.MINILM_NAME}) == "minilm"
    assert "keeps it" not in caplog.text  # the default here is MiniLM itself: nothing to switch to


def test_a_failed_build_falls_back_with_one_warning_not_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    import hindsight_core.embedders.factory as factory

    def broken() -> OnnxMpnetEmbedder:
        raise EmbedderUnavailableError("could not build the ONNX graph of all-mpnet-base-v2: disk full")

    monkeypatch.setitem(factory.EMBEDDERS, "mpnet-int8", broken)
    with caplog.at_level(logging.WARNING):
        made = make_embedder()
    assert made.name == "all-MiniLM-L6-v2"
    assert "disk full" in caplog.text and "using minilm" in caplog.text
    with pytest.raises(EmbedderUnavailableError, match="disk full"):  # named, it is not replaced
        make_embedder("mpnet-int8")


def test_availability_reads_the_cache_and_the_installed_packages(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    assert mpnet_int8_available(tmp_path)  # an empty cache: torch, onnx and the weight packages are installed
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert not mpnet_int8_available(tmp_path)  # nothing to export the graph with, and none cached
    assert mpnet_int8_available()  # the default cache holds the built graph and the folder


def test_mpnet_int8_query_and_document_vectors_share_a_space() -> None:
    embedder = make_embedder()
    docs = embedder.embed(["green tea for me", "the vet was closed", "I drink coffee in the morning"])
    query = embedder.embed_query(["What does she like to drink?"])[0]  # type: ignore[attr-defined]
    assert docs.shape == (3, 768) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert query @ docs[0] > query @ docs[1] and query @ docs[2] > query @ docs[1]
