//! The message a client sends (`SendMessage`/`message/send` params), read on either wire: its
//! parts may be 1.0's (`{text}`, `{data}`, `{url|raw, mediaType}`) or 0.3's (`kind` text,
//! data or file), since clients of both meet here. Text parts make the query, image files its
//! images, data parts answer an approval; any other file is `ContentTypeNotSupported`.

use base64::Engine as _;
use serde_json::Value;

use super::rpc::{RpcError, CONTENT_TYPE};

/// A user message, read.
#[derive(Debug, Default)]
pub struct Incoming {
    /// Its text parts, joined by blank lines.
    pub text: String,
    /// Image parts as URLs (`data:` for inline bytes).
    pub images: Vec<String>,
    /// Its data parts.
    pub data: Vec<Value>,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// Answer as soon as the task exists rather than at its end (`returnImmediately`, or 0.3's
    /// `blocking: false`).
    pub return_immediately: bool,
}

impl Incoming {
    /// Reads the params of a send.
    pub fn parse(params: &Value) -> Result<Self, RpcError> {
        let message = &params["message"];
        if !message.is_object() {
            return Err(RpcError::invalid("`message` is required"));
        }
        if !matches!(message["role"].as_str(), Some("ROLE_USER" | "user")) {
            return Err(RpcError::invalid("`message.role` must be the user's"));
        }
        // Required by both versions (the client makes it), and not kept.
        non_empty(&message["messageId"])
            .ok_or_else(|| RpcError::invalid("`message.messageId` is required"))?;
        let parts = message["parts"]
            .as_array()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| RpcError::invalid("`message.parts` must be a non-empty array"))?;
        let mut read = Self {
            task_id: optional_id(&message["taskId"], "taskId")?,
            context_id: optional_id(&message["contextId"], "contextId")?,
            return_immediately: immediate(&params["configuration"]),
            ..Self::default()
        };
        accepts_text(&params["configuration"]["acceptedOutputModes"])?;
        let mut texts = Vec::new();
        for part in parts {
            read.part(part, &mut texts)?;
        }
        read.text = texts.join("\n\n");
        if read.text.trim().is_empty() && read.images.is_empty() && read.data.is_empty() {
            return Err(RpcError::invalid("the message has no text"));
        }
        Ok(read)
    }

    fn part(&mut self, part: &Value, texts: &mut Vec<String>) -> Result<(), RpcError> {
        if let Some(text) = part["text"].as_str() {
            texts.push(text.to_string());
            return Ok(());
        }
        if let Some(data) = part.get("data").filter(|_| part["kind"] != "file") {
            self.data.push(data.clone());
            return Ok(());
        }
        // 0.3 nests a file's fields under `file`, 1.0 puts them on the part.
        let file = part.get("file").unwrap_or(part);
        let media = file["mediaType"]
            .as_str()
            .or(file["mimeType"].as_str())
            .unwrap_or_default();
        let url = file["url"].as_str().or(file["uri"].as_str());
        let bytes = file["raw"].as_str().or(file["bytes"].as_str());
        if url.is_none() && bytes.is_none() {
            return Err(RpcError::invalid(
                "a part must hold text, data, or a file's url or bytes",
            ));
        }
        if !media.starts_with("image/") {
            let media = if media.is_empty() {
                "a file without a media type"
            } else {
                media
            };
            return Err(RpcError::new(
                CONTENT_TYPE,
                format!("{media} is not accepted: send text, data or images"),
            ));
        }
        match (url, bytes) {
            (Some(url), _) => self.images.push(url.to_string()),
            (None, Some(b64)) => {
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|_| RpcError::invalid("a file's bytes are not base64"))?;
                self.images.push(format!("data:{media};base64,{b64}"));
            }
            (None, None) => {}
        }
        Ok(())
    }
}

fn non_empty(value: &Value) -> Option<String> {
    value
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

fn optional_id(value: &Value, name: &str) -> Result<Option<String>, RpcError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(RpcError::invalid(format!(
            "`message.{name}` must be a string"
        ))),
    }
}

fn immediate(configuration: &Value) -> bool {
    configuration["returnImmediately"] == true || configuration["blocking"] == false
}

/// `ContentTypeNotSupported` when the client takes output modes and text is none of them.
fn accepts_text(modes: &Value) -> Result<(), RpcError> {
    let Some(modes) = modes.as_array().filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    let text = modes.iter().filter_map(Value::as_str).any(|m| {
        let m = m.to_ascii_lowercase();
        m == "text" || m == "*/*" || m.starts_with("text/")
    });
    if text {
        return Ok(());
    }
    Err(RpcError::new(
        CONTENT_TYPE,
        "this agent answers with text/plain, which acceptedOutputModes leaves out",
    ))
}

/// An approval answer read from a message: a data part's `approved` (with its `reason`), or a
/// text that says yes or no; `None` when it says neither.
pub fn decision(message: &Incoming) -> Option<(bool, Option<String>)> {
    for data in &message.data {
        if let Some(approved) = data["approved"].as_bool().or(data["approve"].as_bool()) {
            return Some((approved, data["reason"].as_str().map(str::to_string)));
        }
    }
    let text = message.text.trim();
    let first = text
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let reason = (!text.is_empty()).then(|| text.to_string());
    match first.as_str() {
        "yes" | "y" | "approve" | "approved" | "ok" | "allow" => Some((true, reason)),
        "no" | "n" | "reject" | "rejected" | "deny" | "denied" => Some((false, reason)),
        _ => None,
    }
}
