#!/usr/bin/env bash
# One command from a fresh clone: install everything, start the servers the tests use, run lint and tests.
# The servers (ArcadeDB with its Neo4j-compatible Bolt endpoint, and a Chroma server, started by the test support
# launcher tests/support/servers.py) run on free loopback ports for this run only; their addresses reach pytest as
# NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD/NEO4J_DATABASE, ARCADEDB_HTTP_URL, CHROMA_HOST and CHROMA_PORT, and they are
# stopped on exit (also on failure or Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# A real browser for the memory explorer's page tests: Debian's chromium and its chromedriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
.venv/bin/ruff check core langchain_hindsight llama_index_hindsight benchmarks tests scripts
bash scripts/typecheck.sh

SERVERS_DIR="$(mktemp -d -t hindsight-servers.XXXXXX)"
stop_servers() {
    .venv/bin/python tests/support/servers.py stop --dir "$SERVERS_DIR" || true
    rm -rf "$SERVERS_DIR"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM
# Assigned first, then evaluated: a failed start stops the script (set -e does not see inside eval "$(...)").
SERVER_EXPORTS="$(.venv/bin/python tests/support/servers.py start --dir "$SERVERS_DIR")"
eval "$SERVER_EXPORTS"
echo "servers: graph $NEO4J_URI (database $NEO4J_DATABASE), vectors http://$CHROMA_HOST:$CHROMA_PORT" >&2

.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"
