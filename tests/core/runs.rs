//! RunManager with a real SQLite file and a scripted LLM: event ids and order, persistence of
//! the log, one active run per conversation, interrupts, cancel, and restart recovery.

use std::future::ready;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use reagent::agent::events::AgentEvent;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, RunStatus};
use reagent::domain::{MessageKind, Mode};
use reagent::llm::Llm;
use reagent::runs::manager::LiveRun;
use reagent::runs::manager::RESTART_ERROR;
use reagent::runs::{ConversationRef, EventObserver, RunError, RunManager, StartRun};
use reagent::store::{Conversation, NewConversation, NewRun, Store, StoredEvent, EVENT_ID_BLOCK};
use reagent::testing::scripted::single_model;
use reagent::testing::{ScriptedLlm, Turn};
use reagent::tools::ToolRegistry;
use uuid::Uuid;

use crate::support::eventually;

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    llm: Arc<ScriptedLlm>,
    runs: Arc<RunManager>,
}

async fn fixture(tools: ToolRegistry) -> Fixture {
    let llm = Arc::new(ScriptedLlm::native());
    fixture_with(llm.clone(), llm as Arc<dyn Llm>, tools).await
}

/// `model` serves the runs; `llm` is what the test scripts (the same object unless the test
/// brings its own model).
async fn fixture_with(llm: Arc<ScriptedLlm>, model: Arc<dyn Llm>, tools: ToolRegistry) -> Fixture {
    fixture_observed(llm, model, tools, None).await
}

async fn fixture_observed(
    llm: Arc<ScriptedLlm>,
    model: Arc<dyn Llm>,
    tools: ToolRegistry,
    observer: Option<EventObserver>,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::connect(&url).await.unwrap();
    let models = single_model(model);
    let mut manager = RunManager::new(
        store.clone(),
        models,
        tools,
        HookRunner::default(),
        AgentConfig::default(),
        None,
    );
    manager.observer = observer;
    let runs = Arc::new(manager);
    Fixture {
        _dir: dir,
        store,
        llm,
        runs,
    }
}

fn query(conv: &Conversation, q: &str) -> StartRun {
    StartRun::new(ConversationRef::Existing(conv.id), q)
}

impl Fixture {
    /// A new conversation of `owner`'s with a run of query `q` started in it.
    async fn new_run(&self, owner: &str, q: &str) -> (Conversation, Arc<LiveRun>) {
        let conv = self
            .store
            .create_conversation(owner, NewConversation::default())
            .await
            .unwrap();
        let live = self.runs.start(owner, query(&conv, q)).await.unwrap();
        (conv, live)
    }
}

#[tokio::test]
async fn a_run_logs_contiguous_events_and_persists_them_with_its_final_state() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.text("brief");
    f.llm
        .push_stream(Turn::Stream(vec!["Hello ".into(), "world".into()], None));
    let (conv, live) = f.new_run("alice", "hi").await;
    let events: Vec<_> = live.log.subscribe(0).events.collect().await;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.first().unwrap().name, "start");
    assert_eq!(events.last().unwrap().name, "done");
    // Final state is stored before `done` is visible.
    let run = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    // Once the run is fully finished, the stored log equals the live one.
    tokio::time::timeout(Duration::from_secs(5), live.finished())
        .await
        .unwrap();
    let stored = f.store.list_events(live.id, 0).await.unwrap();
    let stored: Vec<(u64, String, String)> = stored
        .into_iter()
        .map(|e| (e.seq as u64, e.name, e.data))
        .collect();
    let live_log: Vec<(u64, String, String)> = events
        .iter()
        .map(|e| (e.id, e.name.to_string(), e.data.to_string()))
        .collect();
    assert_eq!(stored, live_log);
    let msgs = f.store.list_messages(conv.id).await.unwrap();
    let kinds: Vec<(&str, &str)> = msgs
        .iter()
        .map(|m| (m.kind.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(kinds, [("query", "hi"), ("answer", "Hello world")]);
    // A finished run replays from the database.
    assert_eq!(f.runs.active_runs(), 0);
    let replay: Vec<u64> = f
        .runs
        .events("alice", live.id, 3)
        .await
        .unwrap()
        .map(|e| e.id)
        .collect()
        .await;
    assert_eq!(replay, (4..=events.len() as u64).collect::<Vec<_>>());
    assert!(matches!(
        f.runs.events("bob", live.id, 0).await,
        Err(RunError::NotFound)
    ));
}

#[tokio::test]
async fn one_active_run_per_conversation_and_interrupts_need_one() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("slow", vec![]),
        Duration::from_millis(300),
    ));
    let conv = f
        .store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap();
    assert!(matches!(
        f.runs.interrupt("", conv.id, "early".into()).await,
        Err(RunError::NoActiveRun)
    ));
    assert!(
        f.store.list_messages(conv.id).await.unwrap().is_empty(),
        "nothing stored"
    );
    let live = f.runs.start("", query(&conv, "first")).await.unwrap();
    assert!(matches!(
        f.runs.start("", query(&conv, "second")).await,
        Err(RunError::Active)
    ));
    let accepted = f
        .runs
        .interrupt("", conv.id, "also this".into())
        .await
        .unwrap();
    let (iid, run_id) = (accepted.id, accepted.run_id);
    assert_eq!(run_id, live.id);
    let events: Vec<_> = live.log.subscribe(0).events.collect().await;
    let done = &events.last().unwrap().data;
    // Drained (the final answer was discarded for it) or reported unprocessed, never lost.
    let step_seen = events.iter().any(|e| e.data.contains(&iid.to_string()));
    assert!(step_seen || done.contains(&iid.to_string()));
    let stored = f.store.list_messages(conv.id).await.unwrap();
    assert!(stored
        .iter()
        .any(|m| m.id == iid && m.kind == MessageKind::Interrupt));
    // The conversation is free again once `done` was emitted.
    f.llm.text("again");
    assert!(f.runs.start("", query(&conv, "third")).await.is_ok());
}

#[tokio::test]
async fn cancel_ends_the_run_as_cancelled_and_a_finished_run_cannot_be_cancelled() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("never", vec![]),
        Duration::from_secs(30),
    ));
    let (_, live) = f.new_run("", "q").await;
    assert!(matches!(
        f.runs.cancel("someone-else", live.id).await,
        Err(RunError::NotFound)
    ));
    f.runs.cancel("", live.id).await.unwrap();
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(5),
        live.log.subscribe(0).events.collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert!(events
        .last()
        .unwrap()
        .data
        .contains("\"status\":\"cancelled\""));
    let run = f.store.get_run("", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    eventually("the cancelled run left the active set", || {
        ready(f.runs.active_runs() == 0)
    })
    .await;
    assert!(matches!(
        f.runs.cancel("", live.id).await,
        Err(RunError::Finished)
    ));
    assert!(matches!(
        f.runs.cancel("", Uuid::new_v4()).await,
        Err(RunError::NotFound)
    ));
}

#[tokio::test]
async fn recovery_fails_runs_left_running_and_closes_their_logs() {
    let f = fixture(ToolRegistry::new()).await;
    let conv = f
        .store
        .create_conversation("", NewConversation::default())
        .await
        .unwrap();
    let run_id = Uuid::new_v4();
    f.store
        .create_run(NewRun {
            id: run_id,
            conversation_id: conv.id,
            owner: "".into(),
            mode: Mode::Native,
            model: "default".into(),
        })
        .await
        .unwrap();
    let start = StoredEvent {
        seq: 1,
        name: "start".into(),
        data: "{}".into(),
    };
    let step = StoredEvent {
        seq: 2,
        name: "step".into(),
        data: "{}".into(),
    };
    f.store.append_events(run_id, &[start, step]).await.unwrap();
    assert_eq!(f.runs.recover().await.unwrap().total(), 1);
    let run = f.store.get_run("", run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_deref(), Some(RESTART_ERROR));
    let events = f.store.list_events(run_id, 0).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    // The tail is numbered above the block of ids the run was created with: a client may have
    // seen ids 3… before the crash that were never stored.
    let b = EVENT_ID_BLOCK;
    assert_eq!(seqs, [1, 2, b + 1, b + 2, b + 3, b + 4, b + 5]);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    // The fallback answer: start, reset (of what a client may have seen), delta, done.
    assert_eq!(
        names,
        ["start", "step", "answer", "answer", "answer", "answer", "done"]
    );
    assert!(events.last().unwrap().data.contains(RESTART_ERROR));
    assert_eq!(f.runs.recover().await.unwrap().total(), 0, "idempotent");
    // The conversation accepts a new run.
    f.llm.text("ok");
    assert!(f.runs.start("", query(&conv, "again")).await.is_ok());
}

/// A model whose every call panics: a bug in the engine or a provider client.
struct PanickingLlm;

#[async_trait::async_trait]
impl Llm for PanickingLlm {
    fn model(&self) -> &str {
        "panicking"
    }
    fn abilities(&self) -> reagent::llm::Abilities {
        reagent::llm::Abilities::default()
    }
    async fn chat(
        &self,
        _: reagent::llm::ChatRequest,
    ) -> Result<reagent::llm::ChatResponse, reagent::llm::LlmError> {
        panic!("bug in the model client")
    }
    async fn stream_chat(
        &self,
        _: reagent::llm::ChatRequest,
    ) -> Result<reagent::llm::ChatStream, reagent::llm::LlmError> {
        panic!("bug in the model client")
    }
}

#[tokio::test]
async fn a_panic_inside_the_agent_still_ends_the_run_as_failed_with_an_answer() {
    let f = fixture_with(
        Arc::new(ScriptedLlm::native()),
        Arc::new(PanickingLlm),
        ToolRegistry::new(),
    )
    .await;
    let (conv, live) = f.new_run("alice", "hi").await;
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        live.log.subscribe(0).events.collect(),
    )
    .await
    .expect("the log of a run whose agent panicked is closed");
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    let names: Vec<&str> = events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["start", "answer", "answer", "answer", "done"]);
    let done: serde_json::Value = serde_json::from_str(&events[4].data).unwrap();
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"], "internal error");
    assert!(done["answer"].as_str().unwrap().contains("internal error"));

    live.finished().await;
    let run = f.store.get_run("alice", live.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let stored = f.store.list_events(live.id, 0).await.unwrap();
    assert_eq!(stored.len(), events.len(), "every event persisted");
    assert_eq!(f.runs.active_runs(), 0);
    // The conversation is free for the next run.
    assert!(f.runs.start("alice", query(&conv, "again")).await.is_ok());
}

/// The run manager's observer (what `/metrics` counts from) sees each event the log takes,
/// once, in log order — also for a run whose agent panicked, whose fallback `done` is the one.
#[tokio::test]
async fn the_observer_sees_exactly_the_logged_events() {
    for panicking in [false, true] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let observer: EventObserver = {
            let seen = seen.clone();
            Arc::new(move |ev: &AgentEvent| seen.lock().unwrap().push(ev.name().to_string()))
        };
        let llm = Arc::new(ScriptedLlm::native());
        let model: Arc<dyn Llm> = if panicking {
            Arc::new(PanickingLlm)
        } else {
            llm.clone()
        };
        let f = fixture_observed(llm, model, ToolRegistry::new(), Some(observer)).await;
        f.llm.tool_calls(&[("c1", "nope", "{}")]);
        f.llm.text("done");
        let (_, live) = f.new_run("alice", "hi").await;
        live.finished().await;
        let logged: Vec<String> = f
            .store
            .list_events(live.id, 0)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(*seen.lock().unwrap(), logged, "panicking: {panicking}");
        assert_eq!(logged.iter().filter(|n| *n == "done").count(), 1);
    }
}

/// Persisted events that every reader has read are dropped from memory; a subscriber that
/// comes later (a replay from the start while the run is live) gets them from the database,
/// then the rest live, with contiguous ids.
#[tokio::test]
async fn a_late_subscriber_gets_released_events_from_the_database() {
    let f = fixture(ToolRegistry::new()).await;
    f.llm.tool_calls(&[("c1", "nope", "{}")]);
    // The next loop call answers after a while: the run stays live meanwhile.
    f.llm.push(Turn::Reply(
        reagent::testing::scripted::response("brief", vec![]),
        Duration::from_millis(800),
    ));
    f.llm
        .push_stream(Turn::Stream(vec!["Hello ".into(), "world".into()], None));
    let (_, live) = f.new_run("", "q").await;
    let mut first = live.log.subscribe(0).events;
    let mut seen = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(5), first.next())
        .await
        .unwrap()
    {
        let tool_end = ev.data.contains("\"tool_end\"");
        seen.push(ev.id);
        if tool_end {
            break;
        }
    }
    // Poll on until nothing is ready, as an SSE body does: the reader is then done with
    // everything so far.
    while let Some(Some(ev)) = first.next().now_or_never() {
        seen.push(ev.id);
    }
    // The shared writer persists within a tick, then the log lets go of what was read.
    eventually("the log released what was persisted and read", || {
        ready(live.log.released() > 0)
    })
    .await;
    let released = live.log.released();
    assert!(released > 0, "nothing released while the run was waiting");
    assert!(
        live.log.held() < live.log.len(),
        "released events left memory"
    );

    let late: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        f.runs
            .events("", live.id, 0)
            .await
            .unwrap()
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let ids: Vec<u64> = late.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=late.len() as u64).collect::<Vec<_>>());
    assert_eq!(late.first().unwrap().name, "start");
    assert_eq!(late.last().unwrap().name, "done");
    assert!(late.len() as u64 > released);

    // The first reader goes on where it was, to the same end.
    let rest: Vec<u64> = first.map(|e| e.id).collect().await;
    seen.extend(rest);
    assert_eq!(seen, ids);
}
