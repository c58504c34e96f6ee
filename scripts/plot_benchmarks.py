#!/usr/bin/env python3
"""Plot the scaling curves of `reagent-loadgen suite` (its JSON output) into a PNG.

Usage: python3 scripts/plot_benchmarks.py [target/benchmarks.json] [docs/benchmarks.png]
Needs matplotlib (e.g. `python3 -m venv .venv && .venv/bin/pip install matplotlib`).
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    src = sys.argv[1] if len(sys.argv) > 1 else "target/benchmarks.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "docs/benchmarks.png"
    with open(src) as f:
        doc = json.load(f)
    m = doc["median"]

    def get(key):
        v = m.get(key)
        return float("nan") if v is None else v

    scales = [n for n in (10, 100, 1000, 2000) if f"scale_{n}_errors" in m]
    history = [h for h in (10, 100, 1000) if f"history_{h}_mock_rtt_ms" in m]

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    fig.suptitle(
        f"reagent under load (medians of {doc['repeat']} repeat(s); mock LLM: 3 tool iterations "
        "at 200 ms + 100 tokens at 50 tok/s)",
        fontsize=10,
    )

    a = ax[0][0]
    for q, style in (("p50", "o-"), ("p99", "s--")):
        a.plot(scales, [get(f"scale_{n}_token_ms_{q}") for n in scales], style, label=q)
    # Steady state: every stream open at once, started over 3 s (the `streams` scenario).
    n_streams = 100 if doc.get("quick") else 1000
    for rate, marker in ((10, "v"), (20, "D"), (50, "P")):
        if f"streams_{rate}_token_ms_p50" in m:
            a.plot([n_streams], [get(f"streams_{rate}_token_ms_p50")], marker, ms=8,
                   label=f"p50, all streaming, {rate} tok/s each")
    a.axhline(1, color="green", lw=0.8, ls=":", label="target p50 1 ms")
    a.axhline(10, color="red", lw=0.8, ls=":", label="target p99 10 ms")
    a.set(xscale="log", yscale="log", xlabel="concurrent runs", ylabel="ms",
          title="upstream token chunk → SSE event at the client")
    a.legend(fontsize=8)

    a = ax[0][1]
    a.plot(scales, [get(f"scale_{n}_rss_per_run_kib") * 1.024 for n in scales], "o-",
           label="RSS per active run (KB)")
    a.axhline(100, color="red", lw=0.8, ls=":", label="target 100 KB")
    a.set(xscale="log", xlabel="concurrent runs", ylabel="KB", title="memory per active run")
    b = a.twinx()
    b.plot(scales, [get(f"scale_{n}_cpu_pct") for n in scales], "^--", color="gray",
           label="server CPU (% of one core)")
    b.set_ylabel("% of one core")
    lines = a.get_legend_handles_labels()
    lines2 = b.get_legend_handles_labels()
    a.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=8)

    a = ax[1][0]
    for q, style in (("p50", "o-"), ("p99", "s--")):
        a.plot(scales, [get(f"scale_{n}_run_ms_{q}") for n in scales], style,
               label=f"run duration {q}")
        a.plot(scales, [get(f"scale_{n}_ttfe_ms_{q}") for n in scales], style,
               label=f"time to first event {q}")
    a.set(xscale="log", yscale="log", xlabel="concurrent runs", ylabel="ms",
          title="run duration (ideal ≈ 2.8 s) and time to first event")
    a.legend(fontsize=8)

    a = ax[1][1]
    for q, style in (("p50", "o-"), ("p99", "s--")):
        ys = [get(f"history_{h}_overhead_ms_{q}") for h in history]
        a.plot(history, ys, style, label=f"overhead {q}")
    a.plot(history, [get(f"history_{h}_mock_rtt_ms") for h in history], "x:", color="gray",
           label="mock round trip (subtracted)")
    a.axhline(0.5, color="green", lw=0.8, ls=":", label="target p50 0.5 ms")
    a.axhline(5, color="red", lw=0.8, ls=":", label="target p99 5 ms")
    a.set(xscale="log", yscale="log", xlabel="messages of history", ylabel="ms",
          title="server overhead per tool iteration vs history")
    a.legend(fontsize=8)

    for row in ax:
        for a in row:
            a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
