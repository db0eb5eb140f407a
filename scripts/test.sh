#!/usr/bin/env bash
# One command from a fresh clone: install everything, start the servers the tests use, run lint and tests.
# The servers (ArcadeDB with its Neo4j-compatible Bolt endpoint, and a Chroma server, started by the test support
# launcher tests/support/servers.py) run on free loopback ports for this run only; their addresses reach pytest as
# NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD/NEO4J_DATABASE, ARCADEDB_HTTP_URL, CHROMA_HOST and CHROMA_PORT, and they are
# stopped on exit (also on failure or Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# apt-get that waits while another apt or dpkg process holds a lock instead of failing at once (exit 100):
# DPkg::Lock::Timeout makes it wait for dpkg's lock; the package lists' and the archives' locks (a concurrent
# "apt-get update" or download) are not covered by it (apt 2.6), so a run that could not get a lock is tried again
# every 5 s, for up to 10 minutes in all.
APT_LOCK_WAIT_S="${APT_LOCK_WAIT_S:-600}"
apt_get() {
    local waited=0 rc err
    err="$(mktemp)"
    while true; do
        rc=0
        $SUDO apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" "$@" 2> "$err" || rc=$?
        if [ "$rc" = 0 ] || ! grep -q "Could not get lock" "$err" || [ "$waited" -ge "$APT_LOCK_WAIT_S" ]; then
            cat "$err" >&2
            rm -f "$err"
            return "$rc"
        fi
        [ "$waited" != 0 ] || echo "apt is busy (another process holds its lock): waiting" >&2
        sleep 5
        waited=$((waited + 5))
    done
}
# A real browser for the memory explorer's page tests: Debian's chromium and its chromedriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    apt_get update -qq && apt_get install -y -qq chromium chromium-driver >/dev/null
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
# Let Python cache the bytecode of what it imports: uv installs without .pyc files, and under PYTHONDONTWRITEBYTECODE
# (set on CI's machines) every test process, notebook kernel and subprocess compiled transformers, chromadb, LangChain
# and LlamaIndex from source again (13.5 s against 9.4 s to import them; about a minute of a clean clone's run).
unset PYTHONDONTWRITEBYTECODE
# Two pytest workers on two cores: each worker's PyTorch runs one OpenMP thread, so a worker's model batches do not
# preempt the other worker's llama.cpp thread (the real-LLM tests are most of the suite's time). Override to measure.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/ruff check core langchain_hindsight llama_index_hindsight benchmarks tests scripts

SERVERS_DIR="$(mktemp -d -t hindsight-servers.XXXXXX)"
stop_servers() {
    if [ -n "${TYPECHECK_PID:-}" ]; then  # stopped early: mypy (the script's child) and the script
        pkill -P "$TYPECHECK_PID" 2>/dev/null || true
        kill "$TYPECHECK_PID" 2>/dev/null || true
    fi
    .venv/bin/python tests/support/servers.py stop --dir "$SERVERS_DIR" || true
    rm -rf "$SERVERS_DIR"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM
# mypy (a minute of CPU from a cold cache) runs beside the servers' start and the tests at the lowest priority, so it
# fills the time a core waits (server start-up, processes the tests wait on, the last worker's tail) without taking
# a core from the local model's one thread; its verdict is read at the end.
nice -n 19 bash scripts/typecheck.sh > "$SERVERS_DIR/typecheck.log" 2>&1 &
TYPECHECK_PID=$!
# Assigned first, then evaluated: a failed start stops the script (set -e does not see inside eval "$(...)").
SERVER_EXPORTS="$(.venv/bin/python tests/support/servers.py start --dir "$SERVERS_DIR")"
eval "$SERVER_EXPORTS"
echo "servers: graph $NEO4J_URI (database $NEO4J_DATABASE), vectors http://$CHROMA_HOST:$CHROMA_PORT" >&2

# Two workers (HINDSIGHT_TEST_WORKERS, 0 for one process), a test file to each at a time: the local model runs on
# one thread and many tests wait on other processes, so two workers use both cores (three were faster on a warm
# checkout but slower from a clean clone: 13:12 against 12:31, the model's thread starved). tests/conftest.py sends the
# costliest files first; arguments given to this script come last and win (e.g. -n 0, -m "not slow").
TESTS_RC=0
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 \
    -n "${HINDSIGHT_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" || TESTS_RC=$?
TYPECHECK_RC=0
wait "$TYPECHECK_PID" || TYPECHECK_RC=$?
TYPECHECK_PID=""
cat "$SERVERS_DIR/typecheck.log"
if [ "$TYPECHECK_RC" != 0 ]; then
    echo "mypy failed (exit $TYPECHECK_RC)" >&2
fi
[ "$TESTS_RC" = 0 ] && [ "$TYPECHECK_RC" = 0 ] || exit $(( TESTS_RC ? TESTS_RC : TYPECHECK_RC ))
