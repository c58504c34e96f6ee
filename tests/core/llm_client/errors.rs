//! Typed errors: context overflow, long bodies cut to an excerpt, an unreachable provider.

use super::*;

#[tokio::test]
async fn context_overflow_bodies_become_a_typed_error() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
    fake.push(FakeReply::status(400).body(openai));
    fake.push(FakeReply::status(413).body(too_long));
    fake.push(FakeReply::status(400).body(llama));
    match llm.chat(ask()).await {
        Err(LlmError::ContextLengthExceeded(m)) => assert!(m.contains("maximum context length")),
        other => panic!("{other:?}"),
    }
    match llm.stream_chat(ask()).await.err() {
        Some(LlmError::ContextLengthExceeded(m)) => assert!(m.contains("prompt is too long")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        llm.chat(ask()).await,
        Err(LlmError::ContextLengthExceeded(_))
    ));
    assert_eq!(fake.request_count(), 3, "never retried");
}

#[tokio::test]
async fn long_error_bodies_are_cut_to_an_excerpt() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(FakeReply::status(422).body(format!("bad request {}", "x".repeat(5_000))));
    match llm.chat(ask()).await {
        Err(LlmError::Status { status, body }) => {
            assert_eq!(status, 422);
            assert!(body.starts_with("bad request"));
            assert!(body.chars().count() <= 300);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_provider_is_a_connect_error() {
    let fake = fake().await;
    let base_url = fake.base_url();
    drop(fake);
    let llm = ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url,
        api_key: None,
        model: "m".into(),
        abilities: Abilities::default(),
        context_window: 1_000,
        max_output_tokens: 100,
        timeout: Duration::from_secs(2),
        max_retries: 1,
    })
    .unwrap()
    .with_backoff(Backoff::with_base(Duration::from_millis(5)));
    assert!(matches!(llm.chat(ask()).await, Err(LlmError::Connect(_))));
}
