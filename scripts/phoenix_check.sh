#!/usr/bin/env bash
# Traces against a real collector no one here wrote (docs/deployment.md, "Tracing"): installs
# Arize Phoenix (pinned, cached beside the test peers), starts it on free ports, runs one agent
# run with a tool call through `reagent serve` (the mock provider as its model) exporting to it,
# and checks through Phoenix's REST API that it lists the run as one agent trace with LLM and
# tool spans. Too heavy for CI's budget (Phoenix is ~1 GB installed): run by hand, the output
# is in RELIABILITY.md. Usage: scripts/phoenix_check.sh [REAGENT_BINARY]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PIN=arize-phoenix==20.26.1
VENV=${REAGENT_PEERS_DIR:-$HOME/.cache/reagent-peers}/phoenix
if [ "$(cat "$VENV/.pin" 2>/dev/null || true)" != "$PIN" ]; then
    echo "== installing $PIN into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$PIN"
    echo "$PIN" > "$VENV/.pin"
fi
bin=${1:-}
if [ -z "$bin" ]; then
    cargo build -q --bin reagent
    bin=${CARGO_TARGET_DIR:-target}/debug/reagent
fi
exec "$VENV/bin/python" scripts/phoenix_check.py "$bin"
