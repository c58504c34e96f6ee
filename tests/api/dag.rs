//! DAG mode over HTTP: a DAG run's SSE sequence, its replay after a restart, resume
//! from a `Last-Event-ID` in the middle of the execution phase, and the engine choice on
//! conversations, runs and `/api/chat`. One step at a time (`DAG_MAX_CONCURRENCY=1`) so the
//! scripted model's replies come in a known order; step A waits on the test's gate tool, so
//! "during execution" is a state of the test.

use reagent::testing::scripted::ScriptedLlm;
use reagent::testing::Turn;
use serde_json::{json, Value};

use crate::support::app::{Options, TestApp};
use crate::support::sse::{assert_sequential, labels, read_all, Sse};

/// Plan (A, then B after A), A calls the gate, A and B answer, the analysis is satisfied.
fn script() -> ScriptedLlm {
    let llm = ScriptedLlm::native();
    let plan = json!({"steps": [
        {"id": "A", "task": "look it up", "dependencies": [], "tool_hint": "gate"},
        {"id": "B", "task": "sum it up", "dependencies": ["A"]}
    ]});
    llm.text(&plan.to_string());
    llm.tool_calls(&[("c1", "gate", "{}")]);
    llm.text("A found it");
    llm.text("B summed it");
    llm.text(&json!({"achieved": true, "confidence": 0.9, "reasoning": "done"}).to_string());
    llm.push_stream(Turn::Stream(vec!["The ".into(), "answer.".into()], None));
    llm
}

fn options(db_url: Option<String>) -> Options {
    Options {
        llm: script(),
        db_url,
        env: vec![("DAG_MAX_CONCURRENCY", "1".into())],
        ..Options::default()
    }
}

/// `step:<type>` labels with the DAG details that matter: `dag_step:<id>:<status>`.
fn dag_labels(events: &[Sse]) -> Vec<String> {
    labels(events)
        .into_iter()
        .zip(events)
        .map(|(l, e)| match e.data["type"].as_str() {
            Some("dag_step") => format!(
                "dag_step:{}:{}",
                e.data["step_id"].as_str().unwrap_or("?"),
                e.data["status"].as_str().unwrap_or("?")
            ),
            _ => l,
        })
        .collect()
}

async fn create(app: &TestApp, body: Value) -> String {
    let r = app.post("/api/conversations", body, None).await;
    assert_eq!(r.status(), 201, "{:?}", r.text().await);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["engine"], "dag");
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_dag_run_streams_resumes_mid_execution_and_replays_after_restart() {
    let app = TestApp::with(options(None)).await;
    // Stored on the conversation: the run names no engine.
    let conv = create(&app, json!({"engine": "dag"})).await;
    let run = app
        .start_run(&conv, json!({"query": "find and sum"}), None)
        .await;
    let early = app.wait_for(&run, |e| e.data["type"] == "tool_start").await;
    let running_a = early
        .iter()
        .find(|e| e.data["type"] == "dag_step" && e.data["status"] == "running")
        .expect("A running")
        .id;
    app.gate.release();
    let all = app.events(&run, None).await;
    assert_sequential(&all);
    assert_eq!(
        dag_labels(&all),
        [
            "start",
            "step:plan",
            "dag_step:A:queued",
            "dag_step:A:running",
            "step:tool_start",
            "step:tool_end",
            "dag_step:A:completed",
            "dag_step:B:queued",
            "dag_step:B:running",
            "dag_step:B:completed",
            "step:analysis",
            "answer:start",
            "answer:delta",
            "answer:done",
            "done"
        ]
    );
    assert_eq!(all[0].data["engine"], "dag");
    let plan = &all[1].data;
    assert_eq!(plan["round"], 1);
    assert_eq!(plan["steps"][1]["dependencies"], json!(["A"]));
    assert_eq!(plan["steps"][0]["model"], "scripted");
    for e in all.iter().filter(|e| {
        matches!(
            e.data["type"].as_str(),
            Some("thinking" | "tool_start" | "tool_end")
        )
    }) {
        assert_eq!(e.data["dag_step"], "A", "{e:?}");
    }
    let b_done = all
        .iter()
        .find(|e| e.data["step_id"] == "B" && e.data["status"] == "completed")
        .unwrap();
    assert_eq!(b_done.data["result"], "B summed it");
    assert!(b_done.data["duration_ms"].is_u64());
    let done = &all.last().unwrap().data;
    assert_eq!(done["engine"], "dag");
    assert_eq!(
        (done["rounds"].as_u64(), done["achieved"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(done["answer"], "The answer.");
    assert_eq!(done["status"], "completed");

    // Resume from the middle of the execution phase: exactly the rest.
    let rest = app.events(&run, Some(running_a)).await;
    assert_eq!(rest, all[running_a as usize..].to_vec());

    // The conversation keeps the answer; the run row says completed.
    let row: Value = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(row["status"], "completed");

    let db_url = app.db_url.clone();
    let _dir = app.stop().await;
    let app2 = TestApp::with(options(Some(db_url))).await;
    assert_eq!(app2.events(&run, None).await, all);
    assert_eq!(
        app2.events(&run, Some(running_a)).await,
        all[running_a as usize..].to_vec()
    );
    app2.stop().await;
}

#[tokio::test]
async fn chat_picks_the_engine_and_auto_says_what_it_chose() {
    let llm = ScriptedLlm::native();
    // auto → the router answers react; then a one-step ReAct run.
    llm.text(&json!({"engine": "react", "reasoning": "simple"}).to_string());
    llm.text("hello there");
    let app = TestApp::with(Options {
        llm,
        ..Options::default()
    })
    .await;
    let r = app
        .post("/api/chat", json!({"query": "hi", "engine": "auto"}), None)
        .await;
    assert_eq!(r.status(), 200);
    let events = read_all(r).await;
    assert_eq!(events[0].data["engine"], "react");
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed");
    // The routing call counts in the run's usage.
    assert_eq!(done["usage"]["llm_calls"], 3);
    assert!(done.get("rounds").is_none());

    let bad = app
        .post("/api/chat", json!({"query": "hi", "engine": "turbo"}), None)
        .await;
    assert_eq!(bad.status(), 400);
    let conv = app
        .post("/api/conversations", json!({"engine": "warp"}), None)
        .await;
    assert_eq!(conv.status(), 400);
    app.stop().await;
}

#[tokio::test]
async fn an_agents_engine_applies_to_its_conversations_runs() {
    let llm = ScriptedLlm::native();
    let plan = json!({"steps": [{"id": "A", "task": "answer", "dependencies": []}]});
    llm.text(&plan.to_string());
    llm.text("A answered");
    llm.text(&json!({"achieved": true, "confidence": 0.9, "reasoning": "done"}).to_string());
    llm.push_stream(Turn::Stream(vec!["Done.".into()], None));
    let app = TestApp::with(Options {
        llm,
        toml: "[[agents]]\nname = \"planner\"\nengine = \"dag\"\n".into(),
        ..Options::default()
    })
    .await;
    let r = app
        .post("/api/conversations", json!({"agent": "planner"}), None)
        .await;
    assert_eq!(r.status(), 201);
    let conv: Value = r.json().await.unwrap();
    let conv = conv["id"].as_str().unwrap();
    let run = app.start_run(conv, json!({"query": "plan it"}), None).await;
    let events = app.events(&run, None).await;
    assert_eq!(events[0].data["engine"], "dag", "{:?}", labels(&events));
    let done = events.last().unwrap();
    assert_eq!(done.data["engine"], "dag");
    assert_eq!(done.data["answer"], "Done.");
}
