//! Faults of the loop's streamed calls (`synthesis = "auto"`, the default): the reply that is
//! the answer streams while it is written, so a cut after its first delta cannot be retried
//! (the client holds part of it): the text is taken back and the run fails saying why. A cut
//! before any delta, or a timeout, is retried as for any call.

use super::*;

/// [`run_hello`] under `synthesis = "auto"`.
async fn run_auto(fake: &FakeOpenAi, status: &str) -> (Value, Vec<Sse>) {
    let app = llm_app(&fake.base_url(), vec![("LLM_SYNTHESIS", "auto".into())]).await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, status).await;
    (d, events)
}

#[tokio::test]
async fn a_reply_streams_as_the_answer_in_one_call() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("The whole answer, streamed once."));
    let (d, events) = run_auto(&fake, "completed").await;
    assert_eq!(d["answer"], "The whole answer, streamed once.");
    assert_eq!(d["synthesis"], false);
    assert_eq!(d["usage"]["llm_calls"], 1);
    assert_eq!(calls(&fake), (0, 1), "one streamed call, no synthesis");
    assert_eq!(answer_done(&events)["fallback"], false);
    let start = events.iter().find(|e| e.label() == "answer:start").unwrap();
    assert_eq!(start.data["source"], "reply");
}

#[tokio::test]
async fn a_reply_cut_after_its_first_delta_is_taken_back_and_the_run_fails() {
    let fake = FakeOpenAi::start().await.unwrap();
    // Role chunk + 3 content deltas, then the connection ends without `[DONE]`.
    fake.push(FakeReply::text("An answer that never finishes").cut_after(4));
    let (d, events) = run_auto(&fake, "failed").await;
    assert!(d["error"].as_str().unwrap().contains("stream"), "{d}");
    assert!(labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(
        calls(&fake),
        (0, 1),
        "no retry once deltas reached the user"
    );
}

#[tokio::test]
async fn a_reply_cut_before_any_delta_or_timed_out_is_retried() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(FakeReply::text("lost").cut_after(1));
    fake.push(FakeReply::text("too late").delay(5_000));
    fake.push(FakeReply::text("Third try."));
    let (d, events) = run_auto(&fake, "completed").await;
    assert_eq!(d["answer"], "Third try.");
    assert!(!labels(&events).contains(&"answer:reset".to_string()));
    assert_eq!(calls(&fake), (0, 3));
}
