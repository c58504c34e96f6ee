#!/usr/bin/env bash
# Where a held run's heap bytes are, by part (issue 23): the memory probe's server run under
# heaptrack, stopped with SIGKILL at one of the probe's steps, so that what heaptrack reports as
# "leaked" is exactly what was live then; scripts/heap_by_part.py sums it by the part that owns
# it (SSE connection, upstream connection, upstream request, engine state, event log,
# persistence, database, ...), per run.
#
#   scripts/heap_by_part.sh [RUNS] [STEP]     # defaults: 1000 runs, step 4 (answer half streamed)
#
# heaptrack sees the system allocator only, so the server is built without jemalloc
# (`--no-default-features`, in target/heap). Heap is not RSS: an 8 KB buffer with one page
# written costs 8 KB here and 4 KiB of RSS; the probe's RSS deltas are printed beside.
# Needs heaptrack (Debian: apt-get install heaptrack).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-1000}
STEP=${2:-4}
OUT=$(realpath -m "${HEAP_OUT:-target/heap/out}")
command -v heaptrack >/dev/null || { echo "heaptrack not found (apt-get install heaptrack)"; exit 1; }

CARGO_TARGET_DIR=target/heap cargo build --quiet --release --no-default-features --bins
BIN=$PWD/target/heap/release/reagent
mkdir -p "$OUT"
rm -f "$OUT"/heap.* "$OUT/count" "$OUT/serve.pid" "$OUT/probe.log"

# REAGENT_BIN for the probe: its second `serve` (the runs' server) runs under heaptrack and
# records the heaptrack script's pid; the mock and the first server run plainly.
WRAP=$OUT/wrap.sh
cat >"$WRAP" <<EOF
#!/usr/bin/env bash
if [ "\$1" = serve ]; then
    n=\$((\$(cat "$OUT/count" 2>/dev/null || echo 0) + 1)); echo \$n >"$OUT/count"
    if [ \$n = 2 ]; then echo \$\$ >"$OUT/serve.pid"; exec heaptrack -o "$OUT/heap" "$BIN" "\$@"; fi
fi
exec "$BIN" "\$@"
EOF
chmod +x "$WRAP"

# The probe pauses at STEP and says so; the server (heaptrack's child) is killed there.
REAGENT_BIN=$WRAP target/heap/release/reagent-loadgen memory -n "$RUNS" --hold-s 60 \
    --pause-at "$STEP" --pause-s 30 >"$OUT/probe.log" 2>&1 &
PROBE=$!
# SIGTERM ends the probe without its kill-on-drop, so its mock is stopped by hand; heaptrack
# (serve.pid) is left to finish writing its data.
stop_probe() {
    for child in $(pgrep -P $PROBE); do
        [ "$child" = "$(cat "$OUT/serve.pid" 2>/dev/null)" ] || kill "$child" 2>/dev/null || true
    done
    kill $PROBE 2>/dev/null || true
}
until grep -q "paused at step" "$OUT/probe.log" 2>/dev/null; do
    kill -0 $PROBE 2>/dev/null || { cat "$OUT/probe.log"; echo "the probe ended before its pause"; exit 1; }
    sleep 0.2
done
SERVER=$(pgrep -P "$(cat "$OUT/serve.pid" 2>/dev/null || echo 0)" -x reagent || true)
[ -n "$SERVER" ] || { echo "the heaptracked server was not found"; stop_probe; exit 1; }
RSS=$(awk '/VmRSS/ {print $2}' "/proc/$SERVER/status")
kill -9 "$SERVER"
stop_probe
wait $PROBE 2>/dev/null || true
for _ in $(seq 1 60); do pgrep -P "$(cat "$OUT/serve.pid")" >/dev/null || break; sleep 1; done

echo "== heap by part at step $STEP, $RUNS runs (server RSS at the snapshot: $RSS KiB)"
heaptrack_print -f "$OUT"/heap.*zst --print-leaks 0 --print-peaks 0 --print-allocators 0 \
    --print-temporary 0 --flamegraph-cost-type leaked \
    -F "$OUT/stacks.txt" >/dev/null
python3 scripts/heap_by_part.py "$OUT/stacks.txt" "$RUNS"
