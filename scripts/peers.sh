#!/usr/bin/env bash
# Installs the real protocol peers the test suite talks to (MCP servers, the official OpenAI
# clients): Python packages pinned in tests/peers/requirements.txt into a virtualenv under
# ~/.cache/reagent-peers (rebuilt when the pins change), npm packages pinned in
# tests/peers/package.json into tests/peers/node_modules. Idempotent; seconds once cached.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PEERS_DIR=${REAGENT_PEERS_DIR:-$HOME/.cache/reagent-peers}
VENV="$PEERS_DIR/venv"
REQS=tests/peers/requirements.txt
mkdir -p "$PEERS_DIR"

want=$(sha256sum "$REQS" | cut -d' ' -f1)
have=$(cat "$VENV/.requirements-sha256" 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -x "$VENV/bin/python" ]; then
    echo "== peers: Python virtualenv ($VENV)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQS"
    echo "$want" > "$VENV/.requirements-sha256"
fi

if [ -f tests/peers/package-lock.json ]; then
    lock=$(sha256sum tests/peers/package-lock.json | cut -d' ' -f1)
    if [ "$lock" != "$(cat tests/peers/node_modules/.lock-sha256 2>/dev/null || true)" ]; then
        echo "== peers: npm ci (tests/peers)"
        npm ci --prefix tests/peers --no-audit --no-fund
        echo "$lock" > tests/peers/node_modules/.lock-sha256
    fi
fi
