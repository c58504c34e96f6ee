"""Sums heaptrack's folded stacks (`heaptrack_print --flamegraph-cost-type leaked -F FILE`) by
the part of a run that owns each allocation, per run. Used by scripts/heap_by_part.sh.

A stack is attributed by its innermost frame that names an owner (walking from the allocation
towards the thread's root), so an allocation made by hyper inside a request handler of ours is
ours, and a tokio task's allocation is its spawner's. Allocations made while the process
started (before any connection) are shown apart as fixed: they do not grow with runs.

    python3 scripts/heap_by_part.py STACKS RUNS
"""

import collections
import re
import sys

SERVER_CONN = "SSE / HTTP connection (hyper server: buffers, task, request)"
UPSTREAM_CONN = "upstream connection (hyper client: buffers, dispatch channel, task)"
UPSTREAM_REQ = "upstream request in flight (reqwest / hyper-util futures)"
RUN_TASK = "the run's task (the engine's future, inline)"
ENGINE = "engine state (loop, history, request bodies, tool steps)"
LOG = "event log"
PERSIST = "persistence (event writer, checkpoints, rows in flight)"
DATABASE = "database (SQLite page cache, statements)"
RUNS = "run bookkeeping (manager, lease, commands)"
FIXED = "fixed: start-up (not per run)"
OTHER = "other"

# (substring of a frame, part), tried on each frame from the allocation outwards.
RULES = [
    ("sqlite3", DATABASE),
    ("sqlx_", DATABASE),
    ("reagent::runs::core::log::", LOG),
    ("reagent::runs::core::persist", PERSIST),
    ("reagent::store::", PERSIST),
    ("reagent::agent::checkpoint", PERSIST),
    ("reagent::server::sse", SERVER_CONN),
    ("reqwest::connect", UPSTREAM_CONN),
    ("hyper_util::client::legacy::connect", UPSTREAM_CONN),
    ("hyper_util::client::legacy::pool", UPSTREAM_CONN),
    # The connect future: TCP, then hyper's handshake (its dispatch channel, its buffers).
    ("hyper_util::common::lazy::Lazy", UPSTREAM_CONN),
    ("hyper::client::", UPSTREAM_CONN),
    ("hyper::proto::h1::role::Client", UPSTREAM_CONN),
    ("reqwest::", UPSTREAM_REQ),
    ("hyper_util::client::", UPSTREAM_REQ),
    ("reagent::agent::", ENGINE),
    ("reagent::llm::", ENGINE),
    ("reagent::dag::", ENGINE),
    ("reagent::tools::", ENGINE),
    ("reagent::runs::", RUNS),
    ("reagent::server::", SERVER_CONN),
    ("hyper_util::server", SERVER_CONN),
    ("hyper_util::service", SERVER_CONN),
    ("hyper::server", SERVER_CONN),
    ("axum::", SERVER_CONN),
]

TASK_ALLOC = "task::core::Cell"


def normalise(frame):
    frame = re.sub(r"::h[0-9a-f]{16}$", "", frame.strip())
    for a, b in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","), ("..", "::")):
        frame = frame.replace(a, b)
    return frame


def hyper_side(frames):
    """hyper's connection code is the same for both sides: the task's root says which."""
    joined = ";".join(frames)
    if "serve_with" in joined or "GracefulConnection" in joined or "hyper::server" in joined:
        return SERVER_CONN
    return UPSTREAM_CONN


def part_of(frames):
    """frames: root first, allocation last."""
    if not any("tokio::runtime" in f or "sqlx" in f or "sqlite3" in f for f in frames):
        return FIXED  # the main thread before the runtime served anything
    task = False
    for f in reversed(frames):
        if TASK_ALLOC in f:
            task = True
            continue
        if task and "reagent::runs::core::start" in f:
            return RUN_TASK
        if f.startswith("hyper::proto") or f.startswith("<hyper::proto"):
            return hyper_side(frames)
        for pattern, part in RULES:
            if pattern in f:
                return part
    return OTHER


def main(path, runs):
    parts = collections.Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, cost = line.rstrip().rpartition(" ")
        if not cost.isdigit():
            continue
        frames = [normalise(f) for f in stack.split(";") if f.strip()]
        parts[part_of(frames)] += int(cost)
    total = sum(v for k, v in parts.items() if k != FIXED)
    print(f"{'part':<72} {'KB per run':>10}")
    for name, cost in parts.most_common():
        if name != FIXED:
            print(f"{name:<72} {cost / runs / 1000:>10.2f}")
    print(f"{'all of the above':<72} {total / runs / 1000:>10.2f}")
    print(f"{FIXED:<72} {parts[FIXED] / 1e6:>7.2f} MB")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
