"""The official `openai` Python SDK sends images to a reagent agent (tests/api/openai/images.rs).

Usage: openai_images.py BASE_URL API_KEY MODEL BLIND_MODEL PNG_DATA_URL. Sends one chat
completion with an `image_url` part, one response with an `input_image` part, and one chat
completion with an image to an agent whose model has no vision; prints one JSON object with what
the client saw. Any unexpected exception fails the script (non-zero exit).
"""

import json
import sys

import openai

base_url, api_key, model, blind, png = sys.argv[1:6]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
out = {}

chat = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": png, "detail": "low"}},
    ]}],
)
out["chat"] = {"content": chat.choices[0].message.content,
               "finish_reason": chat.choices[0].finish_reason}

raw = client.responses.with_raw_response.create(
    model=model,
    input=[{"role": "user", "content": [
        {"type": "input_text", "text": "and this one?"},
        {"type": "input_image", "image_url": png, "detail": "high"},
    ]}],
)
# The body as the server sent it, for the schema check (the SDK's models turn times to floats).
out["response"] = raw.http_response.json()
out["response_text"] = raw.parse().output_text

try:
    client.chat.completions.create(
        model=blind,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "see?"},
            {"type": "image_url", "image_url": {"url": png}},
        ]}],
    )
    out["blind"] = "accepted"
except openai.BadRequestError as e:
    out["blind"] = {"status": e.status_code, "code": e.code, "type": e.type,
                    "message": e.message}

print(json.dumps(out))
