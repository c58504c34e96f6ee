//! A tenant's own agents (`POST /api/agents`) under `/v1`: listed as its models only, run by
//! Chat Completions and the Responses API, and `model_not_found` for every other tenant.

use serde_json::{json, Value};

use super::{agents_app, ALICE, BOB};
use crate::support::app::TestApp;

/// `error.code` of an OpenAI-shaped error with `status`.
async fn openai_code(r: reqwest::Response, status: u16) -> String {
    assert_eq!(r.status(), status);
    let body: Value = r.json().await.unwrap();
    body["error"]["code"].as_str().unwrap().to_string()
}

async fn model_ids(app: &TestApp, key: &str) -> Vec<String> {
    let models: Value = app.get_json("/v1/models", Some(key)).await;
    let data = models["data"].as_array().unwrap();
    data.iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_tenants_api_agent_is_its_model_and_no_one_elses() {
    let app = agents_app().await;
    let writer = json!({"name": "writer", "model": "scripted", "system_prompt": "You write.",
                        "tools": []});
    let r = app.post("/api/agents", writer, Some(ALICE)).await;
    assert_eq!(r.status(), 201);
    assert_eq!(model_ids(&app, ALICE).await, ["helper", "second", "writer"]);
    assert_eq!(model_ids(&app, BOB).await, ["helper", "second"]);

    app.llm.text("brief").stream_text(&["written"]);
    let ask = json!({"model": "writer", "messages": [{"role": "user", "content": "write"}]});
    let r = app
        .post("/v1/chat/completions", ask.clone(), Some(ALICE))
        .await;
    assert_eq!(r.status(), 200);
    let done: Value = r.json().await.unwrap();
    assert_eq!(done["model"], "writer");
    assert_eq!(done["choices"][0]["message"]["content"], "written");
    let sent = serde_json::to_string(&app.llm.chat_requests()[0].messages).unwrap();
    assert!(
        sent.contains("You write."),
        "the API agent's prompt: {sent}"
    );

    let asked_before = app.llm.chat_requests().len();
    let r = app.post("/v1/chat/completions", ask, Some(BOB)).await;
    assert_eq!(openai_code(r, 404).await, "model_not_found");
    let asked = json!({"model": "writer", "input": "write"});
    let r = app.post("/v1/responses", asked.clone(), Some(BOB)).await;
    assert_eq!(openai_code(r, 404).await, "model_not_found");
    assert_eq!(
        app.llm.chat_requests().len(),
        asked_before,
        "bob ran nothing"
    );

    app.llm.text("brief").stream_text(&["responded"]);
    let r = app.post("/v1/responses", asked, Some(ALICE)).await;
    assert_eq!(r.status(), 200);
    let response: Value = r.json().await.unwrap();
    assert_eq!(response["model"], "writer");
    assert_eq!(response["status"], "completed", "{response}");
    assert!(response.to_string().contains("responded"), "{response}");
}
