//! Remote A2A agents as tools (docs/protocols.md): every `[[a2a]]` entry is a [`Tool`] named
//! as configured, with the arguments `{message}`. Its agent card is read on the first call (or
//! by [`A2aTool::warm_up`] at start-up) and kept; a remote that cannot be reached makes each
//! call an error observation saying so, and is asked again on the next call, so reagent starts
//! and serves whatever the remote does. A call sends the message as a new task, reports each
//! status update of the remote as a `tool_progress` step of the calling run, and answers with
//! the task's artifacts' text; cancelling the run, or the call's `timeout_s`, cancels the remote
//! task (`CancelTask`).
//!
//! Files: `card` (the card and the SSRF rule for the URL it names), `wire` (both spellings of
//! the JSON-RPC binding, v1.0 and v0.3), `call` (one call: stream or send, progress, cancel).

mod call;
mod card;
#[cfg(test)]
mod tests;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};
use url::Url;

use super::ssrf::SsrfPolicy;
use super::{Progress, Tool, ToolError, ToolOutput, ToolSource};
use crate::config::A2aAgentConfig;
use call::{Call, Failure};
use card::Endpoint;
use wire::{Version, METHOD_NOT_FOUND, UNSUPPORTED_OPERATION};

/// How to reach one configured agent: its URL and headers, the client, the SSRF policy that
/// applies to an interface at another origin.
struct Remote {
    cfg: A2aAgentConfig,
    url: Url,
    headers: HeaderMap,
    client: reqwest::Client,
    policy: SsrfPolicy,
}

impl Remote {
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.cfg.timeout_s)
    }
}

/// One `[[a2a]]` agent as a tool.
pub struct A2aTool {
    remote: Remote,
    description: String,
    /// The card's endpoint once read (cleared when the remote cannot be reached).
    endpoint: Mutex<Option<Arc<Endpoint>>>,
}

impl A2aTool {
    /// Checks the entry's URL and headers (loading did; this keeps the tool honest when built
    /// from code) so that a bad entry fails at start-up.
    pub fn new(
        cfg: A2aAgentConfig,
        client: reqwest::Client,
        policy: SsrfPolicy,
    ) -> Result<Self, ToolError> {
        let bad = |what: String| ToolError::InvalidArguments(format!("a2a '{}': {what}", cfg.name));
        let url = Url::parse(&cfg.url).map_err(|e| bad(format!("invalid url: {e}")))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &cfg.headers {
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("invalid header name '{name}'")))?;
            let v = HeaderValue::from_str(value)
                .map_err(|_| bad(format!("invalid value for header '{name}'")))?;
            headers.insert(n, v);
        }
        let description = cfg.description.clone().unwrap_or_else(|| {
            format!(
                "Asks the remote agent '{}' (A2A, at {}) and returns its answer.",
                cfg.name,
                url.origin().ascii_serialization()
            )
        });
        Ok(Self {
            remote: Remote {
                cfg,
                url,
                headers,
                client,
                policy,
            },
            description,
            endpoint: Mutex::new(None),
        })
    }

    fn cached(&self) -> Option<Arc<Endpoint>> {
        self.endpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn keep(&self, endpoint: Option<Arc<Endpoint>>) {
        *self.endpoint.lock().unwrap_or_else(|p| p.into_inner()) = endpoint;
    }

    /// The endpoint, reading the card when it is not known yet.
    async fn endpoint(&self) -> Result<Arc<Endpoint>, ToolError> {
        if let Some(ep) = self.cached() {
            return Ok(ep);
        }
        let ep = Arc::new(card::discover(&self.remote).await?);
        self.keep(Some(ep.clone()));
        Ok(ep)
    }

    /// Reads the card now, so a remote that is down is in the log at start-up.
    pub async fn warm_up(&self) {
        match self.endpoint().await {
            Ok(ep) => {
                tracing::info!(agent = %self.remote.cfg.name, url = %ep.url, streaming = ep.streaming, "A2A agent ready")
            }
            Err(e) => {
                tracing::warn!(agent = %self.remote.cfg.name, error = %e, "A2A agent unavailable; its calls fail until it answers")
            }
        }
    }

    /// One call, with the fallbacks a card cannot announce: a v0.3 server refusing the v1.0
    /// method names, and a server refusing to stream.
    async fn ask(&self, text: &str, progress: &Progress) -> Result<String, ToolError> {
        let mut ep = self.endpoint().await?;
        for _ in 0..3 {
            let mut call = Call::new(&self.remote.cfg.name, &ep, progress);
            let result = match ep.streaming {
                true => call.stream(&ep, text).await,
                false => call.send(&ep, text).await,
            };
            let next = match result {
                Ok(answer) => return Ok(answer),
                Err(Failure::Tool(e)) => return Err(e),
                Err(Failure::Unreachable(e)) => {
                    self.keep(None);
                    return Err(e);
                }
                Err(Failure::Rpc { code, message }) => match code {
                    METHOD_NOT_FOUND if ep.version == Version::V1 => Endpoint {
                        version: Version::V03,
                        ..(*ep).clone()
                    },
                    UNSUPPORTED_OPERATION if ep.streaming => Endpoint {
                        streaming: false,
                        ..(*ep).clone()
                    },
                    _ => {
                        return Err(ToolError::Failed(format!(
                            "the A2A agent '{}' answered with an error: {message} ({code})",
                            self.remote.cfg.name
                        )))
                    }
                },
            };
            ep = Arc::new(next);
            self.keep(Some(ep.clone()));
        }
        Err(ToolError::Failed(format!(
            "the A2A agent '{}' refused every method reagent knows",
            self.remote.cfg.name
        )))
    }
}

#[async_trait]
impl Tool for A2aTool {
    fn name(&self) -> &str {
        &self.remote.cfg.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "What to ask the agent, complete in itself: it does not see this conversation."
                }
            },
            "required": ["message"]
        })
    }
    fn source(&self) -> ToolSource {
        ToolSource::A2a
    }
    fn timeout(&self) -> Option<Duration> {
        Some(self.remote.timeout())
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_reporting(args, Progress::default()).await
    }
    async fn call_reporting(
        &self,
        args: Value,
        progress: Progress,
    ) -> Result<ToolOutput, ToolError> {
        let message = match args.get("message") {
            Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "expected {\"message\": \"<what to ask the agent>\"}".into(),
                ))
            }
        };
        self.ask(&message, &progress).await.map(ToolOutput::text)
    }
}
