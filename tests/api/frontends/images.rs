//! Images from the front-end protocols (docs/protocols.md): an AG-UI `binary` image part and an
//! AI SDK `file` part with an image media type become the query's images, stored as the
//! conversation's artifacts and sent to the model.

use serde_json::{json, Value};
use uuid::Uuid;

use super::app;
use crate::support::app::TestApp;

const PNG: &str = "iVBORw0KGgo=";

/// Reads a front-end stream to its end, then the query the model was sent and the stored
/// user message's images.
async fn sent_and_stored(app: &TestApp, path: &str, body: Value, thread: &str) -> (Value, Value) {
    let r = app.post(path, body, None).await;
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let request = app.llm.chat_requests().remove(0);
    let query = request.messages.last().unwrap();
    let sent = json!({
        "text": query.content,
        "images": query.images.iter().map(|i| i.url.clone()).collect::<Vec<_>>(),
    });
    // A UUID thread id is the conversation's id.
    let detail: Value = app
        .get_json(&format!("/api/conversations/{thread}"), None)
        .await;
    (sent, detail["messages"][0]["images"].clone())
}

#[tokio::test]
async fn an_ag_ui_binary_image_part_is_the_querys_image() {
    let app = app().await;
    app.llm.text("a pixel");
    let thread = Uuid::new_v4().to_string();
    let body = json!({"threadId": thread, "runId": "r1", "messages": [{
    "id": "m1", "role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "binary", "mimeType": "image/png", "data": PNG},
    ]}]});
    let (sent, stored) = sent_and_stored(&app, "/ag-ui/helper", body, &thread).await;
    assert_eq!(
        sent,
        json!({"text": "what is this?", "images": [format!("data:image/png;base64,{PNG}")]})
    );
    assert!(stored[0]["artifact_id"].is_string(), "{stored}");
}

#[tokio::test]
async fn an_ai_sdk_file_part_with_an_image_type_is_the_querys_image() {
    let app = app().await;
    app.llm.text("a pixel");
    let thread = Uuid::new_v4().to_string();
    let body = json!({"id": thread, "trigger": "submit-message", "messages": [{
    "id": "m1", "role": "user", "parts": [
        {"type": "text", "text": "what is this?"},
        {"type": "file", "mediaType": "image/png", "url": format!("data:image/png;base64,{PNG}")},
        {"type": "file", "mediaType": "image/jpeg", "url": "https://example.com/b.jpg"},
    ]}]});
    let (sent, stored) = sent_and_stored(&app, "/ai-sdk/helper", body, &thread).await;
    assert_eq!(
        sent,
        json!({"text": "what is this?", "images": [
            format!("data:image/png;base64,{PNG}"), "https://example.com/b.jpg"]})
    );
    assert_eq!(stored[1], json!({"url": "https://example.com/b.jpg"}));
}
