//! Hook faults: webhooks down, slow or answering in time, approvals never answered.

use super::*;

/// A webhook that answers `verdict` after `delay`.
async fn webhook(verdict: Value, delay: Duration) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route(
        "/hook",
        post(move || {
            let verdict = verdict.clone();
            async move {
                tokio::time::sleep(delay).await;
                axum::Json(verdict)
            }
        }),
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/hook"), task)
}

fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/hook", l.local_addr().unwrap())
}

async fn webhook_run(url: &str, policy: &str) -> (TestApp, Vec<Sse>, String) {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "echo", r#"{"text":"hi"}"#)]);
    llm.text("after the hook");
    let hooks = format!(
        "[[hooks]]\nkind = \"webhook\"\nurl = \"{url}\"\ntimeout_ms = 300\npolicy = \"{policy}\"\n"
    );
    let app = scripted_app(llm, vec![], &hooks).await;
    let (run, events) = run(&app, "go").await;
    (app, events, run)
}

#[tokio::test]
async fn a_webhook_that_is_down_fails_open_or_closed_as_configured() {
    let url = closed_url();
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(
        (end["error"].clone(), end["blocked"].clone()),
        (json!(false), json!(false))
    );
    assert!(end["observation"].as_str().unwrap().starts_with("echo:"));

    let (app, events, run) = webhook_run(&url, "fail_closed").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert!(!end["observation"].as_str().unwrap().starts_with("echo:"));
}

#[tokio::test]
async fn a_slow_webhook_times_out_and_its_policy_applies() {
    // It would allow, but too late (5 s against a 300 ms hook timeout).
    let (url, _server) = webhook(json!({"allow": true}), Duration::from_secs(5)).await;
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], false, "{end}");
    assert!(end["observation"].as_str().unwrap().starts_with("echo:"));

    let (app, events, run) = webhook_run(&url, "fail_closed").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
}

#[tokio::test]
async fn a_webhook_verdict_is_applied_when_it_answers_in_time() {
    let (url, _server) = webhook(json!({"allow": false, "reason": "frozen"}), Duration::ZERO).await;
    let (app, events, run) = webhook_run(&url, "fail_open").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert!(end["observation"].as_str().unwrap().contains("frozen"));
}

#[tokio::test]
async fn an_approval_never_answered_times_out_and_blocks_the_call() {
    let deploy = deploy();
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "deploy", r#"{"env":"prod"}"#)]);
    llm.text("not deployed");
    let app = scripted_app(
        llm,
        vec![deploy.clone()],
        "[[hooks]]\nkind = \"approval\"\napproval_timeout_s = 1\n",
    )
    .await;
    let (run, events) = run(&app, "ship").await;
    check_end(&app, &run, &events, "completed").await;
    assert!(labels(&events).contains(&"step:approval_required".to_string()));
    let end = tool_ends(&events)[0];
    assert_eq!(end["blocked"], true, "{end}");
    assert_eq!(deploy.call_count(), 0, "the tool never ran");
    let pending: Value = app.get_json("/api/approvals", None).await;
    assert_eq!(
        pending.as_array().map(Vec::len).unwrap_or(0),
        0,
        "no approval left pending: {pending}"
    );
}
