//! Racing first requests on a new thread (issue 51, item 6): the thread becomes the caller's own
//! conversation while the others look it up, so exactly one starts the run and the others get
//! `409`, never `404` (which means another tenant's thread).

use futures::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use super::app;

/// Rounds of concurrent first requests, and requests per round.
const ROUNDS: usize = 40;
const AT_ONCE: usize = 8;

/// The first request of a new thread on AG-UI (even rounds) or the AI SDK (odd ones).
fn first_request(round: usize, thread: &str) -> (&'static str, Value) {
    if round.is_multiple_of(2) {
        let messages = json!([{"id": "m1", "role": "user", "content": "hello"}]);
        let body = json!({"threadId": thread, "runId": "r1", "messages": messages});
        return ("/ag-ui/helper", body);
    }
    let messages =
        json!([{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}]);
    (
        "/ai-sdk/helper",
        json!({"id": thread, "messages": messages, "trigger": "submit-message"}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_first_requests_on_a_new_thread_start_one_run_and_get_409() {
    let app = app().await;
    for round in 0..ROUNDS {
        app.llm.text("hi");
        let thread = format!("race-{}", Uuid::new_v4());
        let (path, body) = first_request(round, &thread);
        // Spread over a few milliseconds, so that some look the thread up while the first
        // one's start commits it.
        let sent = (0..AT_ONCE).map(|i| {
            let (app, body) = (&app, body.clone());
            async move {
                tokio::time::sleep(std::time::Duration::from_micros(400 * i as u64)).await;
                app.post(path, body, None).await
            }
        });
        let mut statuses: Vec<u16> = join_all(sent)
            .await
            .into_iter()
            .map(|r| r.status().as_u16())
            .collect();
        statuses.sort_unstable();
        let mut expected = vec![200];
        expected.extend([409; AT_ONCE - 1]);
        assert_eq!(statuses, expected, "round {round} ({path})");
    }
}
