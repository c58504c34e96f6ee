use super::*;
use crate::agent::events::AgentEvent;
use crate::domain::{Mode, RunStatus};
use crate::llm::Usage;

fn progress(include_usage: bool) -> Progress {
    Progress {
        meta: Meta {
            id: "chatcmpl-1".into(),
            model: "helper".into(),
            created: 7,
            run_id: uuid::Uuid::nil(),
        },
        include_usage,
        sent: String::new(),
    }
}

fn logged(event: AgentEvent) -> LoggedEvent {
    LoggedEvent {
        id: 1,
        name: event.name(),
        data: event.data_json().into_boxed_str(),
    }
}

fn outcome(status: RunStatus, answer: &str) -> RunOutcome {
    RunOutcome {
        status,
        usage: Usage {
            prompt_tokens: 3,
            completion_tokens: 2,
            total_tokens: 5,
            llm_calls: 1,
            ..Usage::default()
        },
        answer: answer.into(),
        ..RunOutcome::failed(Mode::Native, "", "")
    }
}

/// The `data:` payloads of `frames`, parsed (`[DONE]` kept as a string).
fn payloads(frames: &str) -> Vec<serde_json::Value> {
    frames
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let data = f.strip_prefix("data: ").expect("data lines only");
            serde_json::from_str(data).unwrap_or_else(|_| serde_json::Value::String(data.into()))
        })
        .collect()
}

#[test]
fn tool_steps_are_one_reasoning_line_each_cut_to_200_chars() {
    let mut p = progress(false);
    let start = logged(AgentEvent::Step(StepEvent::ToolStart {
        iteration: 1,
        call_id: "c".into(),
        tool: "echo".into(),
        arguments: serde_json::json!({"text": "hi"}),
        dag_step: None,
    }));
    let end = logged(AgentEvent::Step(StepEvent::ToolEnd {
        iteration: 1,
        call_id: "c".into(),
        tool: "echo".into(),
        observation: format!("line one\nline two {}", "x".repeat(500)),
        error: false,
        blocked: false,
        duration_ms: 1,
        artifacts: vec![],
        dag_step: None,
    }));
    let (a, done) = p.frames(&start);
    assert!(!done);
    let a = payloads(&a);
    assert_eq!(
        a[0]["choices"][0]["delta"]["reasoning_content"],
        "→ echo {\"text\":\"hi\"}\n"
    );
    let b = payloads(&p.frames(&end).0);
    let line = b[0]["choices"][0]["delta"]["reasoning_content"]
        .as_str()
        .unwrap();
    assert_eq!(line.lines().count(), 1);
    assert!(line.starts_with("← echo: line one line two"));
    assert_eq!(line.trim_end().chars().count(), LINE_CHARS);
    assert!(b[0]["choices"][0]["delta"].get("tool_calls").is_none());
}

#[test]
fn a_safeguard_is_one_reasoning_line_without_its_internal_text() {
    let mut p = progress(false);
    let warned = logged(AgentEvent::Step(StepEvent::Safeguard {
        iteration: 4,
        kind: SafeguardKind::CycleWarning,
        tool: Some("lookup".into()),
        dag_step: None,
    }));
    let out = payloads(&p.frames(&warned).0);
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0]["choices"][0]["delta"]["reasoning_content"],
        "safeguard: the agent was warned that it is repeating lookup\n"
    );
}

#[test]
fn done_sends_the_missing_answer_the_finish_and_the_usage_last() {
    let mut p = progress(true);
    let delta = logged(AgentEvent::Answer(AnswerEvent::Delta {
        content: "Hello".into(),
    }));
    let c = payloads(&p.frames(&delta).0);
    assert_eq!(c[0]["choices"][0]["delta"]["content"], "Hello");
    let done = logged(AgentEvent::Done(outcome(
        RunStatus::MaxIterations,
        "Hello world",
    )));
    let (frames, finished) = p.frames(&done);
    assert!(finished);
    let out = payloads(&frames);
    assert_eq!(out.len(), 4, "{frames}");
    assert_eq!(out[0]["choices"][0]["delta"]["content"], " world");
    assert_eq!(out[1]["choices"][0]["finish_reason"], "length");
    assert_eq!(out[2]["choices"], serde_json::json!([]));
    assert_eq!(out[2]["usage"]["total_tokens"], 5);
    assert_eq!(out[3], "[DONE]");
    for chunk in &out[..3] {
        assert_eq!(chunk["id"], "chatcmpl-1");
        assert_eq!(chunk["object"], "chat.completion.chunk");
    }
}

#[test]
fn without_include_usage_there_is_no_usage_chunk() {
    let mut p = progress(false);
    let done = logged(AgentEvent::Done(outcome(RunStatus::Completed, "")));
    let out = payloads(&p.frames(&done).0);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["choices"][0]["finish_reason"], "stop");
    assert_eq!(out[1], "[DONE]");
}

#[test]
fn text_taken_back_before_a_tool_call_is_followed_by_a_note_and_the_answer() {
    let mut p = progress(false);
    let mut content = String::new();
    let mut reasoning = String::new();
    let events = [
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "Let me check.".into(),
        }),
        AgentEvent::Answer(AnswerEvent::Reset),
        AgentEvent::Step(StepEvent::ToolStart {
            iteration: 1,
            call_id: "c".into(),
            tool: "echo".into(),
            arguments: serde_json::json!({}),
            dag_step: None,
        }),
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "It is 42.".into(),
        }),
        AgentEvent::Done(outcome(RunStatus::Completed, "It is 42.")),
    ];
    for ev in events {
        for chunk in payloads(&p.frames(&logged(ev)).0) {
            let delta = &chunk["choices"][0]["delta"];
            content.push_str(delta["content"].as_str().unwrap_or(""));
            reasoning.push_str(delta["reasoning_content"].as_str().unwrap_or(""));
        }
    }
    assert_eq!(
        content, "Let me check.\n\nIt is 42.",
        "the answer is not sent twice"
    );
    assert!(
        reasoning.contains("is not the answer") && reasoning.contains("→ echo"),
        "{reasoning}"
    );
}

/// `cargo test --lib per_delta_cost -- --ignored --nocapture`: the encoder's cost per token.
#[test]
#[ignore]
fn per_delta_cost() {
    let mut p = progress(false);
    let ns = crate::server::event_body::time_deltas(|ev| {
        std::hint::black_box(p.frames(ev));
    });
    println!("Chat Completions: {ns:.0} ns per delta");
}
