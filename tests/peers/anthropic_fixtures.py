"""Writes the wire shapes of the Anthropic Messages API as the official SDK's types build them
(the `anthropic` package pinned in requirements.txt), for the fake Anthropic provider of the
tests (src/testing/fake_anthropic): each object is built and validated by its pydantic model,
then dumped as the JSON the API sends. The fake fills these templates with its scripted turns,
so every field name and shape it sends comes from the SDK, never from a hand-typed copy.

Regenerate after changing the pin:
    ~/.cache/reagent-peers/venv/bin/python tests/peers/anthropic_fixtures.py \
        > src/testing/fake_anthropic/fixtures.json
"""

import json
import sys

import anthropic
from anthropic import types as t

MODEL = "claude-fixture"


def dump(obj):
    return obj.model_dump(mode="json", exclude_unset=False)


def usage(**counts):
    base = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0}
    base.update(counts)
    return t.Usage.model_validate(base)


thinking = t.ThinkingBlock(type="thinking", thinking="", signature="")
redacted = t.RedactedThinkingBlock(type="redacted_thinking", data="")
text = t.TextBlock(type="text", text="", citations=None)
tool_use = t.ToolUseBlock(type="tool_use", id="toolu_0", name="", input={})

message = t.Message(
    id="msg_0", type="message", role="assistant", model=MODEL,
    content=[thinking, text, tool_use],
    stop_reason="tool_use", stop_sequence=None,
    usage=usage(input_tokens=10, output_tokens=5),
)

fixtures = {
    "sdk": f"anthropic {anthropic.__version__}",
    "message": dump(message),
    "blocks": {b.type: dump(b) for b in [thinking, redacted, text, tool_use]},
    "events": {
        "message_start": dump(t.RawMessageStartEvent(
            type="message_start",
            message=message.model_copy(update={"content": [], "stop_reason": None}))),
        "content_block_start": dump(t.RawContentBlockStartEvent(
            type="content_block_start", index=0, content_block=text)),
        "ping": {"type": "ping"},
        "content_block_stop": dump(t.RawContentBlockStopEvent(type="content_block_stop", index=0)),
        "message_delta": dump(t.RawMessageDeltaEvent(
            type="message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage=t.MessageDeltaUsage.model_validate({"output_tokens": 5}))),
        "message_stop": dump(t.RawMessageStopEvent(type="message_stop")),
    },
    "deltas": {
        d.type: dump(t.RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=d))
        for d in [
            t.TextDelta(type="text_delta", text=""),
            t.InputJSONDelta(type="input_json_delta", partial_json=""),
            t.ThinkingDelta(type="thinking_delta", thinking=""),
            t.SignatureDelta(type="signature_delta", signature=""),
        ]
    },
    "errors": {
        e.error.type: dump(e)
        for e in [
            t.ErrorResponse(type="error", error=t.InvalidRequestError(
                type="invalid_request_error", message="")),
            t.ErrorResponse(type="error", error=t.OverloadedError(
                type="overloaded_error", message="Overloaded")),
            t.ErrorResponse(type="error", error=t.RateLimitError(
                type="rate_limit_error", message="Rate limited")),
        ]
    },
}

json.dump(fixtures, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
