"""How the PyTorch embedder runs batches: in forward passes bounded by tokens, and in bfloat16 on CPUs with native
bf16; neither changes what a bank would notice (the vectors of ``encode()`` in float32)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hindsight_core.embedders import SentenceTransformerEmbedder, SplitEmbedder, make_embedder
from hindsight_core.embedders import sentence_transformer as st
from hindsight_core.embedders.sentence_transformer import token_batches

TURNS = [
    "Maya: I finally adopted a dog last weekend, a beagle called Pepper!",
    "Jonah: That's wonderful. How is she settling in?",
    "Maya: Chewing everything. We went to the vet on Tuesday for her shots.",
    "Jonah: I started a new job at the bakery on Elm Street, early shifts but I love it.",
    "Maya: Green tea for me, I gave up coffee in March.",
    "Jonah: We should go hiking near Lake Tahoe in June, like we did in 2022.",
    "Maya: Sounds good.",
    "Jonah: Clara said she might join us if her exams are over by then, she is studying medicine in Lisbon.",
] * 3


@pytest.mark.parametrize(("flags", "native"), [
    ("flags\t\t: fpu sse avx2 avx512f avx512_vnni avx512_bf16 vaes", True),  # AMD Zen 4, Intel Cooper Lake
    ("flags\t\t: fpu avx512f amx_bf16 amx_tile amx_int8", True),  # Intel Sapphire Rapids
    ("flags\t\t: fpu sse avx2 avx512f avx512_vnni", False),  # VNNI (int8) is not bf16
    ("flags\t\t: fpu avx2 avx512_bf16x", False),  # whole words only
    ("flags\t\t:", False),
])
def test_native_bf16_reads_the_flags_line(flags: str, native: bool) -> None:
    assert st._has_bf16(flags) is native


def test_native_bf16_is_read_from_cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx512f avx512_bf16\n\n")
    real_path = st.Path

    def fake_path(name: str) -> object:
        return cpuinfo if name == "/proc/cpuinfo" else real_path(name)

    monkeypatch.setattr(st, "Path", fake_path)
    st.native_bf16.cache_clear()
    try:
        assert st.native_bf16()
        cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2\n")
        st.native_bf16.cache_clear()
        assert not st.native_bf16()
    finally:
        monkeypatch.undo()
        st.native_bf16.cache_clear()


def test_minilm_fp32_is_float32_whatever_the_cpu() -> None:
    fp32 = make_embedder("minilm-fp32")
    assert isinstance(fp32, SentenceTransformerEmbedder) and fp32.precision == "float32" and not fp32.bf16
    default = make_embedder("minilm")
    documents = default.documents if isinstance(default, SplitEmbedder) else default
    assert isinstance(documents, SentenceTransformerEmbedder) and documents.precision == "auto"
    assert documents.bf16 == st.native_bf16()


def test_bf16_batches_are_the_float32_vectors() -> None:
    # bfloat16 autocast keeps layer norms, softmax and pooling in float32: measured on 1,422 passages of ~200
    # tokens (the 1 MB long-inputs text), cosine to float32 0.99998 mean, 0.99996 minimum.
    texts = TURNS
    fp32 = SentenceTransformerEmbedder(precision="float32").embed(texts)
    bf16 = SentenceTransformerEmbedder(precision="bfloat16").embed(texts)
    assert bf16.dtype == np.float32 and bf16.shape == fp32.shape
    assert np.allclose(np.linalg.norm(bf16, axis=1), 1.0, atol=1e-4)
    assert float((fp32 * bf16).sum(axis=1).min()) >= 0.9999


def _texts() -> list[str]:
    long = "Maya walked Pepper along the river before work and then met Jonah for coffee. " * 40  # > 256 tokens
    return ["ok", *TURNS, long, "", "Ünïcödé résumé, 東京 and emoji 🎨", long[:900], "  spaced  "]


def test_token_batches_bound_texts_and_padded_tokens() -> None:
    lengths = [5, 200, 30, 256, 7, 200, 31, 1, 90]
    batches = token_batches(lengths, max_texts=3, max_tokens=450)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each text once
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths, reverse=True)  # longest first: each pass pads to its first text
    assert all(len(b) <= 3 and len(b) * lengths[b[0]] <= 450 for b in batches)
    assert token_batches([300, 10], max_texts=8, max_tokens=100) == [[0], [1]]  # too long alone: a pass alone
    assert token_batches([], max_texts=8, max_tokens=100) == []


def test_batches_give_the_vectors_of_encode_in_the_callers_order() -> None:
    texts = _texts()
    emb = SentenceTransformerEmbedder(precision="float32", batch_size=8, batch_tokens=300)  # many small passes
    direct = emb.embed(texts)
    reference = emb.model.encode(texts, batch_size=128, normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)
    assert direct.dtype == np.float32 and direct.shape == (len(texts), 384)
    assert float((direct * reference).sum(axis=1).min()) > 0.99999
    one_pass = SentenceTransformerEmbedder(precision="float32", batch_tokens=10**6).embed(texts)
    assert float((direct * one_pass).sum(axis=1).min()) > 0.99999
    with pytest.raises(ValueError, match="batch_tokens"):
        SentenceTransformerEmbedder(batch_tokens=0)
