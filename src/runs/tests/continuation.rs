//! Caller-tool outputs across a crash: the outputs are acknowledged only once the continuation
//! that carries them is durable, so a process that dies in the continuation's first moments
//! (before its writer's first tick) leaves a run that the next process resumes with them.

use super::*;
use crate::agent::caller_tools::ToolOutput;
use crate::llm::{Message, ToolDefinition};
use crate::testing::Turn;

/// Within the fixture's 20-character text limit.
const OUTPUT: &str = "yes, order 4711";

fn confirm_tool() -> ToolDefinition {
    ToolDefinition {
        name: "confirm".into(),
        description: "Ask the user".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

/// A second process on the same database: its own instance name and model.
fn restarted(store: &Store, llm: Arc<ScriptedLlm>) -> Arc<RunManager> {
    let settings = RunSettings {
        flush_interval: Duration::from_millis(1),
        ..RunSettings::default()
    };
    Arc::new(RunManager::new(
        RunParts::new(store.clone(), single_model(llm)),
        settings,
    ))
}

#[tokio::test]
async fn outputs_acknowledged_before_a_crash_reach_the_resumed_continuation() {
    let llm = Arc::new(ScriptedLlm::native());
    let mut f = fixture_with(llm.clone(), llm.clone()).await;
    // The writer writes at once when idle, then not for an hour unless a run ends: what the
    // continuation's own events and checkpoints would make durable never is, as when the
    // process dies in its first moments.
    let runs = Arc::get_mut(&mut f.runs).unwrap();
    runs.settings.flush_interval = Duration::from_secs(3600);
    runs.settings.max_query_chars = 100;
    llm.tool_calls(&[("call_c1", "confirm", "{}")]);
    let conv = f.conversation("").await;
    let request = StartRun {
        client_tools: vec![confirm_tool()],
        ..StartRun::new(ConversationRef::Existing(conv), "confirm")
    };
    let paused = f.runs.start("", request).await.unwrap();
    let (_, outcome) = finished(&paused).await;
    assert_eq!(outcome.status, RunStatus::RequiresAction);
    // The continuation's loop call never answers in this process.
    llm.push(Turn::Reply(
        response("never", vec![]),
        Duration::from_secs(3600),
    ));
    let outputs = vec![ToolOutput {
        call_id: "call_c1".into(),
        output: OUTPUT.into(),
    }];
    let continuation = f
        .runs
        .submit_tool_outputs("", paused.id, outputs)
        .await
        .unwrap();

    let next = Arc::new(ScriptedLlm::native());
    next.text("Order 4711 is confirmed.");
    let other = restarted(&f.store, next.clone());
    assert_eq!(
        other.recover().await.unwrap().resumed,
        1,
        "resumed, not failed"
    );
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let row = f.store.get_run("", continuation.id).await.unwrap().unwrap();
            if row.status != RunStatus::Running {
                return row;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the resumed continuation ends");
    let row = f.store.get_run("", continuation.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Completed, "{:?}", row.error);
    let loop_call = &next.chat_requests()[0];
    let answered = loop_call
        .messages
        .iter()
        .any(|m: &Message| m.tool_call_id.as_deref() == Some("call_c1") && m.content == OUTPUT);
    assert!(answered, "the output is the call's result: {loop_call:?}");
    // Its log begins as a continuation's does: `start` naming the paused run.
    let events = f.store.list_events(continuation.id, 0).await.unwrap();
    assert_eq!(events[0].name, "start");
    let start: serde_json::Value = serde_json::from_str(&events[0].data).unwrap();
    assert_eq!(start["continues"], paused.id.to_string());
    assert_eq!(events.last().unwrap().name, "done");
}
