#!/usr/bin/env bash
# One command from a fresh clone: install everything, start the servers the tests use, run lint and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
.venv/bin/ruff check core langchain_hindsight llama_index_hindsight tests scripts
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"
