//! Concurrent responses after one `previous_response_id` (issue 51, item 6): each continues the
//! conversation at that response, deterministically — the first in the conversation itself, the
//! others, which find it busy or moved on, each in a fork of its own at that response — never a
//! `409` for a finished previous response.

use std::collections::HashSet;

use futures::future::join_all;
use serde_json::{json, Value};

use super::responses::app_on;

on_both_backends!(concurrent_responses_after_one_response_each_continue_from_it);

/// Rounds, and requests at once per round.
const ROUNDS: usize = 3;
const AT_ONCE: usize = 5;

async fn concurrent_responses_after_one_response_each_continue_from_it(db: String) {
    let app = app_on(Some(db)).await;
    for round in 0..ROUNDS {
        app.llm.text("first answer");
        let r = app
            .post(
                "/v1/responses",
                json!({"model": "helper", "input": "hi"}),
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let first: Value = r.json().await.unwrap();
        let (previous, conversation) = (
            first["id"].as_str().unwrap().to_string(),
            first["conversation"]["id"].as_str().unwrap().to_string(),
        );
        let shown = app
            .get_json(&format!("/api/conversations/{conversation}"), None)
            .await;
        let answer = shown["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_string();
        for _ in 0..AT_ONCE {
            app.llm.text("next answer");
        }
        let sent = (0..AT_ONCE).map(|i| {
            let body = json!({"model": "helper", "input": format!("next {i}"),
                "previous_response_id": previous});
            app.post("/v1/responses", body, None)
        });
        let mut conversations = Vec::new();
        for r in join_all(sent).await {
            let status = r.status();
            let body: Value = r.json().await.unwrap();
            assert_eq!(status, 200, "round {round}: {body}");
            assert_eq!(body["previous_response_id"], previous);
            conversations.push(body["conversation"]["id"].as_str().unwrap().to_string());
        }
        let distinct: HashSet<&String> = conversations.iter().collect();
        assert_eq!(distinct.len(), AT_ONCE, "round {round}: {conversations:?}");
        let joined = conversations.iter().filter(|c| **c == conversation).count();
        assert_eq!(joined, 1, "round {round}: one joins, {conversations:?}");
        // Each holds the history up to the previous response, then its own turn.
        for c in &conversations {
            let shown = app.get_json(&format!("/api/conversations/{c}"), None).await;
            let texts: Vec<&str> = shown["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap())
                .collect();
            assert_eq!(texts[..2], ["hi", answer.as_str()], "{shown}");
            assert_eq!(texts.len(), 4, "{shown}");
        }
    }
}
