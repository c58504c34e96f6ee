//! Tool faults (scripted model): panics, hangs, cancel while the model hangs, huge outputs.

use super::*;

/// Always panics.
fn panics() -> Arc<FakeTool> {
    FakeTool::panicking("panics")
        .describe("Always panics")
        .params(json!({"type": "object", "properties": {}}))
        .arc()
}

const HUGE_LEN: usize = 1024 * 1024;

/// Returns 1 MB of text.
fn huge() -> Arc<FakeTool> {
    FakeTool::text("huge", &"x".repeat(HUGE_LEN))
        .describe("Returns a megabyte")
        .params(json!({"type": "object", "properties": {}}))
        .arc()
}

/// The observation the model was sent for `call_id` (native `tool` message).
fn tool_message(llm: &ScriptedLlm, call_id: &str) -> String {
    llm.chat_requests()
        .iter()
        .flat_map(|r| r.messages.iter())
        .find(|m| m.tool_call_id.as_deref() == Some(call_id))
        .map(|m| m.content.clone())
        .unwrap_or_else(|| panic!("no tool message for {call_id}"))
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_observation_and_the_run_goes_on() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "panics", "{}"), ("c2", "echo", r#"{"text":"ok"}"#)]);
    llm.text("recovered");
    let app = scripted_app(llm, vec![panics()], "").await;
    let (run, events) = run(&app, "go").await;
    let d = check_end(&app, &run, &events, "completed").await;
    assert_eq!(d["tool_calls"], 2);
    let ends = tool_ends(&events);
    let p = ends.iter().find(|e| e["call_id"] == "c1").unwrap();
    assert_eq!(p["error"], true);
    assert!(
        p["observation"].as_str().unwrap().contains("crashed"),
        "{p}"
    );
    let e = ends.iter().find(|e| e["call_id"] == "c2").unwrap();
    assert_eq!(e["error"], false, "the parallel call is unaffected");
    assert!(tool_message(&app.llm, "c1").contains("tool exploded"));
}

#[tokio::test]
async fn a_hanging_tool_times_out_as_an_error_observation() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "hangs", "{}")]);
    llm.text("gave up on it");
    // Never returns; counts how many of its calls were dropped (aborted), so the test can tell
    // a timed-out call was really stopped and not left running.
    let hangs = FakeTool::hanging("hangs")
        .describe("Never returns")
        .params(json!({"type": "object", "properties": {}}))
        .arc();
    let app = TestApp::with(Options {
        llm,
        extra_tools: vec![hangs.clone()],
        toml: "[react]\ntool_timeout_s = 1\n".into(),
        ..Options::default()
    })
    .await;
    let (run, events) = run(&app, "go").await;
    check_end(&app, &run, &events, "completed").await;
    let end = tool_ends(&events)[0];
    assert_eq!(end["error"], true);
    assert!(
        end["observation"].as_str().unwrap().contains("timed out"),
        "{end}"
    );
    assert_eq!(
        hangs.dropped(),
        1,
        "the timed-out call was aborted, not left running"
    );
}

#[tokio::test]
async fn cancelling_while_the_model_hangs_ends_the_run_at_once() {
    let fake = FakeOpenAi::start().await.unwrap();
    fake.set_default(FakeReply::text("never").endless(50));
    // A long timeout: only the cancel can end this call.
    let app = llm_app(&fake.base_url(), vec![("LLM_TIMEOUT_S", "60".into())]).await;
    let conv = app.create_conversation(None).await;
    let run = app.start_run(&conv, json!({"query": "hi"}), None).await;
    eventually("the model call started", || {
        std::future::ready(fake.request_count() > 0)
    })
    .await;
    assert_eq!(app.cancel(&run).await.status(), 202);
    let events = app.events(&run, None).await;
    check_end(&app, &run, &events, "cancelled").await;
    assert_eq!(answer_done(&events)["fallback"], true);
    assert_eq!(
        calls(&fake),
        (1, 0),
        "no retry and no synthesis after a cancel"
    );
}

#[tokio::test]
async fn a_huge_tool_output_is_truncated_as_configured() {
    let llm = ScriptedLlm::native();
    llm.tool_calls(&[("c1", "huge", "{}")]);
    llm.text("summarised");
    let hooks = "[[hooks]]\nkind = \"truncate_result\"\nmax_chars = 1000\n";
    let app = scripted_app(llm, vec![huge()], hooks).await;
    let (run, events) = run(&app, "go").await;
    check_end(&app, &run, &events, "completed").await;
    let seen = tool_message(&app.llm, "c1");
    assert!(seen.len() < 1100, "the model got {} chars", seen.len());
    assert!(seen.starts_with(&"x".repeat(1000)));
    assert!(seen.contains("truncated"), "{seen:.1100}");
    let end = tool_ends(&events)[0];
    assert!(end["observation"].as_str().unwrap().len() <= 4100);
    // The synthesis trace is cut too (REACT_SYNTHESIS_TRUNCATION).
    let synth = &app.llm.stream_requests()[0];
    let total: usize = synth.messages.iter().map(|m| m.content.len()).sum();
    assert!(total < 20_000, "synthesis prompt of {total} chars");
}
