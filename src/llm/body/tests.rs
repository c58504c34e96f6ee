use serde_json::Value;

use super::*;
use crate::llm::providers::anthropic::request::{self as anthropic, Settings};
use crate::llm::providers::openai::request as openai;
use crate::llm::{ChatRequest, ImagePart};

/// A `data:` URL of `n` base64 characters.
fn data_url(n: usize) -> String {
    format!("data:image/png;base64,{}", "iVBO".repeat(n / 4))
}

fn request(image: &ImagePart, text: &str) -> ChatRequest {
    let remote = ImagePart {
        url: "https://example.com/a.png".into(),
        artifact: None,
    };
    let message = Message::user(text).with_images(vec![image.clone(), remote, image.clone()]);
    ChatRequest::new(vec![message])
}

/// Whether a piece of `body` is `url`'s own bytes (from byte `from`), not a copy.
fn shares(body: &RequestBody, url: &SharedUrl, from: usize) -> bool {
    body.chunks
        .iter()
        .any(|c| std::ptr::eq(c.as_ptr(), url[from..].as_ptr()))
}

#[test]
fn a_large_image_goes_from_the_runs_copy_and_the_body_reads_as_plain_json() {
    let url = data_url(100_000);
    let image = ImagePart {
        url: url.as_str().into(),
        artifact: Some("a1".into()),
    };
    let request = request(&image, "what is this?");
    let wire = openai::request_body("m", "m", &request, false);
    let body = RequestBody::encode(&wire, &request.messages).unwrap();
    let bytes = body.to_vec();
    assert_eq!(body.len(), bytes.len());
    let sent: Value = serde_json::from_slice(&bytes).unwrap();
    let parts = &sent["messages"][0]["content"];
    assert_eq!(parts[0]["text"], "what is this?");
    assert_eq!(parts[1]["image_url"]["url"], url.as_str());
    assert_eq!(parts[2]["image_url"]["url"], "https://example.com/a.png");
    assert_eq!(parts[3]["image_url"]["url"], url.as_str());
    assert!(shares(&body, &image.url, 0), "the URL is sent, not copied");

    let settings = Settings {
        model: "claude",
        name: "claude",
        max_tokens: 100,
        thinking: None,
        cache: false,
        stream: false,
    };
    let wire = anthropic::request_body(settings, &request);
    let body = RequestBody::encode(&wire, &request.messages).unwrap();
    let sent: Value = serde_json::from_slice(&body.to_vec()).unwrap();
    let source = &sent["messages"][0]["content"][1]["source"];
    assert_eq!(source["media_type"], "image/png");
    assert_eq!(source["data"], &url["data:image/png;base64,".len()..]);
    assert!(shares(&body, &image.url, "data:image/png;base64,".len()));
}

#[test]
fn text_that_looks_like_a_marker_is_sent_as_it_is() {
    let image = ImagePart {
        url: data_url(10_000).into(),
        artifact: Some("a1".into()),
    };
    let forged = format!(
        "{}{:x}-0 and {}1-0",
        marker_prefix(),
        12345,
        marker_prefix()
    );
    let request = request(&image, &forged);
    let wire = openai::request_body("m", "m", &request, false);
    let body = RequestBody::encode(&wire, &request.messages).unwrap();
    let sent: Value = serde_json::from_slice(&body.to_vec()).unwrap();
    assert_eq!(sent["messages"][0]["content"][0]["text"], forged.as_str());
    assert_eq!(
        sent["messages"][0]["content"][1]["image_url"]["url"],
        &*image.url
    );
}

#[test]
fn a_body_without_large_images_is_one_piece() {
    let image = ImagePart {
        url: data_url(100).into(),
        artifact: Some("a1".into()),
    };
    let request = request(&image, "small");
    let wire = openai::request_body("m", "m", &request, true);
    let body = RequestBody::encode(&wire, &request.messages).unwrap();
    assert_eq!(body.chunks.len(), 1);
    assert_eq!(body.to_vec(), serde_json::to_vec(&wire).unwrap());
}
