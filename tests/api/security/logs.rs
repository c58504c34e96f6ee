//! The binary's log: no secrets, no forged lines.

use super::*;

const ALICE_KEY: &str = "alice-key-7f3a9c1e5b";
const BOB_KEY: &str = "bob-key-2d8e4f6a0c";
const LLM_KEY: &str = "sk-llm-9b1c7d3e5f";
const WRONG_KEY: &str = "wrong-key-4a6c8e0b2d";

fn auth(k: &str) -> String {
    format!("Bearer {k}")
}

#[tokio::test]
async fn keys_are_never_logged_and_input_cannot_forge_log_lines() {
    let llm = FakeOpenAi::start().await.unwrap();
    llm.push(FakeReply::tool_calls(vec![(
        "c1\nFORGED-LINE",
        "no_such_tool\nFORGED-LINE ERROR x",
        "{\"a\":\"\\nFORGED-LINE\"}",
    )]));
    llm.set_default(FakeReply::text("answer\nFORGED-LINE"));
    let dir = tempfile::tempdir().unwrap();
    let server = debug_server(dir.path(), &llm).await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    refused_requests_with_keys_and_forged_lines(&client, &base).await;
    a_run_with_forged_lines_in_its_input(&client, &base).await;
    // The LLM really received its key, so a leak would have been possible.
    assert!(llm
        .authorizations()
        .iter()
        .any(|a| a.as_deref() == Some(&format!("Bearer {LLM_KEY}") as &str)));
    let log = server.stop_and_log().await;
    no_piece_of_a_key_is_logged(&log);
    every_line_is_the_loggers(&log);
}

/// The binary on SQLite in `dir`, logging at debug, with alice's and bob's keys and the LLM's.
async fn debug_server(dir: &std::path::Path, llm: &FakeOpenAi) -> Server {
    let db = format!("sqlite://{}", dir.join("r.db").display());
    let api_keys = format!("alice:{ALICE_KEY},bob:{BOB_KEY}");
    Server::serve(
        dir,
        &[
            ("DATABASE_URL", db.as_str()),
            ("LLM_BASE_URL", llm.base_url().as_str()),
            ("LLM_API_KEY", LLM_KEY),
            ("LLM_MAX_RETRIES", "0"),
            ("REAGENT_API_KEYS", api_keys.as_str()),
            ("RUST_LOG", "debug"),
        ],
    )
    .await
}

/// 401s with wrong keys, a prefix of a real key, and in odd places; a 404 with forged lines.
async fn refused_requests_with_keys_and_forged_lines(client: &reqwest::Client, base: &str) {
    for key in [WRONG_KEY, &ALICE_KEY[..12], "x\nFORGED-LINE"] {
        let r = client
            .get(format!("{base}/api/conversations"))
            .header("authorization", auth(key).replace('\n', ""))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = client
        .get(format!("{base}/api/tools?q=%0aFORGED-LINE%0d%0a"))
        .header("x-api-key", WRONG_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .get(format!("{base}/api/nope%0aFORGED-LINE%0d%0aFORGED-LINE"))
        .header("authorization", auth(BOB_KEY))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// A successful run that calls the LLM (with its key) and an unknown tool, then a bad resume.
async fn a_run_with_forged_lines_in_its_input(client: &reqwest::Client, base: &str) {
    let r = client
        .post(format!("{base}/api/conversations"))
        .header("authorization", auth(ALICE_KEY))
        .json(&json!({"title": "t\nFORGED-LINE\r\nFORGED-LINE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let conv = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = client
        .post(format!("{base}/api/conversations/{conv}/runs"))
        .header("authorization", auth(ALICE_KEY))
        .header("accept", "text/event-stream")
        .json(&json!({"query": "q\nFORGED-LINE\r\nFORGED-LINE ERROR"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (events, _) = read_until(r, |_| false).await;
    assert_eq!(events.last().unwrap().event, "done");
    let r = client
        .get(format!(
            "{base}/api/runs/{}/events",
            events[0].data["run_id"].as_str().unwrap()
        ))
        .header("authorization", auth(ALICE_KEY))
        .header("last-event-id", "x FORGED-LINE")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

/// The log was captured, and no 8-character piece of any key is in it.
fn no_piece_of_a_key_is_logged(log: &str) {
    assert!(
        log.contains("run started"),
        "the log was not captured: {log}"
    );
    assert!(log.lines().count() > 10);
    for secret in [ALICE_KEY, BOB_KEY, LLM_KEY, WRONG_KEY] {
        // Any 8-character piece of a key is a leak.
        for start in 0..=secret.len() - 8 {
            let piece = &secret[start..start + 8];
            assert!(
                !log.contains(piece),
                "key piece {piece:?} logged:\n{}",
                log.lines()
                    .filter(|l| l.contains(piece))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

/// Every line is a log record of its own: it starts with the timestamp, so no input could
/// start a line that looks like one.
fn every_line_is_the_loggers(log: &str) {
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let b = line.as_bytes();
        let stamped =
            b.len() > 20 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T';
        assert!(stamped, "a log line not started by the logger: {line:?}");
        assert!(!line.starts_with("FORGED"), "{line:?}");
    }
}
