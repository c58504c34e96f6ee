//! The tool-call script drives a real [`ReActAgent`] to k calls then the answer, in both modes
//! and with the documented default configuration.

use super::*;

/// Runs one query with the calculator only and no LLM-driven safeguards, so every LLM call
/// the run makes is a loop call or the synthesis.
async fn run_agent(llm: ModelClient, mode: Option<Mode>) -> AgentResult {
    let cfg = AgentConfig {
        self_reflection_interval: 0,
        cycle_detection_threshold: 0,
        completion_check: false,
        ..AgentConfig::default()
    };
    let tools = ToolRegistry::new().with(Arc::new(Calculator));
    let agent = ReActAgent::new(Arc::new(llm), tools, HookRunner::default(), cfg).with_mode(mode);
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let handles = RunHandles {
        checkpoints: None,
        events: tx.into(),
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: CancellationToken::new(),
        artifacts: Arc::new(MemoryArtifacts::new()),
        tool_slots: Default::default(),
    };
    let input = RunInput {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        query: "count for me".into(),
        ..RunInput::default()
    };
    tokio::time::timeout(TIMEOUT, agent.run(input, handles))
        .await
        .expect("run finishes")
}

fn assert_script(result: &AgentResult, k: usize, mock: &MockProvider, answer: &str) {
    assert_eq!(
        result.outcome.status,
        RunStatus::Completed,
        "{:?}",
        result.outcome.error
    );
    assert_eq!(result.outcome.tool_calls as usize, k);
    let tools: Vec<&str> = result.steps.iter().map(|s| s.tool.as_str()).collect();
    assert_eq!(tools, vec!["calculator"; k]);
    // `<i>+1` with i = tool results so far: the calculator really saw 0+1, 1+1, 2+1.
    let observations: Vec<String> = result.steps.iter().map(|s| s.observation.clone()).collect();
    let expected: Vec<String> = (1..=k).map(|i| i.to_string()).collect();
    assert_eq!(observations, expected);
    assert!(result.steps.iter().all(|s| !s.error));
    assert_eq!(result.brief_answer, answer);
    // K tool iterations + the final answer, streamed: no synthesis call (`synthesis = "auto"`).
    assert_eq!(mock.request_count(), k as u64 + 1);
    assert_eq!(result.outcome.answer, answer);
    assert!(!result.outcome.synthesis);
}

#[tokio::test]
async fn tool_script_drives_a_native_agent_to_k_calls_then_the_answer() {
    let cfg = MockConfig {
        tool_iterations: 3,
        answer_tokens: 6,
        ..MockConfig::default()
    };
    let answer = cfg.answer_text();
    let mock = start(cfg).await;
    let result = run_agent(client(&mock, Abilities::default(), 0), None).await;
    assert_eq!(result.outcome.mode, Mode::Native);
    assert_script(&result, 3, &mock, &answer);
    assert!(result.outcome.usage.prompt_tokens > 0 && result.outcome.usage.completion_tokens > 0);
}

#[tokio::test]
async fn tool_script_drives_a_json_mode_agent_to_k_calls_then_the_answer() {
    let cfg = MockConfig {
        tool_iterations: 2,
        answer_tokens: 4,
        ..MockConfig::default()
    };
    let answer = cfg.answer_text();
    let mock = start(cfg).await;
    let result = run_agent(client(&mock, Abilities::text_only(), 0), None).await;
    assert_eq!(result.outcome.mode, Mode::Json);
    assert_script(&result, 2, &mock, &answer);
}

/// The pair BENCHMARKS.md documents — `mock-provider --tool-iterations K` behind a plain
/// `reagent serve` — through the real service with the default `[react]` settings: the
/// completion checklist (after 3 tools), self-reflection (every 6) and the cycle detector add
/// their messages to the run, and the mock must still count the run's tool results since its
/// query, so the run makes exactly K tool calls (it made 49, up to the iteration cap, when those
/// messages reset its count). A second turn in the same conversation starts from zero again.
#[tokio::test]
async fn documented_pair_does_k_tool_iterations_with_the_default_configuration() {
    for (k, mode) in [(3, "native"), (8, "native"), (3, "json"), (7, "json")] {
        let mock = start(MockConfig {
            tool_iterations: k,
            answer_tokens: 4,
            ..MockConfig::default()
        })
        .await;
        let app = crate::support::app::TestApp::with(crate::support::app::Options {
            config_models: true,
            env: vec![
                ("LLM_BASE_URL", mock.base_url()),
                ("LLM_MAX_RETRIES", "0".into()),
            ],
            extra_tools: vec![Arc::new(Calculator)],
            ..crate::support::app::Options::default()
        })
        .await;
        let conv = app.create_conversation(None).await;
        for turn in 0..2 {
            let run = app
                .start_run(
                    &conv,
                    serde_json::json!({"query": "count", "mode": mode}),
                    None,
                )
                .await;
            let events = app.events(&run, None).await;
            let done = events.last().expect("events");
            assert_eq!(done.event, "done");
            assert_eq!(
                done.data["status"], "completed",
                "k={k} {mode}: {:?}",
                done.data
            );
            assert_eq!(done.data["tool_calls"], k, "k={k} {mode} turn {turn}");
            let observations: Vec<&str> = events
                .iter()
                .filter(|e| e.event == "step" && e.data["type"] == "tool_end")
                .map(|e| e.data["observation"].as_str().unwrap_or_default())
                .collect();
            let expected: Vec<String> = (1..=k).map(|i| i.to_string()).collect();
            assert_eq!(observations, expected, "k={k} {mode} turn {turn}");
            // K tool iterations, the answer, and at most one more after the checklist.
            let iterations = done.data["iterations"].as_u64().unwrap_or_default();
            assert!(
                iterations <= k as u64 + 2,
                "k={k} {mode}: {iterations} iterations"
            );
        }
        app.stop().await;
    }
}
