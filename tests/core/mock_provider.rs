//! The mock provider (`reagent mock-provider`, [`MockProvider`]) seen through the real
//! [`OpenAiClient`]: its tool-call script drives a real [`ReActAgent`] in both modes, streamed
//! and non-streamed answers agree, the seeded error rate is reproducible, the token rate holds,
//! and the binary starts, answers and stops on SIGTERM. Everything is in-process on port 0
//! except the binary test; timing assertions are lower bounds only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{
    AgentConfig, AgentResult, InterruptQueue, Mode, ReActAgent, RunHandles, RunInput, RunStatus,
};
use reagent::llm::openai::{OpenAiClient, OpenAiConfig};
use reagent::llm::retry::Backoff;
use reagent::llm::{Abilities, ChatRequest, Llm, LlmError, Message, StreamEvent, ToolDefinition};
use reagent::testing::mock_provider::{MockConfig, MockProvider};
use reagent::tools::builtin::Calculator;
use reagent::tools::ToolRegistry;
use tokio_util::sync::CancellationToken;

use crate::support::child::Server;

/// A safety net for a hung server or child, not a synchronisation delay.
const TIMEOUT: Duration = Duration::from_secs(10);

async fn start(cfg: MockConfig) -> MockProvider {
    MockProvider::start(cfg)
        .await
        .expect("mock provider starts")
}

fn client(mock: &MockProvider, abilities: Abilities, max_retries: u32) -> OpenAiClient {
    OpenAiClient::new(OpenAiConfig {
        base_url: mock.base_url(),
        api_key: None,
        model: "mock-model".into(),
        abilities,
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: TIMEOUT,
        max_retries,
    })
    .expect("client builds")
    .with_backoff(Backoff::with_base(Duration::from_millis(1)))
}

/// Runs one query with the calculator only and no LLM-driven safeguards, so every LLM call
/// the run makes is a loop call or the synthesis.
async fn run_agent(llm: OpenAiClient, mode: Option<Mode>) -> AgentResult {
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
    // K tool iterations + the final-answer iteration + the streamed synthesis.
    assert_eq!(mock.request_count(), k as u64 + 2);
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

fn calculator_definition() -> ToolDefinition {
    ToolDefinition {
        name: "calculator".into(),
        description: "arithmetic".into(),
        parameters: serde_json::json!({"type": "object"}),
    }
}

#[tokio::test]
async fn json_mode_request_without_tools_gets_a_final_answer_object() {
    let cfg = MockConfig {
        answer_tokens: 5,
        ..MockConfig::default()
    };
    let answer = cfg.answer_text();
    let mock = start(cfg).await;
    let reply = client(&mock, Abilities::default(), 0)
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("chat");
    let action: serde_json::Value = serde_json::from_str(&reply.content).expect("JSON content");
    assert_eq!(action["type"], "final_answer");
    assert_eq!(action["answer"], answer.as_str());
}

#[tokio::test]
async fn streamed_answer_has_n_tokens_matching_the_non_streamed_text_with_usage() {
    let n = 9;
    let mock = start(MockConfig {
        answer_tokens: n,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    // With `tools` (and no tool script) the non-streamed reply is the plain answer text;
    // without them it would be the JSON-mode final-answer object.
    let request = ChatRequest {
        tools: [calculator_definition()].into(),
        ..ChatRequest::new(vec![Message::user("hello there")])
    };
    let whole = llm.chat(request.clone()).await.expect("chat");
    assert_eq!(whole.content.split(' ').count(), n);
    assert_eq!(whole.usage.completion_tokens, n as u64);
    assert!(whole.usage.prompt_tokens > 0);

    let mut stream = llm.stream_chat(request).await.expect("stream");
    let (mut deltas, mut usage, mut finish) = (Vec::new(), None, None);
    while let Some(event) = stream.next().await {
        match event.expect("stream event") {
            StreamEvent::Content(c) if !c.is_empty() => deltas.push(c),
            StreamEvent::Usage(u) => usage = Some(u),
            StreamEvent::Done { finish_reason } => finish = finish_reason,
            _ => {}
        }
    }
    assert_eq!(deltas.len(), n, "one token per chunk: {deltas:?}");
    assert_eq!(deltas.concat(), whole.content);
    let usage = usage.expect("usage reported");
    assert_eq!(usage.completion_tokens, n as u64);
    assert!(usage.prompt_tokens > 0);
    assert_eq!(finish.as_deref(), Some("stop"));
}

#[tokio::test]
async fn error_rate_one_fails_every_attempt_with_503() {
    let mock = start(MockConfig {
        error_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 2);
    let err = llm
        .chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect_err("every attempt fails");
    assert!(
        matches!(err, LlmError::Status { status: 503, .. }),
        "{err:?}"
    );
    // One attempt + two retries, all refused.
    assert_eq!(mock.request_count(), 3);
    assert_eq!(mock.error_count(), 3);
}

/// The statuses of `n` sequential raw requests (no client retries in the way).
async fn statuses(mock: &MockProvider, n: usize) -> Vec<u16> {
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", mock.base_url());
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let r = http
            .post(&url)
            .body(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#)
            .send()
            .await
            .expect("request");
        if r.status() == 503 {
            assert_eq!(r.headers()["retry-after"], "0");
        }
        out.push(r.status().as_u16());
    }
    out
}

#[tokio::test]
async fn error_rate_half_with_a_seed_repeats_the_same_sequence() {
    let cfg = MockConfig {
        error_rate: 0.5,
        seed: 42,
        ..MockConfig::default()
    };
    let first = statuses(&start(cfg.clone()).await, 40).await;
    let second = statuses(&start(cfg.clone()).await, 40).await;
    assert_eq!(first, second);
    let errors = first.iter().filter(|s| **s == 503).count();
    assert!((5..=35).contains(&errors), "about half fail: {first:?}");
    assert!(first.iter().all(|s| *s == 503 || *s == 200));
    let other = statuses(&start(MockConfig { seed: 7, ..cfg }).await, 40).await;
    assert_ne!(first, other, "the seed matters");
}

#[tokio::test]
async fn token_rate_is_respected_as_a_lower_bound() {
    let mock = start(MockConfig {
        answer_tokens: 20,
        tokens_per_s: 100.0,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let started = Instant::now();
    let mut stream = llm
        .stream_chat(ChatRequest::new(vec![Message::user("go")]))
        .await
        .expect("stream");
    let mut tokens = 0;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Content(c) = event.expect("event") {
            tokens += usize::from(!c.is_empty());
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(tokens, 20);
    // Token k is due at k / 100 s, so the last one (k = 19) cannot arrive before 190 ms.
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
}

#[tokio::test]
async fn latency_delays_the_reply() {
    let mock = start(MockConfig {
        latency: Duration::from_millis(120),
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let started = Instant::now();
    llm.chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("chat");
    assert!(started.elapsed() >= Duration::from_millis(120));
}

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

#[tokio::test]
async fn stamped_tokens_carry_their_send_time_and_parse_back() {
    use reagent::testing::mock_provider::{token_stamps, unix_micros};
    let n = 5;
    let mock = start(MockConfig {
        answer_tokens: n,
        stamp_tokens: true,
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let before = unix_micros();
    let mut stream = llm
        .stream_chat(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .expect("stream");
    let mut deltas = Vec::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Content(c) = event.expect("stream event") {
            if !c.is_empty() {
                deltas.push(c);
            }
        }
    }
    let after = unix_micros();
    assert_eq!(deltas.len(), n, "{deltas:?}");
    for (k, delta) in deltas.iter().enumerate() {
        let stamps: Vec<u64> = token_stamps(delta).collect();
        assert_eq!(stamps.len(), 1, "one stamp per token: {delta}");
        assert!(
            (before..=after).contains(&stamps[0]),
            "stamp {} outside [{before}, {after}]",
            stamps[0]
        );
        let word = delta.split('~').next().unwrap_or_default();
        let expected = if k == 0 { "mock" } else { " answer" };
        if k <= 1 {
            assert_eq!(word, expected);
        }
    }
    // Stamps never go backwards within one stream.
    let all: Vec<u64> = token_stamps(&deltas.concat()).collect();
    assert!(all.windows(2).all(|w| w[0] <= w[1]), "{all:?}");
}

#[tokio::test]
async fn first_call_latency_applies_only_before_the_first_tool_result() {
    let first = Duration::from_millis(300);
    let mock = start(MockConfig {
        tool_iterations: 2,
        first_call_latency: Some(first),
        // A later call would wait this long: far beyond the test's safety timeout.
        latency: Duration::from_secs(60),
        ..MockConfig::default()
    })
    .await;
    let llm = client(&mock, Abilities::default(), 0);
    let request = |messages| ChatRequest {
        tools: [calculator_definition()].into(),
        ..ChatRequest::new(messages)
    };
    let t0 = Instant::now();
    let reply = llm
        .chat(request(vec![Message::user("go")]))
        .await
        .expect("first call");
    assert!(t0.elapsed() >= first, "{:?}", t0.elapsed());
    assert_eq!(reply.tool_calls.len(), 1, "the script's first tool call");
    // With one tool result the ordinary latency (60 s) applies: still pending after 1 s,
    // far beyond the first-call latency.
    let messages = vec![Message::user("go"), Message::tool("call_mock_0", "1")];
    let later = tokio::time::timeout(Duration::from_secs(1), llm.chat(request(messages))).await;
    assert!(
        later.is_err(),
        "the second call used the first-call latency: {later:?}"
    );
}
