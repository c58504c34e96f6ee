//! HTTP tools declared in `[[tools.http]]` (docs/configuration.md): an operator exposes one of its own
//! endpoints to the agent under a name, a description and a JSON Schema.
//!
//! Calling one sends the arguments as a JSON body (or as a query string for GET) with the
//! declared headers; a 2xx body is the observation, any other status an error observation
//! (`HTTP 503: <excerpt>`). A `text/html` or `text/markdown` answer is an [`Artifact`]
//! named from `Content-Disposition` when present, so the LLM never reads the document.
//!
//! The SSRF guard does NOT apply here: these URLs are written by the operator, not chosen by
//! the model, and pointing a tool at an internal service is their very purpose. Bodies are
//! still capped at [`MAX_HTTP_TOOL_RESPONSE_BYTES`].
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_DISPOSITION, CONTENT_TYPE};
use reqwest::Method;
use serde_json::Value;
use url::Url;

use super::http_request::{describe, read_capped};
use super::{Artifact, Tool, ToolError, ToolOutput, ToolSource};
pub use crate::config::HttpToolSpec;
use crate::net::{read_prefix, MAX_ERROR_BODY_BYTES};

/// Largest body an HTTP tool may return; text beyond it is cut, documents beyond it refused
/// (a cut HTML document would be broken).
pub const MAX_HTTP_TOOL_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Characters of an error body quoted in the error observation.
const ERROR_EXCERPT_CHARS: usize = 300;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A validated `[[tools.http]]` entry, ready to call.
#[derive(Clone, Debug)]
pub struct HttpTool {
    spec: HttpToolSpec,
    url: Url,
    method: Method,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl HttpTool {
    /// Validates the spec (URL, method, headers, timeout) so that a bad entry fails at
    /// start-up rather than on the first call.
    pub fn new(spec: HttpToolSpec, client: reqwest::Client) -> Result<HttpTool, ToolError> {
        let bad = |what: String| {
            ToolError::InvalidArguments(format!("tools.http '{}': {what}", spec.name))
        };
        if spec.name.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "tools.http: name is empty".into(),
            ));
        }
        let url =
            Url::parse(&spec.url).map_err(|e| bad(format!("invalid url '{}': {e}", spec.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!(
                "url must be http or https, not '{}'",
                url.scheme()
            )));
        }
        let method = spec.method.trim().to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(bad(format!(
                "method '{}' must be one of {}",
                spec.method,
                METHODS.join(", ")
            )));
        }
        let method =
            Method::from_bytes(method.as_bytes()).map_err(|e| bad(format!("method: {e}")))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &spec.headers {
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("invalid header name '{name}'")))?;
            let v = HeaderValue::from_str(value)
                .map_err(|_| bad(format!("invalid value for header '{name}'")))?;
            headers.insert(n, v);
        }
        if spec.timeout_s == 0 {
            return Err(bad("timeout_s must be at least 1".into()));
        }
        if !spec.parameters.is_object() {
            return Err(bad("parameters must be a JSON Schema object".into()));
        }
        Ok(HttpTool {
            spec,
            url,
            method,
            headers,
            client,
        })
    }

    pub fn spec(&self) -> &HttpToolSpec {
        &self.spec
    }

    fn request(&self, args: &Value) -> Result<reqwest::RequestBuilder, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Default::default()),
            Value::Object(_) => args.clone(),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "arguments must be a JSON object".into(),
                ))
            }
        };
        let mut url = self.url.clone();
        let with_query = self.method == Method::GET;
        if with_query {
            if let Value::Object(map) = &args {
                let mut pairs = url.query_pairs_mut();
                for (k, v) in map {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    pairs.append_pair(k, &v);
                }
            }
            if url.query() == Some("") {
                url.set_query(None);
            }
        }
        let mut builder = self
            .client
            .request(self.method.clone(), url)
            .headers(self.headers.clone())
            .timeout(Duration::from_secs(self.spec.timeout_s));
        if !with_query {
            builder = builder.json(&args);
        }
        Ok(builder)
    }
}

/// The `filename` of a `Content-Disposition` header (RFC 6266: `filename*=UTF-8''...` wins
/// over `filename=`), reduced to a safe base name.
pub fn filename_from_content_disposition(value: &str) -> Option<String> {
    let mut plain = None;
    let mut extended = None;
    for part in value.split(';').map(str::trim) {
        let Some((key, val)) = part.split_once('=') else {
            continue;
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "filename*" => {
                let encoded = val.trim().splitn(3, '\'').nth(2).unwrap_or(val.trim());
                extended = percent_decode(encoded);
            }
            "filename" => plain = Some(val.trim().trim_matches('"').to_string()),
            _ => {}
        }
    }
    let name = extended.or(plain)?;
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    let clean = clean.trim().to_string();
    (!clean.is_empty() && clean != "." && clean != "..").then_some(clean)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[async_trait]
impl Tool for HttpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn description(&self) -> &str {
        &self.spec.description
    }
    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }
    fn source(&self) -> ToolSource {
        ToolSource::Http
    }
    fn writes(&self) -> bool {
        self.spec.writes
    }
    fn requires_approval(&self) -> bool {
        self.spec.requires_approval
    }
    fn idempotent(&self) -> bool {
        self.spec.idempotent
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(self.spec.timeout_s))
    }
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        let request = crate::telemetry::propagation::inject(self.request(&args)?);
        let response = request.send().await.map_err(|e| {
            ToolError::Failed(format!(
                "{} request failed: {}",
                self.spec.name,
                describe(&e)
            ))
        })?;
        let status = response.status();
        let mime = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let disposition = response
            .headers()
            .get(CONTENT_DISPOSITION)
            .and_then(|v| v.to_str().ok())
            .and_then(filename_from_content_disposition);
        if !status.is_success() {
            // Only the start is quoted, so only a few KB are read.
            let body = read_prefix(response, MAX_ERROR_BODY_BYTES).await;
            let text = String::from_utf8_lossy(&body);
            let excerpt: String = text.trim().chars().take(ERROR_EXCERPT_CHARS).collect();
            return Err(ToolError::Failed(format!(
                "HTTP {}: {excerpt}",
                status.as_u16()
            )));
        }
        let (body, truncated) = read_capped(response, MAX_HTTP_TOOL_RESPONSE_BYTES)
            .await
            .map_err(|e| {
                ToolError::Failed(format!(
                    "{} response failed: {}",
                    self.spec.name,
                    describe(&e)
                ))
            })?;
        let extension = match mime.as_str() {
            "text/html" => Some("html"),
            "text/markdown" => Some("md"),
            _ => None,
        };
        if let Some(ext) = extension {
            if truncated {
                return Err(ToolError::Failed(format!(
                    "{} returned a document larger than {MAX_HTTP_TOOL_RESPONSE_BYTES} bytes",
                    self.spec.name
                )));
            }
            let name = disposition.unwrap_or_else(|| format!("{}.{ext}", self.spec.name));
            let content = format!(
                "{} produced the document {name} ({mime}, {} bytes).",
                self.spec.name,
                body.len()
            );
            return Ok(ToolOutput {
                content,
                artifacts: vec![Artifact {
                    name,
                    mime_type: mime,
                    data: body,
                }],
            });
        }
        let mut text = String::from_utf8_lossy(&body).into_owned();
        if truncated {
            text.push_str(&format!(
                "\n[response truncated at {MAX_HTTP_TOOL_RESPONSE_BYTES} bytes]"
            ));
        }
        Ok(ToolOutput::text(text))
    }
}

#[cfg(test)]
mod tests;
