#!/usr/bin/env bash
# Runs the MCP conformance suite (@modelcontextprotocol/conformance) against `/mcp` of a real
# `reagent serve --demo` (in-process demo model, no API keys, a throw-away SQLite database),
# with the expected failures of tests/peers/mcp-conformance-baseline.yml (each with its reason).
#
#   scripts/mcp_conformance.sh [extra conformance args…, e.g. --scenario ping]
#
# The suite needs Node >= 22: Node (the `node` npm package) and the suite are installed, pinned,
# under ~/.cache/reagent-conformance on the first run (about 30 s), then reused.
# Environment:
#   REAGENT_BIN  the binary (default: $CARGO_TARGET_DIR or target, /debug/reagent; built if absent)
#   MCP_CONFORMANCE_RESULTS  a directory to keep the suite's checks.json files in
# Exit status: the suite's (0 = every scenario passed or failed as the baseline expects).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22.23.3
SUITE_VERSION=0.1.16
CACHE=${REAGENT_CONFORMANCE_DIR:-$HOME/.cache/reagent-conformance}/node-$NODE_VERSION-suite-$SUITE_VERSION
if [[ ! -x $CACHE/node_modules/.bin/conformance || ! -x $CACHE/node_modules/node/bin/node ]]; then
    echo "== installing node@$NODE_VERSION and @modelcontextprotocol/conformance@$SUITE_VERSION into $CACHE"
    mkdir -p "$CACHE"
    npm install --prefix "$CACHE" --no-audit --no-fund --silent \
        "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$SUITE_VERSION"
fi
export PATH="$CACHE/node_modules/node/bin:$PATH"

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${REAGENT_BIN:-$TARGET/debug/reagent}
if [[ ! -x $BIN ]]; then
    cargo build --bin reagent
fi
BASELINE=$PWD/tests/peers/mcp-conformance-baseline.yml

WORK=$(mktemp -d)
SERVER=
cleanup() {
    if [[ -n $SERVER ]]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
    if [[ -n ${MCP_CONFORMANCE_RESULTS:-} ]]; then cp -r "$WORK/results/." "$MCP_CONFORMANCE_RESULTS"/ 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# No keys: the suite sends no Authorization header (key checks are tests/api/mcp_server/).
env -i PATH="$PATH" HOME="$WORK" RUST_LOG=warn,reagent=info \
    REAGENT_CONFIG=/dev/null \
    REAGENT_BIND=127.0.0.1:0 \
    DATABASE_URL="sqlite://$WORK/reagent.db" \
    "$BIN" serve --demo >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER=$!
BASE=
for _ in $(seq 200); do
    BASE=$(grep -o 'reagent listening on http://[0-9.:]*' "$WORK/serve.err" | grep -o 'http://.*' || true)
    [[ -n $BASE ]] && break
    sleep 0.1
done
[[ -n $BASE ]] || { echo "reagent did not start" >&2; cat "$WORK/serve.err" >&2; exit 1; }
echo "== conformance@$SUITE_VERSION (node $(node --version)) against $BASE/mcp"

# From the temp dir, so the suite's results stay out of the repository.
cd "$WORK"
"$CACHE/node_modules/.bin/conformance" server --url "$BASE/mcp" \
    --expected-failures "$BASELINE" -o "$WORK/results" "$@"
