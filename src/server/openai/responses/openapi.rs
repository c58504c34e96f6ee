//! The Responses routes in the OpenAPI document (docs/protocols.md). As for Chat Completions,
//! the request schema is what is surely accepted (a text `input` for an agent); the
//! description names what else is read.

use serde_json::{json, Value};

fn error(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAiError"}}}})
}

fn id_param() -> Value {
    json!({"name": "id", "in": "path", "required": true,
           "description": "`resp_` followed by the run id", "schema": {"type": "string"}})
}

fn object_or_stream(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"type": "object"}},
                       "text/event-stream": {}}})
}

/// `(path, item)` of every Responses route.
pub fn paths(agents: &[String], text: &str, max_chars: usize) -> Vec<(String, Value)> {
    let common = |mut responses: Value| {
        responses["401"] = error("`invalid_api_key`");
        responses["404"] = error("`not_found`: no such response of the caller's");
        responses["429"] = error("`rate_limit_exceeded`");
        responses
    };
    let create = json!({"post": {
        "tags": ["openai"], "operationId": "openai_create_response",
        "summary": "Runs the agent named by `model` as one response (docs/protocols.md)",
        "requestBody": {"required": true, "content": {"application/json": {"schema": request(agents, text, max_chars)}}},
        "responses": {
            "200": object_or_stream("The response object (with `background: true` at once, `in_progress`), or with `stream: true` its events (`event:` = `type`, each with `sequence_number`) ending with `data: [DONE]`"),
            "400": error("`invalid_request_error`: malformed body, input not ending with a `user` message, tools other than `function`, unsupported items or parts, a bad `input_image`, outputs that do not answer the previous response's calls; `model_without_vision`: images for an agent whose model has no vision"),
            "401": error("`invalid_api_key`"),
            "404": error("`model_not_found`, or `not_found` for `previous_response_id` or `conversation`"),
            "409": error("`conversation_busy`: the conversation has an active run; `conflict`: a caller tool declared twice, caller tools for a DAG agent, or outputs for a response that no longer waits"),
            "413": error("`payload_too_large`"),
            "429": error("`rate_limit_exceeded`"),
        }
    }});
    let one = json!({
        "get": {
            "tags": ["openai"], "operationId": "openai_get_response",
            "summary": "The response; with `stream=true` its events after `starting_after`, followed live",
            "parameters": [id_param(),
                {"name": "stream", "in": "query", "required": false, "schema": {"type": "boolean"}},
                {"name": "starting_after", "in": "query", "required": false,
                 "description": "Replay only the events numbered above this", "schema": {"type": "integer", "minimum": 0}}],
            "responses": common(json!({
                "200": object_or_stream("The response object, or its event stream"),
                "400": error("`invalid_request_error`: a malformed query string"),
            })),
        },
        "delete": {
            "tags": ["openai"], "operationId": "openai_delete_response",
            "summary": "Deletes the response: its run, events and messages (a running one is cancelled first)",
            "parameters": [id_param()],
            "responses": common(json!({
                "200": {"description": "`{id, object: \"response\", deleted: true}`",
                        "content": {"application/json": {"schema": {"type": "object"}}}},
                "503": error("`service_unavailable`: the run did not stop in time"),
            })),
        },
    });
    let cancel = json!({"post": {
        "tags": ["openai"], "operationId": "openai_cancel_response",
        "summary": "Cancels a running response (a finished one is returned unchanged)",
        "parameters": [id_param()],
        "responses": common(json!({
            "200": {"description": "The response object", "content": {"application/json": {"schema": {"type": "object"}}}},
            "503": error("`service_unavailable`: the run did not stop in time"),
        })),
    }});
    let items = json!({"get": {
        "tags": ["openai"], "operationId": "openai_response_input_items",
        "summary": "The response's input items",
        "parameters": [id_param(),
            {"name": "order", "in": "query", "required": false, "schema": {"type": "string", "enum": ["asc", "desc"]}},
            {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
            {"name": "after", "in": "query", "required": false, "schema": {"type": "string"}}],
        "responses": common(json!({
            "200": {"description": "`{object: \"list\", data, first_id, last_id, has_more}`",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "400": error("`invalid_request_error`: a malformed query string or `order`"),
        })),
    }});
    vec![
        ("/v1/responses".into(), create),
        ("/v1/responses/{id}".into(), one),
        ("/v1/responses/{id}/cancel".into(), cancel),
        ("/v1/responses/{id}/input_items".into(), items),
    ]
}

fn request(agents: &[String], text: &str, max_chars: usize) -> Value {
    json!({
        "type": "object", "required": ["model", "input"],
        "description": "Also read: `input` as items (`message` with roles user, assistant, system, developer and text parts; the last must be `user`), `instructions`, `previous_response_id`, `conversation`, `tool_choice` (`auto` or `none`), `max_output_tokens`, `metadata`, `store` (changes nothing: runs are always stored), `background`, `tools` of type `function` (caller tools) and `function_call_output` input items. Other fields are ignored.",
        "properties": {
            "model": {"type": "string", "minLength": 1, "examples": agents, "description": "An agent name (GET /v1/models)"},
            "input": {"type": "string", "pattern": text, "maxLength": max_chars},
            "stream": {"type": ["boolean", "null"]},
            "background": {"type": ["boolean", "null"]},
            "store": {"type": ["boolean", "null"]},
            "metadata": {"type": ["object", "null"], "maxProperties": 16,
                         "additionalProperties": {"type": "string", "maxLength": 512}},
            "tools": {"type": ["array", "null"], "maxItems": 0},
        }
    })
}
