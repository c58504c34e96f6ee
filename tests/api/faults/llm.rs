//! LLM faults (real client, fake provider): rate limits, server errors, refused connections,
//! timeouts, streams cut or malformed.

use super::*;

#[tokio::test]
async fn burst_of_429_with_retry_after_is_retried_and_the_run_completes() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::status(429).retry_after(1));
    fake.push(FakeReply::status(429).retry_after_raw("0.2"));
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("The synthesised answer."));
    let (d, events) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "The synthesised answer.");
    assert_eq!(answer_done(&events)["fallback"], false);
    assert_eq!(calls(&fake), (3, 1), "2 retries + 1 loop call, 1 synthesis");
    assert_eq!(d["usage"]["llm_calls"], 2, "retries are not separate calls");
}

#[tokio::test]
async fn endless_429_without_retry_after_gives_up_after_bounded_retries() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::status(429));
    let (d, _) = run_hello(&fake, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("429"), "{d}");
    assert_eq!(
        calls(&fake),
        (1 + RETRIES, 0),
        "bounded: no synthesis for a dead model"
    );
}

#[tokio::test]
async fn server_errors_500_and_503_are_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::status(500));
    fake.push(FakeReply::status(503).body("<html>upstream down</html>"));
    fake.push(FakeReply::tool_calls(vec![(
        "c1",
        "echo",
        r#"{"text":"x"}"#,
    )]));
    fake.push(FakeReply::status(502));
    fake.push(FakeReply::text("done"));
    fake.push(FakeReply::status(503));
    fake.push(FakeReply::text("Final answer."));
    let (d, _) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "Final answer.");
    assert_eq!(d["tool_calls"], 1);
    assert_eq!(calls(&fake), (5, 2));
    assert_eq!(fake.remaining(), 0);
}

#[tokio::test]
async fn a_non_retryable_status_fails_at_once() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::status(401).body(r#"{"error":{"message":"bad key"}}"#));
    let (d, _) = run_hello(&fake, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("401"), "{d}");
    assert_eq!(fake.request_count(), 1);
    // The answer says in one plain sentence what failed and what to set; the provider's JSON
    // stays in `done.error`.
    let answer = d["answer"].as_str().unwrap();
    assert!(answer.contains("refused the API key"), "{answer}");
    assert!(answer.contains("LLM_API_KEY"), "{answer}");
    assert!(
        !answer.contains("bad key") && !answer.contains('{'),
        "{answer}"
    );
    assert!(d["error"].as_str().unwrap().contains("bad key"), "{d}");
}

#[tokio::test]
async fn connection_refused_fails_the_run_with_a_clear_error() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let app = llm_app(&format!("http://127.0.0.1:{port}/v1"), vec![]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "failed").await;
    assert!(
        d["error"].as_str().unwrap().contains("could not reach"),
        "{d}"
    );
    let answer = d["answer"].as_str().unwrap();
    assert!(answer.contains("LLM_BASE_URL"), "{answer}");
    assert!(
        !answer.contains("127.0.0.1"),
        "details stay in done.error: {answer}"
    );
}

#[tokio::test]
async fn a_loop_call_that_times_out_is_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("too late").delay(5_000));
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("Answer after a timeout."));
    let (d, _) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "Answer after a timeout.");
    assert_eq!(calls(&fake), (2, 1));
}

#[tokio::test]
async fn a_model_that_never_answers_fails_the_run_after_bounded_timeouts() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("never").endless(50));
    let (d, _) = run_hello(&fake, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("timed out"), "{d}");
    assert_eq!(calls(&fake), (1 + RETRIES, 0));
}

#[tokio::test]
async fn a_stream_cut_mid_answer_resets_to_the_brief_answer() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    // Role chunk + 3 content deltas, then the connection ends without `[DONE]`.
    fake.push(FakeReply::text("A long synthesised answer that never finishes").cut_after(4));
    let (d, events) = run_hello(&fake, "completed").await;
    let l = labels(&events);
    assert!(l.contains(&"answer:reset".to_string()), "{l:?}");
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(
        calls(&fake),
        (1, 1),
        "no retry once deltas reached the user (no duplicates)"
    );
}

#[tokio::test]
async fn a_stream_cut_before_any_delta_is_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text("lost").cut_after(1));
    fake.push(FakeReply::text("Second try."));
    let (d, events) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "Second try.");
    assert!(!labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(calls(&fake), (1, 2));
}

#[tokio::test]
async fn a_malformed_chunk_falls_back_to_the_brief_answer() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    fake.push(FakeReply::text("Streaming then garbage").malformed_after(3));
    let (d, events) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn a_malformed_loop_reply_fails_the_run_without_retrying() {
    let fake = FakeOpenAi::start().await.unwrap();
    // A non-streamed reply cut inside its JSON.
    fake.set_default(FakeReply::text("x").malformed_after(0));
    let (d, _) = run_hello(&fake, "failed").await;
    assert!(
        d["error"].as_str().unwrap().contains("invalid response"),
        "{d}"
    );
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn an_endless_trickle_in_synthesis_is_cut_by_the_stream_budget() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The brief answer."));
    // A chunk every 50 ms, forever: each gap is under the 1 s timeout, so only the total
    // stream budget (STREAM_TOTAL_FACTOR × timeout) can end it.
    fake.push(FakeReply::text("trickle ").endless(50));
    let (d, events) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"], "The brief answer.");
    assert_eq!(answer_done(&events)["fallback"], true);
    assert!(labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn an_enormous_streamed_answer_is_delivered_whole() {
    let fake = FakeOpenAi::start().await.unwrap();
    let big: String = "lorem ipsum ".repeat(200_000); // 2.4 MB
    fake.push(FakeReply::text("brief"));
    fake.push(FakeReply::text(big.clone()).chunk_chars(64 * 1024));
    let (d, events) = run_hello(&fake, "completed").await;
    assert_eq!(d["answer"].as_str().unwrap(), big);
    assert_eq!(answer_done(&events)["fallback"], false);
    assert_eq!(calls(&fake), (1, 1));
}

#[tokio::test]
async fn an_enormous_loop_reply_still_reaches_the_user_when_synthesis_is_refused() {
    let fake = FakeOpenAi::start().await.unwrap();
    let big: String = "lorem ipsum ".repeat(200_000); // 2.4 MB
    fake.push(FakeReply::text(big.clone()));
    let (d, events) = run_hello(&fake, "completed").await;
    // A 2.4 MB draft is more than the synthesis trace may hold (256 KiB): synthesis would
    // read it cut, so no synthesis call is made and the draft itself is the answer.
    assert_eq!(d["answer"].as_str().unwrap(), big);
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(calls(&fake), (1, 0));
}
