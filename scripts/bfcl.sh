#!/usr/bin/env bash
# The Berkeley Function Calling Leaderboard beside reagent's own tasks (evals/README.md, "BFCL").
#
#   scripts/bfcl.sh setup       installs bfcl-eval (evals/bfcl/requirements.txt, every package
#                               pinned) into a venv under ~/.cache/reagent-bfcl (REAGENT_BFCL_CACHE);
#                               `reagent eval --bfcl` runs its Python by default
#   scripts/bfcl.sh handler --base-url http://127.0.0.1:8081/v1 --limit 20 [--categories …]
#                               BFCL's own OpenAI-compatible handler (`bfcl generate` and
#                               `bfcl evaluate`) on the first N entries of each category
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CACHE=${REAGENT_BFCL_CACHE:-$HOME/.cache/reagent-bfcl}
VENV=$CACHE/venv
REQUIREMENTS=evals/bfcl/requirements.txt

setup() {
    local stamp=$VENV/.requirements
    # Reinstalled when the pinned list changes, never by hand.
    if [ -f "$stamp" ] && cmp -s "$stamp" "$REQUIREMENTS"; then
        return 0
    fi
    echo "[bfcl] installing $REQUIREMENTS into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-deps -r "$REQUIREMENTS"
    cp "$REQUIREMENTS" "$stamp"
}

case "${1:-}" in
setup) setup ;;
handler)
    shift
    setup
    exec "$VENV/bin/python" evals/bfcl/bridge.py handler "$@"
    ;;
*)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
