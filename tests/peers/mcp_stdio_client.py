"""The official MCP Python SDK's stdio client launching `reagent mcp --url` (the stdio bridge to
a running reagent's /mcp) as its server process.

Usage: mcp_stdio_client.py REAGENT_BIN BASE_URL KEY AGENT QUERY SLOW_QUERY. Lists the tools,
calls AGENT with QUERY (with a progress callback), then calls it with SLOW_QUERY (a run that
does not end by itself): while that call is in flight it pings, then abandons the call, which
makes the SDK send `notifications/cancelled`, and waits for the run to end. The key reaches
the bridge only through the environment variable named by --key-env. Prints JSON: the tool
names, the first call's text, structuredContent, isError and progress, the ping's round trip
during the slow call, and the status the slow run ended with.
"""

import asyncio
import json
import os
import sys
import time

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def active_run(api: httpx.AsyncClient) -> str:
    """The id of the one run in flight (the slow call's), once it started."""
    while True:
        page = (await api.get("/api/conversations")).json()
        for conversation in page["items"]:
            if conversation.get("active_run_id"):
                return conversation["active_run_id"]
        await anyio.sleep(0.05)


async def run_status_after(api: httpx.AsyncClient, run_id: str) -> str:
    """The run's status once it is no longer running."""
    while True:
        status = (await api.get(f"/api/runs/{run_id}")).json()["status"]
        if status not in ("queued", "running"):
            return status
        await anyio.sleep(0.05)


async def slow_call(session: ClientSession, api: httpx.AsyncClient, agent: str, query: str) -> dict:
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.call_tool, agent, {"query": query})
        with anyio.fail_after(20):
            run_id = await active_run(api)
        started = time.monotonic()
        # A ping answered while the call is in flight: the bridge does not queue behind it.
        with anyio.fail_after(10):
            await session.send_ping()
        ping_s = time.monotonic() - started
        # Abandoning the call is how the SDK cancels it (notifications/cancelled).
        tg.cancel_scope.cancel()
    with anyio.fail_after(20):
        status = await run_status_after(api, run_id)
    return {"ping_during_call_s": ping_s, "slow_run_status": status}


async def main(binary: str, base: str, key: str, agent: str, query: str, slow: str) -> None:
    progress: list[dict] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "message": message})

    server = StdioServerParameters(
        command=binary,
        args=["mcp", "--url", base, "--key-env", "REAGENT_TEST_KEY"],
        # RUST_LOG passes through so that a failing test can show what the bridge relayed.
        env={"REAGENT_TEST_KEY": key} | {k: v for k, v in os.environ.items() if k == "RUST_LOG"},
    )
    api = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"})
    async with api, stdio_client(server) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(agent, {"query": query}, progress_callback=on_progress)
            slow_seen = await slow_call(session, api, agent, slow)
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    print(
        json.dumps(
            {
                "protocol_version": init.protocol_version,
                "tools": [t.name for t in tools.tools],
                "text": text,
                "structured": result.structured_content,
                "is_error": result.is_error,
                "progress": progress,
                **slow_seen,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
