//! The mock provider (`reagent mock-provider`, [`MockProvider`]) seen through the real
//! [`ModelClient`]: its tool-call script drives a real [`ReActAgent`] in both modes, streamed
//! and non-streamed answers agree, the seeded error rate is reproducible, the token rate holds,
//! and the binary starts, answers and stops on SIGTERM. Everything is in-process on port 0
//! except the binary test; timing assertions are lower bounds only.
//!
//! By topic: [`binary`], [`engine`], [`errors`], [`rates`], [`replies`], [`script`].

mod binary;
mod engine;
mod errors;
mod rates;
mod replies;
mod script;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reagent::agent::artifacts::MemoryArtifacts;
use reagent::agent::hooks::HookRunner;
use reagent::agent::{
    AgentConfig, AgentResult, InterruptQueue, Mode, ReActAgent, RunHandles, RunInput, RunStatus,
};
use reagent::llm::client::{ClientConfig, ModelClient};
use reagent::llm::providers::Protocol;
use reagent::llm::retry::Backoff;
use reagent::llm::{Abilities, ChatRequest, Llm, LlmError, Message, StreamEvent, ToolDefinition};
use reagent::tools::builtin::Calculator;
use reagent::tools::ToolRegistry;
use reagent_mock::{MockConfig, MockProvider};
use tokio_util::sync::CancellationToken;

use crate::support::child::Server;

/// A safety net for a hung server or child, not a synchronisation delay.
const TIMEOUT: Duration = Duration::from_secs(10);

async fn start(cfg: MockConfig) -> MockProvider {
    MockProvider::start(cfg)
        .await
        .expect("mock provider starts")
}

fn client(mock: &MockProvider, abilities: Abilities, max_retries: u32) -> ModelClient {
    ModelClient::new(ClientConfig {
        protocol: Protocol::OpenAi,
        base_url: mock.base_url(),
        api_key: None,
        model: "mock-model".into(),
        abilities,
        context_window: 128_000,
        max_output_tokens: 4_096,
        timeout: TIMEOUT,
        max_retries,
    })
    .expect("client builds")
    .with_backoff(Backoff::with_base(Duration::from_millis(1)))
}

fn calculator_definition() -> ToolDefinition {
    ToolDefinition {
        name: "calculator".into(),
        description: "arithmetic".into(),
        parameters: serde_json::json!({"type": "object"}),
    }
}
