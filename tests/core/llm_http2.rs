//! `LLM_HTTP2`: the client speaks HTTP/2 with prior knowledge (h2c) to a plain-http provider
//! when the setting is on and HTTP/1.1 when it is off, with streaming, retries and the response
//! cap unchanged; the mock provider serves both, so the load generator can measure either.

use std::time::Duration;

use axum::http::Version;
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::Protocol;
use reagent::llm::retry::Backoff;
use reagent::llm::{collect_stream, Abilities, ChatRequest, Llm, LlmError, Message};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use reagent_mock::{MockConfig, MockProvider};

fn client(base_url: String, http2: bool) -> ModelClient {
    ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url,
        api_key: Some("sk-test".into()),
        model: "fake-model".into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_secs(5),
        max_retries: 2,
    })
    .expect("client builds")
    .with_backoff(Backoff::with_base(Duration::from_millis(5)))
    .with_http2(http2)
    .expect("client builds with the setting")
}

fn ask() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

/// A non-streamed call, a streamed one, and a 503 retried: every request's HTTP version.
async fn versions_seen(http2: bool) -> Vec<Version> {
    let fake = FakeOpenAi::start().await.expect("fake server starts");
    let llm = client(fake.base_url(), http2);
    fake.push(FakeReply::text("whole"));
    fake.push(FakeReply::status(503));
    fake.push(FakeReply::text("streamed answer").chunk_chars(3));
    assert_eq!(llm.chat(ask()).await.unwrap().content, "whole");
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(streamed.content, "streamed answer");
    fake.http_versions()
}

#[tokio::test]
async fn the_client_speaks_h2c_to_a_plain_http_provider_when_llm_http2_is_on() {
    assert_eq!(versions_seen(true).await, [Version::HTTP_2; 3]);
}

#[tokio::test]
async fn the_client_speaks_http1_when_llm_http2_is_off() {
    assert_eq!(versions_seen(false).await, [Version::HTTP_11; 3]);
}

#[tokio::test]
async fn the_response_cap_still_cuts_a_stream_over_h2c() {
    let fake = FakeOpenAi::start().await.expect("fake server starts");
    let llm = client(fake.base_url(), true).with_max_response_bytes(600);
    fake.push(FakeReply::text("word ".repeat(200)).chunk_chars(5));
    let result = collect_stream(llm.stream_chat(ask()).await.unwrap()).await;
    assert!(
        matches!(&result, Err(LlmError::Stream(m)) if m.contains("LLM_MAX_RESPONSE_BYTES")),
        "a 1 KB stream passed a 600-byte cap: {result:?}"
    );
    assert_eq!(fake.http_versions(), [Version::HTTP_2]);
}

#[tokio::test]
async fn the_mock_provider_streams_over_h2c_and_http1() {
    let cfg = MockConfig {
        answer_tokens: 5,
        ..MockConfig::default()
    };
    let answer = cfg.answer_text();
    let mock = MockProvider::start(cfg).await.expect("mock starts");
    for http2 in [true, false] {
        let llm = client(mock.base_url(), http2);
        let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(streamed.content, answer, "http2 = {http2}");
    }
}
