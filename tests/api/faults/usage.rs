//! Provider usage through the whole service, on both backends: counts near `u64::MAX` saturate
//! at `i64::MAX` (what both databases store), so `done.usage` and `GET /api/runs/{id}` agree;
//! a float or string count costs neither the reply nor its tool calls.

use super::*;

const MAX: u64 = i64::MAX as u64;

on_both_backends!(huge_and_odd_usage_saturates_alike_in_done_and_in_the_stored_run);

async fn huge_and_odd_usage_saturates_alike_in_done_and_in_the_stored_run(db_url: String) {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.push(
        FakeReply::tool_calls(vec![("c1", "echo", r#"{"text":"one"}"#)])
            .raw_usage(json!({"prompt_tokens": u64::MAX - 1, "completion_tokens": 3})),
    );
    fake.push(
        FakeReply::tool_calls(vec![("c2", "echo", r#"{"text":"two"}"#)])
            .raw_usage(json!({"prompt_tokens": 2.5, "completion_tokens": "oops"})),
    );
    fake.set_default(
        FakeReply::text("The answer.")
            .raw_usage(json!({"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX})),
    );
    let app = TestApp::with(Options {
        env: vec![
            ("LLM_BASE_URL", fake.base_url()),
            ("LLM_API_KEY", "sk-test".into()),
            ("LLM_MODEL", "fake-model".into()),
            ("REACT_COMPLETION_CHECK_MIN_TOOLS", "100".into()),
        ],
        config_models: true,
        db_url: Some(db_url),
        ..Options::default()
    })
    .await;
    let (run, events) = run(&app, "hello").await;
    let d = check_end(&app, &run, &events, "completed").await;
    for call in ["c1", "c2"] {
        let end = tool_ends(&events)
            .into_iter()
            .find(|e| e["call_id"] == call)
            .unwrap_or_else(|| panic!("the tool call {call} was lost: {d}"));
        assert_eq!(end["error"], false, "{end}");
    }
    let usage = &d["usage"];
    for field in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        assert_eq!(usage[field], MAX, "{field}: {usage}");
    }
    let stored = app.get_json(&format!("/api/runs/{run}"), None).await;
    assert_eq!(stored["usage"], *usage, "stored {stored} vs done {d}");
    app.stop().await;
}
