//! The `http_request` built-in (docs/configuration.md): lets the agent fetch a URL of its choosing, so every
//! hop goes through the SSRF guard of `ssrf.rs`.
//!
//! How the guard is made to hold:
//! - the host is resolved and checked first, then reqwest is told to connect to exactly those
//!   checked addresses (`ClientBuilder::resolve_to_addrs`), so a DNS answer that changes between
//!   check and connect (DNS rebinding) is never used;
//! - reqwest's own redirect following is off; redirects (at most [`MAX_REDIRECTS`]) are followed
//!   here and every hop is checked again like the first one;
//! - proxies from the environment are ignored, since a proxy would resolve the name itself;
//! - the body is read as a stream and cut at `max_response_bytes`.
//!
//! A non-2xx response is an observation (`HTTP 404\n...`), not an error: the status is the
//! information the agent asked for, and it decides what to do next. Transport failures,
//! refusals and timeouts are errors.

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use url::{Host, Url};

use super::ssrf::{resolve_checked, SsrfPolicy};
use super::{Tool, ToolError, ToolOutput};

/// Redirect hops followed before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// Methods the tool accepts.
pub const ALLOWED_METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

/// How `http_request` behaves; built from configuration (`REAGENT_HTTP_ALLOW_PRIVATE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequestOptions {
    pub policy: SsrfPolicy,
    /// Bytes of body kept; the rest is dropped and the observation says so. Default 1 MiB.
    pub max_response_bytes: usize,
    /// Deadline for the whole call, redirects and body included. Default 30 s.
    pub timeout: Duration,
}

impl Default for HttpRequestOptions {
    fn default() -> Self {
        Self {
            policy: SsrfPolicy::default(),
            max_response_bytes: 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// `http_request {url, method?, headers?, body?}`.
#[derive(Clone, Debug)]
pub struct HttpRequestTool {
    options: HttpRequestOptions,
}

/// One request as the agent described it.
#[derive(Clone, Debug)]
struct Request {
    url: Url,
    method: Method,
    headers: HeaderMap,
    body: Option<String>,
}

impl HttpRequestTool {
    pub fn new(options: HttpRequestOptions) -> Self {
        Self { options }
    }

    pub fn options(&self) -> &HttpRequestOptions {
        &self.options
    }

    /// Sends one hop to the checked addresses only.
    async fn send_once(&self, req: &Request) -> Result<reqwest::Response, ToolError> {
        let addrs = resolve_checked(&req.url, &self.options.policy).await?;
        let mut builder = reqwest::Client::builder()
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(self.options.timeout);
        if let Some(Host::Domain(domain)) = req.url.host() {
            builder = builder.resolve_to_addrs(domain, &addrs);
        }
        let client = builder
            .build()
            .map_err(|e| ToolError::Failed(format!("cannot build HTTP client: {e}")))?;
        let mut request = client
            .request(req.method.clone(), req.url.clone())
            .headers(req.headers.clone());
        if let Some(body) = &req.body {
            request = request.body(body.clone());
        }
        let request = crate::telemetry::propagation::inject(request);
        request.send().await.map_err(|e| {
            ToolError::Failed(format!("request to {} failed: {}", req.url, describe(&e)))
        })
    }

    async fn execute(&self, mut req: Request) -> Result<ToolOutput, ToolError> {
        for hop in 0..=MAX_REDIRECTS {
            let response = self.send_once(&req).await?;
            let status = response.status();
            let location = response.headers().get(LOCATION).cloned();
            match (status.is_redirection(), location) {
                (true, Some(location)) => {
                    if hop == MAX_REDIRECTS {
                        return Err(ToolError::Failed(format!(
                            "stopped after {MAX_REDIRECTS} redirects (last: {})",
                            req.url
                        )));
                    }
                    req = next_hop(req, status, &location)?;
                }
                _ => {
                    let head = req.method == Method::HEAD;
                    let (body, truncated) = read_capped(response, self.options.max_response_bytes)
                        .await
                        .map_err(|e| {
                            ToolError::Failed(format!(
                                "reading the response failed: {}",
                                describe(&e)
                            ))
                        })?;
                    let mut text = format!("HTTP {}\n", status.as_u16());
                    if !head {
                        text.push_str(&String::from_utf8_lossy(&body));
                    }
                    if truncated {
                        text.push_str(&format!(
                            "\n[response truncated: only the first {} bytes are shown]",
                            self.options.max_response_bytes
                        ));
                    }
                    return Ok(ToolOutput::text(text));
                }
            }
        }
        // The loop returns on every path of its last iteration.
        Err(ToolError::Failed("too many redirects".into()))
    }
}

/// The request for the next hop: the target is resolved against the current URL; 303 (and
/// 301/302 after a POST) become a GET without body, as browsers do; credentials are dropped
/// when the origin changes so a redirect cannot leak them elsewhere.
fn next_hop(
    mut req: Request,
    status: StatusCode,
    location: &HeaderValue,
) -> Result<Request, ToolError> {
    let location = location
        .to_str()
        .map_err(|_| ToolError::Failed("redirect with a non-text Location header".into()))?;
    let next = req
        .url
        .join(location)
        .map_err(|e| ToolError::Failed(format!("redirect to an invalid URL '{location}': {e}")))?;
    let to_get = status == StatusCode::SEE_OTHER && req.method != Method::HEAD
        || matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
            && req.method == Method::POST;
    if to_get {
        req.method = Method::GET;
        req.body = None;
        req.headers.remove(CONTENT_TYPE);
    }
    if next.origin() != req.url.origin() {
        for h in ["authorization", "cookie", "proxy-authorization"] {
            req.headers.remove(h);
        }
    }
    req.url = next;
    Ok(req)
}

/// Reads at most `max` bytes of body as a stream; `true` when more was available (the rest is
/// never downloaded).
pub(crate) async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A reqwest error with its causes, since the top-level message alone ("error sending
/// request") does not tell the agent what went wrong.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn parse_args(args: &Value) -> Result<Request, ToolError> {
    let url = args
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArguments("'url' (a string) is required".into()))?;
    let url = Url::parse(url)
        .map_err(|e| ToolError::InvalidArguments(format!("invalid url '{url}': {e}")))?;
    let method = match args.get("method") {
        None | Some(Value::Null) => "GET".to_string(),
        Some(Value::String(m)) => m.trim().to_ascii_uppercase(),
        Some(_) => {
            return Err(ToolError::InvalidArguments(
                "'method' must be a string".into(),
            ))
        }
    };
    if !ALLOWED_METHODS.contains(&method.as_str()) {
        return Err(ToolError::InvalidArguments(format!(
            "method '{method}' is not allowed; use one of {}",
            ALLOWED_METHODS.join(", ")
        )));
    }
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|e| ToolError::InvalidArguments(format!("method: {e}")))?;
    let mut headers = HeaderMap::new();
    match args.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                let value = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    ToolError::InvalidArguments(format!("invalid header name '{name}'"))
                })?;
                let value = HeaderValue::from_str(&value).map_err(|_| {
                    ToolError::InvalidArguments(format!("invalid value for header '{name}'"))
                })?;
                headers.insert(name, value);
            }
        }
        Some(_) => {
            return Err(ToolError::InvalidArguments(
                "'headers' must be an object of name → value".into(),
            ))
        }
    }
    let body = match args.get("body") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            // A JSON body given as JSON: send it as such.
            headers
                .entry(CONTENT_TYPE)
                .or_insert(HeaderValue::from_static("application/json"));
            Some(other.to_string())
        }
    };
    Ok(Request {
        url,
        method,
        headers,
        body,
    })
}

#[async_trait]
impl Tool for HttpRequestTool {
    fn name(&self) -> &str {
        "http_request"
    }
    fn description(&self) -> &str {
        "Send an HTTP request to a public URL and return the status and body (size-capped)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "http:// or https:// URL"},
                "method": {"type": "string", "enum": ALLOWED_METHODS, "description": "default GET"},
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "request headers"
                },
                "body": {"type": "string", "description": "request body"}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }
    /// True: with POST, PUT, PATCH or DELETE this tool changes the world, and the engine cannot
    /// know the method before the call, so the `read_only` hook must block it.
    fn writes(&self) -> bool {
        true
    }
    /// A little over our own deadline, so that our clearer timeout error comes first.
    fn timeout(&self) -> Option<Duration> {
        Some(self.options.timeout + Duration::from_secs(5))
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        let req = parse_args(&args)?;
        let deadline = self.options.timeout;
        tokio::time::timeout(deadline, self.execute(req))
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::Failed(format!(
                    "request timed out after {} s",
                    deadline.as_secs_f64()
                )))
            })
    }
}

#[cfg(test)]
mod tests;
