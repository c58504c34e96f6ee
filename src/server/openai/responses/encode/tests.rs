//! The encoder's event order, sequence numbers and determinism.

use super::*;
use crate::agent::events::{AgentEvent, StartEvent};
use crate::domain::{Mode, RunStatus};
use crate::llm::Usage;
use crate::server::openai::responses::request::Echo;

fn ctx() -> Arc<Context> {
    Arc::new(Context {
        run_id: uuid::Uuid::new_v4(),
        conversation_id: uuid::Uuid::new_v4(),
        started_ms: 1_700_000_000_000,
        echo: Echo {
            model: "helper".into(),
            tool_choice: "auto".into(),
            ..Echo::default()
        },
    })
}

fn outcome(status: RunStatus, answer: &str) -> RunOutcome {
    RunOutcome {
        status,
        iterations: 2,
        tool_calls: 1,
        usage: Usage::call(10, 5),
        elapsed_ms: 2_500,
        mode: Mode::Native,
        answer: answer.into(),
        synthesis: false,
        error: (status == RunStatus::Failed).then(|| "provider down".into()),
        unprocessed_interrupts: Vec::new(),
        next_run_id: None,
        dag: None,
        required_action: None,
        trace_id: None,
        trace_url: None,
    }
}

fn logged(id: u64, ev: AgentEvent) -> LoggedEvent {
    LoggedEvent {
        id,
        name: ev.name(),
        data: ev.data_json().into(),
    }
}

/// A run with one tool call and a streamed answer, ending `status`.
fn run(status: RunStatus) -> Vec<LoggedEvent> {
    let events = vec![
        AgentEvent::Start(StartEvent {
            run_id: "r".into(),
            conversation_id: "c".into(),
            model: "m".into(),
            mode: Mode::Native,
            engine: crate::domain::Engine::React,
            continues: None,
            trace_id: None,
        }),
        AgentEvent::Step(StepEvent::ToolStart {
            iteration: 1,
            call_id: "c1".into(),
            tool: "echo".into(),
            arguments: json!({"text": "hi"}),
            dag_step: None,
        }),
        AgentEvent::Step(StepEvent::ToolEnd {
            iteration: 1,
            call_id: "c1".into(),
            tool: "echo".into(),
            observation: "hi".into(),
            error: false,
            blocked: false,
            duration_ms: 1,
            artifacts: Vec::new(),
            dag_step: None,
        }),
        AgentEvent::Answer(AnswerEvent::start(crate::domain::AnswerSource::Synthesis)),
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "Hello ".into(),
        }),
        AgentEvent::Answer(AnswerEvent::Delta {
            content: "world".into(),
        }),
        AgentEvent::Answer(AnswerEvent::Done {
            content: "Hello world".into(),
            fallback: false,
        }),
        AgentEvent::Done(outcome(status, "Hello world")),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(i, e)| logged(i as u64 + 1, e))
        .collect()
}

fn encode_all(ctx: &Arc<Context>, events: &[LoggedEvent]) -> (Vec<Frame>, Encoder) {
    let mut encoder = Encoder::new(ctx.clone());
    let mut frames = encoder.prefix();
    for ev in events {
        frames.extend(encoder.event(ev));
    }
    (frames, encoder)
}

fn kinds(frames: &[Frame]) -> Vec<&str> {
    frames.iter().map(|f| f.kind).collect()
}

#[test]
fn a_run_streams_in_the_specified_order_numbered_from_zero() {
    let (frames, encoder) = encode_all(&ctx(), &run(RunStatus::Completed));
    assert_eq!(
        kinds(&frames),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, f) in frames.iter().enumerate() {
        let v: Value = serde_json::from_str(&f.data).unwrap();
        assert_eq!(f.seq, i as u64);
        assert_eq!(v["sequence_number"], i as u64, "{}", f.data);
        assert_eq!(v["type"], f.kind, "{}", f.data);
    }
    let tool: Value = serde_json::from_str(&frames[3].data).unwrap();
    assert_eq!(tool["item"]["type"], "mcp_call");
    assert_eq!(tool["item"]["server_label"], "reagent");
    assert_eq!(tool["item"]["status"], "completed");
    assert_eq!(tool["item"]["error"], Value::Null);
    assert_eq!(tool["item"]["output"], "hi");
    assert_eq!(tool["item"]["arguments"], r#"{"text":"hi"}"#);
    let done = encoder.response();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["completed_at"], 1_700_000_002);
    assert_eq!(done["usage"]["total_tokens"], 15);
    assert_eq!(done["output"][1]["content"][0]["text"], "Hello world");
    assert_eq!(done["output"].as_array().unwrap().len(), 2);
    // The final object repeats the streamed items.
    let last: Value = serde_json::from_str(&frames[11].data).unwrap();
    assert_eq!(last["response"], done);
}

#[test]
fn a_failed_tool_call_is_a_failed_mcp_call_with_its_observation_as_the_error() {
    let ctx = ctx();
    let mut events = run(RunStatus::Completed);
    let mut end: StepEvent = serde_json::from_str(&events[2].data).unwrap();
    if let StepEvent::ToolEnd {
        observation, error, ..
    } = &mut end
    {
        *observation = "error: no such file".into();
        *error = true;
    }
    events[2] = logged(3, AgentEvent::Step(end));
    let (_, encoder) = encode_all(&ctx, &events);
    let tool = &encoder.response()["output"][0];
    assert_eq!(tool["type"], "mcp_call", "{tool}");
    assert_eq!(tool["status"], "failed", "{tool}");
    assert_eq!(tool["output"], "error: no such file");
    assert_eq!(
        tool["error"],
        json!({"type": "mcp_tool_execution_error", "content": "error: no such file"})
    );
}

#[test]
fn the_same_log_always_encodes_to_the_same_frames() {
    let ctx = ctx();
    let events = run(RunStatus::Completed);
    let (first, _) = encode_all(&ctx, &events);
    let (again, _) = encode_all(&ctx, &events);
    assert_eq!(first, again);
}

#[test]
fn a_takeover_gap_jumps_above_what_the_old_owner_could_have_sent() {
    let mut events = run(RunStatus::Completed);
    // The old owner sent ids up to 5; the new one numbers above the reserved block.
    for (i, ev) in events.iter_mut().enumerate().skip(5) {
        ev.id = 1025 + i as u64;
    }
    let (frames, _) = encode_all(&ctx(), &events);
    let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let jumped = frames.iter().position(|f| f.seq > 100).unwrap();
    assert!(
        frames[jumped].seq >= PREFIX + FRAMES_PER_EVENT * 1029,
        "{seqs:?}"
    );
    // Everything the old owner could have numbered, from 5 events, is below the jump.
    assert!(frames[jumped - 1].seq < PREFIX + FRAMES_PER_EVENT * 5);
}

#[test]
fn endings_map_to_the_terminal_events() {
    let (frames, encoder) = encode_all(&ctx(), &run(RunStatus::Failed));
    assert_eq!(
        kinds(&frames)[frames.len() - 2..],
        ["error", "response.failed"]
    );
    let r = encoder.response();
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["message"], "provider down");

    let (frames, encoder) = encode_all(&ctx(), &run(RunStatus::MaxIterations));
    assert_eq!(frames.last().unwrap().kind, "response.incomplete");
    let r = encoder.response();
    assert_eq!(r["status"], "incomplete");
    assert_eq!(r["incomplete_details"]["reason"], "max_iterations");

    let (frames, encoder) = encode_all(&ctx(), &run(RunStatus::Cancelled));
    assert_eq!(frames.last().unwrap().kind, "response.incomplete");
    assert_eq!(encoder.response()["status"], "cancelled");
}

#[test]
fn a_done_that_must_still_write_the_whole_answer_stays_within_the_bound() {
    let mut encoder = Encoder::new(ctx());
    let frames = encoder.event(&logged(
        1,
        AgentEvent::Done(outcome(RunStatus::Failed, "late")),
    ));
    assert_eq!(
        kinds(&frames),
        [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "error",
            "response.failed",
        ]
    );
    assert!(frames.len() as u64 <= FRAMES_PER_EVENT);
    assert_eq!(
        encoder.response()["output"][0]["content"][0]["text"],
        "late"
    );
}

#[test]
fn an_unfinished_log_snapshots_as_in_progress() {
    let events = run(RunStatus::Completed);
    let (_, encoder) = encode_all(&ctx(), &events[..5]);
    let r = encoder.response();
    assert_eq!(r["status"], "in_progress");
    assert_eq!(r["usage"], Value::Null);
    assert_eq!(r["output"][1]["status"], "in_progress");
    assert_eq!(r["output"][1]["content"][0]["text"], "Hello ");
}

#[test]
fn caller_tool_calls_are_function_call_items_and_the_response_completes() {
    use crate::agent::caller_tools::CallerCall;
    let mut encoder = Encoder::new(ctx());
    let call = CallerCall {
        call_id: "k1".into(),
        name: "get_weather".into(),
        arguments: r#"{"city":"Oslo"}"#.into(),
    };
    let step = AgentEvent::Step(StepEvent::CallerToolCalls {
        iteration: 1,
        calls: vec![call],
    });
    let frames = encoder.event(&logged(1, step));
    assert_eq!(
        kinds(&frames),
        [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
        ]
    );
    let frames = encoder.event(&logged(
        2,
        AgentEvent::Done(outcome(RunStatus::RequiresAction, "")),
    ));
    assert_eq!(kinds(&frames), ["response.completed"]);
    let r = encoder.response();
    assert_eq!(r["status"], "completed");
    assert_eq!(r["output"][0]["type"], "function_call");
    assert_eq!(r["output"][0]["call_id"], "k1");
    assert_eq!(r["output"][0]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(r["output"][0]["status"], "completed");
}

#[test]
fn text_taken_back_before_tool_calls_stays_a_message_of_its_own() {
    let start = || AgentEvent::Answer(AnswerEvent::start(crate::domain::AnswerSource::Reply));
    let delta = |s: &str| AgentEvent::Answer(AnswerEvent::Delta { content: s.into() });
    let mut events = vec![
        start(),
        delta("Let me check."),
        AgentEvent::Answer(AnswerEvent::Reset),
    ];
    // The tool call of `run`, then the answer.
    events.extend(
        run(RunStatus::Completed)
            .into_iter()
            .skip(1)
            .take(2)
            .map(|ev| AgentEvent::from_parts(ev.name, &ev.data).unwrap()),
    );
    events.extend([
        start(),
        delta("It is 42."),
        AgentEvent::Answer(AnswerEvent::Done {
            content: "It is 42.".into(),
            fallback: false,
        }),
        AgentEvent::Done(outcome(RunStatus::Completed, "It is 42.")),
    ]);
    let logged: Vec<LoggedEvent> = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| logged(i as u64 + 1, e))
        .collect();
    let (_, encoder) = encode_all(&ctx(), &logged);
    let r = encoder.response();
    let output = r["output"].as_array().unwrap();
    let shape: Vec<(&str, &str)> = output
        .iter()
        .map(|item| {
            let text = item["content"][0]["text"].as_str().unwrap_or("");
            (item["type"].as_str().unwrap(), text)
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("message", "Let me check."),
            ("mcp_call", ""),
            ("message", "It is 42.")
        ]
    );
    assert!(output.iter().all(|i| i["status"] == "completed"), "{r}");
}

/// `cargo test --lib per_delta_cost -- --ignored --nocapture`: the encoder's cost per token.
#[test]
#[ignore]
fn per_delta_cost() {
    let mut encoder = Encoder::new(ctx());
    let ns = crate::server::event_body::time_deltas(|ev| {
        std::hint::black_box(encoder.event(ev));
    });
    println!("Responses: {ns:.0} ns per delta");
}
