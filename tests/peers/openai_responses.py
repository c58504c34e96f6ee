"""The official `openai` Python SDK's Responses API against a reagent agent
(tests/api/openai/responses.rs).

Usage: openai_responses.py BASE_URL API_KEY OTHER_KEY MODEL. Runs the scenario below and
prints one JSON object with what the client saw; the Rust test compares it with what the server
stored. Any unexpected exception fails the script (non-zero exit).
"""

import json
import sys
import time

import openai

base_url, api_key, other_key, model = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
other = openai.OpenAI(base_url=base_url, api_key=other_key, max_retries=0)
out = {}


def summary(r):
    return {
        "id": r.id,
        "object": r.object,
        "status": r.status,
        "model": r.model,
        "text": r.output_text,
        "types": [item.type for item in r.output],
        "conversation": r.conversation.id if r.conversation else None,
        "previous_response_id": r.previous_response_id,
        "usage": r.usage.model_dump(include={"input_tokens", "output_tokens", "total_tokens"})
        if r.usage else None,
        "completed_at": r.completed_at,
        "metadata": r.metadata,
    }


# 1. Plain, with instructions and a system message.
raw = client.responses.with_raw_response.create(
    model=model,
    instructions="Answer briefly.",
    input=[{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hello"}],
    metadata={"ticket": "42"},
    store=False,
)
plain = raw.parse()
out["plain"] = summary(plain)
out["plain"]["run_header"] = raw.headers["x-reagent-run-id"]

# 2. The SDK's stream helper (its accumulator checks the event order).
events = []
with client.responses.stream(model=model, input="use a tool") as stream:
    for event in stream:
        events.append({"type": event.type, "seq": event.sequence_number})
    final = stream.get_final_response()
out["streamed"] = summary(final)
out["streamed"]["events"] = events
tool_items = [i for i in final.output if i.type == "mcp_call"]
out["streamed"]["tool"] = tool_items[0].to_dict() if tool_items else None
# The SDK's own class, not a fallback it made up for a type it does not know.
out["streamed"]["tool_class"] = type(tool_items[0]).__name__ if tool_items else None

# 3. Continue the streamed response, then branch from it again (a fork).
cont = client.responses.create(model=model, input="follow up", previous_response_id=final.id)
out["continued"] = summary(cont)
fork = client.responses.create(model=model, input="other way", previous_response_id=final.id)
out["forked"] = summary(fork)
via_conv = client.responses.create(model=model, input="by conversation",
                                   conversation=cont.conversation.id)
out["by_conversation"] = summary(via_conv)

# 4. Background: created at once, stream dropped after the tool call, resumed by number.
bg = client.responses.create(model=model, input="slow work", background=True)
out["background_created"] = summary(bg)
first = []
stream = client.responses.retrieve(bg.id, stream=True)
for event in stream:
    first.append({"type": event.type, "seq": event.sequence_number})
    if event.type == "response.output_item.done":
        break
stream.close()
rest = []
for event in client.responses.retrieve(bg.id, stream=True, starting_after=first[-1]["seq"]):
    rest.append({"type": event.type, "seq": event.sequence_number})
out["background_first"] = first
out["background_rest"] = rest
polled = client.responses.retrieve(bg.id)
while polled.status in ("queued", "in_progress"):
    time.sleep(0.05)
    polled = client.responses.retrieve(bg.id)
out["background_done"] = summary(polled)

# 5. Cancel a background response.
slow = client.responses.create(model=model, input="very slow", background=True)
cancelled = client.responses.cancel(slow.id)
out["cancelled"] = summary(cancelled)
out["cancelled_again"] = client.responses.cancel(slow.id).status

# 6. Input items, another tenant, delete.
items = client.responses.input_items.list(plain.id, order="asc")
out["input_items"] = [
    {"role": i.role, "type": i.type, "text": i.content[0].text} for i in items.data
]
try:
    other.responses.retrieve(plain.id)
    out["other_tenant"] = "visible"
except openai.NotFoundError as e:
    out["other_tenant"] = e.status_code
client.responses.delete(cancelled.id)
try:
    client.responses.retrieve(cancelled.id)
    out["deleted"] = "still there"
except openai.NotFoundError as e:
    out["deleted"] = e.status_code
try:
    client.responses.create(model=model, input="x", tools=[{"type": "web_search"}])
    out["tools"] = "accepted"
except openai.BadRequestError as e:
    out["tools"] = {"status": e.status_code, "param": e.body.get("param")}

# 7. A caller tool round trip, not streamed then streamed.
weather = [{"type": "function", "name": "get_weather", "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
asked = client.responses.create(model=model, input="weather?", tools=weather)
calls = [i for i in asked.output if i.type == "function_call"]
answered = client.responses.create(
    model=model, previous_response_id=asked.id, tools=weather,
    input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"}])
out["caller"] = {"asked": summary(asked), "call": calls[0].to_dict(), "answered": summary(answered)}
events = []
with client.responses.stream(model=model, input="weather streamed?", tools=weather) as stream:
    for event in stream:
        events.append(event.type)
    asked = stream.get_final_response()
calls = [i for i in asked.output if i.type == "function_call"]
with client.responses.stream(
        model=model, previous_response_id=asked.id, tools=weather,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"}],
) as stream:
    for event in stream:
        pass
    answered = stream.get_final_response()
out["caller_streamed"] = {"events": events, "asked": summary(asked), "answered": summary(answered)}

print(json.dumps(out))
