#!/usr/bin/env bash
# One command from a fresh clone: install everything, then run the demo on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/hindsight demo "$@"
