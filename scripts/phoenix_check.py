"""The Phoenix check of scripts/phoenix_check.sh: Phoenix, the mock provider and reagent as
child processes in a temp directory; one run; its trace as Phoenix's REST API lists it."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="reagent-phoenix-")
children = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, env, log):
    out = open(os.path.join(work, log), "w")
    p = subprocess.Popen(args, env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT)
    children.append(p)
    return p


def wait_for(what, check, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception:  # not up yet
            pass
        time.sleep(0.5)
    sys.exit(f"FAIL: timed out waiting for {what} (logs in {work})")


def listening(log):
    text = open(os.path.join(work, log)).read()
    m = re.search(r"listening on (http://[0-9.:]+)", text)
    return m and m.group(1)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def main():
    base_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", work)}
    http, grpc = free_port(), free_port()
    phoenix = os.path.join(os.path.dirname(sys.executable), "phoenix")
    penv = dict(base_env, PHOENIX_WORKING_DIR=os.path.join(work, "phoenix"),
                PHOENIX_PORT=str(http), PHOENIX_GRPC_PORT=str(grpc), PHOENIX_HOST="127.0.0.1")
    start([phoenix, "serve"], penv, "phoenix.log")
    ui = f"http://127.0.0.1:{http}"
    wait_for("Phoenix", lambda: urllib.request.urlopen(ui + "/healthz", timeout=2).status == 200)
    start([BIN, "mock-provider", "--bind", "127.0.0.1:0", "--tool-iterations", "1"],
          base_env, "mock.log")
    mock = wait_for("the mock provider", lambda: listening("mock.log"))
    renv = dict(base_env, LLM_BASE_URL=mock + "/v1", REAGENT_BIND="127.0.0.1:0",
                OTEL_EXPORTER_OTLP_ENDPOINT=ui, OTEL_BSP_SCHEDULE_DELAY="200",
                REAGENT_TRACE_URL=ui + "/redirects/traces/{trace_id}")
    start([BIN, "serve"], renv, "reagent.log")
    server = wait_for("reagent", lambda: listening("reagent.log"))
    body = json.dumps({"query": "what is 1+1?"}).encode()
    req = urllib.request.Request(server + "/api/chat", data=body,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        stream = r.read().decode()
    done = json.loads(stream.split("event: done\n", 1)[1].split("data: ", 1)[1].split("\n", 1)[0])
    trace = done["trace_id"]
    print(f"run {done['status']}: trace {trace}, {done['usage']['llm_calls']} LLM calls, "
          f"{done['tool_calls']} tool call(s); link {done.get('trace_url')}")

    def spans():
        data = get(f"{ui}/v1/projects/default/spans?limit=100")["data"]
        mine = [s for s in data if s["context"]["trace_id"] == trace]
        return mine if len(mine) >= done["usage"]["llm_calls"] + 2 else None

    mine = wait_for("the run's spans in Phoenix", spans, timeout=30)
    for s in sorted(mine, key=lambda s: s["start_time"]):
        print(f"  {s['span_kind']:6} {s['name']:28} parent={s['parent_id']}")
    agents = [s for s in mine if s["span_kind"] == "AGENT"]
    llms = [s for s in mine if s["span_kind"] == "LLM"]
    tools = [s for s in mine if s["span_kind"] == "TOOL"]
    assert len(agents) == 1 and agents[0]["parent_id"] is None, agents
    root = agents[0]["context"]["span_id"]
    assert len(llms) == done["usage"]["llm_calls"], llms
    assert len(tools) == done["tool_calls"] == 1, tools
    assert all(s["parent_id"] == root for s in llms + tools)
    prompt = sum(s["attributes"].get("llm.token_count.prompt", 0) for s in llms)
    assert prompt == done["usage"]["prompt_tokens"], (prompt, done["usage"])
    # The link in `done.trace_url` leads to the trace's page.
    with urllib.request.urlopen(done["trace_url"], timeout=10) as r:
        assert r.status == 200 and trace in r.url, r.url
    print(f"OK: Phoenix lists one AGENT trace with {len(llms)} LLM and {len(tools)} TOOL spans, "
          f"prompt tokens {prompt} = the run's usage")


try:
    main()
finally:
    for p in reversed(children):
        p.send_signal(signal.SIGTERM)
    for p in children:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
