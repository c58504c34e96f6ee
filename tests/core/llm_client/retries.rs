//! Retries and timeouts: 429 after its Retry-After, 5xx retried, other 4xx never, bounded by
//! max_retries; a hung server times out and a timed-out attempt is retried.

use super::*;

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
