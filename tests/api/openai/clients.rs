//! The official OpenAI clients against a reagent agent: `tests/peers/openai_client.py` (the
//! Python SDK) and `tests/peers/openai_stream.mjs` (the npm package) report what they saw, and
//! the tests compare it with what the server stored.

use std::time::Duration;

use reagent::llm::ToolCall;
use reagent::testing::scripted::{response, Turn};
use serde_json::{json, Value};

use super::{agents_app, answer_of, messages, openai_usage, run_json, ALICE};
use crate::support::app::TestApp;
use crate::support::peers;

fn stream(chunks: &[&str]) -> Turn {
    Turn::Stream(chunks.iter().map(|c| c.to_string()).collect(), None)
}

async fn run_peer(program: std::path::PathBuf, script: &str, args: &[String]) -> Value {
    let out = tokio::process::Command::new(program)
        .arg(peers::dir().join(script))
        .args(args)
        .output()
        .await
        .expect("the peer starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script}: {e}: {stdout}"))
}

#[tokio::test]
async fn the_python_sdk_lists_runs_streams_continues_and_gets_typed_errors() {
    let app = agents_app().await;
    script_the_model(&app);
    let args = [app.url("/v1"), ALICE.to_string(), "helper".to_string()];
    let seen = run_peer(peers::python(), "openai_client.py", &args).await;

    assert_eq!(seen["models"], json!(["helper", "second"]));
    plain_completion(&app, &seen["plain"]).await;
    streamed_completion(&app, &seen["streamed"]).await;
    continued_completion(&app, &seen).await;
    typed_errors(&seen["errors"]);
}

/// Plain run; streamed run with one tool call; the continued run.
fn script_the_model(app: &TestApp) {
    app.llm.text("plain brief");
    app.llm.push_stream(stream(&["Plain ", "answer."]));
    // Slow enough for keep-alive comments, which the SDK must skip.
    let call = ToolCall {
        id: "c1".into(),
        name: "echo".into(),
        arguments: r#"{"text":"hi"}"#.into(),
    };
    app.llm.push(Turn::Reply(
        response("", vec![call]),
        Duration::from_millis(700),
    ));
    app.llm.text("tool brief");
    app.llm
        .push_stream(stream(&["Streamed ", "answer ", "with tools."]));
    app.llm.text("continued brief");
    app.llm.push_stream(stream(&["Continued."]));
}

/// The plain completion is the stored answer and usage, its history seeded the conversation.
async fn plain_completion(app: &TestApp, plain: &Value) {
    let (conv, run) = (
        plain["conversation_id"].as_str().unwrap(),
        plain["run_id"].as_str().unwrap(),
    );
    assert_eq!(plain["object"], "chat.completion");
    assert_eq!(plain["model"], "helper");
    assert_eq!(plain["role"], "assistant");
    assert_eq!(plain["finish_reason"], "stop");
    assert_eq!(plain["content"], "Plain answer.");
    assert_eq!(
        plain["content"].as_str().unwrap(),
        answer_of(app, conv, run).await
    );
    let stored = run_json(app, run).await;
    assert_eq!(stored["status"], "completed");
    assert_eq!(plain["usage"], openai_usage(&stored));
    // The request's history seeds the conversation, so the UI shows it; text parts are joined.
    let turns: Vec<(String, String)> = messages(app, conv)
        .await
        .into_iter()
        .map(|(role, _, content, _)| (role, content))
        .collect();
    let expected = [
        ("user", "earlier question"),
        ("assistant", "earlier answer"),
        ("user", "first\nquestion"),
        ("assistant", "Plain answer."),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect();
    assert_eq!(turns, expected);
    // The agent's prompt with the request's system message, and the history, reach the model.
    let first = &app.llm.chat_requests()[0];
    let sent = serde_json::to_string(&first.messages).unwrap();
    assert!(
        sent.contains("You are helpful.\\n\\nAnswer briefly."),
        "{sent}"
    );
    assert!(sent.contains("earlier answer"), "{sent}");
}

/// The streamed completion: the stored answer, the tool call as reasoning, usage last.
async fn streamed_completion(app: &TestApp, streamed: &Value) {
    let (sconv, srun) = (
        streamed["conversation_id"].as_str().unwrap(),
        streamed["run_id"].as_str().unwrap(),
    );
    assert_eq!(streamed["roles"], json!(["assistant"]));
    assert_eq!(streamed["content"], "Streamed answer with tools.");
    assert_eq!(
        streamed["content"].as_str().unwrap(),
        answer_of(app, sconv, srun).await
    );
    let reasoning = streamed["reasoning"].as_str().unwrap();
    let lines: Vec<&str> = reasoning.lines().collect();
    assert_eq!(lines.len(), 2, "{reasoning}");
    assert!(lines[0].starts_with("→ echo"), "{reasoning}");
    assert!(lines[1].starts_with("← echo"), "{reasoning}");
    assert_eq!(streamed["tool_calls"], 0);
    assert_eq!(streamed["finish_reasons"], json!(["stop"]));
    assert_eq!(streamed["ids"], 1, "one completion id across chunks");
    assert_eq!(streamed["after_usage"], 0, "the usage chunk is the last");
    let stored = run_json(app, srun).await;
    assert_eq!(stored["tool_calls"], 1);
    assert_eq!(streamed["usage"], openai_usage(&stored));
}

/// The continued run is in the streamed one's conversation, with its history and not more.
async fn continued_completion(app: &TestApp, seen: &Value) {
    let sconv = seen["streamed"]["conversation_id"].as_str().unwrap();
    let continued = &seen["continued"];
    assert_eq!(continued["conversation_id"], sconv);
    assert_eq!(continued["content"], "Continued.");
    let last = app.llm.chat_requests().pop().unwrap();
    let sent = serde_json::to_string(&last.messages).unwrap();
    assert!(
        sent.contains("use a tool") && sent.contains("follow up"),
        "{sent}"
    );
    assert!(!sent.contains("ignored"), "{sent}");
}

/// The SDK's typed errors: a bad key, an unknown model, a caller tool named like the agent's.
fn typed_errors(errors: &Value) {
    assert_eq!(
        errors["auth"],
        json!({"status": 401, "code": "invalid_api_key", "type": "invalid_request_error"})
    );
    assert_eq!(
        errors["model"],
        json!({"status": 404, "code": "model_not_found", "param": "model"})
    );
    assert_eq!(errors["tools"]["status"], 400);
    let message = errors["tools"]["message"].as_str().unwrap();
    assert!(message.contains("'echo'"), "{message}");
}

#[tokio::test]
async fn the_npm_package_streams_an_answer_with_its_usage() {
    let app = agents_app().await;
    app.llm.tool_calls(&[("c1", "echo", r#"{"text":"node"}"#)]);
    app.llm.text("brief");
    app.llm.push_stream(stream(&["From ", "node."]));
    peers::node_module("openai/package.json");
    let args = [app.url("/v1"), ALICE.to_string(), "helper".to_string()];
    let seen = run_peer("node".into(), "openai_stream.mjs", &args).await;
    let (conv, run) = (
        seen["conversation_id"].as_str().unwrap(),
        seen["run_id"].as_str().unwrap(),
    );
    assert_eq!(seen["role"], "assistant");
    assert_eq!(seen["content"], "From node.");
    assert_eq!(
        seen["content"].as_str().unwrap(),
        answer_of(&app, conv, run).await
    );
    assert!(
        seen["reasoning"].as_str().unwrap().contains("→ echo"),
        "{seen}"
    );
    assert_eq!(seen["finish_reason"], "stop");
    assert_eq!(seen["usage"], openai_usage(&run_json(&app, run).await));
}

/// Whether Node major version `node` satisfies an `engines` range (`>=18`, `>= 18.0.0`,
/// `^20 || >=22`), compared by major version.
fn admits(range: &str, node: u64) -> bool {
    let major = |v: &str| -> u64 {
        let digits: String = v.trim().chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("engines range {range:?}: teach this test its form"))
    };
    range.split("||").any(|alternative| {
        let spaced = alternative.replace(">= ", ">=").replace("< ", "<");
        spaced.split_whitespace().all(|c| {
            if let Some(v) = c.strip_prefix(">=") {
                major(v) <= node
            } else if let Some(v) = c.strip_prefix('<') {
                node < major(v)
            } else {
                major(c.trim_start_matches('^')) == node
            }
        })
    })
}

/// `scripts/peers.sh` installs what `tests/peers/package-lock.json` pins; every package must
/// run on the Node version `tests/peers/package.json` (and README) promise.
#[test]
fn every_npm_peer_runs_on_the_promised_node_version() {
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(peers::dir().join(name)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let promised = read("package.json")["engines"]["node"]
        .as_str()
        .expect("tests/peers/package.json names its Node version")
        .to_string();
    let node: u64 = promised
        .trim_start_matches(">=")
        .trim()
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .expect("engines.node is of the form >=N");
    let lock = read("package-lock.json");
    let mut checked = 0;
    for (name, package) in lock["packages"].as_object().unwrap() {
        let Some(range) = package["engines"]["node"].as_str() else {
            continue;
        };
        checked += 1;
        assert!(
            admits(range, node),
            "{name} wants Node {range}, the peers promise {promised}"
        );
    }
    assert!(checked > 10, "only {checked} packages name an engine");
}
