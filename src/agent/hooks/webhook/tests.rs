use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;

use super::*;
use crate::agent::hooks::{FailurePolicy, HookEntry, HookRunner, PostOutcome, PreOutcome};

type Seen = Arc<Mutex<Vec<Value>>>;

async fn record(seen: &Seen, body: Value) -> Value {
    seen.lock().unwrap().push(body.clone());
    body
}

/// A local policy server: each route is one kind of verdict.
async fn server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/block",
            post(|State(s): State<Seen>, Json(b): Json<Value>| async move {
                record(&s, b).await;
                Json(json!({"allow": false, "reason": "no deletes on prod"}))
            }),
        )
        .route(
            "/rewrite",
            post(|State(s): State<Seen>, Json(b): Json<Value>| async move {
                let b = record(&s, b).await;
                if b["event"] == "PreToolUse" {
                    Json(json!({"arguments": {"limit": 10, "was": b["arguments"]}}))
                } else {
                    let n = b["observation"].as_str().unwrap_or("").len();
                    Json(json!({"observation": format!("summary of {n} bytes")}))
                }
            }),
        )
        .route(
            "/allow",
            post(|State(s): State<Seen>, Json(b): Json<Value>| async move {
                record(&s, b).await;
                Json(json!({}))
            }),
        )
        .route(
            "/status500",
            post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route("/garbage", post(|| async { "this is not json" }))
        .route(
            "/slow",
            post(|| async {
                std::future::pending::<()>().await;
                "never"
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn ctx() -> HookContext {
    HookContext {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        iteration: 2,
        call_id: "call-7".into(),
        tool: "delete_rows".into(),
        arguments: json!({"table": "users"}),
        tool_writes: true,
        requires_approval: false,
        events: None,
    }
}

fn post_ctx(observation: &str) -> PostContext {
    PostContext {
        call: ctx(),
        observation: observation.into(),
        error: false,
        blocked: false,
        duration_ms: 12,
    }
}

fn runner(url: String, policy: FailurePolicy, timeout: Duration) -> HookRunner {
    let hook = WebhookHook::new(url, reqwest::Client::new()).with_name("policy");
    HookRunner::new(vec![HookEntry::new(Arc::new(hook))
        .policy(policy)
        .timeout(timeout)])
}

const LONG: Duration = Duration::from_secs(10);

#[tokio::test]
async fn block_verdict_blocks_with_the_servers_reason_and_sends_the_context() {
    let (base, seen) = server().await;
    let r = runner(format!("{base}/block"), FailurePolicy::FailOpen, LONG);
    let outcome = r.pre_tool_use(&mut ctx()).await;
    assert_eq!(outcome, PreOutcome::Blocked("no deletes on prod".into()));
    let sent = seen.lock().unwrap().clone();
    assert_eq!(
        sent,
        vec![
            json!({"event": "PreToolUse", "run_id": "run-1", "conversation_id": "conv-1",
            "iteration": 2, "call_id": "call-7", "tool": "delete_rows",
            "arguments": {"table": "users"}})
        ]
    );
}

#[tokio::test]
async fn rewrite_verdicts_replace_arguments_and_observation() {
    let (base, seen) = server().await;
    let r = runner(format!("{base}/rewrite"), FailurePolicy::FailOpen, LONG);
    let mut c = ctx();
    let outcome = r.pre_tool_use(&mut c).await;
    let expected = json!({"limit": 10, "was": {"table": "users"}});
    assert_eq!(outcome, PreOutcome::Allowed(expected.clone()));
    assert_eq!(c.arguments, expected);

    let post = r.post_tool_use(&mut post_ctx(&"x".repeat(300))).await;
    assert_eq!(
        post,
        PostOutcome {
            observation: "summary of 300 bytes".into(),
            error: false
        }
    );
    let sent = seen.lock().unwrap().clone();
    assert_eq!(sent[1]["event"], "PostToolUse");
    assert_eq!(sent[1]["duration_ms"], 12);
    assert_eq!(
        (&sent[1]["error"], &sent[1]["blocked"]),
        (&json!(false), &json!(false))
    );
}

#[tokio::test]
async fn empty_verdict_allows_and_keeps() {
    let (base, _) = server().await;
    let r = runner(format!("{base}/allow"), FailurePolicy::FailClosed, LONG);
    assert_eq!(
        r.pre_tool_use(&mut ctx()).await,
        PreOutcome::Allowed(json!({"table": "users"}))
    );
    assert_eq!(
        r.post_tool_use(&mut post_ctx("kept")).await.observation,
        "kept"
    );
}

#[tokio::test]
async fn server_down_follows_the_failure_policy() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    drop(listener);
    let open = runner(url.clone(), FailurePolicy::FailOpen, LONG);
    assert_eq!(
        open.pre_tool_use(&mut ctx()).await,
        PreOutcome::Allowed(json!({"table": "users"}))
    );
    let closed = runner(url, FailurePolicy::FailClosed, LONG);
    let PreOutcome::Blocked(reason) = closed.pre_tool_use(&mut ctx()).await else {
        panic!("fail-closed must block");
    };
    assert!(
        reason.contains("'policy'") && reason.contains("unreachable"),
        "{reason}"
    );
    let post = closed.post_tool_use(&mut post_ctx("secret")).await;
    assert!(post.error && !post.observation.contains("secret"));
}

#[tokio::test]
async fn bad_status_or_body_is_a_failure() {
    let (base, _) = server().await;
    for path in ["status500", "garbage"] {
        let closed = runner(format!("{base}/{path}"), FailurePolicy::FailClosed, LONG);
        assert!(
            matches!(
                closed.pre_tool_use(&mut ctx()).await,
                PreOutcome::Blocked(_)
            ),
            "{path}"
        );
        let open = runner(format!("{base}/{path}"), FailurePolicy::FailOpen, LONG);
        assert!(
            matches!(open.pre_tool_use(&mut ctx()).await, PreOutcome::Allowed(_)),
            "{path}"
        );
    }
}

#[tokio::test]
async fn slow_server_times_out_under_the_entry_timeout() {
    let (base, _) = server().await;
    let short = Duration::from_millis(100);
    let closed = runner(format!("{base}/slow"), FailurePolicy::FailClosed, short);
    let PreOutcome::Blocked(reason) = closed.pre_tool_use(&mut ctx()).await else {
        panic!("fail-closed timeout must block");
    };
    assert!(reason.contains("timed out"), "{reason}");
    let open = runner(format!("{base}/slow"), FailurePolicy::FailOpen, short);
    assert_eq!(
        open.pre_tool_use(&mut ctx()).await,
        PreOutcome::Allowed(json!({"table": "users"}))
    );
}

#[test]
fn verdict_shapes_are_checked() {
    let m = |v: Value| v.as_object().cloned().unwrap();
    assert_eq!(
        pre_verdict(&m(json!({"allow": false}))),
        Ok(PreVerdict::Block("blocked by a webhook policy".into()))
    );
    assert_eq!(
        pre_verdict(&m(json!({"allow": false, "arguments": {}}))),
        Ok(PreVerdict::Block("blocked by a webhook policy".into()))
    );
    assert!(pre_verdict(&m(json!({"allow": "no"}))).is_err());
    assert!(pre_verdict(&m(json!({"arguments": [1]}))).is_err());
    assert_eq!(
        post_verdict(&m(json!({"allow": true}))),
        Ok(PostVerdict::Keep)
    );
    assert!(post_verdict(&m(json!({"observation": 3}))).is_err());
}
