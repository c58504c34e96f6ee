//! A `tools/call` result into an observation (docs/protocols.md): text parts joined; `isError` an error;
//! image, audio and embedded resources artifacts with their MIME types; `structuredContent`
//! as JSON text when no part is text. Read from the result's JSON so that a field rmcp's
//! types do not model, or a malformed part, is skipped rather than failing the call.

use base64::Engine as _;
use serde_json::Value;

use crate::tools::{Artifact, ToolError, ToolOutput};

/// Longest observation kept from one call; the rest is cut with a notice.
pub const MAX_OBSERVATION_BYTES: usize = 256 * 1024;

/// Maps a result (`{content, structuredContent, isError}`) of the tool `tool`.
pub fn map_result(tool: &str, result: &Value) -> Result<ToolOutput, ToolError> {
    let mut texts = Vec::new();
    let mut artifacts = Vec::new();
    let parts = result.get("content").and_then(Value::as_array);
    for (i, part) in parts.into_iter().flatten().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
            Some(kind @ ("image" | "audio")) => {
                let mime = part.get("mimeType").and_then(Value::as_str);
                if let Some(a) = blob(tool, i, kind, mime, part.get("data")) {
                    artifacts.push(a);
                }
            }
            Some("resource") => {
                if let Some(a) = resource(tool, i, part.get("resource")) {
                    artifacts.push(a);
                }
            }
            Some("resource_link") => {
                if let Some(uri) = part.get("uri").and_then(Value::as_str) {
                    texts.push(format!("[resource {uri}]"));
                }
            }
            other => tracing::debug!(tool, part = ?other, "skipped an MCP content part"),
        }
    }
    let mut content = texts.join("\n");
    if content.is_empty() {
        if let Some(s) = result.get("structuredContent").filter(|v| !v.is_null()) {
            content = s.to_string();
        }
    }
    let content = cut(content);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if content.is_empty() {
            "the MCP tool reported an error".to_string()
        } else {
            content
        };
        return Err(ToolError::Failed(message));
    }
    Ok(ToolOutput { content, artifacts })
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_OBSERVATION_BYTES {
        let mut end = MAX_OBSERVATION_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let total = text.len();
        text.truncate(end);
        text.push_str(&format!("\n[cut: the MCP result had {total} bytes]"));
    }
    text
}

fn decode(data: Option<&Value>) -> Option<Vec<u8>> {
    let data = data?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

fn blob(
    tool: &str,
    i: usize,
    kind: &str,
    mime: Option<&str>,
    data: Option<&Value>,
) -> Option<Artifact> {
    let Some(bytes) = decode(data) else {
        tracing::warn!(
            tool,
            part = i,
            "skipped an MCP {kind} part without valid base64 data"
        );
        return None;
    };
    let mime = mime.unwrap_or("application/octet-stream").to_string();
    let ext = mime.rsplit('/').next().unwrap_or("bin");
    Some(Artifact {
        name: format!("{tool}-{i}.{ext}"),
        mime_type: mime,
        data: bytes,
    })
}

fn resource(tool: &str, i: usize, r: Option<&Value>) -> Option<Artifact> {
    let r = r?;
    let uri = r.get("uri").and_then(Value::as_str).unwrap_or("resource");
    let name = uri
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("resource");
    let (data, default_mime) = match (r.get("text").and_then(Value::as_str), r.get("blob")) {
        (Some(text), _) => (text.as_bytes().to_vec(), "text/plain"),
        (None, blob) => (decode(blob)?, "application/octet-stream"),
    };
    Some(Artifact {
        name: format!("{tool}-{i}-{name}"),
        mime_type: r
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or(default_mime)
            .to_string(),
        data,
    })
}

#[cfg(test)]
mod tests;
