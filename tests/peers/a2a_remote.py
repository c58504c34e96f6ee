"""A remote A2A agent for reagent's A2A client tests, written with the official `a2a-sdk`.

Its AgentExecutor is deterministic and reads the first word of the message:
- anything else: two `working` status updates ("remote: reading <text>", "remote: writing"),
  then a text artifact "remote answer: <text>" and `completed`;
- `fail`: one `working` update, then `failed` with the message "the remote agent broke";
- `input`: `input-required` with the message "which city?";
- `block`: one `working` update ("remote: blocking"), then waits until the task is
  cancelled; the cancel is recorded.

Options: `--no-streaming` advertises `streaming: false`; `--v03-card` serves a v0.3 card (a
top-level `url`, no `supportedInterfaces`); `--refuse-v1` refuses the v1.0 method names with
-32601 as a v0.3-only server does (the v0.3 names are served by the SDK's own v0.3 adapter);
`--card-host HOST` names HOST instead of 127.0.0.1 in the card's interface URL (SSRF tests).
The server binds 127.0.0.1 on a free port and prints `PORT <n>` once it accepts connections. Every request's
method and `X-Test` header, and every cancel, go to the file named by A2A_REMOTE_LOG, one line
each, so tests can see what the server received.
"""

import argparse
import asyncio
import json
import logging
import os
import socket
import sys

import uvicorn
from a2a.helpers.proto_helpers import new_task, new_text_artifact, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

LOG = os.environ.get("A2A_REMOTE_LOG")
LOG_LEVEL = os.environ.get("A2A_REMOTE_LOG_LEVEL", "warning")
V10_METHODS = {
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "SubscribeToTask",
    "ListTasks",
}


def record(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def agent_text(text: str, context: RequestContext):
    return new_text_message(
        text, context_id=context.context_id, task_id=context.task_id, role=Role.ROLE_AGENT
    )


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        if context.current_task is None:
            task = new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        word = text.split(" ", 1)[0]
        if word == "fail":
            await updater.start_work(agent_text("remote: trying", context))
            await updater.failed(agent_text("the remote agent broke", context))
        elif word == "input":
            await updater.requires_input(agent_text("which city?", context))
        elif word == "block":
            await updater.start_work(agent_text("remote: blocking", context))
            record(f"blocking {context.task_id}")
            await asyncio.Event().wait()
        else:
            await updater.start_work(agent_text(f"remote: reading {text}", context))
            await updater.start_work(agent_text("remote: writing", context))
            await updater.add_artifact(
                new_text_artifact(name="answer", text=f"remote answer: {text}").parts,
                name="answer",
            )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        record(f"cancelled {context.task_id}")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def card(url: str, streaming: bool) -> AgentCard:
    return AgentCard(
        name="remote",
        description="A deterministic remote agent for reagent's tests.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="Answers.", tags=["test"])],
    )


def v03_card(url: str, streaming: bool) -> dict:
    return {
        "name": "remote",
        "description": "A deterministic remote agent for reagent's tests (v0.3).",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "url": url,
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "answer", "name": "answer", "description": "Answers.", "tags": []}],
    }


class Recorder:
    """Records each JSON-RPC method and the X-Test header; refuses v1.0 names if told."""

    def __init__(self, app, refuse_v1: bool):
        self.app = app
        self.refuse_v1 = refuse_v1

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body = b""
        more = True
        while more:
            msg = await receive()
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        method = request.get("method") if isinstance(request, dict) else None
        record(f"method {method} x-test={headers.get('x-test', '')}")
        if self.refuse_v1 and method in V10_METHODS:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            reply = JSONResponse({"jsonrpc": "2.0", "id": request.get("id"), "error": error})
            return await reply(scope, receive, send)

        replayed = False

        async def replay():
            # The body once, then the real channel (where the disconnect arrives).
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--v03-card", action="store_true")
    parser.add_argument("--refuse-v1", action="store_true")
    parser.add_argument("--card-host", default="127.0.0.1")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://{args.card_host}:{port}/rpc"
    streaming = not args.no_streaming

    the_card = card(url, streaming)
    handler = DefaultRequestHandlerV2(
        agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=the_card
    )
    routes = create_jsonrpc_routes(handler, "/rpc", enable_v0_3_compat=True)
    if args.v03_card:
        served = v03_card(url, streaming)

        async def card_route(_request):
            return JSONResponse(served)

        routes.append(Route("/.well-known/agent-card.json", card_route, methods=["GET"]))
    else:
        routes.extend(create_agent_card_routes(the_card))
    app = Recorder(Starlette(routes=routes), args.refuse_v1)

    logging.basicConfig(level=LOG_LEVEL.upper(), stream=sys.stderr)
    config = uvicorn.Config(app, log_level=LOG_LEVEL, lifespan="off")
    server = uvicorn.Server(config)

    async def serve():
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.02)
        print(f"PORT {port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
