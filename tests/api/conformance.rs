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
        Doc(app
            .get("/api/openapi.json", None)
            .await
            .json()
            .await
            .unwrap())
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

#[tokio::test]
async fn every_answer_of_a_run_matches_the_document() {
    let app = TestApp::with(Options {
        extra_tools: vec![deploy(), report()],
        ..Options::default()
    })
    .await;
    let doc = Doc::of(&app).await;
    let created = app
        .post("/api/conversations", json!({"title": "t"}), None)
        .await;
    let conv = doc.answer("post", "/api/conversations", created).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app.get("/api/conversations?limit=5", None).await;
    doc.answer("get", "/api/conversations", r).await;

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
    let template = "/api/conversations/{id}/interrupt";
    let recalled = doc
        .answer("post", template, app.interrupt(&conv, "never mind").await)
        .await;
    let r = app
        .delete(
            &format!(
                "/api/conversations/{conv}/interrupt/{}",
                recalled["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    doc.answer(
        "delete",
        "/api/conversations/{id}/interrupt/{interrupt_id}",
        r,
    )
    .await;
    doc.answer("post", template, app.interrupt(&conv, "and then?").await)
        .await;
    app.gate.release();

    app.wait_for(&run, |e| e.label() == "step:approval_required")
        .await;
    let pending = doc
        .answer(
            "get",
            "/api/approvals",
            app.get("/api/approvals", None).await,
        )
        .await;
    let approval = pending[0]["id"]
        .as_str()
        .expect("a pending approval")
        .to_string();
    let r = app
        .post(
            &format!("/api/approvals/{approval}"),
            json!({"approve": true}),
            None,
        )
        .await;
    doc.answer("post", "/api/approvals/{id}", r).await;

    let events = app.events(&run, None).await;
    assert_eq!(events.last().unwrap().event, "done");
    let labels: Vec<String> = events.iter().map(Sse::label).collect();
    for label in [
        "start",
        "step:interrupt",
        "step:approval_required",
        "step:tool_end",
        "answer:done",
    ] {
        assert!(labels.iter().any(|l| l == label), "{label} in {labels:?}");
    }
    doc.events("get", "/api/runs/{run_id}/events", &events);
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
        .expect("an artifact")
        .to_string();
    doc.answer("get", "/api/artifacts/{id}", app.get(&artifact, None).await)
        .await;

    // Errors and the rest.
    doc.answer("post", "/api/runs/{run_id}/cancel", app.cancel(&run).await)
        .await;
    let r = app
        .get(
            &format!("/api/conversations/{}", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    doc.answer("get", "/api/conversations/{id}", r).await;
    let r = app
        .post(
            &format!("/api/conversations/{conv}/runs"),
            json!({"query": " "}),
            None,
        )
        .await;
    doc.answer("post", "/api/conversations/{id}/runs", r).await;
    for (path, template) in [
        ("/api/tools", "/api/tools"),
        ("/api/models", "/api/models"),
        ("/healthz", "/healthz"),
        ("/readyz", "/readyz"),
    ] {
        doc.answer("get", template, app.get(path, None).await).await;
    }
    app.llm.text("hi");
    let r = app.post("/api/chat", json!({"query": "hello"}), None).await;
    assert_eq!(r.status(), 200);
    doc.events("post", "/api/chat", &read_all(r).await);
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
