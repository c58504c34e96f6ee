"""Validates Responses payloads against the published Open Responses schema, as the pydantic
models of `openresponses-types` (pinned in requirements.txt) generate it from the
specification's OpenAPI document (tests/api/openai/responses.rs).

Reads JSON lines `{"kind": "response" | "event", "value": {...}}` on stdin and prints one JSON
array: for each line `null` when it is valid, else the validation error. Validation is strict
(JSON mode: no coercion). Provider items (a `type` with a provider prefix such as
`reagent:tool_call`) are outside the schema's item union by design of the specification; they
are checked for its extension rule (prefixed `type`, string `id`, item `status`) and left out of
the rest of the validation. The agent's own tool calls are OpenAI's `mcp_call` items (the
schema's union has no item for a tool the server ran, and the OpenAI SDKs warn at a prefixed
one): they are validated against the `openai` SDK's own `McpCall` model (pinned in
requirements.txt) instead, strictly, and left out of the rest as the provider items are.
"""

import json
import sys

import openresponses_types.types as t
from openai.types.responses.response_output_item import McpCall

EVENTS = {
    "response.created": t.ResponseCreatedStreamingEvent,
    "response.queued": t.ResponseQueuedStreamingEvent,
    "response.in_progress": t.ResponseInProgressStreamingEvent,
    "response.completed": t.ResponseCompletedStreamingEvent,
    "response.failed": t.ResponseFailedStreamingEvent,
    "response.incomplete": t.ResponseIncompleteStreamingEvent,
    "response.output_item.added": t.ResponseOutputItemAddedStreamingEvent,
    "response.output_item.done": t.ResponseOutputItemDoneStreamingEvent,
    "response.content_part.added": t.ResponseContentPartAddedStreamingEvent,
    "response.content_part.done": t.ResponseContentPartDoneStreamingEvent,
    "response.output_text.delta": t.ResponseOutputTextDeltaStreamingEvent,
    "response.output_text.done": t.ResponseOutputTextDoneStreamingEvent,
    "response.function_call_arguments.delta": t.ResponseFunctionCallArgumentsDeltaStreamingEvent,
    "response.function_call_arguments.done": t.ResponseFunctionCallArgumentsDoneStreamingEvent,
    "error": t.ErrorStreamingEvent,
}


def extension(item):
    """The extension rule's error for a provider item, or None; False when not one."""
    kind = item.get("type", "") if isinstance(item, dict) else ""
    if kind == "mcp_call":
        try:
            McpCall.model_validate_json(json.dumps(item), strict=True)
        except Exception as e:
            return f"mcp_call item not valid for the openai SDK: {str(e)[:500]}"
        return None
    if ":" not in kind:
        return False
    if not kind.split(":", 1)[0] or not isinstance(item.get("id"), str):
        return f"provider item without a prefix or an id: {item}"
    if item.get("status") not in ("in_progress", "completed", "incomplete"):
        return f"provider item with a bad status: {item}"
    return None


def strip_extensions(response):
    """The response without provider items, and the first extension-rule error."""
    errors = [e for e in (extension(i) for i in response.get("output", [])) if e]
    response = dict(response)
    response["output"] = [i for i in response.get("output", []) if extension(i) is False]
    return response, (errors[0] if errors else None)


def check(kind, value):
    if kind == "response":
        value, error = strip_extensions(value)
        if error:
            return error
        t.ResponseResource.model_validate_json(json.dumps(value), strict=True)
        return None
    model = EVENTS.get(value.get("type"))
    if model is None:
        return f"unknown event type {value.get('type')!r}"
    value = dict(value)
    if isinstance(value.get("response"), dict):
        value["response"], error = strip_extensions(value["response"])
        if error:
            return error
    if isinstance(value.get("item"), dict):
        error = extension(value["item"])
        if error:
            return error
        if error is None:
            value["item"] = None
    model.model_validate_json(json.dumps(value), strict=True)
    return None


results = []
for line in sys.stdin:
    if not line.strip():
        continue
    payload = json.loads(line)
    try:
        results.append(check(payload["kind"], payload["value"]))
    except Exception as e:  # a validation error, reported to the test
        results.append(str(e)[:2000])
print(json.dumps(results))
