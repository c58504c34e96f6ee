//! The replies: a final-answer object in JSON mode, streamed and non-streamed answers agree,
//! stamped tokens carry their send time.

use super::*;

#[tokio::test]
async fn json_mode_request_without_tools_gets_a_final_answer_object() {
    let cfg = MockConfig {
        answer_tokens: 5,
        ..MockConfig::default()
    };
    let answer = cfg.answer_text();
    let mock = start(cfg).await;
    let reply = client(&mock, Abilities::default(), 0)
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("chat");
    let action: serde_json::Value = serde_json::from_str(&reply.content).expect("JSON content");
    assert_eq!(action["type"], "final_answer");
    assert_eq!(action["answer"], answer.as_str());
}

#[tokio::test]
async fn streamed_answer_has_n_tokens_matching_the_non_streamed_text_with_usage() {
    let n = 9;
    let mock = start(MockConfig {
        answer_tokens: n,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    // With `tools` (and no tool script) the non-streamed reply is the plain answer text;
    // without them it would be the JSON-mode final-answer object.
    let request = ChatRequest {
        tools: [calculator_definition()].into(),
        ..ChatRequest::new(vec![Message::user("hello there")])
    };
    let whole = llm.chat(request.clone()).await.expect("chat");
    assert_eq!(whole.content.split(' ').count(), n);
    assert_eq!(whole.usage.completion_tokens, n as u64);
    assert!(whole.usage.prompt_tokens > 0);

    let mut stream = llm.stream_chat(request).await.expect("stream");
    let (mut deltas, mut usage, mut finish) = (Vec::new(), None, None);
    while let Some(event) = stream.next().await {
        match event.expect("stream event") {
            StreamEvent::Content(c) if !c.is_empty() => deltas.push(c),
            StreamEvent::Usage(u) => usage = Some(u),
            StreamEvent::Done { finish_reason } => finish = finish_reason,
            _ => {}
        }
    }
    assert_eq!(deltas.len(), n, "one token per chunk: {deltas:?}");
    assert_eq!(deltas.concat(), whole.content);
    let usage = usage.expect("usage reported");
    assert_eq!(usage.completion_tokens, n as u64);
    assert!(usage.prompt_tokens > 0);
    assert_eq!(finish.as_deref(), Some("stop"));
}

#[tokio::test]
async fn stamped_tokens_carry_their_send_time_and_parse_back() {
    use reagent_mock::{token_stamps, unix_micros};
    let n = 5;
    let mock = start(MockConfig {
        answer_tokens: n,
        stamp_tokens: true,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let before = unix_micros();
    let mut stream = llm
        .stream_chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("stream");
    let mut deltas = Vec::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Content(c) = event.expect("stream event") {
            if !c.is_empty() {
                deltas.push(c);
            }
        }
    }
    let after = unix_micros();
    assert_eq!(deltas.len(), n, "{deltas:?}");
    for (k, delta) in deltas.iter().enumerate() {
        let stamps: Vec<u64> = token_stamps(delta).collect();
        assert_eq!(stamps.len(), 1, "one stamp per token: {delta}");
        assert!(
            (before..=after).contains(&stamps[0]),
            "stamp {} outside [{before}, {after}]",
            stamps[0]
        );
        let word = delta.split('~').next().unwrap_or_default();
        let expected = if k == 0 { "mock" } else { " answer" };
        if k <= 1 {
            assert_eq!(word, expected);
        }
    }
    // Stamps never go backwards within one stream.
    let all: Vec<u64> = token_stamps(&deltas.concat()).collect();
    assert!(all.windows(2).all(|w| w[0] <= w[1]), "{all:?}");
}
