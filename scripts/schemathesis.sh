#!/usr/bin/env bash
# Runs schemathesis (https://schemathesis.readthedocs.io) against a real `reagent serve` whose
# only model is `reagent mock-provider`, on a throw-away SQLite database, with API keys on.
#
#   scripts/schemathesis.sh [extra schemathesis args…]
#
# Environment:
#   REAGENT_BIN   the binary (default: $CARGO_TARGET_DIR or target, /debug/reagent; built if absent)
#   ST            the schemathesis executable (default: the venv .ci/run makes,
#                 ~/.cache/reagent-st-venv/bin/schemathesis, then PATH); install:
#                 python3 -m venv ~/.cache/reagent-st-venv && ~/.cache/reagent-st-venv/bin/pip install schemathesis==4.32.5
#   ST_MAX_EXAMPLES  examples per operation (default 30)
#   ST_SEED          seed, for a reproducible run (default 1)
#   ST_KEEP_LOGS     a directory to copy the server's and the mock's stderr into at the end
#   ST_DATABASE_URL  the database (default: a temp SQLite file), e.g. an empty PostgreSQL database
# Exit status: schemathesis's (0 = no failure).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${REAGENT_BIN:-$TARGET/debug/reagent}
if [[ ! -x $BIN ]]; then
    cargo build --bin reagent
fi
ST=${ST:-$HOME/.cache/reagent-st-venv/bin/schemathesis}
if [[ ! -x $ST ]]; then ST=$(command -v schemathesis || true); fi
if [[ -z $ST ]]; then
    echo "schemathesis not found: python3 -m venv ~/.cache/reagent-st-venv && ~/.cache/reagent-st-venv/bin/pip install schemathesis==4.32.5" >&2
    exit 2
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    if [[ -n ${ST_KEEP_LOGS:-} ]]; then cp "$WORK"/*.err "$ST_KEEP_LOGS"/ 2>/dev/null || true; fi
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The mock provider on a free port (it prints its address on stdout).
"$BIN" mock-provider --bind 127.0.0.1:0 >"$WORK/mock.out" 2>"$WORK/mock.err" &
PIDS+=($!)
for _ in $(seq 100); do
    MOCK=$(grep -o 'http://[0-9.:]*' "$WORK/mock.out" || true)
    [[ -n $MOCK ]] && break
    sleep 0.1
done
[[ -n $MOCK ]] || { echo "mock provider did not start" >&2; cat "$WORK/mock.err" >&2; exit 1; }

# The service on a free port (it logs "reagent listening on http://…").
KEY=st-key-$RANDOM$RANDOM
env -i PATH="$PATH" HOME="$WORK" RUST_LOG=warn,reagent=info \
    REAGENT_CONFIG=/dev/null \
    REAGENT_BIND=127.0.0.1:0 \
    DATABASE_URL="${ST_DATABASE_URL:-sqlite://$WORK/reagent.db}" \
    LLM_BASE_URL="$MOCK/v1" LLM_API_KEY=mock LLM_MODEL=mock \
    REAGENT_API_KEYS="st:$KEY" \
    "$BIN" serve >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
for _ in $(seq 200); do
    BASE=$(grep -o 'reagent listening on http://[0-9.:]*' "$WORK/serve.err" | grep -o 'http://.*' || true)
    [[ -n $BASE ]] && break
    sleep 0.1
done
[[ -n $BASE ]] || { echo "reagent did not start" >&2; cat "$WORK/serve.err" >&2; exit 1; }
echo "reagent at $BASE, mock provider at $MOCK"

set +e
# From the temp dir, so schemathesis's and hypothesis's caches stay out of the repository.
cd "$WORK"
"$ST" run "$BASE/api/openapi.json" \
    --url "$BASE" \
    -H "Authorization: Bearer $KEY" \
    --checks all \
    --max-examples "${ST_MAX_EXAMPLES:-30}" \
    --seed "${ST_SEED:-1}" \
    --request-timeout 30 \
    --generation-database none \
    --no-color \
    "$@"
STATUS=$?
set -e
if grep -q ' ERROR \|panicked' "$WORK/serve.err"; then
    echo "--- server errors during the run:" >&2
    grep ' ERROR \|panicked' "$WORK/serve.err" | head -40 >&2
fi
exit $STATUS
