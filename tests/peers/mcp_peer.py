"""A small MCP server (stdio) for reagent's tests, written with the official `mcp` package.

Tools: `echo`, `add_tool` (registers `extra` and sends notifications/tools/list_changed),
`break_list` (every later
tools/list fails), `hang` (sleeps until cancelled, recording the cancel), `crash` (exits mid-call), `fail`
(isError), `image` (a PNG), `big` (a huge text), `started` (answers once its marker exists).
Every event goes to the file named by MCP_PEER_LOG, one line each, so tests can see what the
server received. MCP_PEER_TOOLS=name,name renames `echo` to each of those names (collision
tests); MCP_PEER_SECRET is echoed by `secret` (log-leak tests); MCP_PEER_ENV_DUMP names a file
the server writes its whole environment to as JSON at start (environment tests).
"""

import asyncio
import base64
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

LOG = os.environ.get("MCP_PEER_LOG")
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def record(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(line + "\n")


server = MCPServer("reagent-test-peer")


def echo(text: str) -> str:
    """Returns its text."""
    record(f"echo {text}")
    return f"echo: {text}"


names = [n for n in os.environ.get("MCP_PEER_TOOLS", "echo").split(",") if n]
for n in names:
    server.add_tool(echo, name=n, description="Returns its text.")


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Adds the tool `extra` and announces the new list."""
    server.add_tool(lambda: "extra ran", name="extra", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    record("added extra")
    return "added"


_list_tools = server._tool_manager.list_tools


def list_tools():
    # After `break_list` (a marker beside the log), listing fails, also in a restarted server.
    if LOG and os.path.exists(LOG + ".broken"):
        raise RuntimeError("tool listing broken on purpose")
    return _list_tools()


server._tool_manager.list_tools = list_tools


@server.tool()
async def break_list(ctx: Context) -> str:
    """Makes every later tools/list fail, then announces a list change."""
    open(LOG + ".broken", "w").close()
    await ctx.session.send_tool_list_changed()
    return "broken"


@server.tool()
async def hang(seconds: float = 3600) -> str:
    """Sleeps; records a cancellation."""
    record("hang started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        record("hang cancelled")
        raise
    return "woke up"


@server.tool()
def crash() -> str:
    """Exits the process in the middle of the call."""
    record("crash")
    sys.stdout.flush()
    os._exit(1)


@server.tool()
def fail() -> str:
    """Always fails (isError)."""
    raise ToolError("the peer failed on purpose")


@server.tool()
def image() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def big(kib: int = 4096) -> str:
    """A huge text result."""
    return "x" * (kib * 1024)


@server.tool()
def secret() -> str:
    """Says whether MCP_PEER_SECRET reached the server (never its value)."""
    return "secret set" if os.environ.get("MCP_PEER_SECRET") else "secret missing"


def dump_env(path: str) -> None:
    # Written whole, then renamed: a reader never sees half a file.
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(dict(os.environ), f)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    record(f"start pid {os.getpid()}")
    if os.environ.get("MCP_PEER_ENV_DUMP"):
        dump_env(os.environ["MCP_PEER_ENV_DUMP"])
    if os.environ.get("MCP_PEER_FAIL_START"):
        print("cannot start: MCP_PEER_FAIL_START", file=sys.stderr)
        sys.exit(3)
    server.run()
