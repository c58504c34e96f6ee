//! Images through the OpenAI-compatible APIs with the official Python SDK
//! (`tests/peers/openai_images.py`): a Chat Completions `image_url` part and a Responses
//! `input_image` part reach the provider (a `FakeOpenAi`) as the exact `image_url` part, the
//! response validates against the Open Responses schema, and an agent whose model has no vision
//! answers `model_without_vision` in OpenAI's error shape.

use base64::Engine as _;
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use serde_json::{json, Value};

use super::responses_schema::schema_errors;
use crate::support::app::{Options, TestApp};
use crate::support::peers;

/// Two models on the fake provider, one without vision, each an agent's.
async fn app(fake: &FakeOpenAi) -> TestApp {
    let base = fake.base_url();
    let toml = format!(
        r#"
[[models]]
name = "seer"
base_url = "{base}"
api_key_env = "FAKE_KEY"
model = "fake-vision"
default = true

[[models]]
name = "blind"
base_url = "{base}"
api_key_env = "FAKE_KEY"
model = "fake-text"
abilities = {{ vision = false }}

[[agents]]
name = "seer"
model = "seer"

[[agents]]
name = "blind"
model = "blind"
"#
    );
    TestApp::with(Options {
        env: vec![("FAKE_KEY", "sk-test".into())],
        toml,
        config_models: true,
        ..Options::default()
    })
    .await
}

/// The user content parts of every request the provider received that holds `text`.
fn user_parts(fake: &FakeOpenAi, text: &str) -> Vec<Value> {
    fake.requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "user" && m["content"].is_array())
        .filter(|m| m.to_string().contains(text))
        .map(|m| m["content"].clone())
        .collect()
}

#[tokio::test]
async fn the_python_sdk_sends_image_parts_that_reach_the_provider_exactly() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("A red square."));
    let app = app(&fake).await;
    let png = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n-red-")
    );
    let out = tokio::process::Command::new(peers::python())
        .arg(peers::dir().join("openai_images.py"))
        .args([
            app.url("/v1"),
            "sk-any".into(),
            "seer".into(),
            "blind".into(),
        ])
        .arg(&png)
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openai_images.py failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(seen["chat"]["finish_reason"], "stop");
    assert_eq!(seen["chat"]["content"], "A red square.");
    let image = json!({"type": "image_url", "image_url": {"url": png}});
    let chat = user_parts(&fake, "what is this?");
    assert!(!chat.is_empty(), "the chat query reached the provider");
    for parts in &chat {
        assert_eq!(
            parts,
            &json!([{"type": "text", "text": "what is this?"}, image])
        );
    }
    let responses = user_parts(&fake, "and this one?");
    assert!(
        !responses.is_empty(),
        "the response's query reached the provider"
    );
    for parts in &responses {
        assert_eq!(
            parts,
            &json!([{"type": "text", "text": "and this one?"}, image])
        );
    }

    let response = &seen["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(seen["response_text"], "A red square.");
    let errors = schema_errors(&[("response", response.clone())]).await;
    assert_eq!(errors, [None], "{response}");

    let blind = &seen["blind"];
    assert_eq!(blind["status"], 400, "{blind}");
    assert_eq!(blind["code"], "model_without_vision");
    assert_eq!(blind["type"], "invalid_request_error");
    assert!(
        !user_parts(&fake, "see?").iter().any(|_| true),
        "nothing reached the provider for the blind agent"
    );
}
