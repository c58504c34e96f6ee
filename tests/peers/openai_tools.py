"""A caller-tool round trip with the official `openai` Python SDK (tests/api/openai/tools.rs).

Usage: openai_tools.py BASE_URL API_KEY MODEL. Declares `get_secret`, a function of this
process; the agent calls it, the client runs it and sends the result back with the history,
then reads the final answer — not streamed, then streamed. Prints one JSON object with what the
client saw.
"""

import json
import sys

import openai

base_url, api_key, model = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_secret",
        "description": "The secret of a name, known only to the client",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                       "required": ["name"]},
    },
}]


def get_secret(name):
    return f"the secret of {name} is 42"


def run(call):
    args = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] == "get_secret", call
    return {"role": "tool", "tool_call_id": call["id"], "content": get_secret(args["name"])}


def plain():
    messages = [{"role": "user", "content": "what is the secret of ada?"}]
    first = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    message = first.choices[0].message
    calls = [c.model_dump(include={"id", "type", "function"}) for c in message.tool_calls or []]
    messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
    messages += [run(c) for c in calls]
    final = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    return {
        "finish_reasons": [first.choices[0].finish_reason, final.choices[0].finish_reason],
        "calls": calls,
        "first_content": message.content,
        "answer": final.choices[0].message.content,
    }


def streamed():
    messages = [{"role": "user", "content": "what is the secret of bob?"}]
    calls, finish = {}, []
    for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                                stream=True):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        for d in choice.delta.tool_calls or []:
            c = calls.setdefault(d.index, {"id": "", "type": "function",
                                           "function": {"name": "", "arguments": ""}})
            c["id"] += d.id or ""
            if d.function:
                c["function"]["name"] += d.function.name or ""
                c["function"]["arguments"] += d.function.arguments or ""
        if choice.finish_reason:
            finish.append(choice.finish_reason)
    calls = [calls[i] for i in sorted(calls)]
    messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    messages += [run(c) for c in calls]
    answer = ""
    for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                                stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            answer += chunk.choices[0].delta.content
        if chunk.choices and chunk.choices[0].finish_reason:
            finish.append(chunk.choices[0].finish_reason)
    return {"finish_reasons": finish, "calls": calls, "answer": answer}


print(json.dumps({"plain": plain(), "streamed": streamed()}))
