//! The real OpenAI-compatible client against the in-process fake server: wire format, streaming
//! assembly, usage, retries, timeouts, broken streams and typed errors. No network, no key, no
//! fixed port; backoff base is a few milliseconds so the file stays fast.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reagent::llm::openai::{OpenAiClient, OpenAiConfig};
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

fn client(fake: &FakeOpenAi, timeout_ms: u64, max_retries: u32) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
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
async fn drain(llm: &OpenAiClient) -> Vec<Result<StreamEvent, LlmError>> {
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

#[tokio::test]
async fn streamed_tool_calls_assemble_like_the_non_streamed_reply() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    // 3 characters per delta: each call's arguments span well over 5 chunks.
    fake.push(FakeReply::tool_calls(TWO_CALLS.to_vec()).chunk_chars(3));
    fake.push(FakeReply::tool_calls(TWO_CALLS.to_vec()));
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    let whole = llm.chat(ask()).await.unwrap();
    assert_eq!(streamed.tool_calls, calls(&TWO_CALLS));
    assert_eq!(whole.tool_calls, streamed.tool_calls);
    assert_eq!(streamed.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(whole.finish_reason.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn streamed_tool_calls_without_index_are_assembled() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(
        FakeReply::tool_calls(TWO_CALLS.to_vec())
            .chunk_chars(2)
            .no_index(),
    );
    let events = drain(&llm).await;
    let tool_events: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::ToolCalls(c)) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_events,
        vec![calls(&TWO_CALLS)],
        "one ToolCalls event, complete"
    );
}

#[tokio::test]
async fn reasoning_content_surfaces_in_chat_and_stream() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(FakeReply::text("42").reasoning("six times seven"));
    fake.push(FakeReply::text("42").reasoning("six times seven"));
    let whole = llm.chat(ask()).await.unwrap();
    assert_eq!(whole.reasoning_content.as_deref(), Some("six times seven"));
    assert_eq!(whole.content, "42");
    let events = drain(&llm).await;
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Reasoning(r)) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "six times seven");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Ok(StreamEvent::Reasoning(_))))
            .count()
            > 1
    );
    assert_eq!(contents(&events).concat(), "42");
}

#[tokio::test]
async fn streams_ask_for_usage_and_report_it_once_at_the_end() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(FakeReply::text("hello there, general").usage(7, 3));
    let events = drain(&llm).await;
    let sent = &fake.requests()[0];
    assert_eq!(sent["stream"], json!(true));
    assert_eq!(sent["stream_options"]["include_usage"], json!(true));
    let usages: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Usage(u)) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(usages, vec![Usage::call(7, 3)]);
    assert_eq!(
        events.last(),
        Some(&Ok(StreamEvent::Done {
            finish_reason: Some("stop".into())
        }))
    );
    assert_eq!(contents(&events).concat(), "hello there, general");
    assert!(
        contents(&events).len() > 1,
        "text arrives in several deltas"
    );
}

#[tokio::test]
async fn missing_usage_still_counts_one_call() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(FakeReply::text("a").no_usage());
    fake.push(FakeReply::text("b").no_usage());
    let whole = llm.chat(ask()).await.unwrap();
    assert_eq!(whole.usage, Usage::call(0, 0));
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(streamed.usage, Usage::call(0, 0));
    assert_eq!(streamed.usage.llm_calls, 1);
    assert_eq!(streamed.content, "b");
}

#[tokio::test]
async fn non_streamed_usage_is_reported() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    fake.push(FakeReply::text("ok").usage(120, 30));
    let whole = llm.chat(ask()).await.unwrap();
    assert_eq!(whole.usage, Usage::call(120, 30));
    assert_eq!(whole.usage.total_tokens, 150);
}

#[tokio::test]
async fn status_429_with_retry_after_is_retried_after_the_delay() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    fake.push(FakeReply::status(429).retry_after(1));
    fake.push(FakeReply::text("finally"));
    let started = Instant::now();
    let reply = llm.chat(ask()).await.unwrap();
    assert_eq!(reply.content, "finally");
    assert_eq!(fake.request_count(), 2);
    // The 5 ms backoff base alone would retry almost at once: the header was honoured.
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn status_500_then_200_succeeds_for_chat_and_stream() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    fake.push(FakeReply::status(500));
    fake.push(FakeReply::text("chat ok"));
    fake.push(FakeReply::status(503));
    fake.push(FakeReply::status(502));
    fake.push(FakeReply::text("stream ok"));
    assert_eq!(llm.chat(ask()).await.unwrap().content, "chat ok");
    assert_eq!(fake.request_count(), 2);
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(streamed.content, "stream ok");
    assert_eq!(fake.request_count(), 5);
}

#[tokio::test]
async fn other_4xx_are_never_retried() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    fake.push(FakeReply::status(400).body(r#"{"error":{"message":"unknown parameter: foo"}}"#));
    fake.push(FakeReply::status(401));
    let err = llm.chat(ask()).await.unwrap_err();
    match err {
        LlmError::Status { status, body } => {
            assert_eq!(status, 400);
            assert!(body.contains("unknown parameter: foo"), "{body}");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    assert_eq!(fake.request_count(), 1);
    let err = llm.stream_chat(ask()).await.err();
    assert!(
        matches!(err, Some(LlmError::Status { status: 401, .. })),
        "{err:?}"
    );
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn retries_are_bounded_by_max_retries() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 2);
    for _ in 0..6 {
        fake.push(FakeReply::status(500));
    }
    let err = llm.chat(ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(fake.request_count(), 3, "1 attempt + 2 retries");
    let err = llm.stream_chat(ask()).await.err();
    assert!(
        matches!(err, Some(LlmError::Status { status: 500, .. })),
        "{err:?}"
    );
    assert_eq!(fake.request_count(), 6);
}

#[tokio::test]
async fn a_hung_server_times_out() {
    let fake = fake().await;
    let llm = client(&fake, 1_000, 0);
    fake.push(FakeReply::text("too late").delay(60_000));
    fake.push(FakeReply::text("too late").delay(60_000));
    let started = Instant::now();
    assert_eq!(llm.chat(ask()).await.unwrap_err(), LlmError::Timeout(1));
    assert!(started.elapsed() < Duration::from_secs(5));
    let started = Instant::now();
    assert_eq!(
        llm.stream_chat(ask()).await.err(),
        Some(LlmError::Timeout(1))
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_timed_out_attempt_is_retried() {
    let fake = fake().await;
    let llm = client(&fake, 500, 1);
    fake.push(FakeReply::text("slow").delay(60_000));
    fake.push(FakeReply::text("fast"));
    assert_eq!(llm.chat(ask()).await.unwrap().content, "fast");
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn a_stream_cut_midway_is_a_stream_error_without_duplicates() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    // Chunks: role, "aaaa", "bbbb" | cut | "cccc", "dddd", finish, usage.
    fake.push(
        FakeReply::text("aaaabbbbccccdddd")
            .chunk_chars(4)
            .cut_after(3),
    );
    let events = drain(&llm).await;
    assert_eq!(
        contents(&events),
        vec!["aaaa".to_string(), "bbbb".to_string()]
    );
    assert!(
        matches!(events.last(), Some(Err(LlmError::Stream(_)))),
        "{events:?}"
    );
    assert_eq!(events.iter().filter(|e| e.is_err()).count(), 1);
    assert_eq!(
        fake.request_count(),
        1,
        "no retry once deltas were handed over"
    );
}

#[tokio::test]
async fn a_tool_call_stream_cut_before_any_event_is_retried() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 2);
    fake.push(
        FakeReply::tool_calls(TWO_CALLS.to_vec())
            .chunk_chars(3)
            .cut_after(6),
    );
    fake.push(FakeReply::tool_calls(TWO_CALLS.to_vec()).chunk_chars(3));
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(
        streamed.tool_calls,
        calls(&TWO_CALLS),
        "no fragment of the cut attempt"
    );
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn a_malformed_chunk_is_a_stream_error() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 3);
    fake.push(
        FakeReply::text("aaaabbbb")
            .chunk_chars(4)
            .malformed_after(2),
    );
    let events = drain(&llm).await;
    assert_eq!(contents(&events), vec!["aaaa".to_string()]);
    assert!(matches!(events.last(), Some(Err(LlmError::Stream(m))) if m.contains("malformed")));
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn an_endless_slow_stream_ends_with_an_error_in_bounded_time() {
    let fake = fake().await;
    let llm = client(&fake, 1_000, 3);
    fake.push(FakeReply::text("never").endless(100));
    let started = Instant::now();
    let events = drain(&llm).await;
    let elapsed = started.elapsed();
    assert!(contents(&events).len() > 5, "the trickle did flow");
    assert!(
        matches!(events.last(), Some(Err(LlmError::Timeout(_)))),
        "{:?}",
        events.last()
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(fake.request_count(), 1);
}

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

fn full_request(choice: ToolChoice) -> ChatRequest {
    let mut assistant = Message::assistant_tool_calls("", calls(&TWO_CALLS[..1]));
    assistant.reasoning_content = Some("secret thoughts".into());
    ChatRequest {
        messages: vec![
            Message::system("be brief").pinned(),
            Message::user("what is it?").pinned(),
            assistant,
            Message::tool("call_1", "12"),
        ]
        .into(),
        tools: vec![ToolDefinition {
            name: "calculator".into(),
            description: "Arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        }]
        .into(),
        tool_choice: Some(choice),
        response_format: Some(ResponseFormat::JsonObject),
        temperature: Some(0.2),
        max_tokens: Some(100),
    }
}

#[tokio::test]
async fn requests_use_the_openai_wire_format() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    llm.chat(full_request(ToolChoice::Function("calculator".into())))
        .await
        .unwrap();
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        llm.chat(full_request(choice)).await.unwrap();
    }
    let sent = fake.requests();
    let first = &sent[0];
    assert_eq!(first["model"], json!("fake-model"));
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "what is it?"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "calculator", "arguments": TWO_CALLS[0].2},
            }]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12"},
        ])
    );
    assert_eq!(
        first["tools"],
        json!([{"type": "function", "function": {
            "name": "calculator", "description": "Arithmetic",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        }}])
    );
    assert_eq!(
        first["tool_choice"],
        json!({"type": "function", "function": {"name": "calculator"}})
    );
    assert_eq!(first["response_format"], json!({"type": "json_object"}));
    assert_eq!(first["temperature"], json!(0.2));
    assert_eq!(first["max_tokens"], json!(100));
    assert!(first.get("stream").is_none());
    let choices: Vec<_> = sent[1..].iter().map(|r| r["tool_choice"].clone()).collect();
    assert_eq!(
        choices,
        vec![json!("auto"), json!("none"), json!("required")]
    );
    for request in &sent {
        let text = request.to_string();
        assert!(!text.contains("pinned"), "{text}");
        assert!(
            !text.contains("reasoning_content") && !text.contains("secret"),
            "{text}"
        );
    }
    assert_eq!(
        fake.authorizations(),
        vec![Some("Bearer sk-test".to_string()); 4]
    );
}

#[tokio::test]
async fn tool_choice_is_omitted_without_tools() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    let mut request = ask();
    request.tool_choice = Some(ToolChoice::Auto);
    request.response_format = Some(ResponseFormat::Text);
    llm.chat(request).await.unwrap();
    let sent = &fake.requests()[0];
    assert!(
        sent.get("tools").is_none() && sent.get("tool_choice").is_none(),
        "{sent}"
    );
    assert!(sent.get("response_format").is_none(), "{sent}");
}

#[tokio::test]
async fn an_empty_script_answers_a_default_text() {
    let fake = fake().await;
    let llm = client(&fake, 5_000, 0);
    assert_eq!(llm.chat(ask()).await.unwrap().content, FAKE_DEFAULT_TEXT);
    let streamed = collect_stream(llm.stream_chat(ask()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(streamed.content, FAKE_DEFAULT_TEXT);
    fake.set_default(FakeReply::text("custom"));
    assert_eq!(llm.chat(ask()).await.unwrap().content, "custom");
}

#[tokio::test]
async fn an_unreachable_provider_is_a_connect_error() {
    let fake = fake().await;
    let base_url = fake.base_url();
    drop(fake);
    let llm = OpenAiClient::new(OpenAiConfig {
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

/// A stream that sends a few chunks at once and then stalls (connection held open) ends with
/// the gap timeout: the gap timer armed before the first chunk is moved on, not lost, while
/// chunks flow.
#[tokio::test]
async fn a_stream_that_stalls_after_some_chunks_times_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        // Read the request up to the end of its body (it is small: one read or a few).
        let mut buf = vec![0u8; 65536];
        let mut got = Vec::new();
        loop {
            let n = sock.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + len {
                    break;
                }
            }
            assert!(n > 0, "client hung up");
        }
        let mut out = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for word in ["one ", "two ", "three"] {
            let event = format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": word}}]})
            );
            out.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
        }
        sock.write_all(out.as_bytes()).await.unwrap();
        // Stall: keep the connection open, send nothing more.
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(sock);
    });
    let llm = OpenAiClient::new(OpenAiConfig {
        base_url: format!("http://{addr}/v1"),
        api_key: None,
        model: "fake-model".into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_millis(500),
        max_retries: 0,
    })
    .expect("client builds");
    let events = drain(&llm).await;
    assert_eq!(contents(&events), ["one ", "two ", "three"]);
    // The gap timeout (0.5 s, reported as 1 s), not the stream's total cap (4 × 0.5 s = 2 s).
    assert!(
        matches!(events.last(), Some(Err(LlmError::Timeout(1)))),
        "{:?}",
        events.last()
    );
    server.abort();
}
