//! The OpenAI-compatible routes in the OpenAPI document, kept apart from the generated `/api`
//! part so each can change on its own: [`extend`] adds them.

use serde_json::{json, Value};

/// Adds `/v1/models`, `/v1/chat/completions` and the `/v1/responses` routes to `doc`. `agents`
/// are the configured agents' names (the models every tenant has), given as examples of
/// `model` — a tenant's own agents are models too, so no list is complete; `text` is the
/// pattern of a query (not blank, no NUL), at most `max_chars` long.
///
/// The request schema is what is surely accepted — user messages with text — so that a client
/// generated from it (or a fuzzer) never meets a 400; the description names what else is read
/// (earlier `system`/`assistant` messages, text parts), which JSON Schema cannot say ("the last
/// message must be `user`").
pub fn extend(doc: &mut Value, agents: &[String], text: &str, max_chars: usize) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    paths.insert("/v1/models".into(), models_path());
    paths.insert(
        "/v1/chat/completions".into(),
        completions_path(agents, text, max_chars),
    );
    for (path, item) in super::responses::openapi::paths(agents, text, max_chars) {
        paths.insert(path, item);
    }
    // The schema lists the configured agents only (the names every tenant has), so that a
    // generated client or a fuzzer never meets a 400; a tenant's own agents are accepted too.
    let mut names: Vec<Value> = agents.iter().map(|a| json!(a)).collect();
    names.push(Value::Null);
    for body in ["CreateConversation", "ChatBody"] {
        if let Some(props) = doc.pointer_mut(&format!("/components/schemas/{body}/properties")) {
            props["agent"] = json!({"type": ["string", "null"], "enum": names,
                                    "description": "An agent of GET /api/agents (the schema lists the configured ones; the tenant's own are accepted too, and `agent_version` picks one of their versions)"});
            // Only an API agent has versions, and none is in the enum: left out, like them.
            if let Some(props) = props.as_object_mut() {
                props.remove("agent_version");
            }
        }
    }
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.insert("OpenAiError".into(), openai_error_schema());
    }
}

/// An error response with the OpenAI error body.
fn error(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAiError"}}}})
}

fn models_path() -> Value {
    json!({"get": {
        "tags": ["openai"], "operationId": "openai_models",
        "summary": "The caller's agents (configured and its own), as OpenAI models",
        "responses": {
            "200": {"description": "`{object: \"list\", data: [{id, object: \"model\", created, owned_by}]}`",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "401": error("`invalid_api_key`"),
            "429": error("`rate_limit_exceeded`"),
        }
    }})
}

fn completions_path(agents: &[String], text: &str, max_chars: usize) -> Value {
    let headers = json!({
        "X-Reagent-Run-Id": {"description": "The run (see /api/runs/{run_id})", "schema": {"type": "string", "format": "uuid"}},
        "X-Reagent-Conversation-Id": {"description": "Its conversation; send it back to continue", "schema": {"type": "string", "format": "uuid"}},
    });
    json!({"post": {
        "tags": ["openai"], "operationId": "openai_chat_completions",
        "summary": "Runs the agent named by `model` (docs/protocols.md)",
        "parameters": [{"name": "X-Reagent-Conversation-Id", "in": "header", "required": false,
                        "description": "Continue this stored conversation (its history is used)",
                        "schema": {"type": "string", "format": "uuid"}}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": completions_request(agents, text, max_chars)}}},
        "responses": {
            "200": {"description": "A `chat.completion`, or with `stream: true` `data:` lines of `chat.completion.chunk` ending with `data: [DONE]`",
                    "headers": headers,
                    "content": {"application/json": {"schema": {"type": "object"}},
                                "text/event-stream": {}}},
            "400": error("`invalid_request_error`: malformed body, last message neither `user` nor the `tool` results of a waiting run, a tool that is not a function or is named like one of the agent's, `functions`, `n > 1`, unsupported content or a bad image (docs/api.md \"Images\"); `model_without_vision`: images for an agent whose model has no vision"),
            "401": error("`invalid_api_key`"),
            "404": error("`model_not_found`, or `conversation_not_found` for the header"),
            "409": error("`conversation_busy`: the conversation has an active run; `conflict`: the `tool` results answer a run that no longer waits for them, a caller tool is declared twice, or caller tools for a DAG agent"),
            "413": error("`payload_too_large`"),
            "429": error("`rate_limit_exceeded`"),
        }
    }})
}

fn completions_request(agents: &[String], text: &str, max_chars: usize) -> Value {
    json!({
        "type": "object", "required": ["model", "messages"],
        "description": "Also read: earlier `system`/`developer` messages (added to the agent's prompt) and `assistant` messages (history) before the last message, which must be `user`; content as an array of `{type: \"text\", text}` parts and, in `user` messages, `{type: \"image_url\", image_url: {url, detail?}}` parts (a `data:` image is stored as an artifact, an `http(s)` URL passed on; docs/api.md \"Images\"). `tools` (type `function`) are caller tools: a call of one ends the response with `finish_reason: \"tool_calls\"`; a request whose last messages are `tool` results (their `tool_call_id`s as returned) continues that run. Other fields are ignored; `functions` and `n > 1` are refused.",
        "properties": {
            "model": {"type": "string", "minLength": 1, "examples": agents, "description": "An agent name (GET /v1/models)"},
            "messages": {"type": "array", "minItems": 1, "items": {"type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"type": "string", "enum": ["user"]},
                               "content": {"type": "string", "pattern": text, "maxLength": max_chars}}}},
            "stream": {"type": ["boolean", "null"]},
            "stream_options": {"type": ["object", "null"], "properties": {"include_usage": {"type": ["boolean", "null"]}}},
            "n": {"type": ["integer", "null"], "enum": [1, null]},
            "tools": {"type": ["array", "null"], "maxItems": 4, "items": {"type": "object",
                "required": ["type", "function"],
                "properties": {"type": {"type": "string", "enum": ["function"]},
                               "function": {"type": "object", "required": ["name"],
                                   "properties": {"name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                                                  "description": {"type": "string"},
                                                  "parameters": {"type": "object"}}}}}},
            "functions": {"type": ["array", "null"], "maxItems": 0},
        }
    })
}

fn openai_error_schema() -> Value {
    json!({
        "type": "object", "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["message", "type", "param", "code"],
            "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                           "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}
    })
}
