#!/usr/bin/env bash
# Instructions per engine iteration (issue 23), counted by callgrind: stable on a shared machine
# where the criterion times of benches/engine.rs are not. For each case and history size, runs
# K = 10 and K = 20 tool iterations (20 runs each, ENGINE_ONCE in benches/engine.rs) and prints
# (Ir(K=20) − Ir(K=10)) / (10 × 20): one iteration without the per-run costs. (The largest count
# is the bench process; criterion forks a short-lived child to look for gnuplot.)
# Usage: scripts/engine_instructions.sh [BENCH_BINARY]   (default: builds it with cargo bench)
#   CASES="openai anthropic" HISTORIES="10 200" scripts/engine_instructions.sh  (the protocols' encoders)
set -uo pipefail
bin=${1:-}
if [ -z "$bin" ]; then
  bin=$(cargo bench --bench engine --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*engine[^"]*\)".*/\1/p' | tail -1)
fi
out=$(mktemp -d)
ir() { # case K history
  ENGINE_ONCE=$1,$2,$3 valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" "$bin" --bench \
    2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | sort -n | tail -1
}
echo "case history instructions_per_iteration"
for case in ${CASES:-native native_cp json}; do
  for hist in ${HISTORIES:-10 200 1000}; do
    a=$(ir "$case" 10 "$hist"); b=$(ir "$case" 20 "$hist")
    echo "$case $hist $(( (b - a) / 200 ))"
  done
done
rm -rf "$out"
