#!/usr/bin/env python3
"""One run of the real-model check (scripts/real_model_check.sh): POST /api/chat to a reagent
server in the given mode (and model), read the SSE stream to `done`, print what the model did,
and fail unless the calculator ran on 1234 * 5678 (observation 7006652) and the run ended with a
non-empty answer. With --cache (the Anthropic Messages model on a fresh llama-server), also
fail unless the answer was streamed and the run's `usage.cache_read_tokens` (llama.cpp's
`cache_read_input_tokens`, its `n_prompt_tokens_cache`) shows a later call reusing the first
call's prompt prefix. Standard library only.

Usage: real_model_run.py BASE_URL native|json [MODEL [--cache]]
"""

import json
import sys
import urllib.request

QUERY = "Use the calculator tool to compute 1234 * 5678."
EXPRESSION = "1234*5678"
RESULT = "7006652"
TIMEOUT_S = 300


# The first call runs on an empty cache; a later one shares at least the system prompt and the
# tools with it (hundreds of tokens), while the synthesis call shares only the chat template's
# first few tokens.
MIN_REUSED = 100


def events(base, mode, model):
    request = {"query": QUERY, "mode": mode}
    if model:
        request["model"] = model
    body = json.dumps(request).encode()
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
    model = sys.argv[3] if len(sys.argv) > 3 else None
    cache = "--cache" in sys.argv[4:]
    start, done, answer, calls = None, None, [], {}
    deltas = 0
    for name, data in events(base, mode, model):
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
            deltas += 1
        elif name == "done":
            done = data
    answer = ((done or {}).get("answer") or "".join(answer)).strip()
    print(f"  mode={start and start['mode']} status={done and done['status']} "
          f"iterations={done and done.get('iterations')} tool_calls={done and done.get('tool_calls')} "
          f"elapsed_ms={done and done.get('elapsed_ms')}")
    for (iteration, call_id), c in calls.items():
        print(f"  iteration {iteration} {call_id}: {c['tool']}({json.dumps(c['args'])}) -> "
              f"{c.get('observation', '?')!r}{' (error)' if c.get('error') else ''}")
    print(f"  answer: {answer[:200]!r} ({deltas} streamed deltas)")
    usage = (done or {}).get("usage") or {}
    print(f"  usage: {json.dumps(usage)}")

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
    if model and start and start.get("model") not in (None, model):
        failures.append(f"the run did not use {model}: {start}")
    if cache and deltas == 0:
        failures.append("the answer was not streamed")
    if cache and usage.get("cache_read_tokens", 0) < MIN_REUSED:
        failures.append(f"no call reused the first call's prefix (cache_read_tokens < {MIN_REUSED})")
    for f in failures:
        print(f"  FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
