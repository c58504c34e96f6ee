"""The official `openai` Python SDK against a reagent agent (tests/api/openai/clients.rs).

Usage: openai_client.py BASE_URL API_KEY MODEL. Runs the scenario below and prints one JSON
object with what the client saw; the Rust test compares it with what the server stored. Any
unexpected exception fails the script (non-zero exit).
"""

import json
import sys

import openai

base_url, api_key, model = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
out = {}

out["models"] = [m.id for m in client.models.list()]

# Not streamed: history and a system message in the request.
raw = client.chat.completions.with_raw_response.create(
    model=model,
    messages=[
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "question"}]},
    ],
    temperature=0.2,  # an unknown-to-reagent field: ignored
)
done = raw.parse()
out["plain"] = {
    "run_id": raw.headers["x-reagent-run-id"],
    "conversation_id": raw.headers["x-reagent-conversation-id"],
    "object": done.object,
    "model": done.model,
    "content": done.choices[0].message.content,
    "role": done.choices[0].message.role,
    "finish_reason": done.choices[0].finish_reason,
    "usage": done.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}),
}


def read_stream(stream):
    seen = {"content": "", "reasoning": "", "roles": [], "finish_reasons": [], "usage": None,
            "tool_calls": 0, "after_usage": 0, "ids": set()}
    for chunk in stream:
        seen["ids"].add(chunk.id)
        if seen["usage"] is not None:
            seen["after_usage"] += 1
        if not chunk.choices:
            seen["usage"] = chunk.usage.model_dump(
                include={"prompt_tokens", "completion_tokens", "total_tokens"})
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta.role:
            seen["roles"].append(delta.role)
        if delta.content:
            seen["content"] += delta.content
        if delta.tool_calls:
            seen["tool_calls"] += 1
        reasoning = (delta.model_extra or {}).get("reasoning_content")
        if reasoning:
            seen["reasoning"] += reasoning
        if choice.finish_reason:
            seen["finish_reasons"].append(choice.finish_reason)
    seen["ids"] = len(seen["ids"])
    return seen


# Streamed, with a tool step and the usage chunk.
raw = client.chat.completions.with_raw_response.create(
    model=model,
    messages=[{"role": "user", "content": "use a tool"}],
    stream=True,
    stream_options={"include_usage": True},
)
streamed = read_stream(raw.parse())
streamed["run_id"] = raw.headers["x-reagent-run-id"]
streamed["conversation_id"] = raw.headers["x-reagent-conversation-id"]
out["streamed"] = streamed

# Continuity: the stored conversation, only the last user message read.
raw = client.chat.completions.with_raw_response.create(
    model=model,
    messages=[{"role": "user", "content": "ignored"}, {"role": "user", "content": "follow up"}],
    extra_headers={"X-Reagent-Conversation-Id": streamed["conversation_id"]},
)
cont = raw.parse()
out["continued"] = {
    "run_id": raw.headers["x-reagent-run-id"],
    "conversation_id": raw.headers["x-reagent-conversation-id"],
    "content": cont.choices[0].message.content,
}

errors = {}
try:
    openai.OpenAI(base_url=base_url, api_key="wrong-key", max_retries=0).models.list()
except openai.AuthenticationError as e:
    errors["auth"] = {"status": e.status_code, "code": e.code, "type": e.type}
try:
    client.chat.completions.create(model="no-such-agent", messages=[{"role": "user", "content": "hi"}])
except openai.NotFoundError as e:
    errors["model"] = {"status": e.status_code, "code": e.code, "param": e.param}
try:
    client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}],
    )
except openai.BadRequestError as e:
    # A caller tool named like one of the agent's own.
    errors["tools"] = {"status": e.status_code, "code": e.code, "message": e.message}
out["errors"] = errors

print(json.dumps(out))
