"""The official MCP Python SDK client calling reagent's agents over /mcp (streamable HTTP).

Usage: mcp_client.py URL KEY AGENT QUERY. Prints JSON: the tool names listed, the call's text,
structuredContent, isError, and the progress notifications it received.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, key: str, agent: str, query: str) -> None:
    progress: list[dict] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "message": message})

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool(
                    agent, {"query": query}, progress_callback=on_progress
                )
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
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
