"""A minimal stdio MCP server for reagent's MCP overhead benchmark (benches/mcp.rs).

Raw JSON-RPC by hand, so that its own handling time is small and measured: the tool `timed`
answers `handled_ns=<N>`, N being the nanoseconds from reading the request line to just before
writing the answer (parsing, building, serialising).
"""

import json
import sys
import time

out = sys.stdout
for line in sys.stdin:
    t0 = time.perf_counter_ns()
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bench-peer", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "timed", "description": "answers its handling time",
                             "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = None
    else:
        out.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}}) + "\n")
        out.flush()
        continue
    if result is None:
        handled = time.perf_counter_ns() - t0
        result = {"content": [{"type": "text", "text": f"handled_ns={handled}"}]}
    text = json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n"
    out.write(text)
    out.flush()
