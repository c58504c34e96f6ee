//! A tenant's own agent (`POST /api/agents`) on AG-UI and the AI SDK routes: it runs for its
//! tenant and is `404` for another, as an unknown agent is.

use serde_json::{json, Value};
use uuid::Uuid;

use super::{app, ALICE, BOB};
use crate::support::app::error_code;

#[tokio::test]
async fn a_tenants_api_agent_runs_on_ag_ui_and_the_ai_sdk_for_it_only() {
    let app = app().await;
    let writer = json!({"name": "writer", "model": "scripted", "tools": ["echo"]});
    let r = app.post("/api/agents", writer, Some(ALICE)).await;
    assert_eq!(r.status(), 201);
    let thread = Uuid::new_v4().to_string();
    let input = json!({"threadId": thread, "runId": "r1",
                       "messages": [{"id": "u1", "role": "user", "content": "write"}]});
    let chat = json!({"id": "c1", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "write"}]}]});

    let r = app.post("/ag-ui/writer", input.clone(), Some(BOB)).await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let r = app.post("/ai-sdk/writer", chat.clone(), Some(BOB)).await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let r = app.get("/ai-sdk/writer/c1/stream", Some(BOB)).await;
    assert_eq!(error_code(r, 404).await, "not_found");
    assert!(app.llm.chat_requests().is_empty(), "bob ran nothing");

    app.llm.text("brief").stream_text(&["agui answer"]);
    let r = app.post("/ag-ui/writer", input, Some(ALICE)).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("RUN_FINISHED"), "{body}");
    assert!(body.contains("agui answer"), "{body}");

    app.llm.text("brief").stream_text(&["sdk answer"]);
    let r = app.post("/ai-sdk/writer", chat, Some(ALICE)).await;
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.contains("sdk answer"), "{body}");
    let r = app.get("/ai-sdk/writer/c1/stream", Some(ALICE)).await;
    assert_eq!(r.status(), 204, "no active run");
    let conversations: Value = app.get_json("/api/conversations", Some(ALICE)).await;
    let text = conversations.to_string();
    assert!(text.matches("\"writer\"").count() >= 2, "{text}");
}
