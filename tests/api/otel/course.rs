//! A run's trace across its course: a DAG run's workflow, plan and per-step agent spans; a run
//! resumed after kill -9, cancelled, or continued after caller-tool outputs stays in one trace.

use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use super::{chat, event, traced, traced_on, Probe, CALLER_SPAN, CALLER_TRACE};
use crate::support::otlp::{named, Collector, Span};
use crate::support::sse::read_all;

#[tokio::test]
async fn a_dag_run_is_a_workflow_with_a_plan_and_an_agent_span_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::serve().await;
    std::fs::write(dir.path().join("config.toml"), probe.config()).unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    let plan = json!({"steps": [
        {"id": "A", "task": "probe it", "dependencies": [], "tool_hint": "probe"},
        {"id": "B", "task": "sum it up", "dependencies": ["A"]}
    ]});
    llm.push(FakeReply::text(plan.to_string()));
    llm.push(FakeReply::tool_calls(vec![("call_a", "probe", "{}")]));
    llm.push(FakeReply::text("A probed"));
    llm.push(FakeReply::text("B summed"));
    llm.push(FakeReply::text(
        json!({"achieved": true, "confidence": 0.9, "reasoning": "ok"}).to_string(),
    ));
    llm.set_default(FakeReply::text("The answer."));
    let env = [
        ("REAGENT_DEFAULT_ENGINE", "dag"),
        ("DAG_MAX_CONCURRENCY", "1"),
    ];
    let server = traced(dir.path(), &llm, &collector.endpoint(), &env).await;
    let events = chat(&server, "probe and sum").await;
    let done = event(&events, "done");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["engine"], "dag", "{done}");
    let calls = done["usage"]["llm_calls"].as_u64().unwrap() as usize;
    let spans = collector
        .wait_for("the DAG run's spans", |s| {
            s.iter().any(|s| s.name == "invoke_workflow")
                && s.iter().filter(|s| s.name.starts_with("chat ")).count() == calls
        })
        .await;
    let workflow = named(&spans, "invoke_workflow");
    assert_eq!(workflow.parent_span_id, CALLER_SPAN);
    assert_eq!(
        workflow.str("gen_ai.operation.name"),
        Some("invoke_workflow")
    );
    let plan = spans
        .iter()
        .find(|s| s.name.starts_with("plan"))
        .expect("a plan span");
    assert_eq!(plan.parent_span_id, workflow.span_id);
    assert_eq!(plan.str("gen_ai.operation.name"), Some("plan"));
    let (a, b) = (
        named(&spans, "invoke_agent A"),
        named(&spans, "invoke_agent B"),
    );
    for step in [a, b] {
        assert_eq!(step.parent_span_id, workflow.span_id);
        assert_eq!(step.str("gen_ai.operation.name"), Some("invoke_agent"));
    }
    let tool = named(&spans, "execute_tool probe");
    assert_eq!(tool.parent_span_id, a.span_id, "the tool call is step A's");
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    let under = |id: &str| chats.iter().filter(|c| c.parent_span_id == id).count();
    assert_eq!(under(&plan.span_id), 1, "the planner's call");
    assert_eq!(
        under(&a.span_id),
        2,
        "A's loop: the tool call, then its answer"
    );
    assert_eq!(under(&b.span_id), 1);
    assert_eq!(
        under(&workflow.span_id),
        calls - 4,
        "analysis and synthesis"
    );
    let kinds = |id: &str| {
        let mut k: Vec<&str> = chats
            .iter()
            .filter(|c| c.parent_span_id == id)
            .map(|c| c.str("reagent.call_kind").unwrap_or("none"))
            .collect();
        k.sort();
        k
    };
    assert_eq!(kinds(&plan.span_id), ["planner"]);
    assert_eq!(kinds(&a.span_id), ["dag_step", "dag_step"]);
    assert_eq!(kinds(&b.span_id), ["dag_step"]);
    assert_eq!(kinds(&workflow.span_id), ["analysis", "synthesis"]);
    assert!(spans.iter().all(|s| s.trace_id == CALLER_TRACE));
}

#[tokio::test]
async fn a_run_resumed_after_kill_9_continues_its_trace() {
    use crate::support::lookup::{lookup_mock, Lookup};
    use reagent::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let tool = Lookup::serve().await;
    std::fs::write(dir.path().join("config.toml"), tool.config(false)).unwrap();
    let mock = lookup_mock().await;
    let collector = Collector::start().await;
    let db = format!("sqlite://{}", dir.path().join("runs.db").display());
    let env = [("DATABASE_URL", db.as_str())];
    let mut server = traced_on(dir.path(), &mock.base_url(), &collector.endpoint(), &env).await;
    let client = reqwest::Client::new();
    let conv: Value = client
        .post(server.url("/api/conversations"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let conv = conv["id"].as_str().unwrap();
    let r = client
        .post(server.url(&format!("/api/conversations/{conv}/runs")))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({"query": "look it up"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let run: Value = r.json().await.unwrap();
    let run = run["run_id"].as_str().unwrap().to_string();
    let store = Store::connect(&db).await.unwrap();
    let id = uuid::Uuid::parse_str(&run).unwrap();
    tool.wait_in_flight(&store, id).await;
    let stored = store
        .run_traceparent(id)
        .await
        .unwrap()
        .expect("the run's trace is stored");
    store.close().await;
    let (trace, first_span) = {
        let parts: Vec<&str> = stored.split('-').collect();
        (parts[1].to_string(), parts[2].to_string())
    };
    assert_eq!(trace, CALLER_TRACE);

    server.kill9().await;
    let server = traced_on(dir.path(), &mock.base_url(), &collector.endpoint(), &env).await;
    let replay = server.events_until_done(&run, None).await;
    let done = &replay.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["trace_id"], CALLER_TRACE,
        "the same trace after the restart"
    );
    let spans = collector
        .wait_for("the resumed run's span", |s| {
            s.iter().any(|s| s.name.starts_with("invoke_agent"))
        })
        .await;
    let resumed = named(&spans, "invoke_agent reagent");
    assert_eq!(resumed.trace_id, CALLER_TRACE);
    assert_eq!(
        resumed.parent_span_id, first_span,
        "a child of the killed process's run span"
    );
    assert!(spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .all(|c| c.trace_id == CALLER_TRACE));
    mock.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_run_ends_its_chat_and_run_spans_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    llm.set_default(FakeReply::text("too late").delay(60_000));
    let server = traced(dir.path(), &llm, &collector.endpoint(), &[]).await;
    let (_, run) = server.start_run("wait").await;
    crate::support::eventually("the model call", || async { llm.request_count() == 1 }).await;
    let r = reqwest::Client::new()
        .post(server.url(&format!("/api/runs/{run}/cancel")))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let events = server.events_until_done(&run, None).await;
    assert_eq!(events.last().unwrap().data["status"], "cancelled");
    let spans = collector
        .wait_for("the cancelled run's spans", |s| {
            s.iter().any(|s| s.name.starts_with("invoke_agent"))
                && s.iter().any(|s| s.name.starts_with("chat "))
        })
        .await;
    let agent = named(&spans, "invoke_agent reagent");
    assert_eq!(agent.str("error.type"), Some("cancelled"));
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    assert_eq!(
        chat.str("error.type"),
        Some("cancelled"),
        "ended when the call was dropped"
    );
    assert_eq!(chat.parent_span_id, agent.span_id);
}

#[tokio::test]
async fn a_continuation_after_tool_outputs_stays_in_the_paused_runs_trace() {
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::start().await;
    let llm = FakeOpenAi::start().await.unwrap();
    llm.push(FakeReply::tool_calls(vec![("c1", "confirm", "{}")]));
    llm.set_default(FakeReply::text("confirmed"));
    let server = traced(dir.path(), &llm, &collector.endpoint(), &[]).await;
    let tools = json!([{"type": "function", "function": {
        "name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}}]);
    let client = reqwest::Client::new();
    let r = client
        .post(server.url("/api/chat"))
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({"query": "ask me", "client_tools": tools}))
        .send()
        .await
        .unwrap();
    let paused = read_all(r).await;
    let done = event(&paused, "done");
    assert_eq!(done["status"], "requires_action", "{done}");
    let run = event(&paused, "start")["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // No traceparent on the outputs: the continuation joins the paused run's trace.
    let r = client
        .post(server.url(&format!("/api/runs/{run}/tool_outputs")))
        .json(&json!({"outputs": [{"call_id": "c1", "output": "yes"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let next: Value = r.json().await.unwrap();
    let next = next["run_id"].as_str().unwrap().to_string();
    let events = server.events_until_done(&next, None).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["trace_id"], CALLER_TRACE);
    let spans = collector
        .wait_for("both runs' spans", |s| {
            s.iter()
                .filter(|s| s.name.starts_with("invoke_agent"))
                .count()
                == 2
        })
        .await;
    let agents: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("invoke_agent"))
        .collect();
    let first = agents
        .iter()
        .find(|s| s.str("reagent.run.id") == Some(run.as_str()))
        .unwrap();
    let second = agents
        .iter()
        .find(|s| s.str("reagent.run.id") == Some(next.as_str()))
        .unwrap();
    assert_eq!(first.parent_span_id, CALLER_SPAN);
    assert_eq!(
        second.parent_span_id, first.span_id,
        "the continuation under the paused run"
    );
    assert_eq!(second.trace_id, CALLER_TRACE);
}
