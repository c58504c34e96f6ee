//! The content of a Responses input message: text parts (`input_text`, `output_text`, `text`)
//! and `input_image` parts (docs/protocols.md), as the run reads them and as the response
//! echoes them.

use serde_json::{json, Value};

use super::invalid;
use crate::server::openai::OpenAiError;

/// A message's text (its text parts joined by newlines) and its images.
#[derive(Debug, Default, PartialEq)]
pub struct Content {
    pub text: String,
    /// `image_url`s (`data:` or `http(s)`, checked when the run starts).
    pub images: Vec<String>,
    /// The `input_image` parts as echoed: `image_url` null for a `data:` URL (its bytes are
    /// stored once, as the run's artifact, not again with the response).
    pub echoed_images: Vec<Value>,
}

/// A string, or an array of text and `input_image` parts.
pub fn content(i: usize, c: Option<&Value>) -> Result<Content, OpenAiError> {
    let parts = match c {
        Some(Value::String(s)) => {
            return Ok(Content {
                text: s.clone(),
                ..Content::default()
            })
        }
        Some(Value::Array(parts)) => parts,
        _ => {
            return Err(invalid(
                "input",
                format!("input[{i}].content must be a string or an array of content parts"),
            ))
        }
    };
    let mut texts = Vec::with_capacity(parts.len());
    let mut out = Content::default();
    for (j, part) in parts.iter().enumerate() {
        match (part.get("type").and_then(Value::as_str), part.get("text")) {
            (Some("input_text" | "output_text" | "text"), Some(Value::String(t))) => {
                texts.push(t.as_str())
            }
            (Some("input_image"), _) => image(i, j, part, &mut out)?,
            (kind, _) => {
                return Err(invalid(
                    "input",
                    format!(
                        "input[{i}].content[{j}]: only text and input_image parts are supported, \
                         not {}",
                        kind.unwrap_or("an untyped part")
                    ),
                ))
            }
        }
    }
    out.text = texts.join("\n");
    Ok(out)
}

/// An `input_image` part: `image_url` (a string) is required, `detail` (`low`, `high`,
/// `auto`) is accepted and echoed; `file_id` is not (reagent has no files API).
fn image(i: usize, j: usize, part: &Value, out: &mut Content) -> Result<(), OpenAiError> {
    let Some(url) = part.get("image_url").and_then(Value::as_str) else {
        return Err(invalid(
            "input",
            format!("input[{i}].content[{j}]: an input_image part needs its 'image_url' string"),
        ));
    };
    let detail = match part.get("detail") {
        None | Some(Value::Null) => "auto",
        Some(Value::String(d)) if matches!(d.as_str(), "low" | "high" | "auto") => d.as_str(),
        Some(_) => {
            return Err(invalid(
                "input",
                format!("input[{i}].content[{j}].detail must be 'low', 'high' or 'auto'"),
            ))
        }
    };
    let echoed = (!url.starts_with("data:")).then_some(url);
    out.echoed_images
        .push(json!({"type": "input_image", "image_url": echoed, "detail": detail}));
    out.images.push(url.to_string());
    Ok(())
}
