//! Continuity (docs/api.md, issue 46) through the real OpenAI-compatible client against a fake
//! provider that behaves like the thinking models ([`FakeOpenAi::thinking`]): it answers 400
//! when a DeepSeek-style `reasoning_content` or a Gemini-style `thought_signature` of an earlier
//! tool-call turn of the same model comes back missing or altered. The tool loop completes three
//! tool iterations on each, non-streamed (the loop's calls) and streamed (the client's stream);
//! a resume from a checkpoint still sends them; another model never gets them; and consecutive
//! loop calls only append to what they send.
//!
//! By topic: [`loops`] (the loop, resume, model switch), [`prefix`] (prefix stability),
//! [`stored`] (the answer's continuity in the conversation's messages), [`anthropic`] (the
//! same on the native Anthropic Messages client).

mod anthropic;
mod loops;
mod prefix;
mod stored;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reagent::agent::checkpoint::{Checkpoint, CheckpointJson};
use reagent::agent::events::AgentEvent;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{AgentConfig, InterruptQueue, ReActAgent, RunHandles, RunInput};
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::Protocol;
use reagent::llm::retry::Backoff;
use reagent::llm::{Abilities, Llm, Message};
use reagent::testing::fake_openai::{FakeOpenAi, FakeReply};
use reagent::tools::ToolRegistry;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::tools::{registry, FakeTool};

/// The two kinds of thinking provider the fake imitates.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `reasoning_content` on the assistant message.
    DeepSeek,
    /// `extra_content.google.thought_signature` on each tool call.
    Gemini,
}

/// Tool-call turn `n` of a thinking model: one `lookup` call `c<n>`, with what `kind` sends.
fn turn(kind: Kind, n: u32) -> FakeReply {
    let args = json!({"x": format!("q{n}")}).to_string();
    let reply = FakeReply::tool_calls(vec![(format!("c{n}"), "lookup".to_string(), args)]);
    match kind {
        Kind::DeepSeek => reply.reasoning(format!("I should look up q{n} (thought {n}).")),
        Kind::Gemini => reply.thought_signatures(&format!("sig{n}/Zm9v+YmFy==")),
    }
}

async fn thinking() -> FakeOpenAi {
    FakeOpenAi::thinking().await.expect("fake server starts")
}

/// A client of the provider's `model`, registered as `name`.
fn client(fake: &FakeOpenAi, name: &str, model: &str) -> Arc<dyn Llm> {
    let client = ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url: fake.base_url(),
        api_key: None,
        model: model.into(),
        abilities: Abilities::default(),
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: Duration::from_secs(10),
        max_retries: 0,
    })
    .expect("client builds")
    .with_name(name)
    .with_backoff(Backoff::with_base(Duration::from_millis(1)));
    Arc::new(client)
}

fn tools() -> ToolRegistry {
    registry(vec![FakeTool::new("lookup", "found it")])
}

fn agent(llm: Arc<dyn Llm>, config: AgentConfig) -> ReActAgent {
    ReActAgent::new(llm, tools(), HookRunner::default(), config)
}

fn input(history: Vec<Message>) -> RunInput {
    RunInput {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        query: "look three things up".into(),
        history,
        model_name: None,
        client_tools: Vec::new(),
        images: Vec::new(),
    }
}

/// Handles whose checkpoints, read back from their JSON, land in `taken`.
fn handles(taken: Arc<Mutex<Vec<Checkpoint>>>) -> RunHandles {
    let (tx, _rx) = mpsc::unbounded_channel::<AgentEvent>();
    RunHandles {
        events: tx.into(),
        interrupts: Arc::new(InterruptQueue::new()),
        cancel: CancellationToken::new(),
        artifacts: Arc::new(reagent::agent::artifacts::MemoryArtifacts::new()),
        checkpoints: Some(Arc::new(move |json: CheckpointJson| {
            let cp: Checkpoint = serde_json::from_str(&json.join()).unwrap();
            taken.lock().unwrap().push(cp);
        })),
        tool_slots: Default::default(),
    }
}

/// The request bodies sent to the provider's `model`, parsed.
fn requests_to(fake: &FakeOpenAi, model: &str) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r["model"] == model)
        .collect()
}

/// True when any message of `request` carries a thinking model's continuity.
fn carries_continuity(request: &Value) -> bool {
    let text = request["messages"].to_string();
    text.contains("reasoning_content") || text.contains("extra_content")
}
