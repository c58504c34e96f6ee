//! Broken streams: cut midway or before any event, malformed chunks, endless slow streams and
//! streams that stall after some chunks.

use super::*;

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
    let llm = ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
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
