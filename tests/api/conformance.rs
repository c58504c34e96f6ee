//! The API's real answers against its own OpenAPI document: every JSON response of a scenario
//! that reaches each operation (a run with tool calls, an artifact, a follow-up drained and one
//! recalled, an approval; the catalog; errors) matches the schema documented for its operation
//! and status, and every SSE event's data matches the schema `x-sse-events` names for it.
//! Schemathesis checks responses to generated requests, which rarely get a run to do anything;
//! this covers what a run says. The checker is strict: an undocumented field fails.

use reagent::testing::schema;
use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::sse::{read_all, Sse};
use crate::support::tools::{deploy, FakeTool};

/// The document, and checks against it.
struct Doc(Value);

/// `path` as one JSON-pointer token.
fn token(path: &str) -> String {
    path.replace('~', "~0").replace('/', "~1")
}

impl Doc {
    async fn of(app: &TestApp) -> Doc {
        Doc(app.get_json("/api/openapi.json", None).await)
    }

    /// Checks `response` to `method template` against the schema of its status; its JSON.
    async fn answer(&self, method: &str, template: &str, response: reqwest::Response) -> Value {
        let status = response.status().as_u16();
        let at = format!("{method} {template} {status}");
        let documented = format!("/paths/{}/{method}/responses/{status}", token(template));
        let documented = self
            .0
            .pointer(&documented)
            .unwrap_or_else(|| panic!("{at}: status not documented"));
        let Some(content) = documented.get("content") else {
            let body = response.bytes().await.unwrap();
            assert!(body.is_empty(), "{at}: undocumented body");
            return Value::Null;
        };
        let Some(schema) = content.pointer("/application~1json/schema") else {
            assert!(content.get("*/*").is_some(), "{at}: {content}");
            return Value::Null;
        };
        let body: Value = response.json().await.unwrap();
        if let Err(e) = schema::check(&self.0, schema, &body, &at) {
            panic!("{e}\n{body}");
        }
        body
    }

    /// Checks each event of a stream answered by `method template` (status 200).
    fn events(&self, method: &str, template: &str, events: &[Sse]) {
        let listed = format!(
            "/paths/{}/{method}/responses/200/content/text~1event-stream/x-sse-events",
            token(template)
        );
        let listed = self.0.pointer(&listed).expect("x-sse-events");
        for e in events {
            let schema = listed
                .get(&e.event)
                .unwrap_or_else(|| panic!("{method} {template}: event {} not listed", e.event));
            let at = format!("{method} {template} event {} #{}", e.event, e.id);
            if let Err(err) = schema::check(&self.0, schema, &e.data, &at) {
                panic!("{err}\n{}", e.data);
            }
        }
    }
}

fn report() -> std::sync::Arc<FakeTool> {
    FakeTool::with("report", |_| "written".into())
        .describe("Writes a report")
        .artifact("report.md", "text/markdown", b"# Report")
        .arc()
}

/// A conversation created and listed through the document; its id.
async fn conversation(app: &TestApp, doc: &Doc) -> String {
    let created = app
        .post("/api/conversations", json!({"title": "t"}), None)
        .await;
    let conv = doc.answer("post", "/api/conversations", created).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.get("/api/conversations?limit=5", None).await;
    doc.answer("get", "/api/conversations", r).await;
    conv
}

/// While the run waits in the gate: one follow-up recalled, one left to be drained.
async fn follow_ups(app: &TestApp, doc: &Doc, conv: &str) {
    let template = "/api/conversations/{id}/interrupt";
    let recalled = doc
        .answer("post", template, app.interrupt(conv, "never mind").await)
        .await;
    let id = recalled["id"].as_str().unwrap();
    let r = app
        .delete(&format!("/api/conversations/{conv}/interrupt/{id}"), None)
        .await;
    let recall = "/api/conversations/{id}/interrupt/{interrupt_id}";
    doc.answer("delete", recall, r).await;
    doc.answer("post", template, app.interrupt(conv, "and then?").await)
        .await;
}

/// The pending approval listed and approved.
async fn approve(app: &TestApp, doc: &Doc, run: &str) {
    app.wait_for(run, |e| e.label() == "step:approval_required")
        .await;
    let r = app.get("/api/approvals", None).await;
    let pending = doc.answer("get", "/api/approvals", r).await;
    let approval = pending[0]["id"].as_str().expect("a pending approval");
    let r = app
        .post(
            &format!("/api/approvals/{approval}"),
            json!({"approve": true}),
            None,
        )
        .await;
    doc.answer("post", "/api/approvals/{id}", r).await;
}

/// The finished run read back: its state, its conversation's messages, its artifact.
async fn read_back(app: &TestApp, doc: &Doc, conv: &str, run: &str, events: &[Sse]) {
    let r = app.get(&format!("/api/runs/{run}"), None).await;
    doc.answer("get", "/api/runs/{run_id}", r).await;
    let r = app.get(&format!("/api/conversations/{conv}"), None).await;
    let detail = doc.answer("get", "/api/conversations/{id}", r).await;
    let kinds: Vec<&str> = detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["query", "interrupt", "answer"]);
    let artifact = events
        .iter()
        .find_map(|e| e.data["artifacts"][0]["url"].as_str())
        .expect("an artifact");
    doc.answer("get", "/api/artifacts/{id}", app.get(artifact, None).await)
        .await;
}

#[tokio::test]
async fn every_answer_of_a_run_matches_the_document() {
    let app = TestApp::with(Options {
        extra_tools: vec![deploy(), report()],
        ..Options::default()
    })
    .await;
    let doc = Doc::of(&app).await;
    let conv = conversation(&app, &doc).await;
    // A run that waits in a tool (follow-ups arrive), then needs an approval, then makes an
    // artifact and answers.
    app.llm.tool_calls(&[("c1", "gate", "{}")]);
    app.llm.tool_calls(&[("c2", "deploy", r#"{"env":"prod"}"#)]);
    app.llm.tool_calls(&[("c3", "report", "{}")]);
    app.llm.text("done");
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": "go"}),
            None,
        )
        .await;
    let started = doc.answer("post", "/api/conversations/{id}/runs", r).await;
    let run = started["run_id"].as_str().unwrap().to_string();
    app.wait_for(&run, |e| e.label() == "step:tool_start").await;
    follow_ups(&app, &doc, &conv).await;
    app.gate.release();
    approve(&app, &doc, &run).await;

    let events = app.events(&run, None).await;
    let labels: Vec<String> = events.iter().map(Sse::label).collect();
    for label in [
        "start",
        "step:interrupt",
        "step:approval_required",
        "step:tool_end",
        "done",
    ] {
        assert!(labels.iter().any(|l| l == label), "{label} in {labels:?}");
    }
    doc.events("get", "/api/runs/{run_id}/events", &events);
    read_back(&app, &doc, &conv, &run, &events).await;
}

#[tokio::test]
async fn errors_the_catalog_and_chat_match_the_document() {
    let app = TestApp::spawn().await;
    let doc = Doc::of(&app).await;
    let conv = conversation(&app, &doc).await;
    app.llm.text("hi");
    let r = app
        .post(
            "/api/chat",
            json!({"query": "hello", "conversation_id": conv}),
            None,
        )
        .await;
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    doc.events("post", "/api/chat", &events);
    let run = events[0].data["run_id"].as_str().unwrap();
    // 409: the run is over; 404: no such conversation; 400: a blank query.
    doc.answer("post", "/api/runs/{run_id}/cancel", app.cancel(run).await)
        .await;
    let missing = format!("/api/conversations/{}", uuid::Uuid::new_v4());
    doc.answer(
        "get",
        "/api/conversations/{id}",
        app.get(&missing, None).await,
    )
    .await;
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": " "}),
            None,
        )
        .await;
    doc.answer("post", "/api/conversations/{id}/runs", r).await;
    for path in ["/api/tools", "/api/models", "/healthz", "/readyz"] {
        doc.answer("get", path, app.get(path, None).await).await;
    }
    let r = app
        .client
        .patch(app.url(&format!("/api/conversations/{conv}")))
        .json(&json!({"title": "renamed"}))
        .send()
        .await
        .unwrap();
    doc.answer("patch", "/api/conversations/{id}", r).await;
    let r = app
        .delete(&format!("/api/conversations/{conv}"), None)
        .await;
    doc.answer("delete", "/api/conversations/{id}", r).await;
}
