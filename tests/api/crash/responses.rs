//! A background response across kill -9 (docs/protocols.md): the client's stream drops with the
//! server, the restarted server resumes the run, and `GET /v1/responses/{id}?stream=true&
//! starting_after=N` goes on after the last sequence number the client saw, numbers still
//! rising, to `response.completed`.

use std::time::Duration;

use futures::StreamExt;
use reagent_mock::{MockConfig, MockProvider};
use serde_json::{json, Value};

use super::{kill_and_restart, resume_env, start_with};

on_both_backends!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    kill_9_during_a_background_response_resumes_by_sequence_number
);

/// The complete events in `text` (an SSE body so far), keep-alives and `[DONE]` left out.
fn complete_frames(text: &str) -> Vec<Value> {
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    blocks.pop(); // what follows the last blank line is not complete yet
    blocks
        .into_iter()
        .filter(|b| b.starts_with("event: "))
        .map(|b| {
            let (event, data) = b.split_once('\n').unwrap();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(event.strip_prefix("event: ").unwrap(), data["type"]);
            data
        })
        .collect()
}

fn seq(frame: &Value) -> u64 {
    frame["sequence_number"].as_u64().unwrap()
}

async fn kill_9_during_a_background_response_resumes_by_sequence_number(db_url: String) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(MockConfig {
        latency: Duration::from_millis(150),
        tokens_per_s: 200.0,
        answer_tokens: 20,
        tool_iterations: 3,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let llm = mock.base_url();
    let env = resume_env(true);
    let mut server = start_with(dir.path(), &db_url, &llm, &env).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let r = client
        .post(server.url("/v1/responses"))
        .json(&json!({"model": "reagent", "input": "work", "stream": true, "background": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut body = r.bytes_stream();
    let mut text = String::new();
    // Until the first tool call is done: the run is in its tool loop.
    while !complete_frames(&text)
        .iter()
        .any(|f| f["type"] == "response.output_item.done")
    {
        let chunk = body.next().await.expect("the stream stays open").unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let seen = complete_frames(&text);
    let id = seen[0]["response"]["id"].as_str().unwrap().to_string();
    let last = seq(seen.last().unwrap());
    kill_and_restart(&mut server, dir.path(), &db_url, &llm, &env).await;
    drop(body);

    let resumed = client
        .get(server.url(&format!(
            "/v1/responses/{id}?stream=true&starting_after={last}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let rest_text = resumed.text().await.unwrap();
    assert!(rest_text.ends_with("data: [DONE]\n\n"), "{rest_text}");
    let rest = complete_frames(&rest_text);
    assert!(seq(&rest[0]) > last, "{last} then {}", rest[0]);
    let numbers: Vec<u64> = rest.iter().map(seq).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    let end = rest.last().unwrap();
    assert_eq!(end["type"], "response.completed", "{end}");
    let output = end["response"]["output"].as_array().unwrap();
    let message = output.iter().find(|i| i["type"] == "message").unwrap();
    assert!(!message["content"][0]["text"].as_str().unwrap().is_empty());
    assert!(output.iter().filter(|i| i["type"] == "mcp_call").count() >= 3);
    // Polled after the end, the response is the completed one.
    let polled: Value = client
        .get(server.url(&format!("/v1/responses/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(polled["status"], "completed");
    server.kill9().await;
    mock.shutdown().await;
}
