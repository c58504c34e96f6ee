"""The official A2A Python SDK (`a2a-sdk`) client against a reagent agent over `/a2a/{agent}`.

Usage: a2a_client.py AGENT_URL KEY SCENARIO [v03]
Scenarios (the Rust test scripts the model for each, tests/api/a2a/sdk.rs):
  flow        streamed send, get, a non-streaming follow-up in the same context
  approval    a streamed send that stops at input-required, answered "yes" in the same task
  cancel      a send that returns at once, then cancel and get
  resubscribe a streamed send left after its first results, subscribed to again, answered "no"
With `v03` the client is made from the card's 0.3 interface only (the SDK's 0.3 transport).
Prints what it saw as one JSON object.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

FIELDS = ("task", "message", "status_update", "artifact_update")


def user(text, task_id="", context_id=""):
    return Message(
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        message_id=str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
    )


def state_name(state):
    return TaskState.Name(state)


def text_of(parts):
    return "".join(p.text for p in parts)


def artifact_text(task):
    return "".join(text_of(a.parts) for a in task.artifacts)


class Seen:
    """What one stream delivered: result kinds, states, the answer's chunks, ids."""

    def __init__(self):
        self.kinds, self.states, self.chunks, self.messages = [], [], [], []
        self.task_id = self.context_id = None

    def add(self, ev):
        kind = next(f for f in FIELDS if ev.HasField(f))
        self.kinds.append(kind)
        if kind == "task":
            self.task_id, self.context_id = ev.task.id, ev.task.context_id
            self.states.append(state_name(ev.task.status.state))
        elif kind == "status_update":
            self.task_id = self.task_id or ev.status_update.task_id
            self.states.append(state_name(ev.status_update.status.state))
            if ev.status_update.status.HasField("message"):
                self.messages.append(text_of(ev.status_update.status.message.parts))
        elif kind == "artifact_update":
            self.chunks.append(text_of(ev.artifact_update.artifact.parts))

    def json(self):
        return {"kinds": self.kinds, "states": self.states, "answer": "".join(self.chunks),
                "messages": self.messages, "task_id": self.task_id, "context_id": self.context_id}


async def stream(client, message, limit=None):
    seen = Seen()
    async for ev in client.send_message(SendMessageRequest(message=message)):
        seen.add(ev)
        if limit and len(seen.kinds) >= limit:
            break
    return seen


async def send_once(client, message, immediately=False):
    request = SendMessageRequest(message=message)
    request.configuration.return_immediately = immediately
    results = [ev async for ev in client.send_message(request)]
    task = results[-1].task
    return {"state": state_name(task.status.state), "answer": artifact_text(task),
            "task_id": task.id, "context_id": task.context_id}


async def get(client, task_id):
    task = await client.get_task(GetTaskRequest(id=task_id))
    return {"state": state_name(task.status.state), "answer": artifact_text(task),
            "history": [text_of(m.parts) for m in task.history]}


async def run(url, key, name, v03):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    card = await A2ACardResolver(http, url).get_agent_card()
    out = {"card": {"name": card.name, "streaming": card.capabilities.streaming,
                    "versions": [i.protocol_version for i in card.supported_interfaces],
                    "schemes": list(card.security_schemes.keys())}}
    if v03:
        keep = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(keep)
    streaming = ClientFactory(ClientConfig(httpx_client=http)).create(card)
    blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    out["transport"] = type(streaming._transport).__name__
    if name == "flow":
        first = await stream(streaming, user("echo x"))
        out["stream"] = first.json()
        out["get"] = await get(blocking, first.task_id)
        out["follow_up"] = await send_once(blocking, user("again", context_id=first.context_id))
    elif name == "approval":
        asked = await stream(streaming, user("deploy prod"))
        out["asked"] = asked.json()
        out["get_waiting"] = await get(blocking, asked.task_id)
        answered = await stream(streaming, user("yes", task_id=asked.task_id))
        out["answered"] = answered.json()
        out["get"] = await get(blocking, asked.task_id)
    elif name == "cancel":
        started = await send_once(blocking, user("slow"), immediately=True)
        out["started"] = started
        task = await blocking.cancel_task(CancelTaskRequest(id=started["task_id"]))
        out["cancelled"] = state_name(task.status.state)
        out["get"] = await get(blocking, started["task_id"])
    elif name == "resubscribe":
        left = await stream(streaming, user("deploy prod"), limit=2)
        out["left"] = left.json()
        again = Seen()
        async for ev in streaming.subscribe(SubscribeToTaskRequest(id=left.task_id)):
            again.add(ev)
        out["again"] = again.json()
        out["answered"] = await send_once(blocking, user("no", task_id=left.task_id))
    await http.aclose()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "v03"))
