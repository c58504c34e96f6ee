#!/usr/bin/env python3
"""What one run costs the database (docs/deployment.md, "Capacity").

Spawns `reagent mock-provider` and one `reagent serve` on a fresh database (PostgreSQL, or
SQLite with --sqlite), warms it up, then drives RUNS conversations through `reagent-loadgen run
--url` and prints, per run (and per streamed token with --tokens-per-s): the statements the
server sent by kind (sqlx's statement log, `sqlx::query=debug`), and on PostgreSQL the
transactions, rows written, WAL bytes, the CPU of the server and of the database's backends,
and the connections held. The statement log costs CPU: with --no-log the statement counts are
skipped and the CPU figures are the ones to read.

  scripts/pg_capacity.py -n 2000 -c 64                       # short runs, PostgreSQL
  scripts/pg_capacity.py -n 2000 -c 64 --sqlite              # the same on SQLite (statements)
  scripts/pg_capacity.py -n 2000 -c 64 --no-log              # CPU without the statement log
  scripts/pg_capacity.py -n 400 -c 400 --tokens 160 --tokens-per-s 20 --no-log   # per token

Needs target/release/{reagent,reagent-loadgen} (`cargo build --release --bins`; REAGENT_BIN for
another server build) and PostgreSQL at --admin-url (the database is created and dropped).
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICKS = os.sysconf("SC_CLK_TCK")


def psql(url, sql):
    out = subprocess.run(
        ["psql", url, "-Atq", "-F", "\t", "-c", sql],
        check=True, capture_output=True, text=True,
    )
    return [line.split("\t") for line in out.stdout.splitlines() if line]


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except OSError:
        return 0.0


def postgres_pids():
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def machine_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v), idle


class PgStats:
    """Database-wide counters of one database, and the WAL position."""

    def __init__(self, url, db):
        self.url, self.db = url, db

    def snap(self):
        row = psql(self.url, (
            "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, "
            "tup_returned, tup_fetched, pg_current_wal_lsn() - '0/0'::pg_lsn "
            f"FROM pg_stat_database WHERE datname = '{self.db}'"))[0]
        keys = ["commits", "rollbacks", "inserted", "updated", "deleted", "returned", "fetched",
                "wal"]
        s = dict(zip(keys, (float(x) for x in row)))
        backends = psql(self.url, f"SELECT pid FROM pg_stat_activity WHERE datname = '{self.db}'")
        s["backend_pids"] = [int(r[0]) for r in backends]
        return s


def wait_ready(base, proc, log):
    for _ in range(3000):
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None:
            sys.exit(f"reagent serve exited; see {log}")
        time.sleep(0.01)
    sys.exit("reagent serve not ready")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def statement_kind(sql):
    """A statement's text with its bind lists and VALUES rows folded, so batches of any size
    count as one kind."""
    sql = " ".join(sql.split())
    sql = re.sub(r"\(\s*(\$\d+|\?)(\s*,\s*(\$\d+|\?))*\s*\)", "(…)", sql)
    sql = re.sub(r"(\(…\)|\([^()]*\$\d+[^()]*\))(\s*,\s*(\(…\)|\([^()]*\$\d+[^()]*\)))+", "(…)", sql)
    sql = re.sub(r"\$\d+", "$", sql)
    return sql[:150]


def count_statements(log, start_line):
    kinds = collections.Counter()
    with open(log) as f:
        for i, line in enumerate(f):
            if i < start_line or '"sqlx::query"' not in line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            fields = ev.get("fields", ev)
            sql = fields.get("db.statement") or fields.get("summary") or ""
            kinds[statement_kind(sql)] += 1
    return kinds


def line_count(path):
    with open(path) as f:
        return sum(1 for _ in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--runs", type=int, default=2000)
    ap.add_argument("-c", "--concurrency", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--tokens", type=int, default=20, help="answer tokens per run")
    ap.add_argument("--tokens-per-s", type=float, default=0.0)
    ap.add_argument("--iterations", type=int, default=1, help="tool calls per run")
    ap.add_argument("--instances", type=int, default=1, help="servers on the one database")
    ap.add_argument("--multi", action="store_true",
                    help="the several-instances flow even with one (`run --urls`: conversation, "
                         "start, stream and replay as separate requests, as `instances` does)")
    ap.add_argument("--sqlite", action="store_true")
    ap.add_argument("--no-log", action="store_true", help="no statement log (for CPU figures)")
    ap.add_argument("--admin-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--db-prefix", default="pgcap")
    args = ap.parse_args()

    bin_ = os.environ.get("REAGENT_BIN", os.path.join(ROOT, "target/release/reagent"))
    loadgen = os.environ.get("LOADGEN", os.path.join(ROOT, "target/release/reagent-loadgen"))
    work = tempfile.mkdtemp(prefix="pgcap.")
    db = f"{args.db_prefix}_{os.getpid()}"
    if args.sqlite:
        db_url = f"sqlite://{work}/reagent.db"
    else:
        psql(args.admin_url, f"CREATE DATABASE {db}")
        db_url = args.admin_url.rsplit("/", 1)[0] + "/" + db
    procs = []
    try:
        mock = subprocess.Popen(
            [bin_, "mock-provider", "--bind", "127.0.0.1:0", "--latency-ms", "0",
             "--tokens-per-s", str(args.tokens_per_s), "--answer-tokens", str(args.tokens),
             "--tool-iterations", str(args.iterations)],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "RUST_LOG": "warn"})
        procs.append(mock)
        mock_url = mock.stdout.readline().strip().rsplit(" ", 1)[1]
        servers, logs, bases = [], [], []
        for i in range(1 if args.sqlite else args.instances):
            port = free_port()
            log = os.path.join(work, f"serve{i}.log")
            env = {
                **os.environ,
                "DATABASE_URL": db_url,
                "LLM_BASE_URL": mock_url + "/v1",
                "LLM_MODEL": "mock-model",
                "REACT_SELF_REFLECTION_INTERVAL": "0",
                "REACT_COMPLETION_CHECK_MIN_TOOLS": "1000000",
                "REAGENT_BIND": f"127.0.0.1:{port}",
                "REAGENT_INSTANCE_ID": "abcdefgh"[i],
                "REAGENT_LOG_FORMAT": "json",
                "RUST_LOG": "warn" if args.no_log else "warn,sqlx::query=debug",
            }
            env.pop("REAGENT_CONFIG", None)
            with open(log, "w") as logf:
                server = subprocess.Popen([bin_, "serve"], cwd=work, env=env, stderr=logf,
                                          stdout=subprocess.DEVNULL)
            procs.append(server)
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, server, log)
            servers.append(server)
            logs.append(log)
            bases.append(base)

        def load(n):
            target = (["--url", bases[0], "--server-pid", str(servers[0].pid)]
                      if len(bases) == 1 and not args.multi else ["--urls", ",".join(bases)])
            cmd = [loadgen, "run", *target, "-n", str(n),
                   "-c", str(args.concurrency), "-k", str(args.iterations), "--latency-ms", "0",
                   "--tokens-per-s", str(args.tokens_per_s), "--answer-tokens", str(args.tokens)]
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stdout[-3000:], out.stderr[-3000:])
                sys.exit("the load failed")
            return out.stdout

        load(args.warmup)
        time.sleep(1.0)
        stats = None if args.sqlite else PgStats(args.admin_url, db)
        before = stats.snap() if stats else None
        pg_cpu0 = {p: cpu_seconds(p) for p in postgres_pids()}
        srv0 = sum(cpu_seconds(p.pid) for p in servers)
        busy0 = machine_busy()
        start_lines = [line_count(log) for log in logs]
        peak = {"conns": 0}
        done = threading.Event()

        def sample():
            while not done.wait(0.25):
                if stats:
                    n = psql(args.admin_url,
                             f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'")
                    peak["conns"] = max(peak["conns"], int(n[0][0]))

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.time()
        out = load(args.runs)
        wall = time.time() - t0
        done.set()
        sampler.join()
        time.sleep(0.3)
        srv1 = sum(cpu_seconds(p.pid) for p in servers)
        busy1 = machine_busy()
        pg_cpu1 = {p: cpu_seconds(p) for p in postgres_pids()}
        after = stats.snap() if stats else None
        n = args.runs
        total, idle = busy1[0] - busy0[0], busy1[1] - busy0[1]
        rps = re.search(r"([\d.]+) runs/s", out)
        print(f"# {len(servers)} instance(s), {n} runs, {args.concurrency} in flight, {args.iterations} tool call(s), "
              f"{args.tokens} tokens at {args.tokens_per_s or 'max'}/s, "
              f"{'SQLite' if args.sqlite else 'PostgreSQL'}; {wall:.1f} s"
              f"{f', {rps.group(1)} runs/s' if rps else ''}; machine {100 * (1 - idle / total):.0f} % busy")
        print(f"server CPU per run (all instances): {1e6 * (srv1 - srv0) / n:.0f} µs")
        tokens = n * args.tokens
        if stats:
            pg = sum(pg_cpu1[p] - pg_cpu0.get(p, 0.0) for p in pg_cpu1)
            backends = set(before["backend_pids"]) | set(after["backend_pids"])
            be = sum(pg_cpu1.get(p, 0.0) - pg_cpu0.get(p, 0.0) for p in backends)
            print(f"PostgreSQL CPU per run: {1e6 * pg / n:.0f} µs (all its processes; "
                  f"this database's backends {1e6 * be / n:.0f} µs)")
            d = {k: after[k] - before[k] for k in after if k != "backend_pids"}
            print(f"per run: transactions {(d['commits'] + d['rollbacks']) / n:.2f}, rows "
                  f"inserted {d['inserted'] / n:.2f}, updated {d['updated'] / n:.2f}, deleted "
                  f"{d['deleted'] / n:.2f}, WAL {d['wal'] / n:.0f} bytes")
            if args.tokens_per_s:
                print(f"per streamed token: WAL {d['wal'] / tokens:.0f} bytes, transactions "
                      f"{(d['commits'] + d['rollbacks']) / tokens:.3f}, server CPU "
                      f"{1e6 * (srv1 - srv0) / tokens:.1f} µs, PostgreSQL CPU {1e6 * pg / tokens:.1f} µs")
            print(f"connections held (peak, pool + listener): {peak['conns']}")
        if not args.no_log:
            kinds = collections.Counter()
            for log, start in zip(logs, start_lines):
                kinds += count_statements(log, start)
            # sqlx logs each transaction's COMMIT but not its BEGIN (PostgreSQL; SQLite's
            # transaction statements are not logged): a round trip each too.
            commits = kinds.get("COMMIT", 0)
            print(f"statements per run: {sum(kinds.values()) / n:.2f}; round trips "
                  f"{(sum(kinds.values()) + commits) / n:.2f} (with the BEGINs)")
            for sql, c in kinds.most_common():
                print(f"  {c / n:7.3f}  {sql}")
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        if not args.sqlite:
            time.sleep(0.5)
            psql(args.admin_url, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
