//! The same guarantees on the native Anthropic Messages client, against [`FakeAnthropic`]
//! (built from the official SDK's shapes), which answers 400 like Anthropic when a tool-use
//! turn comes back to its model without its signed `thinking` blocks or with them altered:
//! three tool iterations non-streamed and streamed, a resume from a checkpoint, a switch of
//! model, prefix stability (cache breakpoints aside), and the headers, usage and retries of the
//! protocol.

use reagent::agent::checkpoint::Resume;
use reagent::agent::RunStatus;
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::{AnthropicOptions, Protocol};
use reagent::llm::{collect_stream, ChatRequest, LlmError, ToolDefinition};
use reagent::testing::fake_anthropic::{AnthropicReply, FakeAnthropic};

use super::*;

async fn fake() -> FakeAnthropic {
    FakeAnthropic::start().await.expect("fake server starts")
}

/// A client of the provider's `model`, registered as `name`.
fn claude(fake: &FakeAnthropic, name: &str, model: &str) -> Arc<dyn Llm> {
    let client = ModelClient::new(ClientConfig {
        protocol: Protocol::Anthropic(AnthropicOptions {
            thinking_budget: Some(2048),
            cache: true,
        }),
        base_url: fake.base_url(),
        api_key: Some("sk-ant-test".into()),
        model: model.into(),
        abilities: Abilities::default(),
        context_window: 200_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_secs(10),
        max_retries: 2,
    })
    .expect("client builds")
    .with_name(name)
    .with_backoff(Backoff::with_base(Duration::from_millis(1)));
    Arc::new(client)
}

/// Tool-use turn `n`: signed thinking, a redacted block, one `lookup` call `toolu_<n>`.
fn turn(n: u32) -> AnthropicReply {
    let args = json!({"x": format!("q{n}")}).to_string();
    AnthropicReply::tool_calls(&[(&format!("toolu_{n}"), "lookup", &args)])
        .thinking(
            &format!("I should look up q{n}."),
            &format!("EqQBCkYIBxgCKkB{n}/sig+=="),
        )
        .redacted(&format!("opaque{n}"))
}

fn script(fake: &FakeAnthropic) {
    for n in 1..=3 {
        fake.push(turn(n));
    }
    fake.push(AnthropicReply::text("all three found"));
}

fn config() -> AgentConfig {
    AgentConfig {
        completion_check: false,
        ..AgentConfig::default()
    }
}

/// Assistant turns of `request` that give back thinking blocks.
fn with_thinking(request: &Value) -> usize {
    let turns = request["messages"].as_array().cloned().unwrap_or_default();
    turns
        .iter()
        .filter(|m| m["role"] == "assistant" && m["content"].to_string().contains("\"thinking\""))
        .count()
}

fn to_model(fake: &FakeAnthropic, model: &str) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r["model"] == model)
        .collect()
}

#[tokio::test]
async fn thinking_blocks_go_back_through_three_tool_iterations() {
    let fake = fake().await;
    script(&fake);
    let result = agent(claude(&fake, "claude", "claude-x"), config())
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(
        (result.outcome.status, result.outcome.tool_calls),
        (RunStatus::Completed, 3),
        "{:?}",
        result.outcome.error
    );
    let sent: Vec<usize> = to_model(&fake, "claude-x")
        .iter()
        .take(4)
        .map(with_thinking)
        .collect();
    assert_eq!(sent, [0, 1, 2, 3]);
    let first = &fake.received()[0];
    assert_eq!(first.api_key.as_deref(), Some("sk-ant-test"));
    assert_eq!(first.version.as_deref(), Some("2023-06-01"));
    let body = &fake.requests()[1];
    assert!(
        body["system"].is_array() && body["thinking"]["budget_tokens"] == 2048,
        "{body}"
    );
}

#[tokio::test]
async fn thinking_blocks_streamed_go_back_through_three_tool_iterations() {
    let fake = fake().await;
    script(&fake);
    let llm = claude(&fake, "claude", "claude-x");
    let lookup = ToolDefinition {
        name: "lookup".into(),
        description: "Looks things up.".into(),
        parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    };
    let mut messages = vec![Message::system("You look things up."), Message::user("q")];
    let mut reasoning = Vec::new();
    let mut answer = String::new();
    for _ in 0..4 {
        let request = ChatRequest {
            tools: vec![lookup.clone()].into(),
            ..ChatRequest::new(messages.clone())
        };
        let stream = llm.stream_chat(request).await.expect("accepted");
        let reply = collect_stream(stream).await.expect("a complete reply");
        messages.push(Message::from_response(&reply));
        for call in &reply.tool_calls {
            assert_eq!(
                call.arguments,
                json!({"x": format!("q{}", reasoning.len() + 1)}).to_string()
            );
            messages.push(Message::tool(call.id.clone(), "found it"));
        }
        reasoning.extend(reply.reasoning_content);
        answer = reply.content;
    }
    assert_eq!(answer, "all three found");
    assert_eq!(
        reasoning,
        [
            "I should look up q1.",
            "I should look up q2.",
            "I should look up q3."
        ]
    );
    let sent: Vec<usize> = fake.requests().iter().map(with_thinking).collect();
    assert_eq!(sent, [0, 1, 2, 3]);
}

#[tokio::test]
async fn thinking_blocks_survive_a_resume_from_a_checkpoint() {
    let fake = fake().await;
    script(&fake);
    let taken = Arc::new(Mutex::new(Vec::new()));
    let first = agent(claude(&fake, "claude", "claude-x"), config())
        .run(input(vec![]), handles(taken.clone()))
        .await;
    assert_eq!(first.outcome.status, RunStatus::Completed);
    let checkpoint = taken
        .lock()
        .unwrap()
        .iter()
        .find(|c| c.iterations == 2 && c.in_flight.is_empty())
        .cloned()
        .expect("the checkpoint before the third iteration");
    fake.push(turn(13));
    fake.push(AnthropicReply::text("found again"));
    let before = fake.requests().len();
    let resume = Resume {
        checkpoint,
        reset_answer: false,
        continues: None,
    };
    let resumed = agent(claude(&fake, "claude", "claude-x"), config())
        .resume(input(vec![]), handles(Arc::default()), resume, "node-b")
        .await;
    assert_eq!(
        (resumed.outcome.status, resumed.outcome.tool_calls),
        (RunStatus::Completed, 3),
        "{:?}",
        resumed.outcome.error
    );
    let sent: Vec<usize> = fake.requests()[before..]
        .iter()
        .take(2)
        .map(with_thinking)
        .collect();
    assert_eq!(sent, [2, 3]);
}

#[tokio::test]
async fn another_model_never_gets_the_thinking_blocks() {
    let fake = fake().await;
    fake.push(turn(1));
    fake.push(AnthropicReply::text("found"));
    let first = agent(claude(&fake, "claude", "claude-x"), config())
        .run(input(vec![]), handles(Arc::default()))
        .await;
    assert_eq!(first.outcome.status, RunStatus::Completed);
    let history: Vec<Message> = first.messages[1..].to_vec();
    fake.push(AnthropicReply::text("plain"));
    let other = agent(claude(&fake, "haiku", "claude-haiku"), config())
        .run(input(history), handles(Arc::default()))
        .await;
    assert_eq!(other.outcome.status, RunStatus::Completed);
    let to_other = to_model(&fake, "claude-haiku");
    assert!(!to_other.is_empty());
    assert!(to_other
        .iter()
        .all(|r| with_thinking(r) == 0 && !r.to_string().contains("opaque")));
}

#[tokio::test]
async fn the_fake_refuses_thinking_blocks_missing_or_altered() {
    let fake = fake().await;
    fake.push(turn(1));
    let llm = claude(&fake, "claude", "claude-x");
    let mut messages = vec![Message::user("q")];
    let reply = llm
        .chat(ChatRequest::new(messages.clone()))
        .await
        .expect("a turn");
    messages.push(Message::from_response(&reply));
    messages.push(Message::tool("toolu_1", "found it"));
    let good = messages.clone();
    let mut altered = messages[1].continuity.clone().expect("kept");
    let text = altered
        .message
        .values()
        .next()
        .cloned()
        .expect("blocks")
        .to_string();
    let changed: Value = serde_json::from_str(&text.replace("q1.", "q1!")).expect("JSON");
    let key = altered.message.keys().next().cloned().expect("key");
    altered.message.insert(key, changed);
    messages[1].continuity = Some(altered);
    let refused = llm.chat(ChatRequest::new(messages.clone())).await;
    assert!(
        matches!(&refused, Err(LlmError::Status { status: 400, body }) if body.contains("thinking")),
        "{refused:?}"
    );
    messages[1].continuity = None;
    let refused = llm.chat(ChatRequest::new(messages)).await;
    assert!(
        matches!(refused, Err(LlmError::Status { status: 400, .. })),
        "{refused:?}"
    );
    assert!(llm.chat(ChatRequest::new(good)).await.is_ok());
}

#[tokio::test]
async fn overloaded_is_retried_cache_tokens_are_read_and_errors_are_words() {
    let fake = fake().await;
    fake.push(AnthropicReply::error(529, "overloaded_error").retry_after(0));
    fake.push(AnthropicReply::text("hello").cache(300, 20));
    let llm = claude(&fake, "claude", "claude-x");
    let reply = llm
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("retried");
    assert_eq!(reply.content, "hello");
    assert_eq!(
        (
            reply.usage.cache_read_tokens,
            reply.usage.cache_write_tokens
        ),
        (300, 20)
    );
    assert_eq!(reply.usage.prompt_tokens, 330);
    assert_eq!(fake.requests().len(), 2);
    fake.push(AnthropicReply::error(400, "invalid_request_error"));
    let e = llm
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect_err("400");
    assert_eq!(
        e,
        LlmError::Status {
            status: 400,
            body: "Anthropic invalid_request_error: scripted error".into()
        }
    );
}
