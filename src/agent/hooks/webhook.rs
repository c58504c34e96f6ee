//! The `webhook` hook: how users extend the policy layer without recompiling (SPEC §2.6). It
//! POSTs the hook context as JSON to a URL and applies the JSON verdict it gets back:
//!
//! - PreToolUse: `{"allow": false, "reason": "..."}` blocks; `{"arguments": {...}}` rewrites;
//!   `{}` or `{"allow": true}` (or an empty 2xx body, e.g. 204) allows.
//! - PostToolUse: `{"observation": "..."}` rewrites; anything else keeps the observation.
//!
//! A non-2xx status, a connection failure or a body that is not a JSON object of that shape is
//! a [`HookError::Failed`]; the runner then applies the entry's fail-open/fail-closed policy and
//! its timeout, so this hook sets no timeout of its own.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Hook, HookContext, HookError, PostContext, PostVerdict, PreVerdict};

/// Verdict bodies larger than this are refused: a verdict is a few fields, not a payload.
const MAX_VERDICT_BYTES: usize = 1024 * 1024;

/// The JSON body POSTed to the webhook.
#[derive(Serialize)]
struct Payload<'a> {
    event: &'static str,
    run_id: &'a str,
    conversation_id: &'a str,
    iteration: u32,
    call_id: &'a str,
    tool: &'a str,
    arguments: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
}

impl<'a> Payload<'a> {
    fn pre(ctx: &'a HookContext) -> Self {
        Self {
            event: "PreToolUse",
            run_id: &ctx.run_id,
            conversation_id: &ctx.conversation_id,
            iteration: ctx.iteration,
            call_id: &ctx.call_id,
            tool: &ctx.tool,
            arguments: &ctx.arguments,
            observation: None,
            error: None,
            blocked: None,
            duration_ms: None,
        }
    }

    fn post(ctx: &'a PostContext) -> Self {
        Self {
            event: "PostToolUse",
            observation: Some(&ctx.observation),
            error: Some(ctx.error),
            blocked: Some(ctx.blocked),
            duration_ms: Some(ctx.duration_ms),
            ..Self::pre(&ctx.call)
        }
    }
}

/// POSTs the context to `url` and applies the verdict.
pub struct WebhookHook {
    name: String,
    url: String,
    client: reqwest::Client,
}

impl WebhookHook {
    /// `client` is shared with the rest of the process (connection pooling); the URL is checked
    /// by configuration validation, a bad one just makes every call fail.
    pub fn new(url: impl Into<String>, client: reqwest::Client) -> Self {
        Self {
            name: "webhook".into(),
            url: url.into(),
            client,
        }
    }

    /// A name for logs and fail-closed messages (defaults to `webhook`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `payload` and returns the verdict object (empty for an empty body).
    async fn call(&self, payload: &Payload<'_>) -> Result<Map<String, Value>, HookError> {
        let response = self
            .client
            .post(&self.url)
            .json(payload)
            .send()
            .await
            .map_err(|e| HookError::Failed(format!("webhook unreachable: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(HookError::Failed(format!("webhook returned HTTP {status}")));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| HookError::Failed(format!("webhook body could not be read: {e}")))?;
        if body.len() > MAX_VERDICT_BYTES {
            return Err(HookError::Failed("webhook verdict is too large".into()));
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Map::new());
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(HookError::Failed(
                "webhook verdict is not a JSON object".into(),
            )),
            Err(e) => Err(HookError::Failed(format!(
                "webhook verdict is not JSON: {e}"
            ))),
        }
    }
}

/// Reads the Pre verdict; a block wins over a rewrite.
fn pre_verdict(map: &Map<String, Value>) -> Result<PreVerdict, HookError> {
    let allow = match map.get("allow") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(HookError::Failed("webhook 'allow' is not a boolean".into())),
    };
    if !allow {
        let reason = match map.get("reason") {
            Some(Value::String(r)) if !r.trim().is_empty() => r.trim().to_string(),
            _ => "blocked by a webhook policy".to_string(),
        };
        return Ok(PreVerdict::Block(reason));
    }
    match map.get("arguments") {
        None | Some(Value::Null) => Ok(PreVerdict::Allow),
        Some(args @ Value::Object(_)) => Ok(PreVerdict::Rewrite(args.clone())),
        Some(_) => Err(HookError::Failed(
            "webhook 'arguments' is not a JSON object".into(),
        )),
    }
}

fn post_verdict(map: &Map<String, Value>) -> Result<PostVerdict, HookError> {
    match map.get("observation") {
        None | Some(Value::Null) => Ok(PostVerdict::Keep),
        Some(Value::String(obs)) => Ok(PostVerdict::Rewrite(obs.clone())),
        Some(_) => Err(HookError::Failed(
            "webhook 'observation' is not a string".into(),
        )),
    }
}

#[async_trait]
impl Hook for WebhookHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn pre_tool_use(&self, ctx: &HookContext) -> Result<PreVerdict, HookError> {
        pre_verdict(&self.call(&Payload::pre(ctx)).await?)
    }

    async fn post_tool_use(&self, ctx: &PostContext) -> Result<PostVerdict, HookError> {
        post_verdict(&self.call(&Payload::post(ctx)).await?)
    }
}

#[cfg(test)]
mod tests {
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

        let post = r.post_tool_use(post_ctx(&"x".repeat(300))).await;
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
        assert_eq!(r.post_tool_use(post_ctx("kept")).await.observation, "kept");
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
        let post = closed.post_tool_use(post_ctx("secret")).await;
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
}
