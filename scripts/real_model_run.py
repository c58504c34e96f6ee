#!/usr/bin/env python3
"""One run of the real-model check (scripts/real_model_check.sh): POST /api/chat to a reagent
server in the given mode, read the SSE stream to `done`, print what the model did, and fail
unless the calculator ran on 1234 * 5678 (observation 7006652) and the run ended with a
non-empty answer. Standard library only.

Usage: real_model_run.py BASE_URL native|json
"""

import json
import sys
import urllib.request

QUERY = "Use the calculator tool to compute 1234 * 5678."
EXPRESSION = "1234*5678"
RESULT = "7006652"
TIMEOUT_S = 300


def events(base, mode):
    body = json.dumps({"query": QUERY, "mode": mode}).encode()
    req = urllib.request.Request(
        f"{base}/api/chat",
        data=body,
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
        name, data = None, []
        for raw in resp:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and name:
                yield name, json.loads("\n".join(data)) if data else None
                if name == "done":
                    return
                name, data = None, []


def main():
    base, mode = sys.argv[1], sys.argv[2]
    start, done, answer, calls = None, None, [], {}
    for name, data in events(base, mode):
        if name == "start":
            start = data
        elif name == "step" and data["type"] == "tool_start":
            calls[(data["iteration"], data["call_id"])] = {"tool": data["tool"], "args": data["arguments"]}
        elif name == "step" and data["type"] == "tool_end":
            calls[(data["iteration"], data["call_id"])].update(
                observation=data["observation"], error=data["error"]
            )
        elif name == "answer" and data.get("status") == "delta":
            answer.append(data["content"])
        elif name == "done":
            done = data
    answer = ((done or {}).get("answer") or "".join(answer)).strip()
    print(f"  mode={start and start['mode']} status={done and done['status']} "
          f"iterations={done and done.get('iterations')} tool_calls={done and done.get('tool_calls')} "
          f"elapsed_ms={done and done.get('elapsed_ms')}")
    for (iteration, call_id), c in calls.items():
        print(f"  iteration {iteration} {call_id}: {c['tool']}({json.dumps(c['args'])}) -> "
              f"{c.get('observation', '?')!r}{' (error)' if c.get('error') else ''}")
    print(f"  answer: {answer[:200]!r}")

    failures = []
    if not start or start["mode"] != mode:
        failures.append(f"the run did not start in {mode} mode: {start}")
    wanted = [
        c for c in calls.values()
        if c["tool"] == "calculator"
        and isinstance(c["args"], dict)
        and "".join(str(c["args"].get("expression", "")).split()) == EXPRESSION
    ]
    if not wanted:
        failures.append(f"no calculator call on {EXPRESSION}")
    elif not any(RESULT in c.get("observation", "") and not c.get("error") for c in wanted):
        failures.append(f"the calculator call did not observe {RESULT}")
    if not done or done["status"] not in ("completed", "max_iterations"):
        failures.append(f"the run did not end normally: {done}")
    if not answer:
        failures.append("the answer is empty")
    for f in failures:
        print(f"  FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
