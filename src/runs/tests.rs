//! The run manager over a temp SQLite store and the scripted LLM: starting (in an existing or
//! a new conversation, refused starts storing nothing), one active run per conversation,
//! commands (cancel, interrupt and recall, approvals) checked against the live run's owner,
//! the final state stored from the same outcome as `done`, the panic tail, and recovery.

use crate::domain::{MessageKind, Mode};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;
use uuid::Uuid;

use super::drive::final_state;
use super::manager::RESTART_ERROR;
use super::{ConversationRef, LiveRun, RunError, RunManager, StartRun};
use crate::agent::hooks::approval::ApprovalInfo;
use crate::agent::hooks::HookRunner;
use crate::agent::{AgentConfig, AgentEvent, RunOutcome, RunStatus};
use crate::llm::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError};
use crate::store::{NewConversation, NewRun, Store, StoredEvent};
use crate::testing::scripted::{response, single_model};
use crate::testing::{ScriptedLlm, Turn};
use crate::tools::ToolRegistry;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    llm: Arc<ScriptedLlm>,
    runs: Arc<RunManager>,
}

async fn fixture() -> Fixture {
    let llm = Arc::new(ScriptedLlm::native());
    fixture_with(llm.clone(), llm).await
}

async fn fixture_with(llm: Arc<ScriptedLlm>, model: Arc<dyn Llm>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    let store = Store::connect(&url).await.unwrap();
    let mut manager = RunManager::new(
        store.clone(),
        single_model(model),
        ToolRegistry::new(),
        HookRunner::default(),
        AgentConfig::default(),
        None,
    );
    manager.flush_interval = Duration::from_millis(1);
    manager.max_query_chars = 20;
    Fixture {
        _dir: dir,
        store,
        llm,
        runs: Arc::new(manager),
    }
}

impl Fixture {
    /// A stored conversation of `owner`'s.
    async fn conversation(&self, owner: &str) -> Uuid {
        self.store
            .create_conversation(owner, NewConversation::default())
            .await
            .unwrap()
            .id
    }

    async fn start_in(&self, owner: &str, id: Uuid, q: &str) -> Result<Arc<LiveRun>, RunError> {
        self.runs
            .start(owner, StartRun::new(ConversationRef::Existing(id), q))
            .await
    }

    /// A run of `owner`'s whose first model call takes `delay`.
    async fn slow_run(&self, owner: &str, delay: Duration) -> Arc<LiveRun> {
        self.llm.push(Turn::Reply(response("brief", vec![]), delay));
        let id = self.conversation(owner).await;
        self.start_in(owner, id, "q").await.unwrap()
    }
}

/// The run's whole log once it is over, and its `done` outcome.
async fn finished(live: &LiveRun) -> (Vec<String>, RunOutcome) {
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        live.log.subscribe(0).events.collect::<Vec<_>>(),
    )
    .await
    .expect("the run ends");
    tokio::time::timeout(Duration::from_secs(10), live.finished())
        .await
        .expect("the run is persisted");
    let last = events.last().expect("events");
    let Ok(AgentEvent::Done(outcome)) = AgentEvent::from_parts(last.name, &last.data) else {
        panic!("the log ends with done: {}", last.data);
    };
    (events.iter().map(|e| e.name.to_string()).collect(), outcome)
}

#[tokio::test]
async fn a_new_conversation_is_stored_with_its_first_run() {
    let f = fixture().await;
    f.llm.text("brief");
    let request = StartRun::new(
        ConversationRef::titled_after("  hello there ", None),
        "hello",
    );
    let live = f.runs.start("alice", request).await.unwrap();
    let (names, outcome) = finished(&live).await;
    assert_eq!(names.first().map(String::as_str), Some("start"));
    assert_eq!(outcome.status, RunStatus::Completed);
    let conv = f.runs.owned("alice", live.conversation_id).await.unwrap();
    assert_eq!(conv.title.as_deref(), Some("hello there"));
    let kinds: Vec<String> = f
        .store
        .list_messages(conv.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| format!("{}:{}", m.kind, m.content))
        .collect();
    assert_eq!(kinds, ["query:hello", "answer:Scripted answer."]);
}

#[tokio::test]
async fn a_refused_start_stores_nothing() {
    let f = fixture().await;
    let new = |tools: Option<Vec<String>>| {
        ConversationRef::New(NewConversation {
            tools,
            ..NewConversation::default()
        })
    };
    let refusals = [
        (StartRun::new(new(None), " \n"), "query must not be empty"),
        (
            StartRun::new(new(None), "x".repeat(21)),
            "query is longer than 20 characters",
        ),
        (
            StartRun {
                max_iterations: Some(0),
                ..StartRun::new(new(None), "q")
            },
            "max_iterations must be at least 1",
        ),
        (
            StartRun::new(new(Some(vec!["nope".into()])), "q"),
            "unknown tool 'nope'",
        ),
        (
            StartRun {
                model: Some("gpt-9".into()),
                ..StartRun::new(new(None), "q")
            },
            "unknown model 'gpt-9'",
        ),
    ];
    for (request, message) in refusals {
        let err = f.runs.start("alice", request).await.unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    let (stored, _) = f.store.list_conversations("alice", 10, None).await.unwrap();
    assert!(stored.is_empty(), "nothing stored: {stored:?}");
    let bobs = f.conversation("bob").await;
    assert!(matches!(
        f.start_in("alice", bobs, "q").await,
        Err(RunError::NotFound)
    ));
    assert_eq!(f.runs.active_runs(), 0);
}

#[tokio::test]
async fn a_conversation_has_one_active_run_at_a_time() {
    let f = fixture().await;
    let live = f.slow_run("", Duration::from_millis(300)).await;
    let again = f.start_in("", live.conversation_id, "again").await;
    assert!(matches!(again, Err(RunError::Active)), "{again:?}");
    assert_eq!(f.runs.active_run_of(live.conversation_id), Some(live.id));
    finished(&live).await;
    f.llm.text("second");
    let next = f.start_in("", live.conversation_id, "again").await.unwrap();
    assert_ne!(next.id, live.id);
    finished(&next).await;
}

#[tokio::test]
async fn cancel_is_for_the_owner_and_ends_the_run_cancelled() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_secs(30)).await;
    let other = f.runs.cancel("bob", live.id).await;
    assert!(matches!(other, Err(RunError::NotFound)), "{other:?}");
    f.runs.cancel("alice", live.id).await.unwrap();
    let (_, outcome) = finished(&live).await;
    assert_eq!(outcome.status, RunStatus::Cancelled);
    let row = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Cancelled);
    // Gone from the live state: answered from the database.
    assert!(f.runs.live_run("alice", live.id).is_none());
    let late = f.runs.cancel("alice", live.id).await;
    assert!(matches!(late, Err(RunError::Finished)), "{late:?}");
}

#[tokio::test]
async fn interrupts_are_checked_and_a_pending_one_can_be_recalled() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_millis(400)).await;
    let conv = live.conversation_id;
    let empty = f.runs.interrupt("alice", conv, "  ".into()).await;
    assert!(matches!(empty, Err(RunError::Invalid(_))), "{empty:?}");
    let foreign = f.runs.interrupt("bob", conv, "hi".into()).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    let accepted = f.runs.interrupt("alice", conv, "hi".into()).await.unwrap();
    let (iid, run_id) = (accepted.id, accepted.run_id);
    assert!(!accepted.next_run);
    assert_eq!(run_id, live.id);
    let stored = |kind: MessageKind| {
        let store = f.store.clone();
        async move {
            store
                .list_messages(conv)
                .await
                .unwrap()
                .iter()
                .any(|m| m.kind == kind)
        }
    };
    assert!(
        stored(MessageKind::Interrupt).await,
        "persisted before accepted"
    );
    let foreign = f.runs.recall("bob", conv, iid).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    f.runs.recall("alice", conv, iid).await.unwrap();
    assert!(
        !stored(MessageKind::Interrupt).await,
        "a recalled interrupt is not kept"
    );
    // Recalled, so never accepted: unknown now.
    let twice = f.runs.recall("alice", conv, iid).await;
    assert!(matches!(twice, Err(RunError::NotFound)), "{twice:?}");
    let (_, outcome) = finished(&live).await;
    assert!(outcome.unprocessed_interrupts.is_empty());
    let after = f.runs.interrupt("alice", conv, "late".into()).await;
    assert!(matches!(after, Err(RunError::NoActiveRun)), "{after:?}");
}

#[tokio::test]
async fn approvals_are_visible_and_decidable_by_their_runs_owner_only() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_millis(300)).await;
    let pending = f.runs.approvals.request(ApprovalInfo {
        run_id: live.id.to_string(),
        conversation_id: live.conversation_id.to_string(),
        tool: "t".into(),
        arguments: json!({}),
        requested_at: chrono::Utc::now(),
    });
    let id = pending.id();
    assert_eq!(f.runs.approvals_of("alice").len(), 1);
    assert!(f.runs.approvals_of("bob").is_empty());
    let foreign = f.runs.decide_approval("bob", id, true, None);
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    let nul = f
        .runs
        .decide_approval("alice", id, false, Some("a\0b".into()));
    assert!(matches!(nul, Err(RunError::Invalid(_))), "{nul:?}");
    let info = f.runs.decide_approval("alice", id, true, None).unwrap();
    assert_eq!(info.run_id, live.id.to_string());
    assert!(f.runs.approvals_of("alice").is_empty(), "decided once");
    finished(&live).await;
}

#[tokio::test]
async fn the_stored_final_state_is_the_outcome_done_carried() {
    let f = fixture().await;
    f.llm.text("brief");
    let id = f.conversation("").await;
    let live = f.start_in("", id, "q").await.unwrap();
    let (_, outcome) = finished(&live).await;
    let row = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(
        (
            row.status,
            row.iterations,
            row.tool_calls,
            row.usage,
            row.error
        ),
        (
            outcome.status,
            outcome.iterations,
            outcome.tool_calls,
            outcome.usage,
            outcome.error.clone()
        )
    );
    let answers: Vec<String> = f
        .store
        .list_messages(id)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.kind == MessageKind::Answer)
        .map(|m| m.content)
        .collect();
    assert_eq!(answers, std::slice::from_ref(&outcome.answer));
    // Without a place for the answer (recovery) only the run's state is kept.
    assert!(final_state(&outcome, None).answer.is_none());
    let empty = RunOutcome {
        answer: String::new(),
        ..outcome
    };
    assert!(final_state(&empty, Some((id, live.id))).answer.is_none());
}

#[tokio::test]
async fn deleting_a_conversation_stops_its_run_first() {
    let f = fixture().await;
    let live = f.slow_run("alice", Duration::from_secs(30)).await;
    let conv = live.conversation_id;
    let foreign = f.runs.delete_conversation("bob", conv).await;
    assert!(matches!(foreign, Err(RunError::NotFound)), "{foreign:?}");
    f.runs.delete_conversation("alice", conv).await.unwrap();
    assert!(live.cancel.is_cancelled() && live.log.is_closed());
    assert_eq!(f.runs.active_runs(), 0);
    assert!(f
        .store
        .get_conversation("alice", conv)
        .await
        .unwrap()
        .is_none());
}

/// A model whose every call panics: the engine cannot end the run itself.
struct Panicking;

#[async_trait]
impl Llm for Panicking {
    fn model(&self) -> &str {
        "panicking"
    }
    fn abilities(&self) -> Abilities {
        Abilities::default()
    }
    fn context_window(&self) -> u32 {
        128_000
    }
    fn max_output_tokens(&self) -> u32 {
        4096
    }
    async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, LlmError> {
        panic!("the model exploded")
    }
    async fn stream_chat(&self, _: ChatRequest) -> Result<ChatStream, LlmError> {
        panic!("the model exploded")
    }
}

#[tokio::test]
async fn a_panicking_engine_ends_with_the_fallback_tail() {
    let f = fixture_with(Arc::new(ScriptedLlm::native()), Arc::new(Panicking)).await;
    let id = f.conversation("").await;
    let live = f.start_in("", id, "q").await.unwrap();
    let (names, outcome) = finished(&live).await;
    assert_eq!(names, ["start", "answer", "answer", "answer", "done"]);
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error.as_deref(), Some("internal error"));
    let row = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(row.status, RunStatus::Failed);
    assert_eq!(f.runs.active_runs(), 0, "the conversation is free again");
}

impl Fixture {
    /// A run a previous process left `running` in a new conversation, with these events.
    async fn left_running(&self, events: &[(&str, &str)]) -> (Uuid, Uuid) {
        let conv = self.conversation("").await;
        let run_id = Uuid::new_v4();
        let run = NewRun {
            id: run_id,
            conversation_id: conv,
            owner: "".into(),
            mode: Mode::Json,
            model: "default".into(),
        };
        self.store.create_run(run).await.unwrap();
        let events: Vec<StoredEvent> = (1..)
            .zip(events)
            .map(|(seq, (name, data))| StoredEvent {
                seq,
                name: name.to_string(),
                data: data.to_string(),
            })
            .collect();
        self.store.append_events(run_id, &events).await.unwrap();
        (conv, run_id)
    }

    /// The answer statuses and the `done` error of a run's stored log.
    async fn stored_tail(&self, run_id: Uuid) -> (Vec<String>, Option<String>) {
        let mut statuses = Vec::new();
        let mut error = None;
        for e in self.store.list_events(run_id, 0).await.unwrap() {
            match AgentEvent::from_parts(&e.name, &e.data) {
                Ok(AgentEvent::Answer(a)) => {
                    let v = serde_json::to_value(a).unwrap();
                    statuses.push(v["status"].as_str().unwrap_or_default().to_string());
                }
                Ok(AgentEvent::Done(d)) => error = d.error,
                _ => statuses.push(e.name),
            }
        }
        (statuses, error)
    }
}

#[tokio::test]
async fn recovery_fails_running_rows_with_the_fallback_tail() {
    let f = fixture().await;
    let (conv, before_answer) = f.left_running(&[("start", "{}")]).await;
    let (_, mid_answer) = f
        .left_running(&[("start", "{}"), ("answer", r#"{"status":"start"}"#)])
        .await;
    assert_eq!(f.runs.recover().await.unwrap(), 2);
    for run_id in [before_answer, mid_answer] {
        let row = f.store.get_run("", run_id).await.unwrap().unwrap();
        assert_eq!(row.status, RunStatus::Failed);
        assert_eq!(row.error.as_deref(), Some(RESTART_ERROR));
    }
    let restart = Some(RESTART_ERROR.to_string());
    assert_eq!(
        f.stored_tail(before_answer).await,
        (
            // Ids beyond the stored log may have been streamed (an answer among them): the
            // fallback answer resets whatever the client may have.
            vec![
                "start".into(),
                "start".into(),
                "reset".into(),
                "delta".into(),
                "done".into()
            ],
            restart.clone()
        )
    );
    assert_eq!(
        f.stored_tail(mid_answer).await,
        (
            vec![
                "start".into(),
                "start".into(),
                "reset".into(),
                "delta".into(),
                "done".into()
            ],
            restart
        )
    );
    assert!(
        f.store.list_messages(conv).await.unwrap().is_empty(),
        "the apology is not history"
    );
    assert_eq!(f.runs.recover().await.unwrap(), 0, "idempotent");
}

#[tokio::test]
async fn a_recovered_run_keeps_the_counters_its_events_show() {
    let f = fixture().await;
    let tool_start = |i: u32, id: &str| {
        format!(
            r#"{{"type":"tool_start","iteration":{i},"call_id":"{id}","tool":"t","arguments":{{}}}}"#
        )
    };
    let (first, second) = (tool_start(1, "a"), tool_start(2, "b"));
    let (_, run_id) = f
        .left_running(&[
            ("start", "{}"),
            (
                "step",
                r#"{"type":"thinking","iteration":1,"reasoning":""}"#,
            ),
            ("step", &first),
            (
                "step",
                r#"{"type":"thinking","iteration":2,"reasoning":""}"#,
            ),
            ("step", &second),
        ])
        .await;
    f.runs.recover().await.unwrap();
    let row = f.store.get_run("", run_id).await.unwrap().unwrap();
    assert_eq!((row.iterations, row.tool_calls), (2, 2));
    let done = f.store.list_events(run_id, 0).await.unwrap();
    let done = done.last().unwrap();
    let Ok(AgentEvent::Done(outcome)) = AgentEvent::from_parts(&done.name, &done.data) else {
        panic!("the log ends with done: {done:?}");
    };
    assert_eq!((outcome.iterations, outcome.tool_calls), (2, 2));
}
