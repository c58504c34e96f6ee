//! The images of a front-end user message (docs/protocols.md), as the URLs a run takes
//! (docs/api.md "Images"; checked when it starts): AG-UI's `binary` parts (`mimeType` with
//! base64 `data` or a `url`) and 1.0's `image` parts (a `data` or `url` source), and the AI
//! SDK's `file` parts whose `mediaType` is an image. Other media are not read.

use serde_json::Value;

/// The image URLs of an AG-UI message's `content` (a string has none).
pub fn ag_ui_images(content: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(parts)) = content else {
        return Vec::new();
    };
    parts.iter().filter_map(ag_ui_image).collect()
}

fn ag_ui_image(part: &Value) -> Option<String> {
    match part["type"].as_str()? {
        "binary" => {
            let mime = part["mimeType"]
                .as_str()
                .filter(|m| m.starts_with("image/"))?;
            match (part["data"].as_str(), part["url"].as_str()) {
                (Some(data), _) => Some(format!("data:{mime};base64,{data}")),
                (None, Some(url)) => Some(url.to_string()),
                (None, None) => None,
            }
        }
        "image" => {
            let source = &part["source"];
            let value = source["value"].as_str()?;
            match source["type"].as_str()? {
                "data" => Some(format!(
                    "data:{};base64,{value}",
                    source["mimeType"].as_str()?
                )),
                "url" => Some(value.to_string()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The image URLs of an AI SDK message's parts (`file` parts with an image `mediaType`; their
/// `url` is a data URL or a hosted file's).
pub fn ai_sdk_images(parts: &[Value]) -> Vec<String> {
    parts
        .iter()
        .filter(|p| p["type"] == "file")
        .filter(|p| {
            p["mediaType"]
                .as_str()
                .is_some_and(|m| m.starts_with("image/"))
        })
        .filter_map(|p| p["url"].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_parts_of_both_protocols_become_urls() {
        let content = json!([
            {"type": "text", "text": "what is this?"},
            {"type": "binary", "mimeType": "image/png", "data": "AAAA"},
            {"type": "binary", "mimeType": "image/jpeg", "url": "https://e.x/a.jpg"},
            {"type": "binary", "mimeType": "application/pdf", "data": "AAAA"},
            {"type": "image", "source": {"type": "data", "value": "BBBB", "mimeType": "image/gif"}},
            {"type": "image", "source": {"type": "url", "value": "https://e.x/b.png"}},
        ]);
        assert_eq!(
            ag_ui_images(Some(&content)),
            [
                "data:image/png;base64,AAAA",
                "https://e.x/a.jpg",
                "data:image/gif;base64,BBBB",
                "https://e.x/b.png"
            ]
        );
        assert!(ag_ui_images(Some(&json!("text"))).is_empty());
        let parts = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "file", "mediaType": "image/webp", "url": "data:image/webp;base64,CC"}),
            json!({"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,CC"}),
        ];
        assert_eq!(ai_sdk_images(&parts), ["data:image/webp;base64,CC"]);
    }
}
