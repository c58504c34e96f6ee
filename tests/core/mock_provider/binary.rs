//! Configuration refused before binding, and the binary starting, answering and stopping on
//! SIGTERM.

use super::*;

#[tokio::test]
async fn invalid_config_is_refused_before_binding() {
    for cfg in [
        MockConfig {
            error_rate: 1.5,
            ..MockConfig::default()
        },
        MockConfig {
            tool_args: "not json <i>".into(),
            ..MockConfig::default()
        },
    ] {
        let err = MockProvider::start(cfg).await.err().expect("refused");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn binary_starts_answers_and_exits_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(
        dir.path(),
        &[
            "mock-provider",
            "--bind",
            "127.0.0.1:0",
            "--answer-tokens",
            "3",
        ],
        &[],
    )
    .await;
    let reply: serde_json::Value = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .body(r#"{"model":"m","tools":[{"type":"function","function":{"name":"calculator"}}],"messages":[{"role":"user","content":"hi"}]}"#)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        MockConfig {
            answer_tokens: 3,
            ..MockConfig::default()
        }
        .answer_text()
    );
    server.signal("-TERM");
    let status = server.wait().await;
    assert!(status.success(), "{status:?}");
}
