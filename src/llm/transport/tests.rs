use super::*;
use crate::llm::providers::{AnthropicOptions, Protocol};

#[test]
fn statuses_are_classified() {
    let ctx = classify_status(
        &*Protocol::OpenAi.wire(),
        400,
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens","code":"context_length_exceeded"}}"#,
    );
    assert_eq!(
        ctx,
        LlmError::ContextLengthExceeded(
            "This model's maximum context length is 4096 tokens".into()
        )
    );
    assert!(matches!(
        classify_status(
            &*Protocol::OpenAi.wire(),
            413,
            "Request too large: too many tokens"
        ),
        LlmError::ContextLengthExceeded(_)
    ));
    assert!(matches!(
        classify_status(
            &*Protocol::OpenAi.wire(),
            429,
            "Rate limit: too many tokens per minute"
        ),
        LlmError::Status { status: 429, .. }
    ));
    assert_eq!(
        classify_status(&*Protocol::OpenAi.wire(), 404, "no such model"),
        LlmError::Status {
            status: 404,
            body: "no such model".into()
        }
    );
}

#[test]
fn retry_after_headers_are_read() {
    let mut h = HeaderMap::new();
    assert_eq!(retry_after(&h), None);
    h.insert(
        "retry-after",
        reqwest::header::HeaderValue::from_static("2"),
    );
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert(
        "retry-after-ms",
        reqwest::header::HeaderValue::from_static("150"),
    );
    assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
}

#[test]
fn timeouts_round_up_to_whole_seconds() {
    assert_eq!(ceil_secs(Duration::from_millis(500)), 1);
    assert_eq!(ceil_secs(Duration::from_secs(120)), 120);
}

#[test]
fn anthropic_errors_are_its_words_and_overloaded_is_retried() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let e = classify_status(
        &*Protocol::Anthropic(AnthropicOptions::default()).wire(),
        529,
        body,
    );
    assert_eq!(
        e,
        LlmError::Status {
            status: 529,
            body: "Anthropic overloaded_error: Overloaded".into()
        }
    );
    assert!(e.is_retryable());
    let long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    assert_eq!(
        classify_status(
            &*Protocol::Anthropic(AnthropicOptions::default()).wire(),
            400,
            long
        ),
        LlmError::ContextLengthExceeded(
            "prompt is too long: 210000 tokens > 200000 maximum".into()
        )
    );
}
