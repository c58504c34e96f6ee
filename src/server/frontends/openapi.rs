//! `/ag-ui/{agent}` and `/ai-sdk/{agent}` in the OpenAPI document, beside the generated `/api`
//! part: [`extend`] adds them. The request schemas say what is surely accepted (a new user
//! message with text); the descriptions name what else is read.

use serde_json::{json, Value};

/// Adds both routes to `doc`. `agents` are the configured agents' names (examples: a tenant's
/// own agents are valid too); `text` is the pattern of a query,
/// at most `max_chars` long.
pub fn extend(doc: &mut Value, agents: &[String], text: &str, max_chars: usize) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    paths.insert("/ag-ui/{agent}".into(), ag_ui_path(agents, text, max_chars));
    paths.insert(
        "/ai-sdk/{agent}".into(),
        ai_sdk_path(agents, text, max_chars),
    );
    paths.insert("/ai-sdk/{agent}/{id}/stream".into(), reconnect_path(agents));
}

fn error(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn operation(
    agents: &[String],
    id: &str,
    summary: &str,
    request: Value,
    ok: &str,
    headers: Value,
) -> Value {
    json!({"post": {
        "tags": ["frontends"], "operationId": id, "summary": summary,
        "parameters": [{"name": "agent", "in": "path", "required": true,
                        "description": "An agent name (GET /api/agents)",
                        "schema": {"type": "string", "examples": agents}}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": request}}},
        "responses": {
            "200": {"description": ok, "headers": headers,
                    "content": {"text/event-stream": {}}},
            "400": error("`invalid_request`: malformed body, a partial `resume`, too long a query"),
            "401": error("`unauthorized`"),
            "404": error("`not_found`: unknown agent, or the thread is another tenant's conversation"),
            "409": error("`run_active`: the thread has an active run; `conflict`: another agent's thread, an interrupt that is not open, no new user message, a caller tool declared twice or caller tools for a DAG agent"),
            "413": error("`payload_too_large`"),
            "429": error("`rate_limited`"),
        }
    }})
}

fn user_message(text: &str, max_chars: usize, content: &str) -> Value {
    json!({"type": "object", "required": ["role", content],
    "properties": {"id": {"type": ["string", "null"]}, "role": {"type": "string", "enum": ["user"]},
                   content: if content == "content" {
                       json!({"type": "string", "pattern": text, "maxLength": max_chars})
                   } else {
                       json!({"type": "array", "minItems": 1, "items": {
                           "type": "object", "required": ["type", "text"],
                           "properties": {"type": {"type": "string", "description": "`text` parts make the question, `file` parts with an `image/*` `mediaType` its images (docs/api.md \"Images\"); other parts are read as the AI SDK defines them or ignored"},
                                          "text": {"type": "string", "pattern": text, "maxLength": max_chars}}}})
                   }}})
}

fn ag_ui_path(agents: &[String], text: &str, max_chars: usize) -> Value {
    let request = json!({
        "type": "object", "required": ["threadId", "runId", "messages"],
        "description": "An AG-UI 1.0 `RunAgentInput`. The thread is a conversation (created when unknown); `messages` is the whole history, of which only the user messages after the last assistant message are new. Also read: `tools` (frontend tools, run by the client), `tool` messages after the last assistant message (their outputs), `context` (`[{description, value}]`, a section of this run's system prompt), image parts of user messages (`binary` with an `image/*` `mimeType` and `data` or `url`, or `image` with a `data`/`url` source: the query's images, docs/api.md \"Images\"), `resume` (`[{interruptId, status: \"resolved\"|\"cancelled\", payload?}]`, answering every open interrupt: an approval's payload `{approved, reason}`, a tool call's its output). `state`, `forwardedProps` and the rest come back in `RUN_STARTED.input`.",
        "properties": {
            "threadId": {"type": "string"},
            "runId": {"type": "string"},
            "messages": {"type": "array", "minItems": 1, "items": user_message(text, max_chars, "content")},
            "state": {"description": "Any JSON value; echoed in `RUN_STARTED`"},
            "forwardedProps": {"description": "Any JSON value; echoed in `RUN_STARTED`"},
        }
    });
    operation(
        agents,
        "ag_ui_run",
        "Runs the agent over AG-UI (docs/protocols.md)",
        request,
        "`data:` lines of AG-UI events: `RUN_STARTED` … `RUN_FINISHED` (an approval: with an interrupt outcome) or `RUN_ERROR`",
        json!({}),
    )
}

fn ai_sdk_path(agents: &[String], text: &str, max_chars: usize) -> Value {
    let request = json!({
        "type": "object", "required": ["id", "messages"],
        "description": "The AI SDK `useChat` body (`DefaultChatTransport`). `id` is the conversation (created when unknown); the last message is the new user message, or an assistant message whose tool parts answer approvals (`approval-responded`) or caller tool calls (`output-available`). `tools` (`[{name, description, parameters}]`) declares caller tools.",
        "properties": {
            "id": {"type": "string", "description": "The chat id: a conversation id, or any other id (the caller's own conversation derived from it)"},
            "messages": {"type": "array", "minItems": 1, "items": user_message(text, max_chars, "parts")},
            "trigger": {"description": "`submit-message` or `regenerate-message` as `useChat` sends it; either runs the last user message"},
        }
    });
    let headers = json!({"x-vercel-ai-ui-message-stream": {"description": "`v1`", "schema": {"type": "string"}}});
    operation(
        agents,
        "ai_sdk_chat",
        "Runs the agent over the AI SDK UI message stream (docs/protocols.md)",
        request,
        "`data:` lines of UI message chunks: `start`, `start-step` … `finish-step`, `finish`, then `data: [DONE]`",
        headers,
    )
}

/// `GET /ai-sdk/{agent}/{id}/stream`: the transport's `reconnectToStream`.
fn reconnect_path(agents: &[String]) -> Value {
    let headers = json!({"x-vercel-ai-ui-message-stream": {"description": "`v1`", "schema": {"type": "string"}}});
    json!({"get": {
        "tags": ["frontends"], "operationId": "ai_sdk_reconnect",
        "summary": "Resumes the chat's active run as a UI message stream (docs/protocols.md)",
        "description": "What `DefaultChatTransport.reconnectToStream` asks (`useChat` with `resume: true`): the chat's active run replayed from its first event and followed to its end.",
        "parameters": [
            {"name": "agent", "in": "path", "required": true,
             "description": "An agent name (GET /api/agents)",
             "schema": {"type": "string", "examples": agents}},
            {"name": "id", "in": "path", "required": true,
             "description": "The chat id, as in `POST /ai-sdk/{agent}`",
             "schema": {"type": "string"}},
        ],
        "responses": {
            "200": {"description": "The run's UI message chunks from `start`, then `data: [DONE]`",
                    "headers": headers, "content": {"text/event-stream": {}}},
            "204": {"description": "No active run: the chat is idle or unknown"},
            "401": error("`unauthorized`"),
            "404": error("`not_found`: unknown agent, or the chat is another tenant's conversation"),
            "409": error("`conflict`: the chat belongs to another agent"),
            "429": error("`rate_limited`"),
        }
    }})
}
