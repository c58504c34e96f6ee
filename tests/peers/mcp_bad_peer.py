"""An MCP server (stdio, raw JSON-RPC by hand) that misbehaves, for reagent's robustness tests.

It answers `initialize` properly, lists a good tool `ok`, a tool whose inputSchema is a string
(`bad_schema`) and `garbage`, `huge`, `enormous` and `not_utf8`. Calling `garbage` writes a line
that is not JSON-RPC, then a non-JSON line; `huge` returns 8 MiB of text; `enormous` a 50 MB
line; `not_utf8` a result whose text holds bytes that are not UTF-8; `ok` answers "fine".
With MCP_BAD_PEER_DEEP=1 it also lists `deep`, whose inputSchema nests 300 levels (past
serde_json's recursion limit of 128).
With MCP_BAD_PEER_SILENT=1 it reads its input and never answers, not even `initialize`.
"""

import json
import os
import sys

if os.environ.get("MCP_BAD_PEER_SILENT"):
    for _ in sys.stdin:
        pass
    sys.exit(0)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


TOOLS = [
    {"name": "ok", "description": "fine", "inputSchema": {"type": "object"}},
    {"name": "bad_schema", "description": "broken", "inputSchema": "not an object"},
    {"name": "garbage", "description": "answers nonsense", "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "8 MiB", "inputSchema": {"type": "object"}},
    {"name": "enormous", "description": "50 MB", "inputSchema": {"type": "object"}},
    {"name": "not_utf8", "description": "bad bytes", "inputSchema": {"type": "object"}},
]


def deep_schema(levels):
    schema = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


if os.environ.get("MCP_BAD_PEER_DEEP"):
    TOOLS.insert(1, {"name": "deep", "description": "too deep", "inputSchema": deep_schema(300)})

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bad-peer", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "garbage":
            sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(mid) + ', "result": \n')
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif name == "enormous":
            text = "z" * (50 * 1000 * 1000)
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
        elif name == "not_utf8":
            head = '{"jsonrpc": "2.0", "id": ' + json.dumps(mid) + ', "result": {"content": [{"type": "text", "text": "'
            sys.stdout.flush()
            sys.stdout.buffer.write(head.encode() + b"bad \xff\xfe bytes" + b'"}]}}\n')
            sys.stdout.buffer.flush()
        elif name == "huge":
            text = "y" * (8 * 1024 * 1024)
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "fine"}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}})
