//! Black-box tests of the `reagent` binary: configuration errors at start-up, `check-config`,
//! and `serve` answering `/healthz` then stopping on SIGTERM.
//!
//! Each child runs in an empty temporary directory with a cleared environment, so neither the
//! repository's `config.toml` nor the developer's variables leak in. Variables are set on the
//! child only; this process's environment is never changed.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_reagent");
/// A safety net for a hung child, not a synchronisation delay.
const TIMEOUT: Duration = Duration::from_secs(60);

fn command(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .kill_on_drop(true);
    cmd.envs(vars.iter().copied());
    cmd
}

async fn run(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let child = command(dir, args, vars).output();
    tokio::time::timeout(TIMEOUT, child)
        .await
        .expect("reagent did not exit")
        .expect("reagent could not be started")
}

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
    let mut child = command(
        dir.path(),
        &["serve"],
        &[("REAGENT_BIND", "127.0.0.1:0"), ("RUST_LOG", "info")],
    )
    .stderr(Stdio::piped())
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let find_addr = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, rest)) = line.split_once("listening on http://") {
                return rest.trim().to_string();
            }
        }
        panic!("reagent exited before listening");
    };
    let addr = tokio::time::timeout(TIMEOUT, find_addr)
        .await
        .expect("no listening line");

    let response = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));

    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    // Keep draining stderr so the child never blocks on a full pipe while shutting down.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .expect("no exit after SIGTERM")
        .unwrap();
    assert!(
        status.success(),
        "graceful shutdown should exit 0, got {status}"
    );
}
