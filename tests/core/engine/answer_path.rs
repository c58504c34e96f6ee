//! The answer path (issue 52): under `synthesis = "auto"` the loop's calls stream, a reply that
//! passes the answer checks is the answer with no second call, a tool call takes back what a
//! reply showed, a safeguard's verdict is never the answer, a stop keeps what was streamed;
//! `never` answers from the reply or the results; `always` keeps the two phases; an empty reply
//! never ends a run with an empty answer. Stops and follow-ups: [`super::answer_stops`].

use super::*;
use reagent::agent::events::AnswerSource;
use reagent::agent::AgentResult;
use reagent::llm::{Llm, SynthesisPolicy};
use reagent::testing::scripted::response;

pub(super) fn auto(llm: ScriptedLlm) -> Arc<ScriptedLlm> {
    Arc::new(llm.with_synthesis(SynthesisPolicy::Auto))
}

/// The `answer` events of a run, compactly: `start:<source>`, `delta:<text>`, `reset`,
/// `done:<content>`.
pub(super) fn answers(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Answer(AnswerEvent::Start { source }) => {
                Some(format!("start:{}", source.map_or("-", |s| s.as_str())))
            }
            AgentEvent::Answer(AnswerEvent::Delta { content }) => Some(format!("delta:{content}")),
            AgentEvent::Answer(AnswerEvent::Reset) => Some("reset".into()),
            AgentEvent::Answer(AnswerEvent::Done { content, .. }) => {
                Some(format!("done:{content}"))
            }
            _ => None,
        })
        .collect()
}

/// No `step` event while an answer is open (from its `start` to its `reset` or `done`).
pub(super) fn no_step_while_an_answer_shows(events: &[AgentEvent]) {
    let mut open = false;
    for e in events {
        match e {
            AgentEvent::Answer(AnswerEvent::Start { .. } | AnswerEvent::Delta { .. }) => {
                open = true
            }
            AgentEvent::Answer(AnswerEvent::Reset | AnswerEvent::Done { .. }) => open = false,
            AgentEvent::Step(s) => assert!(!open, "{s:?} while an answer shows"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_reply_without_tools_streams_as_the_answer_in_one_call() {
    let llm = auto(ScriptedLlm::native());
    llm.stream_text(&["The sea ", "is wide,\n", "the sea is blue."]);
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "Write a poem").await;
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:The sea ",
            "delta:is wide,\n",
            "delta:the sea is blue.",
            "done:The sea is wide,\nthe sea is blue."
        ]
    );
    assert_eq!(r.outcome.answer, "The sea is wide,\nthe sea is blue.");
    assert_eq!(r.outcome.usage.llm_calls, 1, "exactly one LLM call");
    assert!(!r.outcome.synthesis && !r.answer_fallback);
    assert!(llm.chat_requests().is_empty(), "the loop's call streams");
    assert_eq!(llm.stream_requests().len(), 1);
    let done = ev.last().unwrap();
    assert!(matches!(done, AgentEvent::Done(o) if o.status == RunStatus::Completed));
}

#[tokio::test]
async fn a_tool_call_after_text_takes_the_text_back_into_thinking() {
    let llm = auto(ScriptedLlm::native());
    llm.stream_tool_calls("Let me compute that.", &[("c1", "calc", "{}")])
        .stream_text(&["It is ", "42."]);
    let (r, ev) = run_simple(llm, registry(vec![FakeTool::new("calc", "42")]), "q").await;
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:Let me compute that.",
            "reset",
            "start:reply",
            "delta:It is ",
            "delta:42.",
            "done:It is 42."
        ]
    );
    let reset = ev
        .iter()
        .position(|e| matches!(e, AgentEvent::Answer(AnswerEvent::Reset)))
        .unwrap();
    assert!(
        matches!(&ev[reset + 1], AgentEvent::Step(StepEvent::Thinking { reasoning, .. }) if reasoning == "Let me compute that."),
        "the text shown becomes the step's thinking: {:?}",
        ev[reset + 1]
    );
    assert_eq!(r.outcome.usage.llm_calls, 2, "no synthesis call");
    assert_eq!(r.outcome.answer, "It is 42.");
    no_step_while_an_answer_shows(&ev);
}

#[tokio::test]
async fn a_json_final_answer_streams_its_decoded_answer() {
    let llm = auto(ScriptedLlm::json());
    llm.stream_text(&[
        r#"{"type": "final_answer", "answer": "Line one\n"#,
        r#"line \"two\""#,
        r#"", "reasoning": "short"}"#,
    ]);
    let (r, ev) = run_simple(llm, registry(vec![FakeTool::new("calc", "1")]), "q").await;
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:Line one\n",
            "delta:line \"two\"",
            "done:Line one\nline \"two\""
        ]
    );
    assert_eq!(r.outcome.usage.llm_calls, 1);
}

#[tokio::test]
async fn a_json_answer_copying_the_observation_label_streams_without_it() {
    let llm = auto(ScriptedLlm::json());
    llm.stream_text(&[
        r#"{"type": "tool_call", "calls": [{"tool_name": "calc", "tool_args": {}}]}"#,
    ])
    .stream_text(&[
        r#"{"type": "final_answer", "answer": "Obser"#,
        r#"vation: 3"#,
        r#"91"}"#,
    ]);
    let (r, ev) = run_simple(
        llm,
        registry(vec![FakeTool::new("calc", "391")]),
        "17 * 23?",
    )
    .await;
    assert_eq!(
        answers(&ev),
        ["start:reply", "delta:3", "delta:91", "done:391"]
    );
    assert_eq!(r.outcome.answer, "391");
}

#[tokio::test]
async fn a_reply_cut_by_the_output_limit_is_synthesised_after_a_reset() {
    let llm = auto(ScriptedLlm::native());
    let mut cut = response("The list: one, two, th", vec![]);
    cut.finish_reason = Some("length".into());
    llm.push_stream(Turn::Reply(cut, Duration::ZERO))
        .stream_text(&["One, two, three."]);
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:The list: one, two, th",
            "reset",
            "start:synthesis",
            "delta:One, two, three.",
            "done:One, two, three."
        ]
    );
    assert!(r.outcome.synthesis);
    assert_eq!(r.outcome.usage.llm_calls, 2);
    let synthesis = &llm.stream_requests()[1];
    assert_eq!(
        synthesis.messages[0].content,
        reagent::agent::prompts::SYNTHESIS_SYSTEM
    );
}

#[tokio::test]
async fn a_call_written_as_text_never_shows_and_is_not_the_answer() {
    let llm = auto(ScriptedLlm::native());
    llm.stream_text(&[
        r#"{"name": "weather", "#,
        r#""arguments": {"city": "Paris"}}"#,
    ])
    .stream_text(&["I cannot look up the weather."]);
    let (r, ev) = run_simple(llm, registry(vec![FakeTool::new("calc", "1")]), "q").await;
    assert_eq!(
        answers(&ev),
        [
            "start:synthesis",
            "delta:I cannot look up the weather.",
            "done:I cannot look up the weather."
        ]
    );
    assert!(r.outcome.synthesis);
}

/// Three lookups, then `first`, the checklist's prompt, then `after`.
async fn checked(
    llm: Arc<ScriptedLlm>,
    first: &str,
    after: &str,
) -> (AgentResult, Vec<AgentEvent>) {
    for i in 0..3 {
        llm.stream_tool_calls(
            "",
            &[(&format!("c{i}"), "lookup", &format!(r#"{{"x":{i}}}"#))],
        );
    }
    llm.stream_text(&[first]).stream_text(&[after]);
    run_simple(
        llm,
        registry(vec![FakeTool::new("lookup", "10:42 JST")]),
        "Time in Tokyo?",
    )
    .await
}

#[tokio::test]
async fn a_verdict_on_the_checklist_leaves_the_answer_before_it() {
    let llm = auto(ScriptedLlm::native());
    let (r, ev) = checked(
        llm,
        "It is 10:42 JST in Tokyo.",
        "Yes, the answer is fully correct. The current_time tool returned the time.",
    )
    .await;
    assert_eq!(r.outcome.answer, "It is 10:42 JST in Tokyo.");
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:It is 10:42 JST in Tokyo.",
            "done:It is 10:42 JST in Tokyo."
        ],
        "the verdict is never streamed"
    );
    no_step_while_an_answer_shows(&ev);
    assert!(!r.outcome.synthesis);
    assert_eq!(r.outcome.usage.llm_calls, 5);
}

#[tokio::test]
async fn a_real_answer_after_the_checklist_replaces_the_one_before() {
    let llm = auto(ScriptedLlm::native());
    let (r, ev) = checked(llm, "It is 10:42.", "It is 10:42 JST (UTC+9) in Tokyo.").await;
    assert_eq!(r.outcome.answer, "It is 10:42 JST (UTC+9) in Tokyo.");
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:It is 10:42 JST (UTC+9) in Tokyo.",
            "done:It is 10:42 JST (UTC+9) in Tokyo."
        ],
        "the reply the checklist checks is not shown before it is settled"
    );
    no_step_while_an_answer_shows(&ev);
}

#[tokio::test]
async fn a_verdict_on_the_reflection_is_not_the_answer_under_any_policy() {
    let cfg = AgentConfig {
        self_reflection_interval: 1,
        ..AgentConfig::default()
    };
    for policy in [
        SynthesisPolicy::Auto,
        SynthesisPolicy::Always,
        SynthesisPolicy::Never,
    ] {
        let llm = Arc::new(ScriptedLlm::native().with_synthesis(policy));
        let verdict = "Yes, I am still on track for that goal.";
        if policy == SynthesisPolicy::Always {
            llm.tool_calls(&[("c1", "calc", "{}")]).text(verdict);
        } else {
            llm.stream_tool_calls("", &[("c1", "calc", "{}")])
                .stream_text(&[verdict]);
        }
        llm.push_stream(Turn::Stream(vec!["The result is 2400.1519.".into()], None));
        let h = Harness::new(
            llm.clone(),
            registry(vec![FakeTool::new("calc", "2400.1519")]),
            HookRunner::default(),
            cfg.clone(),
        );
        let (r, ev) = h.run("q").await;
        assert!(
            !r.outcome.answer.contains("on track"),
            "{policy}: {}",
            r.outcome.answer
        );
        assert!(
            r.outcome.answer.contains("2400.1519"),
            "{policy}: {}",
            r.outcome.answer
        );
        assert!(
            !answers(&ev).iter().any(|a| a.contains("on track")),
            "{policy}: a safeguard's reply is never streamed"
        );
        assert_eq!(
            r.outcome.synthesis,
            policy != SynthesisPolicy::Never,
            "{policy}"
        );
    }
}

#[tokio::test]
async fn never_answers_from_the_reply_or_else_from_the_results() {
    let llm = Arc::new(ScriptedLlm::native().with_synthesis(SynthesisPolicy::Never));
    llm.stream_tool_calls("", &[("c1", "calc", "{}")])
        .stream_text(&[
            r#"{"name": "weather", "#,
            r#""arguments": {"city": "Paris"}}"#,
        ]);
    let (r, ev) = run_simple(llm, registry(vec![FakeTool::new("calc", "42")]), "q").await;
    assert_eq!(r.outcome.usage.llm_calls, 2, "no synthesis call");
    assert!(!r.outcome.synthesis);
    assert!(
        r.outcome.answer.contains("calc: 42"),
        "{}",
        r.outcome.answer
    );
    assert_eq!(answers(&ev)[0], "start:results");

    let llm = Arc::new(ScriptedLlm::native().with_synthesis(SynthesisPolicy::Never));
    llm.stream_text(&["Paris."]);
    let (r, ev) = run_simple(llm, registry(vec![]), "q").await;
    assert_eq!(r.outcome.answer, "Paris.");
    assert_eq!(answers(&ev), ["start:reply", "delta:Paris.", "done:Paris."]);
}

#[tokio::test]
async fn always_keeps_the_two_phases() {
    let llm = Arc::new(ScriptedLlm::native());
    assert_eq!(llm.synthesis(), SynthesisPolicy::Always);
    llm.text("brief draft");
    llm.push_stream(Turn::Stream(vec!["Synthesised.".into()], None));
    let (r, ev) = run_simple(llm.clone(), registry(vec![]), "q").await;
    assert_eq!(llm.chat_requests().len(), 1, "the loop calls chat");
    let synthesis = &llm.stream_requests()[0];
    assert_eq!(
        synthesis.messages[0].content,
        reagent::agent::prompts::SYNTHESIS_SYSTEM
    );
    assert!(synthesis.messages[1].content.contains("brief draft"));
    assert_eq!(
        answers(&ev),
        ["start:synthesis", "delta:Synthesised.", "done:Synthesised."]
    );
    assert!(r.outcome.synthesis);
    assert_eq!(r.outcome.usage.llm_calls, 2);
}

#[tokio::test]
async fn an_empty_reply_and_a_failed_synthesis_fail_the_run_clearly() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("");
    llm.push_stream(Turn::Fail(LlmError::Timeout(1)));
    let (r, ev) = run_simple(llm, registry(vec![]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Failed);
    assert!(r.outcome.error.as_deref().unwrap_or("").contains("empty"));
    assert!(!r.outcome.answer.trim().is_empty(), "the user is told why");
    assert!(matches!(ev.last(), Some(AgentEvent::Done(o)) if o.status == RunStatus::Failed));

    // With a tool result to answer from, that is the answer.
    let llm = Arc::new(ScriptedLlm::native());
    llm.tool_calls(&[("c1", "calc", "{}")]).text("");
    llm.push_stream(Turn::Fail(LlmError::Timeout(1)));
    let (r, _) = run_simple(llm, registry(vec![FakeTool::new("calc", "42")]), "q").await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert!(
        r.outcome.answer.contains("calc: 42"),
        "{}",
        r.outcome.answer
    );
}

#[test]
fn answer_sources_are_named_as_documented() {
    let names: Vec<&str> = [
        AnswerSource::Reply,
        AnswerSource::Synthesis,
        AnswerSource::Results,
    ]
    .iter()
    .map(|s| s.as_str())
    .collect();
    assert_eq!(names, ["reply", "synthesis", "results"]);
}
