"""The OpenAI Agents SDK's MCPServerStreamableHttp calling a reagent agent over /mcp: another
framework using a reagent agent as an MCP tool.

Usage: mcp_agents_sdk.py URL KEY AGENT QUERY. Prints JSON: the tool names it listed, the call's
text, structuredContent and isError.
"""

import asyncio
import json
import sys

from agents.mcp import MCPServerStreamableHttp


async def main(url: str, key: str, agent: str, query: str) -> None:
    params = {"url": url, "headers": {"Authorization": f"Bearer {key}"}}
    async with MCPServerStreamableHttp(params=params, client_session_timeout_seconds=30) as server:
        tools = await server.list_tools()
        result = await server.call_tool(agent, {"query": query})
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    print(
        json.dumps(
            {
                "tools": [t.name for t in tools],
                "text": text,
                "structured": result.structured_content,
                "is_error": result.is_error,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
