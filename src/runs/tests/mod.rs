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

use super::core::drive::final_state;
use super::core::manager::RESTART_ERROR;
use super::{ConversationRef, LiveRun, RunError, RunManager, RunParts, RunSettings, StartRun};
use crate::agent::hooks::approval::ApprovalInfo;
use crate::agent::{AgentEvent, RunOutcome, RunStatus};
use crate::llm::{Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError};
use crate::store::{NewConversation, NewRun, Store, StoredEvent};
use crate::testing::scripted::{response, single_model};
use crate::testing::{ScriptedLlm, Turn};
use crate::tools::ToolRegistry;

mod commands;
mod continuation;
mod lease;
mod recovery;
mod session;
mod start;

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
    let manager = RunManager::new(
        RunParts {
            tools: ToolRegistry::new(),
            ..RunParts::new(store.clone(), single_model(model))
        },
        RunSettings {
            flush_interval: Duration::from_millis(1),
            max_query_chars: 20,
            ..RunSettings::default()
        },
    );
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

/// A model whose calls never give a reply, for runs the engine cannot end itself.
enum Broken {
    /// Every call waits forever: the run stays in its first iteration.
    Hanging,
    /// Every call panics.
    Panicking,
}

impl Broken {
    /// What every call does instead of answering.
    async fn call<T>(&self) -> T {
        match self {
            Broken::Hanging => std::future::pending().await,
            Broken::Panicking => panic!("the model exploded"),
        }
    }
}

#[async_trait]
impl Llm for Broken {
    fn model(&self) -> &str {
        match self {
            Broken::Hanging => "hanging",
            Broken::Panicking => "panicking",
        }
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
        self.call().await
    }
    async fn stream_chat(&self, _: ChatRequest) -> Result<ChatStream, LlmError> {
        self.call().await
    }
}
