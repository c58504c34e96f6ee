//! Streaming assembly (tool calls with and without an index, reasoning content) and usage, asked
//! for on streams and reported once.

use super::*;

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
