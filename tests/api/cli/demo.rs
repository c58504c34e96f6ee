//! `reagent serve --demo`: the scripted demo model in-process, with no key and no network,
//! answering a tool question through the real calculator, and saying everywhere that it is
//! not a real model.

use crate::support::child::{run, Server};

#[tokio::test]
async fn serve_demo_answers_a_tool_question_without_a_key_or_network() {
    let dir = tempfile::tempdir().unwrap();
    // An unroutable provider and a key: the demo must win over both, and say so.
    let env = [
        ("REAGENT_BIND", "127.0.0.1:0"),
        ("LLM_BASE_URL", "http://192.0.2.1/v1"),
        ("LLM_API_KEY", "sk-not-used"),
    ];
    let server = Server::start(dir.path(), &["serve", "--demo"], &env).await;
    let models = server.get_json("/api/models").await;
    assert_eq!(models.as_array().unwrap().len(), 1, "{models}");
    assert_eq!(models[0]["name"], "demo");
    assert_eq!(models[0]["demo"], true);
    assert_eq!(models[0]["needs_key"], false);

    let (_, run) = server.start_run("What is 17 * 23?").await;
    let events = server.events_until_done(&run, None).await;
    let tool_end = events
        .iter()
        .find(|e| e.label() == "step:tool_end")
        .expect("a tool ran");
    assert_eq!(tool_end.data["tool"], "calculator", "{}", tool_end.data);
    assert_eq!(tool_end.data["observation"], "391", "{}", tool_end.data);
    let done = events.last().unwrap();
    assert_eq!(done.data["status"], "completed", "{}", done.data);
    let answer: String = events
        .iter()
        .filter(|e| e.label() == "answer:delta")
        .filter_map(|e| e.data["content"].as_str().map(str::to_string))
        .collect();
    assert!(answer.contains("17 * 23 = **391**"), "{answer}");

    let log = server.stop_and_log().await;
    let warns: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert!(
        warns
            .iter()
            .any(|l| l.contains("Demo model: scripted answers, no real LLM")),
        "{log}"
    );
    assert!(
        warns
            .iter()
            .any(|l| l.contains("LLM_BASE_URL, LLM_API_KEY set but ignored")),
        "{log}"
    );
}

#[tokio::test]
async fn check_config_demo_shows_the_demo_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["check-config", "--demo"], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("models (default: demo)"), "{stdout}");
    assert!(
        stderr.contains("Demo model: scripted answers, no real LLM"),
        "{stderr}"
    );
}
