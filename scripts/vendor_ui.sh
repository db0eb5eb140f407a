#!/usr/bin/env bash
# Re-vendor the memory explorer's browser libraries from npm into core/explorer/static/vendor/ (the page loads
# nothing from anywhere else at run time). Each package is fetched with `npm pack` at an exact version, its
# tarball checked against the sha256 recorded here, and one dist file copied with its licence. Run it after
# changing a version (then update the sha256 and core/explorer/static/vendor/VENDORED.md).
set -euo pipefail
cd "$(dirname "$0")/.."
VENDOR=core/explorer/static/vendor
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# name version tarball-sha256 file-in-package destination
PACKAGES=(
    "cytoscape 3.35.0 058a81a7534777ea68dc737e9b77bd5b701e00acd9bee246245a576eeeac32e6 dist/cytoscape.esm.min.mjs cytoscape.esm.min.js"
    "uplot 1.6.32 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d dist/uPlot.esm.js uplot.esm.js"
    "uplot 1.6.32 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d dist/uPlot.min.css ../css/uplot.min.css"
    "axe-core 4.11.0 39bed7d72308f6d620789c169d699bfd7e8da80f65b545821a6b2215c3e83107 axe.min.js axe-core.min.js"
)

mkdir -p "$VENDOR"
for entry in "${PACKAGES[@]}"; do
    read -r name version sha file dest <<<"$entry"
    tarball="$WORK/$name-$version.tgz"
    if [ ! -f "$tarball" ]; then  # one package may give several files
        (cd "$WORK" && npm pack --silent "$name@$version" >/dev/null)
        echo "$sha  $tarball" | sha256sum --check --quiet
        mkdir -p "$WORK/$name"
        tar -xzf "$tarball" -C "$WORK/$name"
    fi
    # The ES module build is served as .js: every Python's mimetypes maps .js to JavaScript, not all map .mjs.
    cp "$WORK/$name/package/$file" "$VENDOR/$dest"
    cp "$WORK/$name/package/LICENSE" "$VENDOR/$name.LICENSE"
    echo "$VENDOR/$dest  <- $name@$version/$file  sha256 $(sha256sum "$VENDOR/$dest" | cut -d' ' -f1)"
done
