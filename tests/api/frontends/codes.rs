//! The status codes docs/api.md and docs/protocols.md give for requests that are well-formed
//! but conflict (issue 51, item 6): a caller tool declared twice, caller tools for a DAG agent,
//! and a front-end history with no new user message are `409` on every route (a `400` is for a
//! body the schema refuses), and `/v1` names them `conflict`, not `conversation_busy`.

use serde_json::{json, Value};

use super::app;

#[tokio::test]
async fn well_formed_requests_that_conflict_are_409_on_every_route() {
    let app = app().await;
    let function =
        json!({"type": "function", "function": {"name": "c", "parameters": {"type": "object"}}});
    let plain = json!({"name": "c", "description": "d", "parameters": {"type": "object"}});
    let responses_tool = json!({"type": "function", "name": "c", "parameters": {"type": "object"}});
    let user = json!({"id": "m", "role": "user", "content": "q"});
    let sdk_user = json!({"id": "m", "role": "user", "parts": [{"type": "text", "text": "q"}]});
    let conv = app.create_conversation(None).await;
    let api = [
        (
            format!("/api/conversations/{conv}/runs"),
            json!({"query": "q", "client_tools": [function, function]}),
        ),
        (
            "/api/chat".into(),
            json!({"query": "q", "client_tools": [function, function]}),
        ),
        (
            "/ag-ui/helper".into(),
            json!({"threadId": "t1", "runId": "r", "messages": [user], "tools": [plain, plain]}),
        ),
        (
            "/ai-sdk/helper".into(),
            json!({"id": "t2", "messages": [sdk_user], "tools": [plain, plain]}),
        ),
        (
            "/ag-ui/planner".into(),
            json!({"threadId": "t3", "runId": "r", "messages": [user], "tools": [plain]}),
        ),
        (
            "/ag-ui/helper".into(),
            json!({"threadId": "t4", "runId": "r", "messages": [user,
                {"id": "a", "role": "assistant", "content": "x"}]}),
        ),
        (
            "/ai-sdk/helper".into(),
            json!({"id": "t5", "messages": [sdk_user,
                {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "x"}]}]}),
        ),
    ];
    for (path, body) in api {
        let r = app.post(&path, body, None).await;
        assert_eq!(r.status(), 409, "{path}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], "conflict", "{path}: {e}");
    }
    let v1 = [
        (
            "/v1/chat/completions",
            json!({"model": "helper", "messages": [{"role": "user", "content": "q"}],
                "tools": [function, function]}),
        ),
        (
            "/v1/responses",
            json!({"model": "helper", "input": "q", "tools": [responses_tool, responses_tool]}),
        ),
    ];
    for (path, body) in v1 {
        let r = app.post(path, body, None).await;
        assert_eq!(r.status(), 409, "{path}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], "conflict", "{path}: {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{path}: {e}");
    }
    // Nothing was stored for any of them.
    let list: Value = app.get_json("/api/conversations", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
}
