//! Stops and follow-ups while the answer streams (issue 52): a cancel keeps exactly what was
//! streamed, from the loop's reply or from the synthesis; a follow-up takes a streaming reply
//! back and the loop goes on with it.

use super::answer_path::{answers, auto, no_step_while_an_answer_shows};
use super::*;
use reagent::agent::AgentResult;

/// Runs `llm` and cancels the run when the first answer delta is sent.
async fn cancelled_at_first_delta(llm: Arc<ScriptedLlm>) -> (AgentResult, Vec<AgentEvent>) {
    at_first_delta(llm, None).await
}

/// Runs `llm`; at the first answer delta, sends `follow_up` (or cancels the run without one).
async fn at_first_delta(
    llm: Arc<ScriptedLlm>,
    follow_up: Option<&'static str>,
) -> (AgentResult, Vec<AgentEvent>) {
    let cancel = tokio_util::sync::CancellationToken::new();
    let queue = Arc::new(reagent::agent::InterruptQueue::new());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (stop, log, inbox) = (cancel.clone(), seen.clone(), queue.clone());
    let sink = reagent::agent::EventSink::new(move |e| {
        let first = !log
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, AgentEvent::Answer(AnswerEvent::Delta { .. })));
        if first && matches!(e, AgentEvent::Answer(AnswerEvent::Delta { .. })) {
            match follow_up {
                Some(text) => drop(inbox.push(text)),
                None => stop.cancel(),
            }
        }
        log.lock().unwrap().push(e);
    });
    let agent = reagent::agent::ReActAgent::new(
        llm,
        registry(vec![]),
        HookRunner::default(),
        AgentConfig::default(),
    );
    let handles = reagent::agent::RunHandles {
        checkpoints: None,
        events: sink,
        interrupts: queue,
        cancel,
        artifacts: Arc::new(reagent::agent::artifacts::MemoryArtifacts::new()),
        tool_slots: Default::default(),
    };
    let input = reagent::agent::RunInput {
        run_id: "r".into(),
        conversation_id: "c".into(),
        query: "q".into(),
        ..Default::default()
    };
    let r = agent.run(input, handles).await;
    let events = seen.lock().unwrap().clone();
    (r, events)
}

fn slow(chunks: &[&str]) -> Turn {
    Turn::Paced {
        chunks: chunks.iter().map(|c| c.to_string()).collect(),
        every: Duration::from_millis(30),
        then: None,
    }
}

#[tokio::test]
async fn a_stop_while_the_reply_streams_keeps_exactly_what_was_streamed() {
    let llm = auto(ScriptedLlm::native());
    llm.push_stream(slow(&["Once upon ", "a time ", "there was"]));
    let (r, ev) = cancelled_at_first_delta(llm).await;
    assert_eq!(r.outcome.status, RunStatus::Cancelled);
    assert_eq!(r.outcome.answer, "Once upon ");
    assert_eq!(
        answers(&ev),
        ["start:reply", "delta:Once upon ", "done:Once upon "]
    );
    assert!(matches!(ev.last(), Some(AgentEvent::Done(o)) if o.answer == "Once upon "));
}

#[tokio::test]
async fn a_stop_during_synthesis_keeps_what_it_streamed_not_the_draft() {
    let llm = Arc::new(ScriptedLlm::native());
    llm.text("the whole draft");
    llm.push_stream(slow(&["Synth ", "esised ", "answer"]));
    let (r, ev) = cancelled_at_first_delta(llm).await;
    assert_eq!(r.outcome.status, RunStatus::Cancelled);
    assert_eq!(r.outcome.answer, "Synth ");
    assert_eq!(
        answers(&ev),
        ["start:synthesis", "delta:Synth ", "done:Synth "]
    );
}

#[tokio::test]
async fn a_follow_up_while_the_reply_streams_takes_it_back_and_the_loop_goes_on() {
    let llm = auto(ScriptedLlm::native());
    llm.push_stream(slow(&["Draft ", "answer."]))
        .stream_text(&["Both answered."]);
    let (r, ev) = at_first_delta(llm.clone(), Some("and in French?")).await;
    assert_eq!(r.outcome.status, RunStatus::Completed);
    assert_eq!(r.outcome.answer, "Both answered.");
    assert_eq!(
        answers(&ev),
        [
            "start:reply",
            "delta:Draft ",
            "delta:answer.",
            "reset",
            "start:reply",
            "delta:Both answered.",
            "done:Both answered."
        ]
    );
    assert!(ev
        .iter()
        .any(|e| matches!(e, AgentEvent::Step(StepEvent::Interrupt { .. }))));
    no_step_while_an_answer_shows(&ev);
    let second = &llm.stream_requests()[1];
    assert!(second
        .messages
        .iter()
        .any(|m| m.content.contains("and in French?")));
}
