//! Token rate and latencies, as lower bounds: the token rate, the reply latency, the first-call
//! latency only before the first tool result.

use super::*;

#[tokio::test]
async fn token_rate_is_respected_as_a_lower_bound() {
    let mock = start(MockConfig {
        answer_tokens: 20,
        tokens_per_s: 100.0,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let started = Instant::now();
    let mut stream = llm
        .stream_chat(ChatRequest::new(vec![Message::user("go")]))
        .await
        .expect("stream");
    let mut tokens = 0;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Content(c) = event.expect("event") {
            tokens += usize::from(!c.is_empty());
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(tokens, 20);
    // Token k is due at k / 100 s, so the last one (k = 19) cannot arrive before 190 ms.
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
}

#[tokio::test]
async fn latency_delays_the_reply() {
    let mock = start(MockConfig {
        latency: Duration::from_millis(120),
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let started = Instant::now();
    llm.chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("chat");
    assert!(started.elapsed() >= Duration::from_millis(120));
}

#[tokio::test]
async fn first_call_latency_applies_only_before_the_first_tool_result() {
    let first = Duration::from_millis(300);
    let mock = start(MockConfig {
        tool_iterations: 2,
        first_call_latency: Some(first),
        // A later call would wait this long: far beyond the test's safety timeout.
        latency: Duration::from_secs(60),
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let request = |messages| ChatRequest {
        tools: [calculator_definition()].into(),
        ..ChatRequest::new(messages)
    };
    let t0 = Instant::now();
    let reply = llm
        .chat(request(vec![Message::user("go")]))
        .await
        .expect("first call");
    assert!(t0.elapsed() >= first, "{:?}", t0.elapsed());
    assert_eq!(reply.tool_calls.len(), 1, "the script's first tool call");
    // With one tool result the ordinary latency (60 s) applies: still pending after 1 s,
    // far beyond the first-call latency.
    let messages = vec![Message::user("go"), Message::tool("call_mock_0", "1")];
    let later = tokio::time::timeout(Duration::from_secs(1), llm.chat(request(messages))).await;
    assert!(
        later.is_err(),
        "the second call used the first-call latency: {later:?}"
    );
}
