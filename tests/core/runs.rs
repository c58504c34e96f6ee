//! RunManager with a real SQLite file and a scripted LLM: event ids and order, persistence of
//! the log, one active run per conversation, interrupts, cancel, and restart recovery.
//!
//! By topic: [`failures`], [`lifecycle`], [`observers`].

mod failures;
mod lifecycle;
mod observers;

use std::future::ready;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use reagent::agent::events::AgentEvent;
use reagent::agent::RunStatus;
use reagent::domain::{MessageKind, Mode};
use reagent::llm::Llm;
use reagent::runs::manager::LiveRun;
use reagent::runs::manager::RESTART_ERROR;
use reagent::runs::{
    ConversationRef, EventObserver, RunError, RunManager, RunParts, RunSettings, StartRun,
};
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
    let parts = RunParts {
        tools,
        observer,
        ..RunParts::new(store.clone(), models)
    };
    let runs = Arc::new(RunManager::new(parts, RunSettings::default()));
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
