//! The protocols `facade` compares: each one's request for the same short run and how its
//! complete stream looks. A new protocol is one more [`Route`] variant, its name in [`ROUTES`],
//! its request and its end.

use anyhow::Context;
use serde_json::json;

const QUERY: &str = "Look it up and answer.";

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Route {
    Native,
    OpenAi,
    Responses,
    AgUi,
    AiSdk,
    /// A2A's `SendStreamingMessage`, a new task each.
    A2a,
    /// `tools/call` of the `reagent` agent's tool with a progress token: a progress
    /// notification per step, then the result, as one event stream.
    Mcp,
}

/// Every route: its `--apis` name and its path. `/api/chat` first: the others are compared
/// with it.
pub const ROUTES: [(Route, &str, &str); 7] = [
    (Route::Native, "api", "/api/chat"),
    (Route::OpenAi, "v1", "/v1/chat/completions"),
    (Route::Responses, "responses", "/v1/responses"),
    (Route::AgUi, "ag-ui", "/ag-ui/reagent"),
    (Route::AiSdk, "ai-sdk", "/ai-sdk/reagent"),
    (Route::A2a, "a2a", "/a2a/reagent"),
    (Route::Mcp, "mcp", "/mcp"),
];

/// The routes `--apis` names (all when empty), `/api/chat` always first.
pub fn selected(names: &[String]) -> anyhow::Result<Vec<(Route, &'static str)>> {
    for name in names {
        anyhow::ensure!(
            ROUTES.iter().any(|(_, n, _)| n == name),
            "unknown API {name:?}: one of {}",
            ROUTES.map(|(_, n, _)| n).join(", ")
        );
    }
    Ok(ROUTES
        .iter()
        .filter(|(r, n, _)| *r == Route::Native || names.is_empty() || names.iter().any(|x| x == n))
        .map(|(r, _, path)| (*r, *path))
        .collect())
}

/// One run through `route` to the end of its stream: the stream's body.
pub async fn run(
    http: &reqwest::Client,
    base: &str,
    route: Route,
    n: usize,
) -> anyhow::Result<String> {
    let request = match route {
        Route::Native => http
            .post(format!("{base}/api/chat"))
            .json(&json!({"query": QUERY})),
        Route::OpenAi => http
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({
                "model": "reagent",
                "stream": true,
                "messages": [{"role": "user", "content": QUERY}],
            })),
        Route::Responses => http.post(format!("{base}/v1/responses")).json(&json!({
            "model": "reagent", "stream": true, "input": QUERY,
        })),
        Route::AgUi => http.post(format!("{base}/ag-ui/reagent")).json(&json!({
            "threadId": format!("bench-{n}"), "runId": format!("r{n}"),
            "messages": [{"id": "u1", "role": "user", "content": QUERY}],
        })),
        Route::AiSdk => http.post(format!("{base}/ai-sdk/reagent")).json(&json!({
            "id": format!("bench-{n}"), "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user",
                          "parts": [{"type": "text", "text": QUERY}]}],
        })),
        Route::A2a => http.post(format!("{base}/a2a/reagent")).json(&json!({
            "jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": format!("m{n}"),
                                   "parts": [{"text": QUERY}]}},
        })),
        Route::Mcp => http
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({
                "jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "reagent", "arguments": {"query": QUERY},
                           "_meta": {"progressToken": n}},
            })),
    };
    let response = request.send().await.context("request")?;
    anyhow::ensure!(response.status().is_success(), "HTTP {}", response.status());
    let body = response.text().await.context("stream")?;
    anyhow::ensure!(complete(route, &body), "the stream ended early: {body}");
    Ok(body)
}

/// True when `body` is a whole, successful stream of `route`.
pub fn complete(route: Route, body: &str) -> bool {
    match route {
        Route::Native => body.contains("event: done"),
        Route::OpenAi | Route::AiSdk => body.ends_with("data: [DONE]\n\n"),
        Route::Responses => {
            body.contains("event: response.completed") && body.ends_with("data: [DONE]\n\n")
        }
        Route::AgUi => body.contains("\"type\":\"RUN_FINISHED\""),
        Route::A2a => body.contains("\"TASK_STATE_COMPLETED\""),
        Route::Mcp => body.contains("\"result\"") && body.contains("\"isError\":false"),
    }
}

/// The run's steps the stream carried (a tool started, a tool ended…), where the protocol
/// says them one by one: `/api/chat`'s `step` events, MCP's progress notifications.
pub fn steps(route: Route, body: &str) -> Option<usize> {
    match route {
        Route::Native => Some(body.matches("event: step\n").count()),
        Route::Mcp => Some(body.matches("notifications/progress").count()),
        _ => None,
    }
}
