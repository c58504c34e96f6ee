//! The front-end routes with plain HTTP: tenancy, bad input, a partial resume, a client that
//! goes away.

use futures::StreamExt;
use reagent::llm::ToolCall;
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{app, BOB};
use crate::support::app::{error_code, TestApp};
use crate::support::wait::eventually;

fn input(thread: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": "r1", "messages": messages})
}

fn user(text: &str) -> Value {
    json!({"id": Uuid::new_v4().to_string(), "role": "user", "content": text})
}

/// The AG-UI events of a whole response.
async fn events(r: reqwest::Response) -> Vec<Value> {
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    body.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn run_status(app: &TestApp, run: &str) -> String {
    let body: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    body["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn threads_are_the_callers_and_requests_are_checked() {
    let app = app().await;
    app.llm.text("hello");
    let thread = Uuid::new_v4().to_string();
    let r = app
        .post("/ag-ui/helper", input(&thread, json!([user("hi")])), None)
        .await;
    let got = events(r).await;
    assert_eq!(got.last().unwrap()["type"], "RUN_FINISHED");
    // Another tenant neither continues nor learns about it; another agent cannot take it over.
    let r = app
        .post(
            "/ag-ui/helper",
            input(&thread, json!([user("mine?")])),
            Some(BOB),
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let r = app
        .post(
            "/ai-sdk/helper",
            json!({"id": thread, "messages": []}),
            Some(BOB),
        )
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    let r = app
        .post(
            "/ag-ui/planner",
            input(&thread, json!([user("again")])),
            None,
        )
        .await;
    assert_eq!(error_code(r, 409).await, "conflict");
    let r = app
        .post("/ag-ui/nobody", input(&thread, json!([user("x")])), None)
        .await;
    assert_eq!(error_code(r, 404).await, "not_found");
    // Nothing new to answer; not a RunAgentInput; no key.
    let done = json!([user("hi"), {"id": "a", "role": "assistant", "content": "hello"}]);
    let r = app.post("/ag-ui/helper", input(&thread, done), None).await;
    assert_eq!(error_code(r, 409).await, "conflict");
    let r = app
        .post("/ag-ui/helper", json!({"threadId": thread}), None)
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    let r = app
        .client
        .post(app.url("/ai-sdk/helper"))
        .json(&json!({"id": "x", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(r, 401).await, "unauthorized");
}

#[tokio::test]
async fn a_resume_must_answer_every_interrupt_it_was_told_about() {
    let app = app().await;
    let call = |id: &str, env: &str| ToolCall {
        id: id.into(),
        name: "deploy".into(),
        arguments: format!(r#"{{"env":"{env}"}}"#),
    };
    app.llm.push(Turn::Reply(
        response("", vec![call("p1", "a"), call("p2", "b")]),
        std::time::Duration::ZERO,
    ));
    app.llm.text("both done");
    let thread = Uuid::new_v4().to_string();
    let r = app
        .post(
            "/ag-ui/helper",
            input(&thread, json!([user("deploy both")])),
            None,
        )
        .await;
    let first = events(r).await;
    let outcome = &first.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    let told = outcome["interrupts"][0]["id"].as_str().unwrap().to_string();
    // Both calls wait; the second one's id learnt elsewhere (GET /api/approvals).
    let pending: Value = eventually("both approvals", || async {
        let list: Value = app.get_json("/api/approvals", None).await;
        (list.as_array().unwrap().len() == 2).then_some(list)
    })
    .await;
    let other = pending
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .find(|id| *id != told)
        .unwrap();
    let resume = |ids: &[&str]| {
        let entries: Vec<Value> = ids
            .iter()
            .map(|id| json!({"interruptId": id, "status": "resolved"}))
            .collect();
        let mut body = input(&thread, json!([user("deploy both")]));
        body["resume"] = json!(entries);
        body
    };
    // Answering the later one while the first stays open would leave the run waiting.
    let r = app
        .post("/ag-ui/helper", resume(&[other.as_str()]), None)
        .await;
    assert_eq!(error_code(r, 400).await, "invalid_request");
    let r = app
        .post("/ag-ui/helper", resume(&["not-an-approval"]), None)
        .await;
    assert_eq!(error_code(r, 409).await, "conflict");
    // A new message while the run waits is refused too.
    let r = app
        .post(
            "/ag-ui/helper",
            input(&thread, json!([user("other")])),
            None,
        )
        .await;
    assert_eq!(error_code(r, 409).await, "run_active");
    let r = app
        .post(
            "/ag-ui/helper",
            resume(&[told.as_str(), other.as_str()]),
            None,
        )
        .await;
    let rest = events(r).await;
    let results: Vec<&Value> = rest
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect();
    assert_eq!(results.len(), 2, "{rest:?}");
    assert_eq!(rest.first().unwrap()["type"], "RUN_STARTED");
    assert_eq!(rest.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(rest.last().unwrap()["outcome"]["type"], "success");
}

#[tokio::test]
async fn a_client_that_goes_away_does_not_cancel_its_run() {
    let app = app().await;
    app.llm.tool_calls(&[("g1", "gate", "{}")]);
    app.llm.text("opened");
    for path in ["/ag-ui/helper", "/ai-sdk/helper"] {
        let thread = Uuid::new_v4().to_string();
        let body = if path.starts_with("/ag-ui") {
            input(&thread, json!([user("open the gate")]))
        } else {
            json!({"id": thread, "trigger": "submit-message", "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "open the gate"}]}]})
        };
        let r = app.post(path, body, None).await;
        assert_eq!(r.status(), 200);
        let mut stream = r.bytes_stream();
        let first = String::from_utf8(stream.next().await.unwrap().unwrap().to_vec()).unwrap();
        assert!(first.starts_with("data: "), "{first}");
        drop(stream);
        let run = eventually("the run", || async {
            let c: Value = app
                .get_json(&format!("/api/conversations/{thread}"), None)
                .await;
            c["messages"][0]["run_id"].as_str().map(str::to_string)
        })
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        app.gate.release();
        eventually("the run completes", || async {
            run_status(&app, &run).await == "completed"
        })
        .await;
        if path.starts_with("/ag-ui") {
            app.llm.tool_calls(&[("g2", "gate", "{}")]);
            app.llm.text("opened again");
        }
    }
}
