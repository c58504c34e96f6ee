//! A caller tool asked for again and again (BFCL's multi-turn entries: `ls` with the same
//! arguments until the iteration cap). Each such call ends its run `requires_action` and the
//! caller's output comes back in a continuation, so cycle detection must see across them: the
//! third identical output warns the model, and a call asked once more past the warning is not
//! sent to the caller again — the run ends with what it has.

use std::sync::Mutex;

use super::*;
use crate::resume::handles;
use reagent::agent::checkpoint::{Checkpoint, Resume};
use reagent::agent::events::SafeguardKind;
use reagent::agent::{ReActAgent, RunInput};
use reagent::llm::{Llm, ToolDefinition};

type Taken = Arc<Mutex<Vec<Checkpoint>>>;

fn input() -> RunInput {
    let ls = ToolDefinition {
        name: "ls".into(),
        description: "Lists the files of the caller's directory".into(),
        parameters: serde_json::json!({"type": "object"}),
    };
    RunInput {
        run_id: "run".into(),
        conversation_id: "conv".into(),
        query: "what files are there?".into(),
        client_tools: vec![ls],
        ..RunInput::default()
    }
}

/// The paused run's checkpoint (the last one naming calls for the caller), answered `output`.
fn continuation(taken: &Taken, output: &str) -> Resume {
    let mut cp = taken
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|c| !c.awaiting.is_empty())
        .cloned()
        .expect("a paused checkpoint");
    cp.answer_pending(vec![output.to_string()]);
    cp.continues = Some("paused".into());
    Resume {
        checkpoint: cp,
        reset_answer: false,
        continues: Some("paused".into()),
    }
}

fn safeguards(events: &[AgentEvent]) -> Vec<SafeguardKind> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Step(StepEvent::Safeguard { kind, .. }) => Some(*kind),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_caller_tool_asked_again_and_again_is_a_cycle_across_continuations() {
    let llm = Arc::new(ScriptedLlm::native());
    for i in 0..12 {
        llm.tool_calls(&[(format!("c{i}").as_str(), "ls", "{}")]);
    }
    llm.text("There is a.txt.");
    cycles_across_continuations(llm).await;
}

#[tokio::test]
async fn the_same_in_json_mode() {
    let llm = Arc::new(ScriptedLlm::json());
    for _ in 0..12 {
        llm.text(&json_tool("ls", serde_json::json!({})));
    }
    llm.text(&json_final("There is a.txt."));
    cycles_across_continuations(llm).await;
}

/// Drives continuations answering every `ls` call "a.txt" until the run stops asking.
async fn cycles_across_continuations(llm: Arc<ScriptedLlm>) {
    let agent = || {
        ReActAgent::new(
            llm.clone() as Arc<dyn Llm>,
            registry(vec![]),
            HookRunner::default(),
            AgentConfig::default(),
        )
    };
    let taken: Taken = Arc::default();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let first = agent().run(input(), handles(tx, taken.clone())).await;
    assert_eq!(first.outcome.status, RunStatus::RequiresAction);
    let mut seen = Vec::new();
    let mut status = RunStatus::RequiresAction;
    while status == RunStatus::RequiresAction {
        assert!(seen.len() < 8, "still asking the caller: {seen:?}");
        let resume = continuation(&taken, "a.txt");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let result = agent()
            .resume(input(), handles(tx, taken.clone()), resume, "x")
            .await;
        status = result.outcome.status;
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        seen.push(safeguards(&events));
    }
    use SafeguardKind::{CycleStop, CycleWarning};
    assert_eq!(
        seen,
        [
            vec![],
            vec![],
            vec![CycleWarning],
            vec![CycleWarning, CycleStop]
        ],
        "warned at the third identical output; the call asked past it is not paused for"
    );
    assert_eq!(status, RunStatus::Completed);
    let warned = llm.chat_requests()[4].messages.iter().any(|m| {
        m.content
            .contains("You have called ls with identical arguments")
    });
    assert!(warned, "the model was told after the third output");
}
