"""The OpenAI Agents SDK (`openai-agents`) running a reagent agent as its model through
`OpenAIResponsesModel` (tests/api/openai/agents_sdk.rs).

Usage: openai_agents_sdk.py BASE_URL API_KEY MODEL. The SDK's agent has one function tool of
its own, `get_secret` (a caller tool for reagent); the reagent agent calls it, the SDK runs it
and sends its output back, and the run goes on to the final output. Tracing is disabled (it
would call OpenAI). Prints one JSON object with what the SDK saw; any exception fails the
script.
"""

import asyncio
import json
import sys

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

base_url, api_key, model = sys.argv[1:4]
set_tracing_disabled(True)
calls = []


@function_tool
def get_secret(name: str) -> str:
    """The secret of a name, known only to this process."""
    calls.append(name)
    return f"the secret of {name} is 42"


async def main():
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    agent = Agent(
        name="sdk-agent",
        instructions="Use get_secret when asked for a secret.",
        model=OpenAIResponsesModel(model=model, openai_client=client),
        tools=[get_secret],
    )
    # reagent keeps the conversation: the SDK chains responses by previous_response_id and
    # sends only the new items (the tool's output), as with OpenAI's stored responses.
    result = await Runner.run(
        agent, "What is the secret of ada?", auto_previous_response_id=True
    )
    items = [
        {"type": item.type, "raw": getattr(item, "raw_item", None) and _dump(item.raw_item)}
        for item in result.new_items
    ]
    print(json.dumps({
        "final_output": result.final_output,
        "calls": calls,
        "items": items,
        "responses": [r.response_id for r in result.raw_responses],
        "last_response_id": result.last_response_id,
    }))


def _dump(raw):
    return raw.model_dump() if hasattr(raw, "model_dump") else raw


asyncio.run(main())
