"""The embedder's small-batch path (recall's query) gives the vectors encode() gives, on one thread only."""

from __future__ import annotations

import threading

import numpy as np
import torch

from hindsight_core.embedders.sentence_transformer import SentenceTransformerEmbedder, _plain_mean_pooling

TEXTS = ["What did Melanie paint?", "Caroline went to an LGBTQ support group yesterday and it was powerful.",
         "Ünïcödé résumé, 東京 and emoji 🎨", ""]


def test_small_batches_match_encode_and_restore_threads() -> None:
    emb = SentenceTransformerEmbedder(precision="float32")
    assert _plain_mean_pooling(emb.model)  # the bundled MiniLM takes the direct path
    reference = SentenceTransformerEmbedder(precision="float32", small_batch=0).embed(TEXTS)
    before = torch.get_num_threads()
    one = np.vstack([emb.embed([t]) for t in TEXTS])
    together = emb.embed(TEXTS)
    assert torch.get_num_threads() == before  # the caller's thread count is restored
    assert one.dtype == np.float32 and one.shape == (len(TEXTS), emb.dimension)
    assert np.allclose(np.linalg.norm(one, axis=1), 1.0, atol=1e-5)
    assert float((one * reference).sum(axis=1).min()) > 0.99999  # padding aside, the same computation
    assert float((together * reference).sum(axis=1).min()) > 0.99999


def test_small_batch_thread_setting_stays_in_the_calling_thread() -> None:
    emb = SentenceTransformerEmbedder(precision="float32")
    emb.embed(["warm up"])
    seen: list[int] = []
    done = threading.Event()

    def other() -> None:
        seen.append(torch.get_num_threads())
        done.set()

    main = torch.get_num_threads()
    worker = threading.Thread(target=lambda: (emb.embed(["in a worker"]), other()))
    worker.start()
    worker.join()
    assert done.is_set() and seen == [main] and torch.get_num_threads() == main


def test_the_bundled_model_keeps_its_name_after_loading() -> None:
    emb = SentenceTransformerEmbedder(precision="float32")
    assert emb.model_path  # resolving the bundled path first must not make the path the recorded name
    assert emb.name == "all-MiniLM-L6-v2" and emb.dimension == 384
    assert SentenceTransformerEmbedder(emb.model_path).name == emb.model_path  # a given path names itself
