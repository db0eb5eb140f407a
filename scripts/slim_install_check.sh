#!/usr/bin/env bash
# The plain install, for real: "pip install hindsight-memory" with no extras into a fresh venv, then
# tests/support/slim_check.py there (import, open, raw retain, recall, and the errors that name the missing extras),
# checking that torch is neither installed nor imported; prints the venv's size and the timings (README, "Install
# only what you use"). --full also builds a venv the way scripts/install.sh does (torch==2.13.0, then .[all]) and
# times the same import, retain and recall there (--full-only: that alone). Minutes (pip): not in scripts/test.sh.
#   bash scripts/slim_install_check.sh [--full | --full-only] [WORK_FOLDER]
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${PYTHON:-python3}"
FULL=0
PLAIN=1
case "${1:-}" in
    --full) FULL=1; shift ;;
    --full-only) FULL=1; PLAIN=0; shift ;;
esac
WORK="${1:-$(mktemp -d /tmp/hindsight-slim.XXXXXX)}"
mkdir -p "$WORK"
# Build from a copy: pip builds a local folder in place, and the checkout may be shared.
rm -rf "$WORK/tree"
"$PY" - "$WORK/tree" <<'EOF'
import shutil, sys
shutil.copytree(".", sys.argv[1], ignore=shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache",
    ".hypothesis", "results", "memory", "log", ".cache", "benchmarks", "notebooks"))
EOF

measure() {  # measure VENV LABEL [slim_check.py flags]: size, then slim_check.py timings (3 fresh processes)
    local venv="$1" label="$2" site
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$label: site-packages $(du -sm "$site" | cut -f1) MB"
    for run in 1 2 3; do
        rm -rf "$WORK/store-$label"
        (cd "$WORK" && env -u HINDSIGHT_EMBEDDER -u HINDSIGHT_LLM_BASE_URL HINDSIGHT_CACHE_DIR="$WORK/cache" \
            "$venv/bin/python" "$REPO/tests/support/slim_check.py" "$WORK/store-$label" "${@:3}") \
            | tail -n 1 > "$WORK/report-$label-$run.json"
    done
    "$venv/bin/python" - "$WORK" "$label" <<'EOF'
import json, statistics, sys
work, label = sys.argv[1], sys.argv[2]
runs = [json.load(open(f"{work}/report-{label}-{i}.json")) for i in (1, 2, 3)]
med = {k: statistics.median(r[k] for r in runs) for k in ("import_s", "first_retain_s", "first_recall_s")}
print(f"{label}: embedder {runs[0]['embedder']}; median of 3 processes: import {med['import_s']:.2f} s, "
      f"open + first retain {med['first_retain_s']:.2f} s, first recall {med['first_recall_s']:.3f} s")
heavy = sorted({m.partition(".")[0] for m in runs[0]["heavy_imported"]})
print(f"{label}: top memory: {runs[0]['memories'][0]!r}; heavy packages imported: {heavy}")
for name, got in runs[0].get("missing", {}).items():
    print(f"{label}: {name} -> {got['error']}: {got['message'][:160]}")
EOF
}

if [ "$PLAIN" = 1 ]; then
SLIM="$WORK/venv-slim"
rm -rf "$SLIM"
"$PY" -m venv "$SLIM"
start=$SECONDS
"$SLIM/bin/python" -m pip install --quiet "$WORK/tree"
echo "plain: pip install took $((SECONDS - start)) s"
if "$SLIM/bin/python" -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") else 1)'; then
    echo "FAIL: the plain install installed torch" >&2
    exit 1
fi
measure "$SLIM" plain
for run in 1 2 3; do
    "$SLIM/bin/python" - "$WORK/report-plain-$run.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ok = (r["heavy_imported"] == [] and r["embedder"] == "OnnxMiniLMEmbedder" and "Lisbon" in r["memories"][0]
      and all(v["error"] != "none" and "hindsight-memory[" in v["message"] for v in r["missing"].values()))
sys.exit(0 if ok else f"FAIL: {sys.argv[1]}")
EOF
done
echo "plain: OK (no torch installed or imported; retain and recall work; missing extras named)"
fi

if [ "$FULL" = 1 ]; then
    FULLV="$WORK/venv-full"
    rm -rf "$FULLV"
    "$PY" -m venv "$FULLV"
    start=$SECONDS
    "$FULLV/bin/python" -m pip install --quiet "torch==2.13.0"
    "$FULLV/bin/python" -m pip install --quiet "$WORK/tree[all]"
    echo "full: pip install took $((SECONDS - start)) s"
    measure "$FULLV" full --no-missing
fi
