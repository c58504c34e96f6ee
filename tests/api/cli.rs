//! Black-box tests of the `reagent` binary: configuration errors at start-up, `check-config`,
//! and `serve` answering `/healthz` then stopping on SIGTERM; [`startup`]: the order of
//! start-up (port, database, MCP servers); [`demo`]: `serve --demo`.
//!
//! Each child runs in an empty temporary directory with a cleared environment, so neither the
//! repository's `config.toml` nor the developer's variables leak in. Variables are set on the
//! child only; this process's environment is never changed.

use crate::support::child::{run, Server};

mod demo;
mod eval;
mod startup;

#[tokio::test]
async fn invalid_env_value_fails_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["serve"][..], &["check-config"][..]] {
        let out = run(dir.path(), args, &[("REACT_MAX_ITERATIONS", "abc")]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("REACT_MAX_ITERATIONS") && stderr.contains("\"abc\""),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn missing_explicit_config_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["check-config"],
        &[("REAGENT_CONFIG", "absent.toml")],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.toml"));
}

#[tokio::test]
async fn check_config_prints_a_summary_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[[models]]\nname = \"local\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"llama3\"\n",
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["check-config"],
        &[
            ("LLM_API_KEY", "sk-top-secret"),
            ("REACT_MAX_ITERATIONS", "7"),
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("local: llama3"), "{stdout}");
    assert!(stdout.contains("max_iterations 7"), "{stdout}");
    assert!(stdout.contains("key set"), "{stdout}");
    assert!(!stdout.contains("sk-top-secret"));
}

#[cfg(unix)]
#[tokio::test]
async fn serve_answers_healthz_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::serve(dir.path(), &[("RUST_LOG", "info")]).await;

    let response = reqwest::get(server.url("/healthz")).await.unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));

    // The child's log keeps being drained, so it never blocks on a full pipe while stopping.
    server.signal("-TERM");
    let status = server.wait().await;
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
}

#[tokio::test]
async fn a_misspelt_variable_is_named_with_the_nearest_known_one() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_BASEURL", "http://127.0.0.1:9/v1"),
        ("REAGENT_BIND", "127.0.0.1:0"),
    ];
    let out = run(dir.path(), &["check-config"], &env).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warning = "unknown variable LLM_BASEURL is ignored (did you mean LLM_BASE_URL?)";
    assert!(stderr.contains(warning), "{stderr}");
    let server = Server::serve(dir.path(), &[("LLM_BASEURL", "http://127.0.0.1:9/v1")]).await;
    let log = server.stop_and_log().await;
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains(warning)),
        "{log}"
    );
}

#[tokio::test]
async fn an_agent_tool_that_matches_nothing_fails_start_up_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[[agents]]\nname = \"maths\"\ntools = [\"calculater\"]\n",
    )
    .unwrap();
    for args in [&["check-config"][..], &["serve"][..]] {
        let out = run(dir.path(), args, &[("REAGENT_BIND", "127.0.0.1:0")]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("agents[0].tools[0]")
                && stderr.contains("\"maths\"")
                && stderr.contains("did you mean \"calculator\"?"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.path().join("data").exists(), "nothing was created");
}
