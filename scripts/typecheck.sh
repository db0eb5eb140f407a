#!/usr/bin/env bash
# Type-check the engine and both adapters with mypy (configured in pyproject.toml).
# The engine's folder is core/ but its import name is hindsight_core (setuptools package-dir): mypy cannot follow
# the editable install's import hook, so it reads the package through a symlink under build/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/typecheck
ln -sfn ../../core build/typecheck/hindsight_core
MYPYPATH=build/typecheck .venv/bin/mypy --cache-dir build/mypy-cache \
    -p hindsight_core -p langchain_hindsight -p llama_index_hindsight "$@"
