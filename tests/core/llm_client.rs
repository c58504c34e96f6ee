//! The real OpenAI-compatible client against the in-process fake server: wire format, streaming
//! assembly, usage, retries, timeouts, broken streams and typed errors. No network, no key, no
//! fixed port; backoff base is a few milliseconds so the file stays fast.
//!
//! By topic: [`broken`], [`errors`], [`retries`], [`streaming`], [`usage`], [`wire`].

mod broken;
mod errors;
mod redirects;
mod retries;
mod streaming;
mod usage;
mod wire;

use std::time::{Duration, Instant};

use futures::StreamExt;
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::Protocol;
use reagent::llm::retry::Backoff;
use reagent::llm::{
    collect_stream, Abilities, ChatRequest, Llm, LlmError, Message, ResponseFormat, StreamEvent,
    ToolCall, ToolChoice, ToolDefinition, Usage,
};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply, FAKE_DEFAULT_TEXT};
use serde_json::json;

async fn fake() -> FakeOpenAi {
    FakeOpenAi::start().await.expect("fake server starts")
}

fn client(fake: &FakeOpenAi, timeout_ms: u64, max_retries: u32) -> ModelClient {
    ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url: fake.base_url(),
        api_key: Some("sk-test".into()),
        model: "fake-model".into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_millis(timeout_ms),
        max_retries,
    })
    .expect("client builds")
    .with_backoff(Backoff::with_base(Duration::from_millis(5)))
}

fn ask() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

/// Every event of a stream, errors included, in order.
async fn drain(llm: &ModelClient) -> Vec<Result<StreamEvent, LlmError>> {
    let stream = llm.stream_chat(ask()).await.expect("stream opens");
    stream.collect().await
}

fn contents(events: &[Result<StreamEvent, LlmError>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Content(c)) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn calls(list: &[(&str, &str, &str)]) -> Vec<ToolCall> {
    list.iter()
        .map(|(id, name, args)| ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: args.to_string(),
        })
        .collect()
}

const TWO_CALLS: [(&str, &str, &str); 2] = [
    (
        "call_1",
        "calculator",
        r#"{"expression": "(12 + 30) * 2 / 7"}"#,
    ),
    ("call_2", "current_time", r#"{"timezone": "Europe/Paris"}"#),
];
