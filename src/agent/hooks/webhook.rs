//! The `webhook` hook: how users extend the policy layer without recompiling. It
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
use crate::tools::http_request::read_capped;

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
        let request = self.client.post(&self.url).json(payload);
        let response = crate::telemetry::propagation::inject(request)
            .send()
            .await
            .map_err(|e| {
                // The URL may carry an expanded `${VAR}` secret: never in the message.
                HookError::Failed(format!("webhook unreachable: {}", e.without_url()))
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(HookError::Failed(format!("webhook returned HTTP {status}")));
        }
        // Read as a stream and cut: a huge verdict is refused without being downloaded.
        let (body, truncated) = read_capped(response, MAX_VERDICT_BYTES)
            .await
            .map_err(|e| {
                HookError::Failed(format!(
                    "webhook body could not be read: {}",
                    e.without_url()
                ))
            })?;
        if truncated {
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
mod tests;
